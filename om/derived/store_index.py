"""The store index: one database beside a store's session directories, and all SQL on it.

What the store-wide reads (`om sessions`, `search --all-sessions`, `export
--all-sessions`, the start pointer, the MCP tools) consult instead of opening
every ledger. om.sessions.index decides what in it is still true; this module
only keeps it.

Invariants:
- Derived and disposable: om.derived's protocol lifted to the store. Every row
  is a function of one session's ledger, read at a recorded moment; nothing
  in it exists anywhere else, so deleting the folder loses nothing (the next
  reader that can write rebuilds it). It lies outside every session
  directory: v1 readers never see it and never need it.
- One file, `<store>/index/store-v1.sqlite3` (0600, in a 0700 folder), named
  for NAME's version; the `format` meta row carries the exact FORMAT. A file
  of another format is emptied and rebuilt in place; one that SQLite cannot
  read as a database is replaced. A folder or file that is a symlink is never
  opened (om never follows links inside the store).
- Never created where it cannot be written: `open_index(create=True)` makes
  the folder and the file only when both can be made, and leaves nothing
  behind otherwise; a reader that cannot write reads an existing index
  read-only and never changes it.
- Durable and atomic like a ledger: SQLite's rollback journal, synchronous=FULL,
  and every change one short BEGIN IMMEDIATE transaction, so a killed writer
  leaves the state before it and a reader never waits long.
- Nothing replaced survives in the file: every connection runs with
  secure_delete on, so a deleted or rewritten row leaves no bytes in its page
  or in the free pages (`om forget` scans the store for forgotten text).
"""

from om.fastpath import isdir, islink, join, lexists, posix
from om.sqlite import Transaction, load, open_connection

NAME = "om_store_index_v1"
FOLDER = "index"
FILE = "store-v1.sqlite3"
#: Changing what a row holds or how it is keyed changes this: another value means rebuild.
FORMAT = "store-index 1;catalogue 1"
#: A reader waits at most this long for another process's short write; a hook never waits.
BUSY_SECONDS = 15.0

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    # One row per readable session directory. `stamp` is the ledger file's identity when the
    # row was read (empty when it must be read again); `listed` sorts the listing; `doc` is the
    # listing row as canonical JSON (without the path of the database), `cells` as table cells.
    "CREATE TABLE IF NOT EXISTS sessions (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL,"
    " stamp BLOB NOT NULL, session TEXT NOT NULL, project TEXT, activity TEXT, listed BLOB NOT NULL,"
    " doc TEXT NOT NULL, cells TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS sessions_listed ON sessions(listed)",
    "CREATE INDEX IF NOT EXISTS sessions_project ON sessions(project, listed)",
)
TABLES = ("meta", "sessions")

#: The columns of a catalogue row, in the order `save` takes them.
COLUMNS = ("name", "stamp", "listed", "project", "session", "activity", "doc", "cells")


def path_of(store):
    return join(store, FOLDER, FILE)


class Index:
    """An open store index: `conn`, its `path`, and whether this process may write it."""

    def __init__(self, conn, path, writable):
        self.conn = conn
        self.path = path
        self.writable = writable

    def close(self):
        try:
            self.conn.close()
        except load().Error:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- the catalogue ----------------------------------------------------------------

    def rows(self, columns=COLUMNS):
        """Every catalogue row, as tuples of `columns` (names from COLUMNS), in no particular order."""
        return self.conn.execute(f"SELECT {', '.join(columns)} FROM sessions").fetchall()

    def project_rows(self, project, limit, columns=COLUMNS):
        """The first `limit` catalogue rows of one project, in listing order."""
        return self.conn.execute(
            f"SELECT {', '.join(columns)} FROM sessions WHERE project = ? ORDER BY listed LIMIT ?", (project, limit)
        ).fetchall()

    def names(self):
        """Every session directory name the catalogue holds a row for."""
        return {name for (name,) in self.conn.execute("SELECT name FROM sessions")}

    def save(self, changed, removed=()):
        """Store rows read afresh (tuples of COLUMNS) and drop the rows of directories that are gone.

        One transaction. Returns False, changing nothing, when the index cannot
        be written now (read-only, or busy beyond BUSY_SECONDS).
        """
        if not self.writable or not (changed or removed):
            return False
        try:
            with Transaction(self.conn, "IMMEDIATE", raw=True):
                self.conn.executemany("DELETE FROM sessions WHERE name = ?", [(n,) for n in removed])
                self.conn.executemany(
                    f"INSERT INTO sessions({', '.join(COLUMNS)})"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET stamp = excluded.stamp,"
                    " session = excluded.session, project = excluded.project, activity = excluded.activity,"
                    " listed = excluded.listed, doc = excluded.doc, cells = excluded.cells",
                    changed,
                )
        except load().Error:
            self.writable = False
            return False
        return True


