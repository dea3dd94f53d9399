"""The store index: one database beside a store's session directories, its file and its catalogue.

What the store-wide reads (`om sessions`, `search --all-sessions`, `export
--all-sessions`, the start pointer, the MCP tools) consult instead of opening
every ledger. om.sessions.index and om.sessions.searchindex decide what in it
is still true; this module keeps the file and the catalogue (one row per
session), and om.derived.store_index.docs the search part (every session's
documents in one full-text table), which om.derived.store_index.reader reads from
the ledgers.

Invariants:
- Derived and disposable: om.derived's protocol lifted to the store. Every row
  is a function of one session's ledger, read at a recorded moment; nothing
  in it exists anywhere else, so deleting the folder loses nothing (the next
  reader that can write rebuilds it). It lies outside every session
  directory: v1 readers never see it and never need it.
- One file, `<store>/index/store-v1.sqlite3` (0600, in a 0700 folder), named
  for NAME's version; the `format` meta row carries the exact FORMAT, which
  includes om_fts's (om.derived.fts), so a change of tokenizing rebuilds it.
  A file of another format is emptied and rebuilt in place; one that SQLite
  cannot read as a database is replaced. A folder or file that is a symlink
  is never opened (om never follows links inside the store).
- Never created where it cannot be written: `open_index(create=True)` makes
  the folder and the file only when both can be made, and leaves nothing
  behind otherwise; a reader that cannot write reads an existing index
  read-only and never changes it.
- Durable and atomic like a ledger: SQLite's rollback journal, synchronous=FULL,
  and every change one BEGIN IMMEDIATE transaction, so a killed writer leaves
  the state before it. A session's documents (what they cover, the stamp they
  were read at) always change together.
- Nothing replaced survives in the file: every connection runs with
  secure_delete on, so a deleted or rewritten row leaves no bytes in its page
  or in the free pages; the full-text table's segments are merged after a
  rewrite or a `purge` (om.derived.store_index.docs; `om forget`).
"""

from om.derived import fts
from om.derived.store_index import docs as store_docs
from om.fastpath import isdir, islink, join, lexists, posix
from om.sqlite import Transaction, load, open_connection

NAME = "om_store_index_v1"
FOLDER = "index"
FILE = "store-v1.sqlite3"
#: Changing what a row holds or how it is keyed, or how om_fts tokenizes, changes this: another value means rebuild.
FORMAT = "store-index 2;catalogue 2;docs 1;" + fts.FORMAT
#: A reader waits at most this long for another process's short write; a hook never waits.
BUSY_SECONDS = 15.0

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    # One row per readable session directory. `stamp` is the ledger file's identity when the
    # row was read (empty when it must be read again); `listed` sorts the listing; `doc` is the
    # listing row as canonical JSON (without the path of the database), `cells` as table cells;
    # `project` and `project_id` are the session's recorded root folder and project identity (om.project).
    # `recent` sorts cross-session search's ties (activity without creation); `searched` is the
    # stamp the session's documents were read at (empty: read them again), `docs` how many there are.
    # AUTOINCREMENT: an id, which keys a session's documents, is never given to another session.
    "CREATE TABLE IF NOT EXISTS sessions (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT UNIQUE NOT NULL,"
    " stamp BLOB NOT NULL, session TEXT NOT NULL, project TEXT, activity TEXT, listed BLOB NOT NULL,"
    " doc TEXT NOT NULL, cells TEXT NOT NULL, recent BLOB NOT NULL, searched BLOB NOT NULL DEFAULT x'',"
    " docs INTEGER NOT NULL DEFAULT 0, project_id TEXT)",
    "CREATE INDEX IF NOT EXISTS sessions_listed ON sessions(listed)",
    "CREATE INDEX IF NOT EXISTS sessions_project ON sessions(project, listed)",
    "CREATE INDEX IF NOT EXISTS sessions_project_id ON sessions(project_id, listed)",
    # Sessions whose text was forgotten, and when: rows read before that are never written back.
    "CREATE TABLE IF NOT EXISTS purged (name TEXT PRIMARY KEY, at INTEGER NOT NULL)",
    # Listings as printed from the catalogue at meta `version` (which every change of the index
    # increments): printed again as they are while nothing changed.
    "CREATE TABLE IF NOT EXISTS outputs (key TEXT PRIMARY KEY, version INTEGER NOT NULL, text TEXT NOT NULL)",
) + store_docs.SCHEMA

