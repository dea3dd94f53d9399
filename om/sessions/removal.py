"""`om sessions --remove ID` and `--prune --inactive-for DAYS`: sessions removed for good.

Invariants:
- Removal leaves the whole session or nothing: under the ledger's exclusive
  lock (refused while any other process holds a lock on it) the session
  directory is renamed aside in one step, then deleted. A removal killed after
  the rename leaves only a hidden `.om-removed-*` directory, which no listing
  shows and the next removal (or forget) deletes.
- Pruning (`--prune --inactive-for DAYS`) is removal, session by session, of
  the ones whose last activity is older, judged again under each one's lock:
  a session in use, or active since it was listed, stays.
"""

import os

from om.errors import Conflict, NotFound, StoreError
from om.sessions.catalogue import DIR_PREFIX, META_KEYS, open_ledger, open_store, printable, summarize
from om.sessions.listing import list_sessions
from om.store import DB_NAME, fsync_dir, session_dir, validate_session

REMOVED_PREFIX = ".om-removed-"


def describe(store, session):
    """(canonical store, session directory, one-line description) of a session about to be removed."""
    validate_session(session)
    store = open_store(store)
    directory = session_dir(store, session)
    if not os.path.lexists(directory):
        raise NotFound(f"om: no session {printable(session)!s} in store {store}")
    if os.path.islink(directory) or not os.path.isdir(directory):
        raise StoreError(f"om: {directory} is not a session directory; remove it by hand")
    try:
        ledger, meta = open_ledger(store, os.path.basename(directory))
        with ledger:
            row = summarize(ledger, meta)
        what = (f"{row['sources']} sources, {row['observations']} observations, {row['reflections']} reflections,"
                f" project {row['project'] or 'unknown'}")
    except Exception as e:  # a damaged session can still be removed
        what = f"unreadable: {' '.join(str(e).split())}"
    return store, directory, f"session {printable(session)} ({what})"


def remove_session(store, directory, session, still=None):
    """Remove one session directory for good; {"removed", "store", "directory"}.

    `still(ledger)`, when given, is asked under the exclusive lock (with the
    ledger read through it) whether the session is still to be removed; when it
    says no, nothing is removed and None is returned.
    """
    import secrets

    from om.ledger.files import ExclusiveLock

    path = os.path.join(directory, DB_NAME)
    aside = os.path.join(store, REMOVED_PREFIX + os.path.basename(directory)[len(DIR_PREFIX):]
                         + "-" + secrets.token_hex(4))
    try:
        lock = ExclusiveLock(path) if os.path.isfile(path) else None
    except Conflict:
        raise Conflict(
            f"om: session {printable(session)} is in use by another process (its ledger is locked);"
            " nothing was removed, retry when it is idle"
        ) from None
    try:
        if still is not None and not still(lock):
            return None
        os.rename(directory, aside)
    except OSError as e:
        raise StoreError(f"om: cannot remove {directory}: {e.strerror or e}; nothing was removed") from None
    finally:
        if lock is not None:
            lock.__exit__(None, None, None)
    fsync_dir(store)
    sweep_removed(store)
    return {"removed": session, "store": store, "directory": directory}


def sweep_removed(store):
    """Delete what removals left: each was removed in one rename, so this is cleanup only."""
    import shutil

    for name in os.listdir(store):
        if name.startswith(REMOVED_PREFIX):
            shutil.rmtree(os.path.join(store, name), ignore_errors=True)


# -- retention ------------------------------------------------------------------------


def inactive(store, days, project=None, now=None):
    """(canonical store, cutoff, rows of the sessions whose last activity is before it, skipped)."""
    import time

    from om.errors import InputError

    if not isinstance(days, int) or days < 1:
        raise InputError("om: --inactive-for takes a whole number of days, at least 1")
    now = time.time() if now is None else now
    cutoff = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - days * 86400))
    listing = list_sessions(store, project, payload=("doc",))
    rows = [row for row in listing["sessions"].fields() if _older(row, cutoff)]
    return listing["store"], cutoff, rows, listing["skipped"]


def _older(row, cutoff):
    # Timestamps are fixed-width RFC 3339 UTC strings: string order is time order.
    # A session with no timestamp at all is judged by its database file's age.
    activity = row.get("last_activity") or _file_time(row["database"])
    return activity is not None and activity < cutoff


def _file_time(path):
    import time

    try:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(os.stat(path).st_mtime))
    except OSError:
        return None


def prune(store, rows, cutoff):
    """Remove each session of `rows` that is still inactive since before `cutoff`, under its lock.

    {"store", "before", "pruned": [rows], "in_use": [ids], "active": [ids]}: a session
    another process holds is left alone (in_use), and so is one that got new
    activity since it was listed (active).
    """
    from om.ledger import Ledger

    pruned, in_use, active = [], [], []
    for row in rows:
        directory = os.path.dirname(row["database"])

        def still(lock, row=row):
            if lock is None or not lock.held:
                return True  # no database to hold activity: the listing's judgement stands
            ledger = Ledger(lock.conn, store, row["session"], row["database"])
            now = summarize(ledger, {key: ledger.meta_get(key) for key in META_KEYS})
            return _older(now, cutoff)

        try:
            done = remove_session(store, directory, row["session"], still)
        except Conflict:
            in_use.append(row["session"])
            continue
        (pruned if done else active).append(row if done else row["session"])
    return {"store": store, "before": cutoff, "pruned": pruned, "in_use": in_use, "active": active}
