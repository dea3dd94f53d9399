"""A ledger as a database file: opened from its directory, checked, locked, copied, replaced, merged.

What `Ledger.open_directory`, `Ledger.snapshot_of`, `Ledger.copy_to`,
`Ledger.adopt`, `Ledger.scratch`, `Ledger.merge_sources` and
`Ledger.missing_sources` do (they call these), with the doctor's integrity
check and the lock that removing a session takes. Fork, import, ingest,
listings, export and doctor use them; no capture loads this module (a SessionStart
does, when its pointer opens another session's ledger).

Invariants:
- Read-only opens go through SQLite's `mode=ro` and the same URI quoting as
  every other open (om.sqlite); nothing here writes a file it only reads.
- A copy is checked to be the named session's version 1 ledger before anyone
  uses it; `adopt` replaces a ledger's history in one write transaction.
- A scratch ledger (`scratch`) is a private file that collects sources
  through the one capture path (`Ledger.capture`) before they reach a real
  ledger; `merge_sources` adds the ones the ledger lacks, in the scratch's
  order, in one write transaction of the caller's, so the merge commits whole
  or not at all; `missing_sources` counts them without writing.
"""

from om import ids
from om.errors import Conflict, InputError, StoreError
from om.fastpath import basename, isfile, join
from om.sqlite import Transaction, connect, load, memory, open_connection
from om.store import DB_NAME, refuse_symlinks

sqlite3 = load()

#: Meta keys a fork keeps; every other key (adapter state included) is rewritten or dropped.
FORK_KEEPS = ("version", "cursor", "paused", "last_checkpoint_at")
#: Meta keys an import copies from its source ledger (or deletes when the source has none).
IMPORT_COPIES = ("cursor", "last_checkpoint_at")


def integrity_problem(path):
    """Why the database at `path` is not a usable v1 ledger (one line), or None. Never writes.

    For doctor: opens read-only through the same URI quoting as every other
    command, runs `PRAGMA integrity_check` and reads the schema version.
    """
    try:
        # A short wait: doctor reports a ledger busy for seconds rather than hang on it.
        conn = _open_read_only(path, timeout=5)
        try:
            result = conn.execute("PRAGMA integrity_check").fetchall()
            if result != [("ok",)]:
                return "integrity_check: " + "; ".join(str(r[0]) for r in result[:3])
            version = conn.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
            if version is None or version[0] != "1":
                return f"schema version {version[0] if version else 'missing'!r}, this runtime reads 1"
        finally:
            conn.close()
    except sqlite3.Error as e:
        return str(e)
    return None


def _open_read_only(path, **timeout):
    return open_connection(path, readonly=True, **timeout)


class ExclusiveLock:
    """The exclusive lock on a ledger file, taken within `timeout` seconds or refused.

    For removing a session (at once: 0) and moving one (om.relocation: a short
    wait for the writer holding it). `held` is False when the file is not a
    database at all (nobody can be writing it as one); Conflict when another
    process still holds any lock on it.
    """

    def __init__(self, path, timeout=0):
        self.conn = None
        try:
            conn = open_connection(path, timeout=timeout)
        except sqlite3.DatabaseError as e:
            if "not a database" not in str(e):
                raise StoreError(f"om: cannot open {path}: {e}") from None
            return
        try:
            conn.execute("BEGIN EXCLUSIVE")
        except sqlite3.OperationalError as e:
            conn.close()
            if "locked" in str(e) or "busy" in str(e):
                raise Conflict(f"om: {path} is locked by another process") from None
            raise StoreError(f"om: cannot lock {path}: {e}") from None
        except sqlite3.DatabaseError:
            conn.close()
            return
        self.conn = conn

    @property
    def held(self):
        return self.conn is not None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.conn is not None:
            try:
                self.conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            self.conn.close()
            self.conn = None


