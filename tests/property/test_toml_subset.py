"""The TOML reader for Python 3.9/3.10 reads what it accepts exactly as tomllib does.

`om.tomlio.subset_loads` is what reads Codex's config.toml before tomllib exists. Run
against tomllib (so on 3.11+), in process: on every generated document it either returns
tomllib's value, or refuses; when it calls a document "not valid TOML", tomllib refuses it
too. Documents are built from the subset's grammar with colliding keys, redefined tables,
odd spacing, comments and multi-line arrays, plus forms it must refuse.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from om import tomlio
from om.tomlio import TomlError, subset_loads

tomllib = pytest.importorskip("tomllib", reason="the reference reader, tomllib, exists from Python 3.11")

MANY = settings(max_examples=400, deadline=None)


def check_against_tomllib(text):
    try:
        expected = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        expected = None
    try:
        got = subset_loads(text)
    except TomlError as e:
        assert "\n" not in str(e) and "(line " in str(e), e
        if not e.unsupported:
            assert expected is None, (text, str(e), expected)
        return None
    assert expected is not None, (text, got)
    assert got == expected and _types(got) == _types(expected), (text, got, expected)
    return got


def _types(value):
    if isinstance(value, dict):
        return {k: _types(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_types(v) for v in value]
    return type(value).__name__


# -- rendering a document from the subset's grammar ----------------------------------

ws = st.sampled_from(["", " ", "\t", "  "])
comment = st.sampled_from(["", " # note", "#", "\t# é ' \" [x]"])
newline = st.sampled_from(["\n", "\r\n"])
chars = st.sampled_from(list("aZ09 _-.é\u2028'\"\\\t#=[]{},\U0001f600"))
texts = st.lists(chars, max_size=6).map("".join)


def basic_string(s):
    escapes = {'"': '\\"', "\\": "\\\\", "\t": "\\t", "\n": "\\n"}
    return '"' + "".join(escapes.get(c, c) for c in s) + '"'


def escaped_string(s):
    return '"' + "".join("\\u%04X" % ord(c) if ord(c) < 0x10000 else "\\U%08X" % ord(c) for c in s) + '"'


strings = st.one_of(
    texts.map(basic_string),
    texts.map(escaped_string),
    texts.filter(lambda s: "'" not in s).map(lambda s: f"'{s}'"),
)
integers = st.one_of(
    st.integers(-(2**63), 2**63 - 1).map(str),
    st.integers(0, 10**6).map(lambda n: "+" + str(n)),
    st.integers(1000, 10**9).map(lambda n: f"{n:_}"),
    st.sampled_from(["-0", "+0", "00", "01", "1__0", "_1", "1_", "0x1F", "0o7", "0b1", "1.5", "1e3", "inf",
                     "nan", "-inf", "1979-05-27", "07:32:00", "1979-05-27T07:32:00Z"]),
)
scalars = st.one_of(strings, integers, st.sampled_from(["true", "false", "True", "tru", "falsey"]))
bare_keys = st.sampled_from(["a", "b", "c", "key-1", "_", "0", "1a", "A_b"])
simple_keys = st.one_of(bare_keys, bare_keys.map(lambda k: f'"{k}"'), bare_keys.map(lambda k: f"'{k}'"),
                        texts.map(basic_string), st.just('""'))
keys = st.lists(simple_keys, min_size=1, max_size=3).flatmap(
    lambda parts: st.lists(ws, min_size=len(parts) - 1, max_size=len(parts) - 1).map(
        lambda gaps: "".join(p + (f"{g}.{g}" if i < len(gaps) else "") for i, (p, g) in
                             enumerate(zip(parts, gaps + [""]))))
)


def arrays(inner):
    def render(t):
        items, gaps, trailing = t
        body = ",".join(g + item for item, g in zip(items, gaps))
        return "[" + body + ("," if trailing and items else "") + "\n]" if "\n" in "".join(gaps) else \
            "[" + body + ("," if trailing and items else "") + "]"
    return st.lists(inner, max_size=4).flatmap(
        lambda items: st.tuples(
            st.just(items),
            st.lists(st.sampled_from(["", " ", "\n  ", " # c\n "]), min_size=len(items), max_size=len(items)),
            st.booleans(),
        )
    ).map(render)


def inline_tables(inner):
    return st.lists(st.tuples(keys, inner), max_size=3).map(
        lambda pairs: "{" + ", ".join(f"{k} = {v}" for k, v in pairs) + "}"
    )


values = st.recursive(scalars, lambda inner: arrays(inner) | inline_tables(inner), max_leaves=6)
key_values = st.tuples(keys, ws, ws, values, comment).map(lambda t: f"{t[0]}{t[1]}={t[2]}{t[3]}{t[4]}")
headers = st.tuples(ws, keys, ws, comment).map(lambda t: f"{t[0]}[{t[1]}]{t[2]}{t[3]}")
lines = st.one_of(key_values, key_values, headers, comment, st.just(""))
documents = st.tuples(st.lists(lines, max_size=8), newline).map(lambda t: t[1].join(t[0]))


@MANY
@given(documents)
def test_a_generated_document_is_read_as_tomllib_reads_it_or_refused(text):
    check_against_tomllib(text)


@MANY
@given(st.lists(st.sampled_from(list("ab1=.'\"[]{},# \t\n-_\\ue")), max_size=30).map("".join))
def test_arbitrary_text_is_read_as_tomllib_reads_it_or_refused(text):
    check_against_tomllib(text)


CODEX_CONFIG = """\
model = "gpt-5"
sandbox_mode = 'workspace-write'   # literal string: read as written, not rewritten to "..."

