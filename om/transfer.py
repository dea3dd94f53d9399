"""Fork and import: moving a whole ledger between sessions, atomically.

Invariants:
- fork builds a complete private snapshot inside the store, then publishes it
  with ONE rename of a finished session directory: a fork killed at any point
  leaves either no destination or a complete one, never a half-written ledger,
  and it never replaces an existing destination. Its staging directory names
  its process, and every fork and import first removes the staging
  directories no live process owns (om.store.sweep_staging).
- import changes the destination in ONE write transaction: all or nothing.
- Neither ever writes to the source ledger, and neither creates anything
  (on either side) when the source session has no ledger.
- The SQL is the ledger's (`Ledger.copy_to`, `snapshot_of`, `adopt`); this
  module decides what moves where, and which adapter state is transient.
"""

import os

from om.errors import Conflict, InputError, NotFound
from om.ledger import Ledger
from om.store import (
    DB_NAME,
    STAGING_PREFIX,
    canonical_store,
    database_path,
    ensure_database_file,
    fsync_dir,
    make_staging_dir,
    refuse_symlinks,
    resolve_store,
    session_dir,
    sweep_staging,
    validate_session,
)

TEMP_PREFIX = STAGING_PREFIX


def transient_state():
    """The adapter state declarations an import clears (one per adapter)."""
    from om.claude.state import STATE as CLAUDE
    from om.codex.state import STATE as CODEX

    return (CODEX, CLAUDE)


def fork(store, session, to_session):
    validate_session(to_session)
    if to_session == session:
        raise InputError("om: fork needs a destination session other than the current one")
    from om.views import existing

    with existing(store, session) as source:  # a mistyped source creates nothing, on either side
        store = source.store
        sweep_staging(store)
        destination = session_dir(store, to_session)
        if os.path.lexists(destination):
            raise Conflict(f"om: destination session {to_session!r} already exists in {store}")
        import shutil

        work = make_staging_dir(store)
        try:
            staged = os.path.join(work, os.path.basename(destination))
            os.mkdir(staged, 0o700)
            snapshot = os.path.join(staged, DB_NAME)
            ensure_database_file(snapshot)
            source.copy_to(
                snapshot, {"session": to_session, "forked_from": session, "forked_from_store": store}
            )
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
    validate_session(session)
    validate_session(from_session)
    source_store = canonical_store(from_store)
    if not os.path.isdir(source_store):
        what = "does not exist" if not os.path.lexists(source_store) else "is not a directory"
        raise NotFound(f"om: --from-store {source_store} {what}; nothing was imported")
    resolve_store(source_store, create=False)  # a session folder or a moved store is refused, naming the store
    source_path = database_path(source_store, from_session)
    refuse_symlinks(source_path)
    if not os.path.isfile(source_path):
        from om.render import no_ledger_notice

        raise NotFound(no_ledger_notice(from_session, source_store, True))
    with Ledger.open(store, session) as dest:
        sweep_staging(dest.store)
        if os.path.samefile(dest.path, source_path):
            raise InputError("om: cannot import a session into itself")
        with Ledger.snapshot_of(source_path, from_session) as snapshot:
            dest.adopt(
                snapshot,
                {"forked_from": from_session, "forked_from_store": source_store},
                transient=transient_state(),
            )
        return dest.status()
