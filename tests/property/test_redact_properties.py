"""Properties of redaction over generated text: v1's three rules exactly as v1's RE2
patterns give them, the additional rules after them, the substring precheck never
skipping a rule that matches; total, idempotent, and leak-free for generated members
of known secret families."""

import re
import string

from hypothesis import example, given, settings
from hypothesis import strategies as st

from om import redact as redaction
from om.redact import MARKER, redact, strip_private, v1_redact

ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits

# Any code point, surrogates included, with the characters that tend to sit
# next to secrets over-represented so the rules actually fire.
noise = st.lists(
    st.one_of(
        st.text(max_size=12),
        st.text(alphabet=string.ascii_letters + string.digits, min_size=1, max_size=20),
        st.sampled_from(list(" \t\n\r\x00\x0b\u2028\ud800\"'=:@/{}[]$%<>-_.,\\")),
        st.sampled_from(["sk-", "ghp_", "Bearer ", "AKIA", "xoxb-", "://", "u:p@", "token=",
                         "password: ", "Authorization: ", "-----BEGIN RSA PRIVATE KEY-----",
                         "-----END RSA PRIVATE KEY-----", "eyJ", "api_key", MARKER, "${",
                         "Basic ", "hunter2hunter2", "a1b2c3d4e5f6"]),
    ),
    max_size=30,
).map("".join)


def _token(prefix, alphabet, size):
    return st.text(alphabet=alphabet, min_size=size, max_size=size).map(lambda s: prefix + s)


secrets = st.one_of(
    _token("ghp_", ALNUM, 36),
    _token("gho_", ALNUM, 36),
    _token("github_pat_", ALNUM + "_", 82),
    _token("AKIA", UPPER_DIGITS, 16),
    _token("ASIA", UPPER_DIGITS, 16),
    st.tuples(st.integers(10**9, 10**12), st.integers(10**9, 10**12),
              st.text(alphabet=ALNUM, min_size=24, max_size=24))
    .map(lambda t: "xoxb-%d-%d-%s" % t),
    _token("sk-", ALNUM + "_-", 48).filter(lambda s: not s.endswith("-")),
    _token("sk_live_", ALNUM, 24),
    _token("npm_", ALNUM, 36),
)

# What separates the secret from the surrounding noise: word boundaries are
# part of the token rules, so the secret must not be glued to word characters.
separators = st.sampled_from([" ", "\n", "\t", "=", ": ", "\"", "'", "(", ",", " Bearer "])


@settings(max_examples=400)
@given(noise)
@example("\ud800\udfff\x00\u2028")
@example("token=" + MARKER + "x")
@example("Authorization: abcdefgh1234 Basic")
@example("https://a:b@c:d@e")
@example(" ghp_" + "0" * 36 + " Authorization: A0000000 00000001")
def test_redaction_never_raises_and_is_idempotent(text):
    once = redact(text)
    assert isinstance(once, str)
    assert redact(once) == once


@settings(max_examples=400)
@given(noise, separators, secrets, separators, noise)
def test_a_generated_secret_embedded_in_random_text_never_survives(before, left, secret, right, after):
    text = before + left + secret + right + after
    out = redact(text)
    assert secret not in out
    assert redact(out) == out


@settings(max_examples=200)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300))
def test_text_without_any_secret_marker_keeps_its_length_or_gains_markers(text):
    # Only whole secrets are replaced: everything redact removes is replaced
    # by the marker, so the result never loses text without saying so.
    out = redact(text)
    assert out == text or MARKER in out


def test_huge_text_with_and_without_triggers_is_handled():
    clean = "line of ordinary output 0123456789\n" * 150_000
    assert redact(clean) is clean
    dirty = ("x = 1; token: " + "t" * 70 + "tokentoken=" * 10_000 + " password=hunter2hunter2\n") * 20
    out = redact(dirty)
    assert "hunter2hunter2" not in out
    assert redact(out) == out


# -- v1's three rules against their patterns ------------------------------------------------------