def open_directory(cls, store, directory, writable=False):
    """The ledger in an existing session directory of `store`, whichever session it holds.

    The one way to open a ledger read-only (SQLite's `mode=ro`: listings,
    export, cross-session search). Never creates anything; read-only unless
    `writable` (a search may then build that ledger's own derived index).
    Raises StoreError with a short reason (no `om: ` prefix: callers say
    which session it is about) unless the directory holds the v1 ledger of
    the session whose id hashes to the directory's name.
    """
    path = join(directory, DB_NAME)
    refuse_symlinks(path)
    if not isfile(path):
        raise StoreError("no ledger database in it")
    try:
        conn = open_connection(path, readonly=not writable)
    except sqlite3.Error as e:
        raise StoreError(f"cannot open it: {e}") from None
    ledger = cls(conn, store, None, path)
    try:
        tables, session, version = ledger._schema_state()
    except sqlite3.Error as e:
        ledger.close()
        raise StoreError(f"not a readable ledger: {e}") from None
    problem = None
    if tables != 3 or version != "1" or not isinstance(session, str):
        problem = "not a version 1 ledger"
    elif basename(directory) != "session-" + ids.session_hash(session):
        problem = "its ledger belongs to a session whose id does not hash to this directory"
    if problem:
        ledger.close()
        raise StoreError(problem)
    ledger.session = session
    return ledger


def glance(directory, *keys):
    """(each meta key's value, in `keys` order, then whether any entry is active) of the ledger in
    `directory`, read with one read-only statement; None when that read fails or a link stands in the way.

    A filter, never a verdict: a caller may pass over a session on what it
    says, and opens it with open_directory (which checks it is the session's
    v1 ledger) before it trusts or shows anything of it. No wait: a ledger
    another process holds locked is None, and the caller opens it whole.
    """
    path = join(directory, DB_NAME)
    try:
        refuse_symlinks(path)
        conn = _open_read_only(path, timeout=0)
    except (StoreError, sqlite3.Error):
        return None
    try:
        values = "".join("(SELECT value FROM meta WHERE key = ?), " for _ in keys)
        return tuple(conn.execute(f"SELECT {values}EXISTS (SELECT 1 FROM entries WHERE active = 1)", keys).fetchone())
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def snapshot_of(cls, path, session):
    """A private in-memory copy of the ledger at `path`, checked to be `session`'s v1 ledger.

    Opens the source read-only and never writes to it.
    """
    try:
        conn = _open_read_only(path)
    except sqlite3.Error as e:
        raise StoreError(f"om: cannot open {path}: {e}") from None
    try:
        try:
            cls(conn, "", session, path)._schema_state()
        except sqlite3.DatabaseError as e:
            raise InputError(f"om: {path} is not a usable ledger: {e}") from None
        copy = cls(memory(), "", session, path)
        try:
            conn.backup(copy.conn)
        except sqlite3.Error as e:
            copy.close()
            raise Conflict(f"om: cannot snapshot {path}: {e}") from None
    finally:
        conn.close()
    try:
        ok = copy.is_v1_ledger_of(session)
    except sqlite3.DatabaseError:
        ok = False
    if not ok:
        copy.close()
        raise InputError(f"om: {path} is not a version 1 ledger of session {session!r}")
    return copy

def copy_to(ledger, path, meta):
    """Write a complete copy of this ledger to the new file `path` as another session's ledger.

    The copy keeps the meta keys in FORK_KEEPS, drops every other key
    (adapter state included) and adds `meta`. Derived tables come along:
    they are functions of the copied v1 rows.
    """
    copy = connect(path)
    try:
        ledger.conn.backup(copy)
        with Transaction(copy, raw=True):
            copy.execute(
                f"DELETE FROM meta WHERE key NOT IN ({', '.join('?' * len(FORK_KEEPS))})", FORK_KEEPS
            )
            copy.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", list(meta.items()))
    except sqlite3.Error as e:
        raise Conflict(f"om: fork snapshot failed: {e}") from None
    finally:
        copy.close()

