"""SQLite for the ledger layer: loading the C module, connecting, transactions.

This is the only module of om that uses `sqlite3`/`_sqlite3` (a test scans
for it; the fast-path fence, om.fastpath, loads the module for it); everything
else reaches SQLite through it, om.ledger and om.derived.

Loading SQLite's C module without paying for `functools` at start-up:

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
  module cannot run a statement, the module is loaded again the ordinary way
  (both in `om.fastpath.load_sqlite`).

Connecting and transactions:
- A database path becomes a `file:` URI with `%`, `?` and `#` escaped, so any
  path that names a file opens that file (a store under `/tmp/a%41b` too).
- Every connection runs in autocommit mode with synchronous=FULL; writes go
  through `Transaction`, an explicit BEGIN ... COMMIT that rolls back on any
  exception (KeyboardInterrupt too) and joins a transaction already open.
"""


from om.errors import StoreError
from om.fastpath import load_sqlite as load  # the functools stand-in and its fallback

BUSY_TIMEOUT_MS = 15000


def uri(path, readonly=False):
    """The `file:` URI of a database path, which SQLite reads back as exactly that path."""
    quoted = path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    return "file:" + quoted + ("?mode=ro" if readonly else "")


def open_connection(path, readonly=False, timeout=BUSY_TIMEOUT_MS / 1000):
    """A connection to `path` (autocommit, synchronous=FULL); raises sqlite3.Error."""
    conn = load().connect(uri(path, readonly), uri=True, isolation_level=None, timeout=timeout)
    try:
        conn.execute("PRAGMA synchronous=FULL")
    except BaseException:
        conn.close()
        raise
    return conn


def connect(path, readonly=False):
    """`open_connection`, with a failure reported as StoreError."""
    sqlite3 = load()
    try:
        return open_connection(path, readonly)
    except sqlite3.Error as e:
        raise StoreError(f"om: cannot open {path}: {e}") from None


def memory():
    """A private in-memory database (autocommit), e.g. the target of a snapshot."""
    return load().connect(":memory:", isolation_level=None)


def scratch(path):
    """A new private database file only this process uses (autocommit), kept neither durable nor journaled.

    For work that is thrown away when interrupted (om.ingest collects a
    transcript's sources in one before merging them into a ledger): nothing
    needs to survive a crash, so nothing is fsynced.
    """
    sqlite3 = load()
    try:
        conn = sqlite3.connect(uri(path), uri=True, isolation_level=None)
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
    except sqlite3.Error as e:
        raise StoreError(f"om: cannot open {path}: {e}") from None
    return conn


class Transaction:
    """BEGIN <mode> ... COMMIT, or ROLLBACK on any exception; joins a transaction already open.

    With `raw=True` SQLite's own errors pass through unchanged (for callers
    that tell a read-only database from a damaged one); otherwise they become
    StoreError, one line for the user.
    """

    def __init__(self, conn, mode="IMMEDIATE", raw=False):
        self.conn = conn
        self.mode = mode
        self.raw = raw
        self.nested = False

    def __enter__(self):
        if self.conn.in_transaction:
            self.nested = True
            return self
        try:
            self.conn.execute(f"BEGIN {self.mode}")
        except load().Error as e:
            if self.raw:
                raise
            raise StoreError(f"om: cannot start a transaction: {e}") from None
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.nested:
            return False
        sqlite3 = load()
        if exc_type is None:
            try:
                self.conn.execute("COMMIT")
            except sqlite3.Error as e:
                self._rollback()
                if self.raw:
                    raise
                raise StoreError(f"om: cannot commit: {e}") from None
            return False
        self._rollback()
        if isinstance(exc, sqlite3.Error) and not self.raw:
            raise StoreError(f"om: database error: {exc}") from None
        return False

    def _rollback(self):
        if self.conn.in_transaction:
            try:
                self.conn.execute("ROLLBACK")
            except load().Error:
                pass
