"""Numbers on stdin are written back exactly as they were read, as v1 kept them.

In process on purpose: the property is about the codec (om.jsonio), and the
CLI/hook behaviour it leads to is tested through the real hook in
tests/cli/test_v1_fidelity.py.
"""

import json

from hypothesis import given
from hypothesis import strategies as st

from om.jsonio import decode_input, dumps
from om.schema import CHECKPOINT, validate

LITERAL = st.from_regex(r"-?(0|[1-9][0-9]{0,30})(\.[0-9]{1,20})?([eE][+-]?[0-9]{1,4})?", fullmatch=True)
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)


@given(LITERAL, TEXT)
def test_every_json_number_literal_survives_decoding_and_canonical_encoding(literal, text):
    raw = '{"k": %s, "list": [%s, {"t": %s}], "s": %s}' % (literal, literal, literal, json.dumps(text))
    expected = '{"k":%s,"list":[%s,{"t":%s}],"s":%s}' % (
        literal, literal, literal, json.dumps(text, ensure_ascii=False, separators=(",", ":")))
    assert dumps(decode_input(raw.encode("utf-8"))) == expected


@given(LITERAL)
def test_sorted_keys_keep_number_literals_in_place(literal):
    raw = '{"b": %s, "a": {"d": [%s], "c": %s}}' % (literal, literal, literal)
    assert dumps(decode_input(raw.encode()), sort_keys=True) == '{"a":{"c":%s,"d":[%s]},"b":%s}' % (
        literal, literal, literal)


@given(st.integers(min_value=0, max_value=10**30))
def test_an_integer_through_is_an_integer_however_it_is_written(n):
    for literal in (str(n), "-0" if n == 0 else str(n)):
        checkpoint = validate(CHECKPOINT, decode_input(('{"through": %s}' % literal).encode()))
        assert checkpoint["through"] == n and type(checkpoint["through"]) is int
