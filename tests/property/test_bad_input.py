"""Bad input on stdin: one line on stderr, nonzero exit, nothing on stdout, no write.

Hypothesis generates garbage for `capture` and `apply`: random bytes, and a
valid request broken in one way (truncated, NUL or invalid UTF-8 bytes spliced
in, wrong types, unknown fields, a second value, deep nesting, huge numbers,
NaN). The generated examples run `om.cli.main` in this process (tests/inprocess.py),
hundreds of them in seconds; the fixed cases below run `om` as a real subprocess, so
the contract as a shell sees it (exit status, one stderr line, never a traceback) is
proven at the process boundary too. Either way, one shared ledger's three tables must
not change.
"""

import hashlib
import json
import os

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import sqlite_probe
from conftest import run_om
from inprocess import run_om_in_process

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(SETTINGS, max_examples=60)
MAX_INPUT = 4 * 1024 * 1024


@pytest.fixture(scope="module")
def ledger(tmp_path_factory):
    """Session s1 with three sources, an observation and cursor 2; `fresh` never used."""
    store = tmp_path_factory.mktemp("bad-input") / "store"
    ids = []
    for i in range(3):
        r = run_om("--store", store, "--session", "s1", "capture",
                   input=json.dumps({"kind": "tool", "text": f"evidence {i}", "key": "k"}))
        assert r.returncode == 0, r
        ids.append(r.json["source_id"])
    r = run_om("--store", store, "--session", "s1", "apply",
               input=json.dumps({"through": 2, "observations": [{"text": "seen", "source_ids": ids[:2]}]}))
    assert r.returncode == 0, r
    db = sqlite_probe.database(store, "s1")
    return {"store": store, "db": db, "ids": ids, "dump": sqlite_probe.dump(db)}


def assert_rejected(ledger, result, session="s1"):
    assert result.returncode not in (0, 2), result
    assert result.returncode != 70, result  # 70 = an internal error slipped through
    assert result.stdout == "", result
    assert "Traceback" not in result.stderr, result
    assert result.stderr.endswith("\n") and result.stderr.count("\n") == 1, result
    assert result.stderr.startswith("om"), result
    assert sqlite_probe.dump(ledger["db"]) == ledger["dump"]
    if session != "s1":
        assert not os.path.exists(sqlite_probe.session_dir(ledger["store"], session))


def om(ledger, command, data, session="s1"):
    """A real `om` subprocess."""
    return run_om("--store", ledger["store"], "--session", session, command, input=data)


def om_fast(ledger, command, data, session="s1"):
    """The same call through `om.cli.main` in this process (for generated examples)."""
    return run_om_in_process("--store", ledger["store"], "--session", session, command, input=data)


# -- generators -------------------------------------------------------------

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
not_strings = json_values.filter(lambda v: not isinstance(v, str))
not_integers = json_values.filter(lambda v: isinstance(v, bool) or not isinstance(v, int))
invalid_utf8 = st.sampled_from([b"\xff", b"\xc0\xaf", b"\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82"])
nasty_literals = st.sampled_from(
    ["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1" * 5000, "-" + "9" * 4400, "0x10", "01", "+1",
     "undefined", "'single'", "True", "None"]
)


def _splice(data, index, insert):
    index = index % (len(data) + 1)
    return data[:index] + insert + data[index:]


def _broken(valid, allowed, required, strings=(), integers=()):
    """Strategy: bytes of `valid` (a dict) broken in exactly one way that makes it invalid."""
    text = json.dumps(valid)
    raw = text.encode()
    fields = list(valid)
    unknown_names = st.text(min_size=1, max_size=8).filter(lambda k: k not in allowed)

    def wrong_type(draw_field, value):
        broken = dict(valid)
        broken[draw_field] = value
        return json.dumps(broken).encode()

    def with_literal(field, literal):
        broken = dict(valid)
        broken[field] = "@@"
        return json.dumps(broken).replace('"@@"', literal).encode()

    def deep(field, depth):
        broken = dict(valid)
        broken[field] = "@@"
        return json.dumps(broken).replace('"@@"', "[" * depth + "]" * depth).encode()

    return st.one_of(
        st.integers(0, len(raw) - 1).map(lambda n: raw[:n]),  # truncated
        st.integers(0, len(raw)).map(lambda i: _splice(raw, i, b"\x00")),  # NUL byte
        st.tuples(st.integers(0, len(raw)), invalid_utf8).map(lambda t: _splice(raw, *t)),
        *([st.tuples(st.sampled_from(strings), not_strings).map(lambda t: wrong_type(*t))] if strings else []),
        *([st.tuples(st.sampled_from(integers), not_integers).map(lambda t: wrong_type(*t))] if integers else []),
        st.tuples(unknown_names, json_values).map(lambda t: json.dumps({**valid, t[0]: t[1]}).encode()),
        st.sampled_from(required).map(lambda f: json.dumps({k: v for k, v in valid.items() if k != f}).encode()),
        st.tuples(st.sampled_from(["", " ", "\n"]), json_values).map(
            lambda t: (text + t[0] + json.dumps(t[1])).encode()
        ),  # two values
        st.tuples(st.sampled_from(fields), nasty_literals).map(lambda t: with_literal(*t)),
        st.tuples(st.sampled_from(fields), st.integers(2, 200_000)).map(lambda t: deep(*t)),
        json_values.filter(lambda v: not isinstance(v, dict)).map(lambda v: json.dumps(v).encode()),
        st.integers(1, 200_000).map(lambda d: b"[" * d + b"]" * d),
    )


