"""The fence around om's start-up shortcuts: each one beside its public fallback.

A hook runs on every agent event, so a few milliseconds of imports matter. The
public modules om would naturally use cost a measured ~40% of a hook: `json`
imports `re` and `enum`, `hashlib` loads OpenSSL through `_hashlib`, `_sqlite3`
(3.11+) imports `functools` and with it `collections`, and `shlex` imports `re`.
Every shortcut around them lives here and nowhere else, so the bargain is
visible in one place and tested on every supported CPython (3.9-3.13).

Invariants:
- Each shortcut behaves exactly like its public fallback; the fallback is taken
  whenever the private module is missing or refuses, never silently wrong.
- Importing this module imports only `sys`, `_json` and the C SHA-256 module
  (`_sha256`, renamed `_sha2` in 3.12): no `json`, `re`, `hashlib`, `functools`
  or `shlex`. SQLite is loaded only when `load_sqlite()` is called.
- No other module under om/ imports a private stdlib module for speed.
"""

import sys

__all__ = ["json_encoder", "json_scanner", "load_sqlite", "sha256", "shell_quote"]

# -- JSON: the C scanner and encoder of `_json`; fallback: the `json` package --------

try:
    import _json as _c_json

    HAVE_C_JSON = True
except ImportError:  # pragma: no cover - every CPython ships _json
    HAVE_C_JSON = False


def json_scanner(context):
    """`scan(text, idx) -> (value, end)`, raising StopIteration or ValueError like json's.

    `context` carries strict, parse_float, parse_int, parse_constant, object_hook
    and object_pairs_hook, as for `json.scanner.make_scanner`.
    """
    if not HAVE_C_JSON:  # pragma: no cover
        import json
        from json.scanner import make_scanner  # the pure-Python scanner when _json is missing

        decoder = json.JSONDecoder(
            strict=context.strict, parse_float=context.parse_float, parse_int=context.parse_int,
            parse_constant=context.parse_constant, object_hook=context.object_hook,
            object_pairs_hook=context.object_pairs_hook,
        )
        return make_scanner(decoder)  # type: ignore[arg-type]  # typeshed: context typed as the C class
    c_scan = _c_json.make_scanner(context)

    def scan(text, idx):
        try:
            return c_scan(text, idx)
        except SystemError:
            # _json builds its error from json.decoder.JSONDecodeError, but only
            # when json.decoder is already imported; otherwise it fails with a
            # bare SystemError. Import it on this error path only, and rescan.
            import json.decoder  # noqa: F401

            return c_scan(text, idx)

    return scan


def json_encoder(default, sort_keys):
    """`encode(value) -> str`: compact separators, no ASCII escaping, NaN/Infinity refused."""
    if not HAVE_C_JSON:  # pragma: no cover
        import json

        return json.JSONEncoder(
            ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys, allow_nan=False,
            check_circular=False, default=default,
        ).encode
    c_encode = _c_json.make_encoder(
        None, default, _c_json.encode_basestring, None, ":", ",", sort_keys, False, False
    )

    def encode(value):
        return "".join(c_encode(value, 0))

    return encode


# -- SHA-256: the C digest module; fallback: hashlib (which loads OpenSSL) ----------

# Ask for the name this version uses first: a failed import searches all of sys.path.
try:
    if sys.version_info >= (3, 12):  # 3.12 renamed _sha256 to _sha2
        from _sha2 import sha256
    else:
        from _sha256 import sha256  # type: ignore[import-not-found]  # typeshed has no stub for it
except ImportError:  # pragma: no cover - a build without the C module
    from hashlib import sha256


# -- SQLite: `_sqlite3` with a stand-in `functools`; fallback: the plain import -------


def load_sqlite():
    """The real `_sqlite3` module (or `sqlite3` where `_sqlite3` does not exist).

    CPython's `_sqlite3` (3.11+) imports `functools` while it initialises, only to
    take `functools.lru_cache` for its per-connection statement cache; `functools`
    pulls in `collections` and builds a named tuple at run time, about 3 ms. The
    stand-in gives it the same C cache (`_functools._lru_cache_wrapper` with the
    requested size), so statements are cached exactly as before. The stand-in is
    in `sys.modules` only while `_sqlite3` initialises; if it is refused, or the
    module it yields cannot run a statement, the module is loaded the ordinary way.
    """
    module = sys.modules.get("_sqlite3")
    if module is not None:
        return module
    if "functools" not in sys.modules:
        try:
            module = _load_sqlite_with_stand_in()
        except Exception:
            module = None
        if module is not None:
            return module
        sys.modules.pop("_sqlite3", None)
    try:
        import _sqlite3
    except ImportError:  # pragma: no cover - a Python built without _sqlite3's name
        import sqlite3 as _sqlite3  # type: ignore[no-redef]  # the same API under its public name
    return _sqlite3


def _load_sqlite_with_stand_in():
    import _functools  # type: ignore[import-not-found]  # typeshed has no stub for it

    def lru_cache(maxsize=128, typed=False):
        if isinstance(maxsize, int) and maxsize < 0:
            maxsize = 0

        def decorating(function):
            return _functools._lru_cache_wrapper(function, maxsize, typed, tuple)

        return decorating

    stand_in = type(sys)("functools")
    stand_in.lru_cache = lru_cache  # type: ignore[attr-defined]
    sys.modules["functools"] = stand_in
    try:
        import _sqlite3
    finally:
        if sys.modules.get("functools") is stand_in:
            del sys.modules["functools"]
    probe = _sqlite3.connect(":memory:")
    try:
        probe.execute("SELECT 1").fetchone()
    finally:
        probe.close()
    return _sqlite3


# -- Shell quoting: by hand; the public equivalent is shlex.quote (imports re) -------

_SHELL_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./-_")


def shell_quote(word):
    """POSIX shell quoting, character for character the result of `shlex.quote(word)`."""
    if not word:
        return "''"
    if all(ch in _SHELL_SAFE for ch in word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"
