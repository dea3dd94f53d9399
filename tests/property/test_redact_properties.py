"""Properties of redaction over generated text: total, idempotent, and leak-free
for generated members of known secret families."""

import string

from hypothesis import example, given, settings
from hypothesis import strategies as st

from om.redact import MARKER, redact

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
