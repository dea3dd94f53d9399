"""The ID recipes of ledger v1, checked against an independent implementation."""

import hashlib
import json

import pytest

from om import ids
from om.store import session_dir

TRICKY = [
    "plain",
    "a<b>&c",
    "emoji \U0001F600 and \u2028 line \u2029 para",
    "quote \" backslash \\ tab \t nl \n nul \x00 del \x7f",
    "accents: café naïve Ünïcödé",
    "  surrounding space  ",
    "\x1c\x1d\x1e\x1f",
]


def reference(prefix, value):
    canonical = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return prefix + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:24]


@pytest.mark.parametrize("text", TRICKY)
def test_source_ids_hash_kind_key_and_text_as_canonical_json(text):
    assert ids.source_id("tool", "call-1", text) == reference("s-", ["tool", "call-1", text])


@pytest.mark.parametrize("text", TRICKY)
def test_observation_and_reflection_ids_follow_the_recipe(text):
    assert ids.observation_id(text, ["s-1", "s-2"], "high") == reference("o-", [text, ["s-1", "s-2"], "high"])
    assert ids.reflection_id(text, ["o-1"]) == reference("r-", [text, ["o-1"], "medium"])


@pytest.mark.parametrize("session", TRICKY + ["../../etc/passwd", "x" * 256])
def test_session_directory_is_the_hash_of_the_json_string_literal(session):
    expected = "session-" + hashlib.sha256(
        json.dumps(session, ensure_ascii=False).encode("utf-8")
    ).hexdigest()[:24]
    assert session_dir("/store", session) == "/store/" + expected


def test_pinned_vectors_do_not_drift():
    # Pinned so that any change of the canonical encoding shows up as a failure.
    assert ids.session_hash("s1") == hashlib.sha256(b'"s1"').hexdigest()[:24]
    assert ids.source_id("user", "", "<>&\u2028\U0001F600") == reference("s-", ["user", "", "<>&\u2028\U0001F600"])
    assert ids.canonical_json(["<>&", "\u2028", "\U0001F600", "\x01"]) == '["<>&","\u2028","\U0001F600","\\u0001"]'


def test_canonical_json_keeps_html_characters_and_line_separators_literal():
    assert ids.canonical_json({"t": "<a href='x'>&amp;</a>\u2028"}) == '{"t":"<a href=\'x\'>&amp;</a>\u2028"}'


@pytest.mark.parametrize(
    "text, trimmed",
    [
        ("  a  ", "a"),
        ("\u3000a\u00a0", "a"),
        ("\x85a\u2028", "a"),
        ("\x1ca\x1f", "\x1ca\x1f"),  # Go keeps U+001C..U+001F; str.strip() would not
        ("\u200ba\u200b", "\u200ba\u200b"),  # zero-width space is not white space in Go
    ],
)
def test_trim_space_follows_go_not_python(text, trimmed):
    assert ids.trim_space(text) == trimmed
