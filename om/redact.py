"""Secret redaction applied to text before it is hashed or stored, and the
`<private>` spans of user prompts taken out before that (``strip_private``).

Invariant: ``redact(text)`` is a pure, total function of ``text`` (it never
raises on any ``str``, lone surrogates and NUL included), it is idempotent
(``redact(redact(t)) == redact(t)``), and every recognised secret is replaced by
the constant ``MARKER``, v1's ``[REDACTED CREDENTIAL]`` for every rule (one
marker, one meaning). Because source, observation and reflection IDs are
hashes of redacted text, the rules below are part of the storage format:
``redact(t) == additional(v1_redact(t))``. ``v1_redact`` is exactly what the
earlier implementations did (their three RE2 patterns, in their order), so text
they stored keeps its ID; the additional rules run on its result and change
only text v1 left alone (a marker is never rewritten), so they change only IDs
of text containing a newly recognised secret.

v1's rules (``v1_redact``), each replacing every leftmost-first,
non-overlapping match of its pattern in the result of the one before, as Go's
``regexp.ReplaceAllString`` did:

1. ``(?s)-----BEGIN [^-]*PRIVATE KEY-----.*?-----END [^-]*PRIVATE KEY-----``:
   a PEM private key block, any label (``-----BEGIN rsa PRIVATE KEY-----``),
   through the nearest end line.
2. ``\\b(?:sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,})\\b``: the trailing
   boundary backtracks, so ``sk-abcdefghijklmnop-`` keeps its last ``-``, and a
   ``gh…_`` token glued to a ``_`` is no match.
3. ``(?i)\\bBearer\\s+[A-Za-z0-9._~+/-]+=*``: the word is included (prose such
   as "bearer of" is hit too), ``xBearer`` is not, and only ``=`` padding ends
   the token (``Bearer abc=def`` keeps ``def``). Go's ``(?i)`` folds the class
   too, so ``ſ`` (U+017F) and the Kelvin sign (U+212A) are token characters.

RE2 semantics throughout: ``\\b`` is ASCII-word based, ``\\s`` is
``[\\t\\n\\f\\r ]`` (no vertical tab), ``[^-]`` and ``(?s).`` match newlines.
They are implemented as plain string scans (no ``re``: linear in the text, and
the hook never imports ``re`` for them); tests compare them with the patterns
compiled by Python's ``re``.

The additional rules, applied in this order after v1's (``\\b`` and
whitespace as above):

4. Vendor tokens: ``github_pat_…``, AWS access key ids (``AKIA``/``ASIA``/
   ``ABIA``/``ACCA`` + 16 ``[A-Z0-9]``), Slack ``xox[abposr]-…``, Stripe
   ``[sr]k_(live|test)_…``, Google ``AIza…``, npm ``npm_…``, PyPI
   ``pypi-AgEIcHlwaS5vcmc…``, HashiCorp Vault ``hvs.…``, and JSON Web Tokens
   (``eyJ….eyJ….sig``).
5. Credentials in URLs: ``scheme://user:password@`` keeps the scheme and user
   and redacts the password (up to the last ``@`` of the authority).
6. ``Authorization:`` / ``Authorization=`` values (``Proxy-Authorization``
   too): a known scheme word (Basic, Token, Digest, ...) is kept and the
   credential after it redacted; an unknown leading word is kept only when the
   credential after it looks like a secret, otherwise the first word itself is
   judged as the credential.
7. Assignments ``NAME=value``, ``NAME: value``, ``"name": "value"``,
   ``name => 'value'``, ``NAME := value`` (shell, env files, YAML, JSON, code,
   HTTP headers, query strings) whose NAME is secret-like and whose value
   looks like a secret. Only the value is replaced.

Which names are secret-like and which values look like secrets (rules 5 to 7)
is judged by om.credentials, imported with the patterns.

Private spans (``strip_private``, om's extension to v1, applied to user prompts
only, before redaction): each ``<private>…</private>`` span, tags included and
tags matched in any ASCII case, becomes ``PRIVATE_MARKER``; spans nest (the span
ends where its own closing tag is); an opening tag never closed keeps everything
after it out, and a closing tag never opened everything before it, so a span
cut in two (a prompt trimmed to the capture limit) never leaks its other half.
Text without a ``<`` costs one substring search.

Cost: v1's rules are a few substring searches on text without their trigger
words. For the additional rules, ``re`` and om.credentials are imported and the
patterns compiled only when a plain substring precheck (``_triggered``) finds a
trigger for some rule; it never skips a rule that would match (a property test compares it
with running every rule). Hooks import this module on every event, so this
matters.
"""