#: The columns of a catalogue row, in the order `save` takes them.
COLUMNS = ("name", "stamp", "listed", "project", "session", "activity", "doc", "cells", "recent", "project_id")


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

    def rows(self, columns=COLUMNS, ordered=False):
        """(version, every catalogue row as a tuple of `columns`, in no particular order unless `ordered`:
        then in listing order), read together."""
        order = " ORDER BY listed" if ordered else ""
        with Transaction(self.conn, "DEFERRED", raw=True):
            return self.version(), self.conn.execute(f"SELECT {', '.join(columns)} FROM sessions{order}").fetchall()

    def version(self):
        """How many changes the index has had (a listing printed at this version is still true at it)."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
        return int(row[0]) if row else 0

    def output(self, key, version):
        """The text printed for `key` at `version`, or None."""
        row = self.conn.execute("SELECT text FROM outputs WHERE key = ? AND version = ?", (key, version)).fetchone()
        return row[0] if row else None

    def save_output(self, key, version, text):
        """Keep what was printed for `key` from the catalogue at `version`, while that is still the version."""
        def change(conn):
            if self.version() == version:
                conn.execute("INSERT OR REPLACE INTO outputs(key, version, text) VALUES (?, ?, ?)", (key, version, text))

        return self._write(change, bump=False)

    def project_rows(self, project, limit, columns=COLUMNS):
        """The first `limit` catalogue rows of one project (om.sessions.catalogue.Project), in listing order."""
        picked = ", ".join(columns)
        if project.key is None:
            return self.conn.execute(f"SELECT {picked} FROM sessions WHERE project = ? ORDER BY listed LIMIT ?",
                                     (project.root, limit)).fetchall()
        # Two walks of their indexes merged in listing order, not one OR: SQLite sorts every row an OR
        # matches, and on 10,000 sessions of one project that was 13 ms of the start pointer (0.4 ms so).
        # A row both walks find is one row (UNION).
        return [row[:-1] for row in self.conn.execute(
            f"SELECT {picked}, listed AS om_order FROM sessions WHERE project = ?"
            f" UNION SELECT {picked}, listed AS om_order FROM sessions WHERE project_id = ?"
            " ORDER BY om_order LIMIT ?", (project.root, project.key, limit))]

    def projects(self, project=None):
        """(version, [(project_id, project, how many rows)] of every distinct pair the catalogue holds (of one
        Project), the pair of the row listed first first), read together."""
        where, args = project.where() if project is not None else ("1", ())
        with Transaction(self.conn, "DEFERRED", raw=True):
            return self.version(), [tuple(row[:3]) for row in self.conn.execute(
                f"SELECT project_id, project, count(*), min(listed) AS first FROM sessions WHERE {where}"
                " GROUP BY project_id, project ORDER BY first", args)]

    def search_scope(self, columns, project=None):
        """(version, how many catalogue rows there are, those whose search rows are not current as tuples
        of `columns`: never read, or read at another stamp or an unsettled one), read together; of one
        project (om.sessions.catalogue.Project) when `project` is not None."""
        scope, args = project.where() if project is not None else ("1", ())
        # Not current: om.sessions.searchindex.bring_up_to_date's rule, for rows the index holds (all have an id).
        stale = "(stamp = x'' OR searched != stamp)"
        with Transaction(self.conn, "DEFERRED", raw=True):
            version = self.version()
            count = self.conn.execute(f"SELECT count(*) FROM sessions WHERE {scope}", args).fetchone()[0]
            rows = self.conn.execute(
                f"SELECT {', '.join(columns)} FROM sessions WHERE {scope} AND {stale}", args).fetchall()
            return version, count, rows

    def row_of(self, columns, session_id):
        """(version, the catalogue row of the session `session_id` as a tuple of `columns`, or None)."""
        with Transaction(self.conn, "DEFERRED", raw=True):
            return self.version(), self.conn.execute(
                f"SELECT {', '.join(columns)} FROM sessions WHERE id = ?", (session_id,)).fetchone()

    def project_ids(self, project):
        """The ids of the catalogue rows of one project (om.sessions.catalogue.Project)."""
        where, args = project.where()
        return [i for (i,) in self.conn.execute(f"SELECT id FROM sessions WHERE {where}", args)]

    def names(self):
        """Every session directory name the catalogue holds a row for."""
        # One row joined in SQLite, split in C: a set built row by row costs twice as much on
        # 10,000 sessions. A directory name never holds "/".
        joined = self.conn.execute("SELECT group_concat(name, '/') FROM sessions").fetchone()[0]
        return set(joined.split("/")) if joined else set()

    def ids(self, names):
        """{name: id} of the catalogue rows of these session directories."""
        found = {}
        for name in names:
            row = self.conn.execute("SELECT id FROM sessions WHERE name = ?", (name,)).fetchone()
            if row is not None:
                found[name] = row[0]
        return found

    def save(self, changed, removed=()):
        """Store rows read afresh (tuples of COLUMNS) and drop the rows of directories that are gone.

        One transaction. Returns False, changing nothing, when the index cannot
        be written now (read-only, or busy beyond BUSY_SECONDS).
        """
        if not (changed or removed):
            return False

        def change(conn):
            gone = list(self.ids(removed).values())
            self._drop_search(gone)
            conn.executemany("DELETE FROM sessions WHERE id = ?", [(i,) for i in gone])
            conn.executemany(
                f"INSERT INTO sessions({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
                " ON CONFLICT(name) DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in COLUMNS[1:]),
                changed,
            )

        return self._write(change)

    def begin(self):
        """Open one write transaction that the writes after it join, until `end`: a build stores many
        chunks in one, since FTS5 writes a segment of the full-text table at every commit. False when
        the index cannot be written now."""
        if not self.writable:
            return False
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except load().Error:
            self.writable = False
            return False
        return True

    def end(self, keep=True):
        """Commit the transaction `begin` opened (roll it back unless `keep`); whether what it held was kept."""
        if not self.conn.in_transaction:
            return False
        try:
            if keep:
                self.conn.execute("COMMIT")
                return True
        except load().Error:
            self.writable = False
        try:
            self.conn.execute("ROLLBACK")
        except load().Error:
            pass
        return False

    def merging(self, on):
        """Switch the full-text table's automatic merging on or off (store_docs.set_merging); False when
        the index cannot be written now. Already so (every catch-up but a build's first): no write."""
        try:
            if store_docs.merging(self.conn) == on:
                return True
        except load().Error:
            pass  # the write below says whether the index can be written
        return self._write(lambda conn: store_docs.set_merging(conn, on), bump=False)

    def merge_all(self):
        """Merge the full-text table's segments into one (store_docs.merge_all), in a transaction of its own;
        False when the index cannot be written now."""
        return self._write(store_docs.merge_all, bump=False)

    def _write(self, change, bump=True):
        """Run `change(conn)` in one write transaction that counts as a change of the index (unless not `bump`);
        False (and never again) when this index cannot be written."""
        if not self.writable:
            return False
        try:
            with Transaction(self.conn, "IMMEDIATE", raw=True):
                change(self.conn)
                if bump:
                    self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('version', ?)",
                                      (str(self.version() + 1),))
                    self.conn.execute("DELETE FROM outputs")
        except load().Error:
            # Inside a transaction `begin` opened, the whole of it goes: none of a failed change is kept.
            self.end(keep=False)
            self.writable = False
            return False
        return True

    # -- the search part (om.derived.store_index.docs) ------------------------------------------

    def coverage(self, session_id):
        """What a session's stored documents cover (a dict), or None when it has none."""
        return store_docs.coverage(self.conn, session_id)

    def save_search(self, batch):
        """Store documents read from ledgers; each item (name, id, stamp, rows, full) (`Reader.read`).

        `full` replaces the session's earlier documents; other rows add to them,
        so they are stored only while the index still covers what they were read
        after (another reader may have stored them meanwhile). A session whose
        catalogue row is gone or renamed, or that was forgotten (`purge`) after
        it was read, is left alone. One transaction; False when the index
        cannot be written now.
        """
        if not batch:
            return False

        def change(conn):
            rewritten = False
            for name, session_id, stamp, rows, full in batch:
                if not conn.execute("SELECT 1 FROM sessions WHERE id = ? AND name = ?", (session_id, name)).fetchone():
                    continue
                purged = conn.execute("SELECT at FROM purged WHERE name = ?", (name,)).fetchone()
                if purged is not None and purged[0] >= rows["read_at"]:
                    continue
                if not (full or self.coverage(session_id) == rows["after"]):
                    continue
                rewritten = store_docs.store(conn, session_id, rows, full) or rewritten
                conn.execute("UPDATE sessions SET searched = ?, docs = ? WHERE id = ?",
                             (stamp, rows["coverage"]["sources_count"] + rows["coverage"]["entries_count"], session_id))
                conn.execute("DELETE FROM purged WHERE name = ?", (name,))
            if rewritten:
                # A ledger rewritten in place (an import, a forget): its old tokens leave the older segments.
                store_docs.merge_deleted(conn)

        return self._write(change)

    def _drop_search(self, ids):
        """Delete the documents of these sessions (inside the caller's transaction); whether there were any."""
        dropped = store_docs.drop(self.conn, ids)
        if dropped:
            marks = ", ".join("?" * len(ids))
            self.conn.execute(f"UPDATE sessions SET searched = x'', docs = 0 WHERE id IN ({marks})", list(ids))
        return dropped

    def purge(self, names):
        """Delete the documents of these session directories and leave none of their bytes in the file.

        Rows a reader read before now are never written back; their catalogue
        rows are read again next time too. Returns False when it could not.
        """
        import time

        def change(conn):
            ids = list(self.ids(names).values())
            self._drop_search(ids)
            conn.executemany("UPDATE sessions SET stamp = x'' WHERE id = ?", [(i,) for i in ids])
            now = time.time_ns()
            conn.executemany("INSERT OR REPLACE INTO purged(name, at) VALUES (?, ?)", [(name, now) for name in names])
            store_docs.merge_deleted(conn)

        return self._write(change)


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
        store_docs.configure(conn)
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
