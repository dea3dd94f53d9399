"""Which names hold a secret and which values look like one: the judges of om.redact's rules 5 to 7.

om.redact finds the candidates with its patterns and asks here which group of a
match, if any, is a secret (``replace_url``, ``replace_authorization``,
``replace_assignment``: ``(match, text)`` -> group number or None, the match
found in an ASCII-lowered copy of ``text``, its groups read from ``text``).
Imported only when redaction's precheck finds a trigger, with ``re``.

Invariant: pure functions of their arguments, total on any ``str``. Because IDs
are hashes of redacted text, these judgements are part of the storage format,
as om.redact's rules are.

Names (``is_secret_name``, rule 7): a name is secret-like when, split into
words (``_ - .`` and camelCase), a word is ``secret``, ``token``, ``password``,
``passwd``, ``passphrase``, ``pass``, ``pwd``, ``credential(s)`` or ends in one
of ``password/passwd/passphrase/secret/token/apikey/accesskey/privatekey/
secretkey`` (``PGPASSWORD``, ``authToken``), or two adjacent words are
``api|access|private|secret|session|signing|encryption|master|account`` +
``key``. Names whose last word describes rather than holds the secret
(``token_count``, ``secret_name``, ``password_policy``, ``AWS_ACCESS_KEY_ID``,
``private_key_path``...) or that start with ``max``/``min``/``num`` are left alone.

Values (``looks_like_secret``, rules 6 and 7): a value is a secret when ALL hold:

* it is not a reference or placeholder: not starting with ``$`` (``$VAR``,
  ``${VAR}``, ``${{ secrets.X }}``), not ``%VAR%``, no ``{{``/``{%``, not
  ``<...>``, no ``(`` (a call such as ``getenv("X")``), not ``os.environ…``/
  ``process.env…``, not a dotted identifier path without digits
  (``self.token``, ``settings.SECRET_KEY``), not a path (``/``, ``./``, ``~/``), not a URL,
  not one repeated character (``********``, ``xxxxxxxx``);
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

A value holding om.redact's marker is never a secret: the marker holds a space,
which no group of rules 5 and 6 holds and ``looks_like_secret`` refuses (and
om.redact keeps a match whose group starts with it).
"""


def _group(match, text, group):
    start = match.start(group)
    return None if start < 0 else text[start:match.end(group)]


def replace_url(match, text):
    """Rule 5: the password of `scheme://user:password@` (group 3), unless it is a reference."""
    return None if _is_reference(_group(match, text, 3)) else 3


_AUTH_SCHEMES = frozenset((
    "basic", "bearer", "token", "digest", "negotiate", "ntlm", "hawk", "apikey",
    "api-key", "key", "sso-key", "aws4-hmac-sha256", "dpop", "gnap", "mac",
    "oauth", "jwt", "splunk", "ghtoken", "otoken", "session",
))


#: What rule 6's credential group takes of om.redact's marker (it stops at the space).
_MARKER_HEAD = "[REDACTED"


def replace_authorization(match, text):
    """Rule 6: the credential (group 3) after a known or unjudged scheme word, or the one word (group 2)."""
    scheme, credential = _group(match, text, 2), _group(match, text, 3)
    if scheme is not None:
        # A marker after the word is a credential redacted on an earlier pass, which kept the word:
        # judging the word alone now would redact it too, and redact would not be idempotent.
        if _is_reference(credential) or credential == _MARKER_HEAD:
            return None
        if scheme.lower() in _AUTH_SCHEMES or looks_like_secret(credential):
            return 3
        return 2 if looks_like_secret(scheme) else None
    return 3 if looks_like_secret(credential) else None


_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_NAME_HEAD_MAX = 64


def replace_assignment(match, text):
    """Rule 7: the value (group 2, 3 or 4) of an assignment to a secret-like name."""
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
    """References and placeholders, which are kept."""
    if not value:
        return True
    if value[0] == "$" or "{{" in value or "{%" in value or "(" in value:
        return True
    if len(value) >= 2 and (value[0], value[-1]) in (("%", "%"), ("<", ">")):
        return True
    if value.startswith(_REFERENCE_PREFIXES):
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