def open_index(store, create=False, timeout=BUSY_SECONDS, readonly=False):
    """The store's index, or None when there is none this process can use.

    With `create`, a missing index is made (folder 0700, file 0600) when the
    store can be written; nothing is made otherwise. An index of another
    format is emptied, and one SQLite cannot read is replaced, when this
    process can write it; else None. `readonly` opens it with `mode=ro` and
    never changes it (the start pointer, on the hook's path). Never raises.
    """
    folder = join(store, FOLDER)
    path = join(folder, FILE)
    try:
        if lexists(folder) and (islink(folder) or not isdir(folder)):
            return None
        if lexists(path):
            if islink(path):
                return None
        elif readonly or not create or not _make(folder, path):
            return None
        return _open(path, timeout, readonly)
    except OSError:
        return None


def _make(folder, path):
    """Create the folder and an empty private file; False (and nothing left behind) when the store is read-only."""
    made = False
    try:
        posix.mkdir(folder, 0o700)
        made = True
        posix.chmod(folder, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return False
    try:
        fd = posix.open(path, posix.O_WRONLY | posix.O_CREAT | posix.O_EXCL, 0o600)
    except FileExistsError:
        return True
    except OSError:
        if made:
            try:
                posix.rmdir(folder)
            except OSError:
                pass
        return False
    try:
        posix.fchmod(fd, 0o600)
    finally:
        posix.close(fd)
    return True


def _open(path, timeout, readonly=False):
    sqlite3 = load()
    for attempt in (0, 1):
        try:
            index = _connect(path, timeout, readonly)
            if index is None:
                return None
            state = _format_of(index.conn)
        except sqlite3.DatabaseError as e:
            # Not a database at all: nothing in it can be kept, so a writer starts a new one.
            if attempt or readonly or not _replaceable(e) or not _replace(path):
                return None
            continue
        if state == FORMAT:
            return index
        if not index.writable:
            index.close()
            return None
        try:
            _initialize(index.conn, state is not None)
        except sqlite3.Error:
            index.close()
            return None
        return index
    return None


def _connect(path, timeout, readonly):
    """An Index on `path`, read-write when this process may write it; None when SQLite cannot open it."""
    sqlite3 = load()
    conn = None
    if not readonly:
        try:
            conn = open_connection(path, timeout=timeout)
        except sqlite3.DatabaseError as e:
            if _replaceable(e):
                raise
        except sqlite3.Error:
            pass
    writable = conn is not None
    if conn is None:
        try:
            conn = open_connection(path, readonly=True, timeout=timeout)
        except sqlite3.Error:
            return None
    try:
        conn.execute("PRAGMA secure_delete = ON")
    except BaseException:
        conn.close()
        raise
    return Index(conn, path, writable)


def _format_of(conn):
    """The file's `format` row; None for an empty file; raises for a file that is not a database."""
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
    except load().OperationalError as e:
        if "no such table" not in str(e):
            raise
        if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
            return ""  # someone else's tables: start over
        return None
    return row[0] if row else ""


def _initialize(conn, reset):
    with Transaction(conn, "IMMEDIATE", raw=True):
        if reset or _format_of(conn) not in (None, FORMAT):
            invalidate(conn)
        if _format_of(conn) == FORMAT:
            return  # another process initialized it meanwhile
        for statement in SCHEMA:
            conn.execute(statement)
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('format', ?)", (FORMAT,))


def _replaceable(error):
    text = str(error).lower()
    return "not a database" in text or "malformed" in text or "encrypted" in text


def _replace(path):
    """Delete a file that is not a database (and its journal) and make an empty private one; False if it cannot."""
    for name in (path, path + "-journal"):
        try:
            posix.unlink(name)
        except FileNotFoundError:
            pass
        except OSError:
            return False
    folder = path[: -len(FILE) - 1]
    return _make(folder, path)


def invalidate(conn):
    """Drop every table of the index (inside the caller's transaction); the next catch-up rebuilds it."""
    names = [name for (name,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
    for name in names:
        conn.execute(f'DROP TABLE IF EXISTS "{name}"')


def catch_up(index, changed, removed=()):
    """om.derived's catch-up for the store: store what readers read afresh (see `Index.save`)."""
    return index.save(changed, removed)