CAPTURE = {"kind": "user", "text": "a valid capture", "key": "k"}
FIELDS = ("kind", "text", "key")
capture_garbage = _broken(CAPTURE, FIELDS, FIELDS, strings=FIELDS)


# -- capture ------------------------------------------------------------------


@FEW
@given(data=st.binary(max_size=300), session=st.sampled_from(["s1", "fresh"]))
def test_capture_rejects_random_bytes_cleanly(ledger, data, session):
    assume(data.strip() != b"")  # empty input is its own case below
    assert_rejected(ledger, om_fast(ledger, "capture", data, session), session)


@SETTINGS
@given(data=capture_garbage, session=st.sampled_from(["s1", "fresh"]))
def test_capture_rejects_a_broken_request_cleanly(ledger, data, session):
    assert_rejected(ledger, om_fast(ledger, "capture", data, session), session)


@FEW
@given(kind=st.text().filter(lambda k: k not in ("user", "assistant", "tool")),
       session=st.sampled_from(["s1", "fresh"]))
def test_capture_rejects_an_unknown_kind(ledger, kind, session):
    data = json.dumps({"kind": kind, "text": "x", "key": ""})
    assert_rejected(ledger, om_fast(ledger, "capture", data, session), session)


@pytest.mark.parametrize("command", ["capture", "apply"])
@pytest.mark.parametrize("data", ["{", '{"kind"', '{"kind":', '"unterminated', '{"a":1,}', "[1,]", "tru", "{'a':1}"])
def test_a_json_syntax_error_is_an_input_error_that_says_where(ledger, command, data):
    result = om(ledger, command, data)
    assert_rejected(ledger, result)
    assert result.returncode == 65, result
    assert "invalid JSON" in result.stderr, result


@pytest.mark.parametrize("command", ["capture", "apply"])
@pytest.mark.parametrize("depth", [300, 496, 900, 5_000, 200_000])
@pytest.mark.parametrize("where", ["top", "field"])
def test_deeply_nested_valid_json_is_an_input_error(ledger, command, depth, where):
    nested = "[" * depth + "]" * depth
    field = "text" if command == "capture" else "observations"
    data = nested if where == "top" else json.dumps({field: "@@"}).replace('"@@"', nested)
    result = om(ledger, command, data)
    assert_rejected(ledger, result)
    assert result.returncode == 65, result


@pytest.mark.parametrize("session", ["s1", "fresh"])
@pytest.mark.parametrize("text", ["", " ", "\t\n\u3000\u2028", "x" * 1_000_001])
def test_capture_rejects_blank_or_oversized_text(ledger, text, session):
    data = json.dumps({"kind": "user", "text": text, "key": ""})
    assert_rejected(ledger, om(ledger, "capture", data, session), session)


@pytest.mark.parametrize("command", ["capture", "apply"])
@pytest.mark.parametrize("size", [0, MAX_INPUT + 1, 20 * MAX_INPUT])
def test_empty_and_over_4_mb_input_is_rejected(ledger, command, size):
    if size == 0:
        data = b""
    elif command == "capture":
        data = json.dumps({"kind": "user", "text": "y" * size, "key": ""}).encode()
    else:
        data = json.dumps({"through": 2, "observations": [{"text": "z" * size, "source_ids": ledger["ids"][:1]}]}).encode()
    assert len(data) == 0 or len(data) > MAX_INPUT
    assert_rejected(ledger, om(ledger, command, data))


def test_a_lone_surrogate_escape_in_a_capture_is_stored_as_the_replacement_character(tmp_path):
    store = tmp_path / "store"
    store.mkdir(mode=0o700)  # an existing store: creating one is announced on stderr
    data = '{"kind":"user","text":"before \\ud800 after \\udfff","key":"\\udbff"}'
    r = run_om("--store", store, "--session", "s1", "capture", input=data)
    assert r.returncode == 0, r
    assert r.stderr == ""
    recalled = run_om("--store", store, "--session", "s1", "recall", r.json["source_id"])
    assert recalled.returncode == 0, recalled
    assert recalled.json["sources"][0]["text"] == "before \ufffd after \ufffd"
    # Same id as the equivalent request written with U+FFFD itself.
    again = run_om("--store", store, "--session", "s1", "capture",
                   input=json.dumps({"kind": "user", "text": "before \ufffd after \ufffd", "key": "\ufffd"}))
    assert again.json == r.json
    assert sqlite_probe.integrity(sqlite_probe.database(store, "s1")) == ["ok"]