[plugins."om@om-local"]
enabled = true

[sandbox_workspace_write]
writable_roots = [
  "/home/user/.codex/plugins/data/om-om-local",  # the store
  'C:\\Users\\me\\it''s',
]

[hooks.state."om@om-local:hooks/hooks.json:session_start:0:0"]
trusted_hash = "sha256:0123"
trusted_content_hash = "sha256:4567"

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-server"]
env = { TOKEN_NAME = "DOCS_TOKEN", "quoted key" = 'it"s' }
"""


def test_the_config_codex_writes_is_read_exactly_as_tomllib_reads_it():
    got = check_against_tomllib(CODEX_CONFIG.replace("it''s", "its"))
    assert got["sandbox_mode"] == "workspace-write"
    assert got["plugins"]["om@om-local"] == {"enabled": True}
    assert got["sandbox_workspace_write"]["writable_roots"][1] == "C:\\Users\\me\\its"
    assert got["mcp_servers"]["docs"]["env"] == {"TOKEN_NAME": "DOCS_TOKEN", "quoted key": 'it"s'}


@pytest.mark.parametrize("text, what", [
    ('a = """\nmulti\n"""', "multi-line string"),
    ("a = '''x'''", "multi-line string"),
    ("[[servers]]\nname = 'x'", "array of tables"),
    ("timeout = 1.5", "floats"),
    ("when = 1979-05-27", "dates"),
    ("mask = 0x1F", "hexadecimal"),
    ("a = inf", "float"),
])
def test_valid_toml_outside_the_subset_is_refused_with_a_clear_line(text, what):
    tomllib.loads(text)  # valid TOML
    with pytest.raises(TomlError) as refused:
        subset_loads(text)
    assert refused.value.unsupported and what in str(refused.value) and "Python 3.11" in str(refused.value)


@pytest.mark.parametrize("text", ["[plugins\nenabled = \n", "a = 1\na = 2", "[t]\n[t]", "a = 'x", "a = \"\\q\"",
                                  "a = {b = 1,}", "a = 1 b = 2", "a.b = 1\na = 2", "a = 00", "x = [1 2]"])
def test_invalid_toml_is_refused_as_not_valid(text):
    with pytest.raises(tomllib.TOMLDecodeError):
        tomllib.loads(text)
    with pytest.raises(TomlError) as refused:
        subset_loads(text)
    assert not refused.value.unsupported and str(refused.value).startswith("not valid TOML")


def test_loads_is_tomllib_where_it_exists():
    assert tomlio.loads("a = 1.5") == {"a": 1.5}
    with pytest.raises(TomlError) as refused:
        tomlio.loads("a = ")
    assert str(refused.value).startswith("not valid TOML")


@pytest.mark.parametrize("text", ['a = "x\\\n"', 'a = "x\\\r\n"', 'a = "\\q"'])
def test_an_invalid_escape_is_refused_in_one_line_even_when_it_escapes_a_newline(text):
    with pytest.raises(TomlError) as e:
        subset_loads(text)
    assert "\n" not in str(e.value) and "\r" not in str(e.value) and "invalid escape" in str(e.value)
