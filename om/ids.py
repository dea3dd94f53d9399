"""Content-addressed identities of the v1 ledger.

Every ID is a prefix plus the first 24 hex characters of SHA-256 over the
canonical JSON of a value (see ledger-v1 interop facts). IDs carry no cursor,
session or time, so the same content is always the same row.
"""

from om.fastpath import sha256  # the C digest module, without hashlib's OpenSSL load
from om.jsonio import dumps as canonical_json

ID_HEX = 24

# Go's strings.TrimSpace (unicode.IsSpace): NOT Python's str.strip, which also
# strips U+001C..U+001F and would change the IDs of texts that end in them.
_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def trim_space(text):
    return text.strip(_SPACE)


def digest(value):
    return sha256(canonical_json(value).encode("utf-8")).hexdigest()[:ID_HEX]


def make_id(prefix, value):
    return prefix + digest(value)


def session_hash(session):
    return digest(session)


def source_id(kind, key, text):
    return make_id("s-", [kind, key, text])


def observation_id(text, support, importance):
    return make_id("o-", [text, support, importance])


def reflection_id(text, support):
    return make_id("r-", [text, support, "medium"])