# -- apply --------------------------------------------------------------------

def _source_id(kind, key, text):
    # The documented s- recipe, so generators can cite the fixture's sources before it exists.
    canonical = json.dumps([kind, key, text], ensure_ascii=False, separators=(",", ":"))
    return "s-" + hashlib.sha256(canonical.encode()).hexdigest()[:24]


IDS = [_source_id("tool", "k", f"evidence {i}") for i in range(3)]
apply_garbage = _broken(
    {"through": 3, "observations": [{"text": "new", "source_ids": [IDS[2]]}]},
    ("through", "observations", "reflections", "retire"),
    ("through",),
    integers=("through",),
)


@pytest.fixture(scope="module")
def ids(ledger):
    assert ledger["ids"] == IDS
    return IDS


@FEW
@given(data=st.binary(max_size=300), session=st.sampled_from(["s1", "fresh"]))
def test_apply_rejects_random_bytes_cleanly(ledger, data, session):
    assume(data.strip() != b"")
    assert_rejected(ledger, om_fast(ledger, "apply", data, session), session)


def _observation_breakers(ids):
    good = {"text": "new", "source_ids": [ids[2]]}
    return st.one_of(
        st.tuples(st.text(min_size=1, max_size=8).filter(lambda k: k not in ("text", "importance", "source_ids")),
                  json_values).map(lambda t: {**good, t[0]: t[1]}),
        not_strings.map(lambda v: {**good, "text": v}),
        json_values.filter(lambda v: not (isinstance(v, list) and all(isinstance(i, str) for i in v))
                           and v is not None).map(lambda v: {**good, "source_ids": v}),
        st.text().filter(lambda s: s not in ("low", "medium", "high", "critical", "")).map(
            lambda s: {**good, "importance": s}),
        st.sampled_from(["", " \n\t", "\u3000", "w" * 2001]).map(lambda s: {**good, "text": s}),
        st.just({**good, "source_ids": []}),
        st.just({**good, "source_ids": [f"s-{i:024x}" for i in range(101)]}),
        st.text(max_size=30).map(lambda s: {**good, "source_ids": ["s-" + s]}),
        json_values.filter(lambda v: not isinstance(v, dict)),
    )


@SETTINGS
@given(st.data())
def test_apply_rejects_a_broken_checkpoint_cleanly(ledger, ids, data):
    choice = data.draw(st.sampled_from(["bytes", "observation", "through", "other"]))
    if choice == "bytes":
        payload = data.draw(apply_garbage)
    elif choice == "observation":
        payload = json.dumps({"through": 3, "observations": [data.draw(_observation_breakers(ids))]}).encode()
    elif choice == "through":
        # Below the cursor (stale) or beyond the last source: out of range.
        through = data.draw(st.integers(max_value=1) | st.integers(min_value=4, max_value=2**70))
        payload = json.dumps({"through": through}).encode()
    else:
        payload = json.dumps(data.draw(st.sampled_from([
            {"through": 3, "reflections": [{"text": "r", "observation_ids": ["o-" + "0" * 24]}]},
            {"through": 3, "reflections": [{"text": "r", "observation_ids": []}]},
            {"through": 3, "retire": [{"id": "o-" + "0" * 24, "reason": "gone", "replacement_ids": []}]},
            {"through": 3, "retire": [{"id": "o-" + "0" * 24}]},
            {"through": 3, "observations": {"text": "not an array"}},
            {"through": 3, "observations": [{"text": "ok", "source_ids": [ids[0]]}],
             "retire": [{"id": "o-" + "1" * 24, "reason": "r", "replacement_ids": ["o-" + "2" * 24]}]},
        ]))).encode()
    assert_rejected(ledger, om_fast(ledger, "apply", payload))


def test_a_lone_surrogate_escape_in_an_observation_is_stored_as_the_replacement_character(tmp_path):
    store = tmp_path / "store"
    r = run_om("--store", store, "--session", "s1", "capture", input='{"kind":"tool","text":"t","key":""}')
    assert r.returncode == 0, r
    sid = r.json["source_id"]
    data = '{"through":1,"observations":[{"text":"odd \\udc80 text","source_ids":["%s"]}]}' % sid
    applied = run_om("--store", store, "--session", "s1", "apply", input=data)
    assert applied.returncode == 0, applied
    [entry] = run_om("--store", store, "--session", "s1", "view", "--all").json
    assert entry["text"] == "odd \ufffd text"
