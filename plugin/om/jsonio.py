"""Strict JSON in, canonical JSON out, without importing `re`.

The `json` package imports `re` (and with it `enum`), which costs the Codex hook
several milliseconds on every event, so the scanner and encoder come from the
fast-path fence (`om.fastpath`: the C accelerator `_json`, falling back to `json`
where it is missing). Invariants:

- `loads` accepts exactly one JSON value (surrounding whitespace allowed) and
  rejects NaN/Infinity; lone surrogate escapes decode to U+FFFD, so every string
  that leaves this module encodes to UTF-8.
- `dumps` is the canonical encoding of the v1 ledger: compact separators, no
  ASCII escaping, `<>&` and U+2028/U+2029 literal, control characters escaped.
"""

from om.errors import InputError
from om.fastpath import json_encoder, json_scanner

MAX_INPUT_BYTES = 4 * 1024 * 1024
_WS = " \t\n\r"


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


_scan = json_scanner(_ScanContext())
_encoders = {}


def dumps(value, sort_keys=False):
    encoder = _encoders.get(sort_keys)
    if encoder is None:
        encoder = _encoders[sort_keys] = json_encoder(_no_default, sort_keys)
    return encoder(value)


def _no_default(value):
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _skip_ws(text, i):
    n = len(text)
    while i < n and text[i] in _WS:
        i += 1
    return i


def loads(text):
    """Parse exactly one JSON value from `text` (str); raise InputError otherwise."""
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
    value = loads(text)
    if not isinstance(value, dict):
        raise InputError(f"om: expected a JSON object, got {_type_name(value)}")
    return value


def read_stdin_limited(stream):
    """Read at most the limit plus one byte, so oversized input fails without buffering it all."""
    data = stream.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise InputError(f"om: input exceeds {MAX_INPUT_BYTES} bytes")
    return data


def _type_name(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _fields(obj, where, required=(), optional=()):
    unknown = [k for k in obj if k not in required and k not in optional]
    if unknown:
        raise InputError(f"om: unknown field {unknown[0]!r} in {where}")
    for k in required:
        if k not in obj:
            raise InputError(f"om: missing field {k!r} in {where}")


def _string(obj, key, where, optional=False):
    value = obj.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise InputError(f"om: field {key!r} in {where} must be a string, got {_type_name(value)}")
    return value


def _string_list(obj, key, where):
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"om: field {key!r} in {where} must be an array of strings")
    return value


def _object_list(obj, key):
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(f"om: field {key!r} must be an array, got {_type_name(value)}")
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise InputError(f"om: {key}[{i}] must be an object, got {_type_name(item)}")
    return value


def parse_capture(data):
    """stdin of `capture` -> {"kind", "text", "key"} (shape only; the ledger validates values)."""
    obj = decode_input(data)
    _fields(obj, "capture input", required=("kind", "text", "key"))
    return {
        "kind": _string(obj, "kind", "capture input"),
        "text": _string(obj, "text", "capture input"),
        "key": _string(obj, "key", "capture input"),
    }


def parse_checkpoint(data):
    """stdin of `apply` -> a normalised checkpoint dict (shape only)."""
    obj = decode_input(data)
    return checkpoint_from_object(obj)


def checkpoint_from_object(obj):
    """Validate the shape of a checkpoint object (also used by the MCP server)."""
    if not isinstance(obj, dict):
        raise InputError(f"om: a checkpoint must be a JSON object, got {_type_name(obj)}")
    _fields(obj, "checkpoint", required=("through",), optional=("observations", "reflections", "retire"))
    through = obj["through"]
    if isinstance(through, bool) or not isinstance(through, int):
        raise InputError(f"om: field 'through' must be an integer, got {_type_name(through)}")
    observations = []
    for i, o in enumerate(_object_list(obj, "observations")):
        where = f"observations[{i}]"
        _fields(o, where, required=("text",), optional=("importance", "source_ids"))
        observations.append(
            {
                "text": _string(o, "text", where),
                "importance": _string(o, "importance", where, optional=True),
                "source_ids": _string_list(o, "source_ids", where),
            }
        )
    reflections = []
    for i, r in enumerate(_object_list(obj, "reflections")):
        where = f"reflections[{i}]"
        _fields(r, where, required=("text",), optional=("observation_ids",))
        reflections.append(
            {"text": _string(r, "text", where), "observation_ids": _string_list(r, "observation_ids", where)}
        )
    retire = []
    for i, r in enumerate(_object_list(obj, "retire")):
        where = f"retire[{i}]"
        _fields(r, where, required=("id",), optional=("reason", "replacement_ids"))
        retire.append(
            {
                "id": _string(r, "id", where),
                "reason": _string(r, "reason", where, optional=True) or "",
                "replacement_ids": _string_list(r, "replacement_ids", where),
            }
        )
    return {"through": through, "observations": observations, "reflections": reflections, "retire": retire}