def adopt(ledger, snapshot, meta, transient=()):
    """Replace this still empty ledger's history with `snapshot`'s, in one write transaction.

    Keeps this ledger's own sources after the adopted history, copies
    IMPORT_COPIES, sets `meta`, clears the adapter state declared in
    `transient` (see `clear_state`), drops every derived table and increments
    `om_generation`.
    """
    other = dict(snapshot.conn.execute("SELECT key, value FROM meta"))
    history = snapshot.conn.execute("SELECT seq, id, body FROM sources ORDER BY seq").fetchall()
    entries = snapshot.conn.execute(
        "SELECT seq, id, body, active, retirement FROM entries ORDER BY seq"
    ).fetchall()
    conn = ledger.conn
    with ledger.transaction():
        if ledger.has_entries() or ledger.cursor() or ledger.meta_get("forked_from") is not None:
            raise Conflict(
                "om: import needs an uncheckpointed destination without memory or an earlier import"
            )
        own = conn.execute("SELECT id, body FROM sources ORDER BY seq").fetchall()
        conn.execute("DELETE FROM sources")
        conn.executemany("INSERT INTO sources(seq, id, body) VALUES (?, ?, ?)", history)
        conn.executemany(
            "INSERT OR IGNORE INTO sources(id, body) SELECT ?1, ?2"
            " WHERE NOT EXISTS (SELECT 1 FROM sources WHERE id = ?1)",
            own,
        )
        conn.executemany(
            "INSERT INTO entries(seq, id, body, active, retirement) VALUES (?, ?, ?, ?, ?)", entries
        )
        for key in IMPORT_COPIES:
            if key in other:
                ledger.meta_set(key, other[key])
            else:
                ledger.meta_delete(key)
        for key, value in meta.items():
            ledger.meta_set(key, value)
        for state in transient:
            ledger.clear_state(state)
        # The rows at the destination's seqs changed: derived data is rebuilt, here and elsewhere.
        ledger.rows_rewritten()


def scratch(cls, path, session):
    """A new, empty scratch ledger of `session` in the file `path` (created; the caller removes it)."""
    from om.sqlite import scratch as connect_scratch

    return cls.with_schema(connect_scratch(path), None, session, path)


_INCOMING = "om_incoming"
#: The scratch's sources this ledger does not hold yet, oldest first.
_MISSING = (f"FROM {_INCOMING}.sources AS s"
            " WHERE NOT EXISTS (SELECT 1 FROM main.sources AS m WHERE m.id = s.id)")


def missing_sources(ledger, path):
    """({kind: count} of the scratch ledger's sources this ledger lacks, count of those it holds). Never writes."""
    with Attached(ledger, path):
        with ledger.reading():
            return _missing(ledger.conn)


def merge_sources(ledger, path):
    """Add the scratch ledger's sources this ledger lacks, in their order; ({kind: added}, already held).

    Runs inside the caller's write transaction (which may record more, such
    as the project), so the whole merge commits or none of it does.
    """
    conn = ledger.conn
    if not conn.in_transaction:
        raise StoreError("om: merge_sources needs a write transaction")
    # ATTACH is refused inside a transaction: the caller attaches first (`Attached`).
    missing, held = _missing(conn)
    ledger._write(
        f"INSERT OR IGNORE INTO main.sources(id, body) SELECT s.id, s.body {_MISSING} ORDER BY s.seq", ()
    )
    return missing, held


def _missing(conn):
    kinds = dict(conn.execute(f"SELECT json_extract(s.body, '$.kind'), count(*) {_MISSING} GROUP BY 1"))
    total = conn.execute(f"SELECT count(*) FROM {_INCOMING}.sources").fetchone()[0]
    return kinds, total - sum(kinds.values())


class Attached:
    """The scratch ledger at `path` attached read-only to this ledger's connection as `om_incoming`."""

    def __init__(self, ledger, path):
        self.conn = ledger.conn
        self.path = path

    def __enter__(self):
        from om.sqlite import uri

        try:
            self.conn.execute(f"ATTACH DATABASE ? AS {_INCOMING}", (uri(self.path, readonly=True),))
        except sqlite3.Error as e:
            raise StoreError(f"om: cannot read {self.path}: {e}") from None
        return self

    def __exit__(self, *exc):
        try:
            self.conn.execute(f"DETACH DATABASE {_INCOMING}")
        except sqlite3.Error:
            pass