MARKER = "[REDACTED CREDENTIAL]"
#: What a `<private>` span of a user prompt becomes (docs/forget.md).
PRIVATE_MARKER = "[PRIVATE]"
_OPEN, _CLOSE = "<private>", "</private>"

_WS = "[\\t\\n\\f\\r ]"

# (name, pattern source, replacement kind) of the additional rules. Order is the format.
_RULES = (
    ("github_pat", r"\bgithub_pat_[A-Za-z0-9_]{20,}", None),
    ("aws", r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b", None),
    ("slack", r"\bxox[abposr]-[A-Za-z0-9-]{10,}", None),
    ("stripe", r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}", None),
    ("google", r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])", None),
    ("npm", r"\bnpm_[A-Za-z0-9]{36}\b", None),
    ("pypi", r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{30,}", None),
    ("vault", r"\bhvs\.[A-Za-z0-9_-]{24,}", None),
    ("jwt",
     r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", None),
    ("url",
     r"\b([A-Za-z][A-Za-z0-9+.-]{0,31}://)([^\t\n\f\r /?#@:\"'<>]{0,256}):"
     r"([^\t\n\f\r /?#\"'<>]{1,1024})@", "url"),
    ("authorization",
     r"\b(authorization\\?[\"']?" + _WS + r"*[:=][\t ]*\\?[\"']?)"
     r"(?:([A-Za-z][A-Za-z0-9_.+-]{0,40})[\t ]+)?"
     r"([^\t\n\f\r \"'\\`,;<>]+)", "authorization"),
    # Anchored on the keyword, not the name start: a leading run of name
    # characters would make the engine try every offset of every identifier.
    # The name's head is found by walking back (see _replace_assignment).
    ("assignment",
     r"((?:secret|token|pass|pwd|key|credential)[A-Za-z0-9_.-]{0,64})"
     r"\\?[\"']?[\t ]*(?::=|=>|[:=])[\t ]*"
     r"(?:\\?\"([^\"\\\r\n]+)\\?\"|'([^'\\\r\n]+)'"
     r"|([^\t\n\f\r \"'\\`,;&|<>(){}\[\]]+))", "assignment"),
)

_ASSIGNMENT_WORDS = ("secret", "token", "pass", "pwd", "key", "credential")


# -- v1's three rules, as string scans -------------------------------------------

_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_WORD = frozenset(_ALNUM + "_")  # RE2's ASCII word characters
_RE2_SPACE = "\t\n\f\r "
_SPACE_SET = frozenset(_RE2_SPACE)
_SK_CHARS = _ALNUM + "_-"
_BEARER_CHARS = _ALNUM + "._~+/-\u017f\u212a"
_GH_KINDS = "pousr"


def v1_redact(text):
    """``text`` after v1's three rules, exactly as the earlier implementations stored it."""
    return _v1_redact(text, text.lower(), "_" in text)


def _v1_redact(text, lower, underscore):
    """v1_redact, given ``text.lower()`` and whether ``text`` holds a ``_``; returns
    ``text`` itself when nothing matched."""
    original = text
    if "-----BEGIN " in text:
        text = _pem(text)
    if "sk-" in text or underscore and "gh" in text:
        text = _tokens(text)
    # A marker holds no "bearer" and splits any word it lands in, so the
    # original's lowering still tells whether the rule can match.
    if "bearer" in lower:
        # The scan needs the offsets of ``text``: ASCII letters lowered, nothing else.
        ascii_lower = lower if text is original and text.isascii() else _ascii_lower(text)
        text = _bearer(text, ascii_lower)
    return text


def _run_end(text, start, chars):
    """The end of the run of `chars` starting at `start` (C-speed strips of bounded slices)."""
    while True:
        chunk = text[start:start + 64]
        rest = len(chunk.lstrip(chars))
        if rest or len(chunk) < 64:
            return start + len(chunk) - rest
        start += 64


def _key_line_end(text, start):
    """Where ``[^-]*PRIVATE KEY-----`` starting at `start` puts its dashes, or -1.

    ``[^-]*`` stops at the first ``-``, so that dash must open the ``-----``
    right after ``PRIVATE KEY``: one candidate, no search."""
    dash = text.find("-", start)
    if dash - 11 >= start and text.startswith("PRIVATE KEY", dash - 11) and text.startswith("-----", dash):
        return dash
    return -1


def _pem(text):
    parts, last, pos = [], 0, 0
    while True:
        begin = text.find("-----BEGIN ", pos)
        if begin < 0:
            break
        dashes = _key_line_end(text, begin + 11)
        if dashes < 0:
            pos = begin + 1
            continue
        end = _pem_end(text, dashes + 5)
        if end < 0:
            break  # no end line after this one: none after a later begin either
        parts.append(text[last:begin])
        parts.append(MARKER)
        last = pos = end
    return _joined(parts, text, last)


def _pem_end(text, pos):
    """End of the nearest ``-----END [^-]*PRIVATE KEY-----`` at or after `pos` (``.*?``), or -1."""
    while True:
        start = text.find("-----END ", pos)
        if start < 0:
            return -1
        dashes = _key_line_end(text, start + 9)
        if dashes >= 0:
            return dashes + 5
        pos = start + 1


def _tokens(text):
    parts, last = [], 0
    sk, gh = text.find("sk-"), _next_gh(text, 0)
    while sk >= 0 or gh >= 0:
        start = sk if gh < 0 or 0 <= sk < gh else gh
        if start and text[start - 1] in _WORD:
            end = -1
        else:
            end = _sk_end(text, start) if start == sk else _gh_end(text, start)
        if end < 0:
            resume = start + 1
        else:
            parts.append(text[last:start])
            parts.append(MARKER)
            last = resume = end
        if sk >= 0 and sk < resume:
            sk = text.find("sk-", resume)
        if gh >= 0 and gh < resume:
            gh = _next_gh(text, resume)
    return _joined(parts, text, last)


def _next_gh(text, pos):
    while True:
        pos = text.find("gh", pos)
        if pos < 0 or text[pos + 2:pos + 3] in _GH_KINDS and text.startswith("_", pos + 3):
            return pos
        pos += 1


def _sk_end(text, start):
    """``sk-[A-Za-z0-9_-]{16,}\\b`` at `start`: the longest run ending on a word boundary."""
    body = start + 3
    end = _run_end(text, body, _SK_CHARS)
    if end - body < 16:
        return -1
    if text[end - 1] != "-":
        return end  # a word character, and what follows the run is none
    # Inside the run a boundary lies only between a word character and "-".
    end = body + len(text[body:end].rstrip("-"))
    return end if end - body >= 16 else -1


def _gh_end(text, start):
    """``gh[pousr]_[A-Za-z0-9]{20,}\\b`` at `start` (its prefix already checked)."""
    body = start + 4
    end = _run_end(text, body, _ALNUM)
    if end - body < 20 or text.startswith("_", end):
        return -1
    return end


def _bearer(text, haystack):
    parts, last, pos = [], 0, 0
    while True:
        start = haystack.find("bearer", pos)
        if start < 0:
            break
        pos = start + 1
        token = start + 6
        if start and text[start - 1] in _WORD or text[token:token + 1] not in _SPACE_SET:
            continue
        token += 1
        if text[token:token + 1] in _SPACE_SET:
            token = _run_end(text, token, _RE2_SPACE)
        end = _run_end(text, token, _BEARER_CHARS)
        if end == token:
            continue
        if text.startswith("=", end):
            end = _run_end(text, end, "=")
        parts.append(text[last:start])
        parts.append(MARKER)
        last = pos = end
    return _joined(parts, text, last)


def _joined(parts, text, last):
    if not parts:
        return text
    parts.append(text[last:])
    return "".join(parts)


# -- the additional rules ----------------------------------------------------------

_compiled = None


def _triggered(text, lower, underscore):
    """Names of the additional rules that could match, by plain substring tests only.

    `underscore` may be True for a text without one (it only costs more tests)."""
    hits = set()
    if underscore:
        if "github_pat_" in text:
            hits.add("github_pat")
        if "k_live_" in text or "k_test_" in text:
            hits.add("stripe")
        if "npm_" in text:
            hits.add("npm")
    if "IA" in text and ("AKIA" in text or "ASIA" in text or "ABIA" in text) or "ACCA" in text:
        hits.add("aws")
    if "xox" in text:
        hits.add("slack")
    if "AIza" in text:
        hits.add("google")
    if "pypi-" in text:
        hits.add("pypi")
    if "hvs." in text:
        hits.add("vault")
    if "eyJ" in text:
        hits.add("jwt")
    if "://" in text and "@" in text:
        hits.add("url")
    if "=" in text or ":" in text:
        if "authorization" in lower:
            hits.add("authorization")
        for word in _ASSIGNMENT_WORDS:
            if word in lower:
                hits.add("assignment")
                break
    return hits


def redact(text):
    """Return ``text`` with every recognised secret replaced by ``MARKER``."""
    # One lowering serves both v1's Bearer rule and the precheck: text.lower()
    # finds every ASCII-case-insensitive "bearer" (it can only find more).
    lower, underscore = text.lower(), "_" in text
    redacted = _v1_redact(text, lower, underscore)
    if redacted is not text:
        # v1's markers only take characters away: `underscore` may stay.
        text, lower = redacted, redacted.lower()
    hits = _triggered(text, lower, underscore)
    if hits:
        text = _additional(text, hits)
    return text


def _additional(text, hits):
    for name, compiled, decide in _rules():
        if name in hits:
            if decide is None:
                text = compiled.sub(MARKER, text)
            else:
                text = _sub(compiled, decide, text)
    return text


def strip_private(text):
    """``text`` with every ``<private>`` span replaced by ``PRIVATE_MARKER`` (see the module docstring)."""
    if "<" not in text:
        return text
    lower = _ascii_lower(text)
    if _OPEN not in lower and _CLOSE not in lower:
        return text
    parts, depth, last, pos = [], 0, 0, 0
    while True:
        opening, closing = lower.find(_OPEN, pos), lower.find(_CLOSE, pos)
        if opening < 0 and closing < 0:
            break
        if closing < 0 or 0 <= opening < closing:
            if depth == 0:
                parts.append(text[last:opening])
            depth += 1
            pos = opening + len(_OPEN)
            continue
        pos = closing + len(_CLOSE)
        if depth == 0:
            parts = []  # a closing tag never opened: everything before it was private
        else:
            depth -= 1
            if depth:
                continue
        parts.append(PRIVATE_MARKER)
        last = pos
    if depth:
        parts.append(PRIVATE_MARKER)
    else:
        parts.append(text[last:])
    return "".join(parts)


def _ascii_lower(text):
    """Lowercase ASCII letters only, so offsets still match ``text``.

    The case-insensitive rules search this copy with case-sensitive patterns:
    the same matches as ``re.IGNORECASE | re.ASCII``, several times faster."""
    if text.isascii():
        return text.lower()
    return text.translate(_ASCII_LOWER)


_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def _sub(pattern, decide, text):
    """Like ``pattern.sub`` with a judge: ``decide(match, text)`` names the
    group to replace, or None to keep the match. Matching runs on the
    ASCII-lowered copy; names and values are read from ``text``. A kept match
    is rescanned from the end of its group 1, so a secret inside a kept value
    is still found."""
    haystack = _ascii_lower(text)
    parts = []
    last = pos = 0
    while True:
        match = pattern.search(haystack, pos)
        if match is None:
            break
        group = decide(match, text)
        if group and text.startswith(MARKER, match.start(group)):
            # Already redacted: the marker's space ends a value, so its head alone matched.
            group = None
        if group is None:
            pos = match.end(1)
            continue
        parts.append(text[last:match.start(group)])
        parts.append(MARKER)
        last = pos = match.end(group)
    if not parts:
        return text
    parts.append(text[last:])
    return "".join(parts)


def _rules():
    global _compiled
    if _compiled is None:
        import re

        from om import credentials

        replacers = {
            None: None,
            "url": credentials.replace_url,
            "authorization": credentials.replace_authorization,
            "assignment": credentials.replace_assignment,
        }
        _compiled = [(name, re.compile(source, re.ASCII), replacers[kind]) for name, source, kind in _RULES]
    return _compiled
