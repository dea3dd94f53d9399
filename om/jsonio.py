"""Strict JSON in, canonical JSON out, without importing `re`.

The `json` package imports `re` (and with it `enum`), which costs the Codex hook
several milliseconds on every event, so the scanner and encoder come from the
fast-path fence (`om.fastpath`: the C accelerator `_json`, falling back to `json`
where it is missing). This module is a codec only: what an input must contain
is described in om.schema. Invariants:

- `loads` accepts exactly one JSON value (surrounding whitespace allowed) and
  rejects NaN/Infinity; lone surrogate escapes decode to U+FFFD, so every string
  that leaves this module encodes to UTF-8.
- `decode_input` (stdin of capture, apply and the hooks) keeps every number
  that Python would not write back as it was read (every number with a fraction
  or an exponent, `-0`, integers too long for `int`) as a `Number` holding its
  literal; other integers are ints. `dumps` writes a `Number` as its literal, so
  `1e400` or `1.50` in a hook event is stored exactly as the client sent it, as
  v1 stored it. `loads` alone returns plain Python numbers.
- `dumps` is the canonical encoding of the v1 ledger: compact separators, no
  ASCII escaping, `<>&` and U+2028/U+2029 literal, control characters escaped.
  `pretty` indents such a document for a person, changing nothing else.
"""

from om.errors import InputError
from om.fastpath import json_encoder, json_scanner

#: v1 read at most 4,000,001 bytes of stdin and refused anything over 4,000,000.
MAX_INPUT_BYTES = 4_000_000
_WS = " \t\n\r"
#: Brackets a Number's literal inside the encoder's output. A lone low surrogate
#: never survives `loads` (see _scrub) and never comes from surrogateescape, so
#: no real string can contain it next to a quote.
_MARK = "\udfff"
#: int() refuses longer digit strings by default on newer Pythons.
_INT_DIGITS = 4000


class Number:
    """A JSON number kept as its literal text (see the module docstring)."""

    __slots__ = ("literal",)

    def __init__(self, literal):
        self.literal = literal

    def __eq__(self, other):
        return isinstance(other, Number) and other.literal == self.literal

    def __hash__(self):
        return hash(self.literal)

    def __repr__(self):
        return f"Number({self.literal!r})"


def _literal_int(text):
    if len(text) > _INT_DIGITS or text == "-0":
        return Number(text)
    return int(text)


def _reject_constant(name):
    raise ValueError(f"{name} is not valid JSON")


class _ScanContext:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_reject_constant)
    memo = None


class _LiteralContext:
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = Number
    parse_int = staticmethod(_literal_int)
    parse_constant = staticmethod(_reject_constant)
    memo = None


_scanners = (json_scanner(_ScanContext()), json_scanner(_LiteralContext()))
_encoders = {}


def dumps(value, sort_keys=False):
    encoder = _encoders.get(sort_keys)
    if encoder is None:
        encoder = _encoders[sort_keys] = json_encoder(_default, sort_keys)
    text = encoder(value)
    if _MARK in text:
        text = text.replace('"' + _MARK, "").replace(_MARK + '"', "")
    return text


def pretty(text):
    """One JSON document as `dumps` wrote it, indented by two spaces for a person to read.

    The same values (numbers exactly as written, strings unescaped as in `dumps`);
    only whitespace differs. The `json` package's indenting encoder is loaded here
    alone: no hook or plain command line asks for it.
    """
    import json

    out = json.dumps(loads(text, literal_numbers=True), indent=2, ensure_ascii=False, allow_nan=False,
                     default=_default)
    if _MARK in out:
        out = out.replace('"' + _MARK, "").replace(_MARK + '"', "")
    return out


def _default(value):
    if value.__class__ is Number:
        return _MARK + value.literal + _MARK
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _skip_ws(text, i):
    n = len(text)
    while i < n and text[i] in _WS:
        i += 1
    return i


def loads(text, literal_numbers=False):
    """Parse exactly one JSON value from `text` (str); raise InputError otherwise.

    `literal_numbers`: keep numbers Python would rewrite as `Number` literals.
    """
    _scan = _scanners[1 if literal_numbers else 0]
    i = _skip_ws(text, 0)
    if i == len(text):
        raise InputError("om: expected one JSON value, got empty input")
    try:
        value, end = _scan(text, i)
    except StopIteration:
        raise InputError(f"om: invalid JSON at character {i}") from None
    except ValueError as e:
        raise InputError(f"om: invalid JSON: {str(e).splitlines()[0]}") from None
    except RecursionError:
        raise InputError("om: invalid JSON: nested too deeply") from None
    end = _skip_ws(text, end)
    if end != len(text):
        raise InputError(f"om: expected one JSON value, found more at character {end}")
    try:
        return _scrub(value)
    except RecursionError:
        # The C scanner accepts nesting that this Python walk cannot descend.
        raise InputError("om: invalid JSON: nested too deeply") from None


def _scrub(value):
    """Replace lone surrogates (from escapes like "\\ud800") with U+FFFD, as Go did."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in value)
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


def decode_input(data):
    """Bytes from stdin -> one JSON object (dict), enforcing the 4 MB limit and UTF-8."""
    if len(data) > MAX_INPUT_BYTES:
        raise InputError(f"om: input exceeds {MAX_INPUT_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"om: input is not valid UTF-8 (byte {e.start})") from None
    value = loads(text, literal_numbers=True)
    if not isinstance(value, dict):
        raise InputError(f"om: expected a JSON object, got {type_name(value)}")
    return value


def read_stdin_limited(stream):
    """Read at most the limit plus one byte, so oversized input fails without buffering it all."""
    data = stream.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise InputError(f"om: input exceeds {MAX_INPUT_BYTES} bytes")
    return data


def type_name(value):
    """The JSON type of a decoded value, as error messages name it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float, Number)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
