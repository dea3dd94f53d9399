"""om.jsonio agrees with the json module: same values in, same text out, same refusals.

jsonio drives the `_json` accelerator through the fast-path fence instead of the json
package. These properties hold it to the public module, in process, on every valid
document hypothesis can build and on documents broken a character at a time. The only
intended differences are part of the ledger's contract and are stated here: NaN and
Infinity are refused, lone surrogate escapes decode to U+FFFD, and too-deep nesting is
an input error instead of a RecursionError.
"""

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from om import jsonio
from om.errors import InputError

MANY = settings(max_examples=400, deadline=None)


def _refuse_constant(name):
    raise ValueError(name)


def reference_loads(text):
    """json.loads as the ledger's contract reads it; None when it must be refused."""
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return None
    return ("ok", _scrub(value))


def _scrub(value):
    if isinstance(value, str):
        return "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in value)
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    return value


def same(a, b):
    """Equal with the same types all the way down (1, 1.0 and True are three values)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    for number in (int, float):
        if isinstance(a, number):
            return isinstance(b, number) and not isinstance(b, bool) and a == b and (
                number is int or math.copysign(1, a) == math.copysign(1, b))
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


def jsonio_loads(text):
    try:
        return ("ok", jsonio.loads(text))
    except InputError as e:
        assert str(e).startswith("om: ") and "\n" not in str(e)
        return None


scalars = (
    st.none() | st.booleans() | st.integers() | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text()
)
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)
layouts = st.sampled_from([
    {}, {"ensure_ascii": False}, {"indent": 2}, {"separators": (",", ":")},
    {"indent": "\t", "ensure_ascii": False}, {"separators": (" ,\n", " :\r ")},
])
whitespace = st.text(alphabet=" \t\n\r", max_size=3)


@MANY
@given(value=values, layout=layouts, before=whitespace, after=whitespace)
def test_every_valid_document_decodes_to_what_json_decodes(value, layout, before, after):
    text = before + json.dumps(value, **layout) + after
    expected = reference_loads(text)
    assert expected is not None
    got = jsonio_loads(text)
    assert got is not None and same(got[1], expected[1]), (text, got)


@MANY
@given(value=values, sort_keys=st.booleans())
def test_every_value_encodes_to_json_dumps_compact_unescaped_text(value, sort_keys):
    expected = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys, allow_nan=False)
    assert jsonio.dumps(value, sort_keys=sort_keys) == expected


@MANY
@given(
    keys=st.lists(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                  | st.text(max_size=3), max_size=4),
    sort_keys=st.booleans(),
)
def test_non_string_keys_are_converted_or_refused_as_json_does(keys, sort_keys):
    value = {k: i for i, k in enumerate(keys)}
    try:
        expected = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys, allow_nan=False)
    except TypeError:
        with pytest.raises(TypeError):
            jsonio.dumps(value, sort_keys=sort_keys)
    else:
        assert jsonio.dumps(value, sort_keys=sort_keys) == expected


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, [1, {"x": math.inf}], {1j: 1}, {"s": {1, 2}},
                                   b"bytes", object()])
def test_what_json_refuses_to_encode_strictly_jsonio_refuses_too(value):
    with pytest.raises((TypeError, ValueError)) as expected:
        json.dumps(value, allow_nan=False)
    with pytest.raises(expected.type):
        jsonio.dumps(value)


def _edits(text):
    """Strategy: `text` broken or altered at one place (cut, character inserted, deleted or replaced)."""
    alphabet = st.sampled_from(list('{}[],:"\\ 0123456789.eE+-tfnrula\x00\x1f\u2028\ud800é'))
    n = len(text)
    return st.one_of(
        st.integers(0, n).map(lambda i: text[:i]),
        st.tuples(st.integers(0, n), alphabet).map(lambda t: text[:t[0]] + t[1] + text[t[0]:]),
        st.integers(0, max(n - 1, 0)).map(lambda i: text[:i] + text[i + 1:]),
        st.tuples(st.integers(0, max(n - 1, 0)), alphabet).map(lambda t: text[:t[0]] + t[1] + text[t[0] + 1:]),
    )


@MANY
@given(st.data())
def test_a_document_altered_at_one_place_is_accepted_or_refused_exactly_as_json_does(data):
    text = json.dumps(data.draw(values), ensure_ascii=data.draw(st.booleans()))
    altered = data.draw(_edits(text))
    expected, got = reference_loads(altered), jsonio_loads(altered)
    if expected is None:
        assert got is None, (altered, got)
    else:
        assert got is not None and same(got[1], expected[1]), (altered, got, expected)


@MANY
@given(st.text(alphabet=st.sampled_from(list('{}[],:"\\ \t\n0123456789.eE+-truefalsnNaIiy\x00\ud800')), max_size=40))
def test_arbitrary_text_is_accepted_or_refused_exactly_as_json_does(text):
    expected, got = reference_loads(text), jsonio_loads(text)
    if expected is None:
        assert got is None, (text, got)
    else:
        assert got is not None and same(got[1], expected[1]), (text, got, expected)


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "[NaN]", '{"a": Infinity}', "", "  ", "1 2",
                                  "[1,]", "{'a': 1}", "01", "\ufeff{}", "[" * 100_000 + "]" * 100_000])
def test_what_the_contract_refuses_is_an_input_error(text):
    assert jsonio_loads(text) is None


string_pieces = st.sampled_from([
    "a", "é", "\u2028", "\x00", "\t", "\n", "\x1f", "\x7f", "\\n", "\\t", "\\\"", "\\\\", "\\/", "\\u00e9",
    "\\ud800", "\\udc00", "\\ud83d\\ude00", "\\u12", "\\x41", "\\", "\"", "\ud800",
])


@MANY
@given(st.lists(string_pieces, max_size=8).map(lambda parts: '"' + "".join(parts) + '"'))
def test_string_literals_with_raw_controls_and_escapes_are_read_exactly_as_json_reads_them(text):
    expected, got = reference_loads(text), jsonio_loads(text)
    if expected is None:
        assert got is None, (text, got)
    else:
        assert got is not None and same(got[1], expected[1]), (text, got, expected)
