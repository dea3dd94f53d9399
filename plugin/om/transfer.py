"""Fork and import: moving a whole ledger between sessions, atomically.

Invariants:
- fork builds a complete private snapshot inside the store, then publishes it
  with ONE rename of a finished session directory: a fork killed at any point
  leaves either no destination or a complete one, never a half-written ledger,
  and it never replaces an existing destination.
- import changes the destination in ONE write transaction: all or nothing.
- Neither ever writes to the source ledger.
"""

import os

from om.errors import Conflict, InputError, NotFound
from om.ledger import ADAPTER_PREFIX, FORK_KEEPS, IMPORT_CLEARS, Ledger, connect, sqlite3
from om.store import (
    DB_NAME,
    canonical_store,
    database_path,
    ensure_database_file,
    fsync_dir,
    session_dir,
    validate_session,
)

TEMP_PREFIX = ".om-tmp-"


def fork(store, session, to_session):
    validate_session(to_session)
    if to_session == session:
        raise InputError("om: fork needs a destination session other than the current one")
    with Ledger.open(store, session) as source:
        store = source.store
        destination = session_dir(store, to_session)
        if os.path.lexists(destination):
            raise Conflict(f"om: destination session {to_session!r} already exists in {store}")
        import shutil
        import tempfile

        work = tempfile.mkdtemp(prefix=TEMP_PREFIX, dir=store)
        try:
            staged = os.path.join(work, os.path.basename(destination))
            os.mkdir(staged, 0o700)
            snapshot = os.path.join(staged, DB_NAME)
            ensure_database_file(snapshot)
            copy = connect(snapshot)
            try:
                source.conn.backup(copy)
                copy.execute("BEGIN IMMEDIATE")
                copy.execute(
                    f"DELETE FROM meta WHERE key NOT IN ({', '.join('?' * len(FORK_KEEPS))})", FORK_KEEPS
                )
                copy.executemany(
                    "INSERT INTO meta(key, value) VALUES (?, ?)",
                    [("session", to_session), ("forked_from", session), ("forked_from_store", store)],
                )
                copy.execute("COMMIT")
            except sqlite3.Error as e:
                raise Conflict(f"om: fork snapshot failed: {e}") from None
            finally:
                copy.close()
            fsync_dir(staged)
            if os.path.lexists(destination):
                raise Conflict(f"om: destination session {to_session!r} already exists in {store}")
            try:
                os.rename(staged, destination)
            except OSError as e:
                raise Conflict(f"om: cannot publish session {to_session!r}: {e.strerror or e}") from None
            fsync_dir(store)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    with Ledger.open(store, to_session, create=False) as forked:
        return forked.status()


def import_session(store, session, from_store, from_session):
    validate_session(from_session)
    source_store = canonical_store(from_store)
    source_path = database_path(source_store, from_session)
    if not os.path.isfile(source_path):
        raise NotFound(f"om: no ledger for session {from_session!r} in store {source_store}")
    with Ledger.open(store, session) as dest:
        if os.path.samefile(dest.path, source_path):
            raise InputError("om: cannot import a session into itself")
        snapshot = _snapshot(source_path, from_session)
        try:
            _import_into(dest, snapshot, source_store, from_session)
        finally:
            snapshot.close()
        return dest.status()


def _snapshot(path, session):
    """A private in-memory copy of a source ledger, checked to be that session's v1 ledger."""
    with Ledger(connect(path, readonly=True), os.path.dirname(os.path.dirname(path)), session, path) as src:
        try:
            src._schema_state()
        except sqlite3.DatabaseError as e:
            raise InputError(f"om: {path} is not a usable ledger: {e}") from None
        memory = sqlite3.connect(":memory:", isolation_level=None)
        try:
            src.conn.backup(memory)
        except sqlite3.Error as e:
            memory.close()
            raise Conflict(f"om: cannot snapshot {path}: {e}") from None
    tables, stored_session, version = Ledger(memory, "", session, path)._schema_state()
    if tables != 3 or stored_session != session or version != "1":
        memory.close()
        raise InputError(f"om: {path} is not a version 1 ledger of session {session!r}")
    return memory


def _import_into(dest, snapshot, source_store, source_session):
    meta = dict(snapshot.execute("SELECT key, value FROM meta"))
    history = snapshot.execute("SELECT seq, id, body FROM sources ORDER BY seq").fetchall()
    entries = snapshot.execute("SELECT seq, id, body, active, retirement FROM entries ORDER BY seq").fetchall()
    conn = dest.conn
    with dest.transaction():
        has_entries = conn.execute("SELECT count(*) FROM entries").fetchone()[0]
        if has_entries or dest.cursor() or dest.meta_get("forked_from") is not None:
            raise Conflict(
                "om: import needs an uncheckpointed destination without memory or an earlier import"
            )
        own = conn.execute("SELECT id, body FROM sources ORDER BY seq").fetchall()
        conn.execute("DELETE FROM sources")
        dest.forget_sizes()
        conn.executemany("INSERT INTO sources(seq, id, body) VALUES (?, ?, ?)", history)
        conn.executemany(
            "INSERT OR IGNORE INTO sources(id, body) SELECT ?1, ?2"
            " WHERE NOT EXISTS (SELECT 1 FROM sources WHERE id = ?1)",
            own,
        )
        conn.executemany(
            "INSERT INTO entries(seq, id, body, active, retirement) VALUES (?, ?, ?, ?, ?)", entries
        )
        for key in ("cursor", "last_checkpoint_at"):
            if key in meta:
                dest.meta_set(key, meta[key])
            else:
                dest.meta_delete(key)
        dest.meta_set("forked_from", source_session)
        dest.meta_set("forked_from_store", source_store)
        dest.meta_delete(*IMPORT_CLEARS)
        conn.execute("DELETE FROM meta WHERE substr(key, 1, ?) = ?", (len(ADAPTER_PREFIX), ADAPTER_PREFIX))

