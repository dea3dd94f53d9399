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

The stand-in and its fallback are implemented in `om.fastpath.load_sqlite`.
"""

# The stand-in lives in the fast-path fence, beside the plain import it falls back to.
from om.fastpath import load_sqlite as load

__all__ = ["load"]