# v1's patterns exactly, in Python's re with RE2's meaning: ASCII \b (re.ASCII), \s spelled as RE2's
# [\t\n\f\r ] (Python's has \v), and the Bearer class as Go's (?i) folds it: [A-Za-z] gains
# U+017F and U+212A, which fold to s and k (re.ASCII keeps Python from folding anything else).
V1_PATTERNS = [
    re.compile(r"(?s)-----BEGIN [^-]*PRIVATE KEY-----.*?-----END [^-]*PRIVATE KEY-----"),
    re.compile(r"\b(?:sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,})\b", re.ASCII),
    re.compile(r"(?i)\bBearer[\t\n\f\r ]+[A-Za-z0-9._~+/\u017f\u212a-]+=*", re.ASCII),
]


def v1_reference(text):
    for pattern in V1_PATTERNS:
        text = pattern.sub(MARKER, text)
    return text


# Text made of the pieces v1's patterns turn on, so that every edge is reached often.
v1_pieces = st.lists(
    st.one_of(
        st.sampled_from(["sk-", "gh", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "ghx_", "_", "-", "--", "=", "==",
                         "Bearer", "bearer", "BeArEr", "xBearer", "-----BEGIN ", "-----END ", "PRIVATE KEY",
                         "private key", "-----", "rsa ", "OPENSSH ", MARKER, "abcdefghijklmnop",
                         "0123456789abcdefghij", "k", "s", "a1", "Z"]),
        st.sampled_from(list(" \t\n\r\f\x0b\x00._~+/@:é\u017f\u212a\u0131\u2028\ud800")),
        st.text(max_size=4),
    ),
    max_size=40,
).map("".join)


@settings(max_examples=1500)
@given(v1_pieces)
@example("Bearer abc=def")
@example("sk-abcdefghijklmnop-")
@example("see sk-abcdefghijklmnop_- now")
@example("-----BEGIN rsa PRIVATE KEY-----\nline\n-----END rsa PRIVATE KEY-----")
@example("-----BEGIN x PRIVATE KEY----------END x PRIVATE KEY-----")
def test_v1s_three_rules_give_exactly_what_v1s_patterns_give(text):
    assert v1_redact(text) == v1_reference(text)


@settings(max_examples=400)
@given(st.one_of(v1_pieces, noise))
def test_the_additional_rules_run_on_v1s_result_and_the_precheck_skips_none_that_matches(text):
    # The fallback: every additional rule, whatever the substring precheck says.
    everything = {name for name, _source, _kind in redaction._RULES}
    assert redact(text) == redaction._additional(v1_reference(text), everything)



# -- <private> spans of user prompts ------------------------------------------------------------

tags = st.sampled_from(["<private>", "</private>", "<PRIVATE>", "</Private>", "<private", "private>", "<"])


@settings(max_examples=400)
@given(st.lists(st.one_of(tags, st.text(max_size=6)), max_size=20).map("".join))
def test_stripping_private_spans_never_raises_and_is_idempotent(text):
    once = strip_private(text)
    assert strip_private(once) == once
    assert "<private>" not in once.lower() and "</private>" not in once.lower()


@settings(max_examples=400)
@given(st.lists(st.tuples(st.sampled_from(["public", "private", "nested"]),
                          st.text(alphabet="abc xyz\n.", max_size=8)), max_size=8),
       st.booleans())
def test_no_character_of_a_span_survives_and_every_public_piece_does_in_order(segments, left_open):
    text, public = "", []
    for how, piece in segments:
        if how == "public":
            text += piece
            public.append(piece)
        elif how == "private":
            text += f"<private>SECRET{piece}</private>"
        else:
            text += f"<Private>SECRET<private>{piece}SECRET</private>{piece}SECRET</PRIVATE>"
    if left_open:
        text += "<private>SECRET tail"
    out = strip_private(text)
    assert "SECRET" not in out
    at = 0
    for piece in public:
        at = out.index(piece, at) + len(piece)
