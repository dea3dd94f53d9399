"""Secret redaction applied to text before it is hashed or stored.

Invariant: ``redact(text)`` is a pure, total function of ``text`` (it never
raises on any ``str``, lone surrogates and NUL included), it is idempotent
(``redact(redact(t)) == redact(t)``), and every recognised secret is replaced by
the constant ``MARKER``, v1's ``[REDACTED CREDENTIAL]`` for every rule (one
marker, one meaning). Because source, observation and reflection IDs are
hashes of redacted text, the rules below are part of the storage format: the
three legacy rules come first, unchanged and in their historical order, so text
the earlier implementations stored keeps its ID; the later rules only change
IDs of text containing a newly recognised secret.

Rules, applied in this order (``\\b`` is ASCII-word based and whitespace means
``[\\t\\n\\f\\r ]``, as in RE2 which the earlier implementations used):

1. PEM private key blocks, ``-----BEGIN … PRIVATE KEY-----`` through
   ``-----END … PRIVATE KEY-----`` across lines (legacy).
2. ``sk-`` tokens of 16+ ``[A-Za-z0-9_-]`` after a word boundary, and GitHub
   tokens ``gh[pousr]_`` with 20+ alphanumerics, word-bounded (legacy).
3. ``Bearer <token>`` (token ``[A-Za-z0-9._~+/=-]+``), case-insensitive, the
   word included and not word-bounded (legacy; it also hits prose such as
   "bearer of", kept for ID compatibility).
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
   credential after it passes the value heuristic below, otherwise the first
   word itself is judged as the credential.
7. Assignments ``NAME=value``, ``NAME: value``, ``"name": "value"``,
   ``name => 'value'``, ``NAME := value`` (shell, env files, YAML, JSON, code,
   HTTP headers, query strings) whose NAME is secret-like: split into words
   (``_ - .`` and camelCase), a word is ``secret``, ``token``, ``password``,
   ``passwd``, ``passphrase``, ``pass``, ``pwd``, ``credential(s)`` or ends in
   one of ``password/passwd/passphrase/secret/token/apikey/accesskey/
   privatekey/secretkey`` (``PGPASSWORD``, ``authToken``), or two adjacent
   words are ``api|access|private|secret|session|signing|encryption|master|
   account`` + ``key``. Names whose last word describes rather than holds the
   secret (``token_count``, ``secret_name``, ``password_policy``,
   ``AWS_ACCESS_KEY_ID``, ``private_key_path``...) or that start with
   ``max``/``min``/``num`` are left alone. Only the value is replaced.

Value heuristic (rules 6 and 7) - a value is treated as a secret when ALL hold:

* it is not a reference or placeholder: not starting with ``$`` (``$VAR``,
  ``${VAR}``, ``${{ secrets.X }}``), not ``%VAR%``, no ``{{``/``{%``, not
  ``<...>``, no ``(`` (a call such as ``getenv("X")``), not ``os.environ…``/
  ``process.env…``, not a dotted identifier path without digits
  (``self.token``, ``settings.SECRET_KEY``), not a path (``/``, ``./``, ``~/``), not a URL,
  not one repeated character (``********``, ``xxxxxxxx``), not already
  redacted;
* it is at least 8 characters long and contains no whitespace (a quoted value
  with spaces is prose, not a credential);
* it is not a placeholder word (``required``, ``string``, ``example``,
  ``changeme``, ``null``, ``true``...) and does not contain ``your``,
  ``example``, ``placeholder``, ``xxxx``, ``changeme``, ``dummy``, ``redacted``;
* it has a digit, or a symbol other than ``_ - .``, or is 32+ characters
  long, or is 16+ characters mixing both cases with an uppercase run of two or
  more (base64 rather than camelCase). So ``hunter2hunter2``, ``P@ssw0rd!``
  and ``MIIEvQIBADANBgkq`` are redacted; ``production``, ``prod-db-secret``,
  ``getAccessTokenValue`` and ``config.api_key`` are not.

Cost: ``re`` is imported and the patterns compiled only when a plain substring
precheck finds a trigger for some rule; text without any trigger is returned
as is. Hooks import this module on every event, so this matters.
"""

MARKER = "[REDACTED CREDENTIAL]"

_WS = "[\\t\\n\\f\\r ]"

