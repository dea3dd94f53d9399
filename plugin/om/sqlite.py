"""Loading SQLite's C module without paying for `functools` at start-up.

CPython's `_sqlite3` (3.11 and later) imports `functools` while it initialises,
only to take `functools.lru_cache` for its per-connection statement cache.
Importing `functools` pulls in `collections` and builds a named tuple at run
time: about 3 ms, a third of a bare interpreter start, on every hook event.

Invariants:
- `load()` returns the real `_sqlite3` module, or `sqlite3` where `_sqlite3`
  does not exist; callers see the same module whichever way it was loaded.
- The statement cache is the same C cache `functools.lru_cache` would build
  (`_functools._lru_cache_wrapper` with the requested size), so statements are
  cached exactly as before.
- Nothing leaks: a stand-in `functools` is visible in `sys.modules` only while
  `_sqlite3` initialises. Any later `import functools` gets the real module.
- Never worse than a plain import: if the stand-in is refused or the loaded
  module cannot run a statement, the module is loaded again the ordinary way.
"""

import sys


def load():
    module = sys.modules.get("_sqlite3")
    if module is not None:
        return module
    if "functools" not in sys.modules:
        try:
            module = _load_with_stand_in()
        except Exception:
            module = None
        if module is not None:
            return module
        sys.modules.pop("_sqlite3", None)
    try:
        import _sqlite3
    except ImportError:  # pragma: no cover - a Python built without _sqlite3's name
        import sqlite3 as _sqlite3
    return _sqlite3


def _load_with_stand_in():
    import _functools

    def lru_cache(maxsize=128, typed=False):
        if isinstance(maxsize, int) and maxsize < 0:
            maxsize = 0

        def decorating(function):
            return _functools._lru_cache_wrapper(function, maxsize, typed, tuple)

        return decorating

    stand_in = type(sys)("functools")
    stand_in.lru_cache = lru_cache
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
