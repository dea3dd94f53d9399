"""The fence around om's start-up shortcuts: each one beside its public fallback.

A hook runs on every agent event, so a few milliseconds of imports matter. The
public modules om would naturally use cost a measured ~40% of a hook: `json`
imports `re` and `enum`, `hashlib` loads OpenSSL through `_hashlib`, `_sqlite3`
(3.11+) imports `functools` and with it `collections`, and `shlex` imports `re`.
Even `os` costs an event about 1 ms (a seventh of a bare interpreter start: `os`,
`stat`, `posixpath` and the ABCs of `_collections_abc`), while the hook needs only
system calls, which `os` re-exports from the built-in `posix`, and string work on
paths.
Every shortcut around them lives here and nowhere else, so the bargain is
visible in one place and tested on every supported CPython (3.9-3.13).

Invariants:
- Each shortcut behaves exactly like its public fallback; the fallback is taken
  whenever the private module is missing or refuses, never silently wrong.
- Importing this module imports only `sys`, `posix`, `_json` and the C SHA-256
  module (`_sha256`, renamed `_sha2` in 3.12): no `os`, `json`, `re`, `hashlib`,
  `functools` or `shlex`. SQLite is loaded only when `load_sqlite()` is called.
- The path functions give exactly what their `os.path` namesakes give for str
  paths: the string ones by os.path's own rules, the ones that look at the file
  system through `posix.stat`/`lstat`. `realpath` and `getenv` answer through
  `os` whenever it is loaded (so a changed `os.environ` is always seen), and
  `realpath` hands any path it does not cover (a missing component, a loop,
  `.` or `..` of its own) to `os.path.realpath`.
- No other module under om/ imports a private stdlib module for speed.
"""

import sys

__all__ = [
    "abspath", "basename", "dirname", "exists", "expanduser", "getenv", "isabs", "isdir", "isfile", "islink", "join",
    "json_encoder", "json_scanner", "lexists", "load_sqlite", "normpath", "posix", "realpath", "sha256",
    "shell_quote",
]

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


# -- Files and paths: the built-in `posix` and os.path's rules; fallback: `os` --------

try:
    import posix  # the system calls `os` re-exports: os.open is posix.open
except ImportError:  # pragma: no cover - not a POSIX system: the same names through os
    import os as posix  # type: ignore[no-redef]

_S_IFMT, _S_IFDIR, _S_IFREG, _S_IFLNK = 0o170000, 0o040000, 0o100000, 0o120000
_MAX_LINKS = 40  # as many links as the kernel follows in one lookup (ELOOP beyond)


def _os_path():
    """`os.path` when `os` is loaded, else None (then the posix versions below answer)."""
    loaded = sys.modules.get("os")
    return loaded.path if loaded is not None else None


def _public_path():
    import os.path

    return os.path


def getenv(name, default=None):
    """`os.environ.get(name, default)`."""
    loaded = sys.modules.get("os")
    if loaded is not None:
        return loaded.environ.get(name, default)
    # Nobody imported os, so nobody changed os.environ: the process environment is it.
    encoding = sys.getfilesystemencoding()
    value = posix.environ.get(name.encode(encoding, "surrogateescape"))
    return default if value is None else value.decode(encoding, "surrogateescape")


def join(a, *parts):
    """`os.path.join` for str."""
    path = a
    for part in parts:
        if part.startswith("/"):
            path = part
        elif not path or path.endswith("/"):
            path += part
        else:
            path += "/" + part
    return path


def expanduser(path):
    """`os.path.expanduser` for str (`~` forms are left to os.path itself)."""
    return _public_path().expanduser(path) if path.startswith("~") else path


def dirname(path):
    """`os.path.dirname` for str."""
    head = path[: path.rfind("/") + 1]
    if head and head != "/" * len(head):
        head = head.rstrip("/")
    return head


def basename(path):
    return path[path.rfind("/") + 1:]


def isabs(path):
    return path.startswith("/")


def normpath(path):
    """`os.path.normpath` for str."""
    if not path:
        return "."
    initial = 2 if path.startswith("//") and not path.startswith("///") else 1 if path.startswith("/") else 0
    parts = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part != ".." or (not initial and not parts) or (parts and parts[-1] == ".."):
            parts.append(part)
        elif parts:
            parts.pop()
    return "/" * initial + "/".join(parts) or "."


def abspath(path):
    """`os.path.abspath` for str."""
    if not path.startswith("/"):
        path = join(posix.getcwd(), path)
    return normpath(path)


def _mode(path, follow):
    try:
        return (posix.stat(path) if follow else posix.lstat(path)).st_mode
    except (OSError, ValueError):
        return None


def exists(path):
    return _mode(path, True) is not None


def lexists(path):
    return _mode(path, False) is not None


def isdir(path):
    mode = _mode(path, True)
    return mode is not None and mode & _S_IFMT == _S_IFDIR


def isfile(path):
    mode = _mode(path, True)
    return mode is not None and mode & _S_IFMT == _S_IFREG


def islink(path):
    mode = _mode(path, False)
    return mode is not None and mode & _S_IFMT == _S_IFLNK


def realpath(path):
    """`os.path.realpath`: resolved link by link where every component exists, else os.path's answer."""
    os_path = _os_path()
    if os_path is not None:
        return os_path.realpath(path)
    resolved = _existing_realpath(path)
    return resolved if resolved is not None else _public_path().realpath(path)


def _existing_realpath(path):
    """The resolved form of a plain absolute path whose every component exists, else None.

    Plain: no empty, `.` or `..` component of its own (links may still point
    through `..`). Left to os.path: anything else, a missing component, a loop.
    """
    if not path.startswith("/") or "\0" in path:
        return None
    names = path[1:].rstrip("/").split("/") if path != "/" else []
    if any(name in ("", ".", "..") for name in names):
        return None
    pending = names[::-1]
    resolved = ""
    links = 0
    while pending:
        name = pending.pop()
        if name in ("", "."):
            continue
        if name == "..":
            resolved = resolved[: resolved.rfind("/")]
            continue
        candidate = resolved + "/" + name
        try:
            mode = posix.lstat(candidate).st_mode
        except (OSError, ValueError):
            return None
        if mode & _S_IFMT != _S_IFLNK:
            resolved = candidate
            continue
        links += 1
        if links > _MAX_LINKS:
            return None
        try:
            target = posix.readlink(candidate)
        except OSError:
            return None
        if target.startswith("/"):
            resolved = ""
        pending.extend(target.split("/")[::-1])
    return resolved or "/"