# (name, precheck, pattern source, replacement kind). Order is the format.
_RULES = (
    ("pem", "-----BEGIN",
     "-----BEGIN [A-Z ]*PRIVATE KEY-----(?s:.*?)-----END [A-Z ]*PRIVATE KEY-----", None),
    ("sk_gh", None,
     r"\bsk-[A-Za-z0-9_-]{16,}|\bgh[pousr]_[A-Za-z0-9]{20,}\b", None),
    ("bearer", None,
     r"bearer" + _WS + r"+[A-Za-z0-9._~+/=-]+", "whole"),
    ("github_pat", "github_pat_", r"\bgithub_pat_[A-Za-z0-9_]{20,}", None),
    ("aws", None, r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b", None),
    ("slack", "xox", r"\bxox[abposr]-[A-Za-z0-9-]{10,}", None),
    ("stripe", None, r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}", None),
    ("google", "AIza", r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])", None),
    ("npm", "npm_", r"\bnpm_[A-Za-z0-9]{36}\b", None),
    ("pypi", "pypi-", r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{30,}", None),
    ("vault", "hvs.", r"\bhvs\.[A-Za-z0-9_-]{24,}", None),
    ("jwt", "eyJ",
     r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", None),
    ("url", "://",
     r"\b([A-Za-z][A-Za-z0-9+.-]{0,31}://)([^\t\n\f\r /?#@:\"'<>]{0,256}):"
     r"([^\t\n\f\r /?#\"'<>]{1,1024})@", "url"),
    ("authorization", None,
     r"\b(authorization\\?[\"']?" + _WS + r"*[:=][\t ]*\\?[\"']?)"
     r"(?:([A-Za-z][A-Za-z0-9_.+-]{0,40})[\t ]+)?"
     r"([^\t\n\f\r \"'\\`,;<>]+)", "authorization"),
    # Anchored on the keyword, not the name start: a leading run of name
    # characters would make the engine try every offset of every identifier.
    # The name's head is found by walking back (see _replace_assignment).
    ("assignment", None,
     r"((?:secret|token|pass|pwd|key|credential)[A-Za-z0-9_.-]{0,64})"
     r"\\?[\"']?[\t ]*(?::=|=>|[:=])[\t ]*"
     r"(?:\\?\"([^\"\\\r\n]+)\\?\"|'([^'\\\r\n]+)'"
     r"|([^\t\n\f\r \"'\\`,;&|<>(){}\[\]]+))", "assignment"),
)

_ASSIGNMENT_WORDS = ("secret", "token", "pass", "pwd", "key", "credential")

_compiled = None


def _triggered(text):
    """Names of the rules that could match, by plain substring tests only."""
    hits = set()
    if "-----BEGIN" in text:
        hits.add("pem")
    underscore = "_" in text
    if "sk-" in text or underscore and (
            "ghp_" in text or "gho_" in text or "ghu_" in text or "ghs_" in text
            or "ghr_" in text):
        hits.add("sk_gh")
    if underscore:
        if "github_pat_" in text:
            hits.add("github_pat")
        if "k_live_" in text or "k_test_" in text:
            hits.add("stripe")
        if "npm_" in text:
            hits.add("npm")
    if "AKIA" in text or "ASIA" in text or "ABIA" in text or "ACCA" in text:
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
    lower = text.lower()
    if "bearer" in lower:
        hits.add("bearer")
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
    hits = _triggered(text)
    if not hits:
        return text
    for name, compiled, decide in _rules():
        if name in hits:
            if decide is None:
                text = compiled.sub(MARKER, text)
            else:
                text = _sub(compiled, decide, text)
    return text


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

        replacers = {
            None: None,
            "whole": _replace_whole,
            "url": _replace_url,
            "authorization": _replace_authorization,
            "assignment": _replace_assignment,
        }
        _compiled = [
            (name, re.compile(source, re.ASCII), replacers[kind])
            for name, _trigger, source, kind in _RULES
        ]
    return _compiled


def _replace_whole(match, text):
    return 0


def _group(match, text, group):
    start = match.start(group)
    return None if start < 0 else text[start:match.end(group)]


def _replace_url(match, text):
    return None if _is_reference(_group(match, text, 3)) else 3


_AUTH_SCHEMES = frozenset((
    "basic", "bearer", "token", "digest", "negotiate", "ntlm", "hawk", "apikey",
    "api-key", "key", "sso-key", "aws4-hmac-sha256", "dpop", "gnap", "mac",
    "oauth", "jwt", "splunk", "ghtoken", "otoken", "session",
))


def _replace_authorization(match, text):
    scheme, credential = _group(match, text, 2), _group(match, text, 3)
    if scheme is not None:
        if _is_reference(credential):
            return None
        if scheme.lower() in _AUTH_SCHEMES or looks_like_secret(credential):
            return 3
        return 2 if looks_like_secret(scheme) else None
    return 3 if looks_like_secret(credential) else None


_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_NAME_HEAD_MAX = 64


def _replace_assignment(match, text):
    # The value test is cheaper and fails far more often, so it goes first.
    group = 2 if match.start(2) >= 0 else 3 if match.start(3) >= 0 else 4
    if match.end(group) - match.start(group) < 8:
        return None
    if not looks_like_secret(text[match.start(group):match.end(group)]):
        return None
    start = match.start()
    head = start
    while head > 0 and text[head - 1] in _NAME_CHARS:
        head -= 1
        if start - head > _NAME_HEAD_MAX:
            return None
    return group if is_secret_name(text[head:match.end(1)]) else None


_NAME_WORDS = frozenset((
    "secret", "token", "password", "passwd", "passphrase", "pass", "pwd",
    "credential", "credentials",
))
_NAME_ENDINGS = (
    "password", "passwd", "passphrase", "secret", "token", "apikey", "accesskey",
    "privatekey", "secretkey",
)
_KEY_QUALIFIERS = frozenset((
    "api", "access", "private", "secret", "session", "signing", "encryption",
    "master", "account",
))
# Last words that make the name describe a secret rather than hold one.
_DESCRIPTIVE_TAILS = frozenset((
    "count", "counts", "limit", "limits", "type", "types", "name", "names", "url",
    "uri", "endpoint", "path", "file", "dir", "env", "var", "length", "len",
    "size", "ttl", "expiry", "expires", "expiration", "in", "at", "policy",
    "header", "field", "param", "kind", "mode", "format", "prefix", "suffix",
    "used", "usage", "budget", "id", "ids", "version", "enabled", "required",
    "min", "max", "hint", "label", "rotation", "location", "source", "ref",
))
_DESCRIPTIVE_HEADS = frozenset(("max", "min", "num", "total"))


def _name_words(name):
    """``DB_password``, ``dbPassword``, ``DB-PASSWORD`` -> ``["db", "password"]``."""
    return [w.lower() for w in _name_word_pattern().findall(name)]


_word_pattern = None


def _name_word_pattern():
    global _word_pattern
    if _word_pattern is None:
        import re

        _word_pattern = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+", re.ASCII)
    return _word_pattern


def is_secret_name(name):
    """Whether an assignment target names a secret (see the module docstring)."""
    words = _name_words(name)
    if not words or words[-1] in _DESCRIPTIVE_TAILS or words[0] in _DESCRIPTIVE_HEADS:
        return False
    for i, word in enumerate(words):
        if word in _NAME_WORDS or word.endswith(_NAME_ENDINGS):
            return True
        if word == "key" and i > 0 and words[i - 1] in _KEY_QUALIFIERS:
            return True
    return False


_PLACEHOLDER_WORDS = frozenset((
    "required", "optional", "string", "str", "example", "placeholder", "changeme",
    "null", "none", "nil", "undefined", "true", "false", "secret", "password",
    "token", "default", "redacted", "hidden", "masked", "unknown", "unset",
    "notset", "empty", "todo", "tbd", "replaceme", "sample",
))
_PLACEHOLDER_PARTS = ("your", "example", "placeholder", "xxxx", "changeme", "dummy", "redacted")
_REFERENCE_PREFIXES = ("os.environ", "os.getenv", "process.env", "import.meta.env", "env.", "ENV[")
_SYMBOLS_OF_WORDS = "_-."


def _is_reference(value):
    """References, placeholders and already-redacted values, which are kept."""
    if not value:
        return True
    if value[0] == "$" or "{{" in value or "{%" in value or "(" in value:
        return True
    if len(value) >= 2 and (value[0], value[-1]) in (("%", "%"), ("<", ">")):
        return True
    if MARKER in value or value.startswith(_REFERENCE_PREFIXES):
        return True
    if value.count(value[0]) == len(value):
        return True
    return False


def looks_like_secret(value):
    """The value heuristic of the module docstring."""
    if _is_reference(value) or len(value) < 8:
        return False
    if any(c.isspace() for c in value):
        return False
    lower = value.lower()
    if lower.strip(_SYMBOLS_OF_WORDS).replace("-", "").replace("_", "") in _PLACEHOLDER_WORDS:
        return False
    if any(part in lower for part in _PLACEHOLDER_PARTS):
        return False
    if value.startswith(("/", "./", "../", "~/")) or "://" in value:
        return False
    if _is_dotted_identifier(value):
        return False
    if any(c.isdigit() for c in value):
        return True
    if any(not c.isalnum() and c not in _SYMBOLS_OF_WORDS for c in value):
        return True
    if len(value) >= 32:
        return True
    return len(value) >= 16 and _is_mixed_case_blob(value)


def _is_mixed_case_blob(value):
    """Both cases, with an uppercase run of 2+ letters: base64, not camelCase."""
    if value.lower() == value or value.upper() == value:
        return False
    run = 0
    for c in value:
        run = run + 1 if c.isupper() else 0
        if run >= 2:
            return True
    return False


def _is_dotted_identifier(value):
    if any(c.isdigit() for c in value):
        return False
    parts = value.split(".")
    if len(parts) < 2:
        return False
    for part in parts:
        if not part or not (part[0].isalpha() or part[0] == "_"):
            return False
        if not all(c.isascii() and (c.isalnum() or c == "_") for c in part):
            return False
    return True
