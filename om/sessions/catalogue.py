"""`om sessions`: the store's sessions, read without writing, and removing one for good.

Invariants:
- Listing never creates or writes anything: the store must exist, every ledger
  is opened read-only (`mode=ro`, no journal mode change), so it works on a
  store the caller can only read. A session directory that cannot be read as
  a v1 ledger of the session its name hashes is skipped and named, never fatal.
- Order: most recent activity first (the newest of last capture, last
  checkpoint and creation), then session id, so equal listings print equally.
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
from om.project import CREATED_KEY, CWD_KEY, PROJECT_KEY, project_root
from om.store import DB_NAME, fsync_dir, resolve_store, session_dir, validate_session

DIR_PREFIX = "session-"
REMOVED_PREFIX = ".om-removed-"
META_KEYS = (PROJECT_KEY, CWD_KEY, CREATED_KEY)


class Unreadable(Exception):
    """A session directory that is not a readable v1 ledger (skipped by listings)."""


def open_store(path):
    """The canonical store path; it must exist (nothing is created)."""
    return resolve_store(path, create=False)


def project_filter(directory):
    """The project root `--project DIR` names (DIR itself may be any directory inside it).

    A directory that no longer exists names itself, so the sessions of a deleted
    checkout can still be listed (and removed).
    """
    from om.errors import InputError

    if not isinstance(directory, str) or not directory.strip() or "\0" in directory:
        raise InputError("om: --project needs a directory")
    path = os.path.abspath(os.path.expanduser(directory))
    if not os.path.isdir(path):
        return os.path.realpath(path)
    return project_root(path)


def session_directories(store):
    """Names in the store that look like session directories, sorted (hidden and staging ones excluded).

    Anything so named is listed, links and stray files too: opening it then
    reports why it is not a session (om never follows links inside the store).
    """
    try:
        names = os.listdir(store)
    except OSError as e:
        raise StoreError(f"om: cannot read store {store}: {e.strerror or e}") from None
    return sorted(name for name in names if name.startswith(DIR_PREFIX))


def open_ledger(store, name, writable=False):
    """(Ledger, meta) of one session directory, checked to be the v1 ledger of the session it hashes.

    Read-only unless `writable` (search may build that session's own derived
    index); even then the file must exist already, so nothing is created.
    Raises Unreadable with a one-line reason.
    """
    from om.ledger import Ledger

    try:
        ledger = Ledger.open_directory(store, os.path.join(store, name), writable)
    except StoreError as e:
        raise Unreadable(str(e).removeprefix("om: ")) from None
    try:
        meta = {key: ledger.meta_get(key) for key in META_KEYS}
    except database_error() as e:
        ledger.close()
        raise Unreadable(f"not a readable ledger: {e}") from None
    return ledger, meta


def database_error():
    """SQLite's error class, for reads that meet a damaged ledger."""
    from om.sqlite import load

    return load().Error


def summarize(ledger, meta):
    """One row of the listing (see docs/sessions.md for the fields)."""
    with ledger.reading():
        status = ledger.status()
        count, first_at, last_at = ledger.sources_span()
    # The record is the session's own start; the first source may come from an imported history.
    created = meta.get(CREATED_KEY) or first_at
    checkpoint = status.get("last_checkpoint_at")
    activity = max((t for t in (last_at, checkpoint, created) if t), default=None)
    return {
        "session": ledger.session,
        "project": meta.get(PROJECT_KEY),
        "cwd": meta.get(CWD_KEY),
        "created": created,
        "last_capture": last_at,
        "last_checkpoint": checkpoint,
        "last_activity": activity,
        "sources": count,
        "observations": status["active"]["observations"],
        "reflections": status["active"]["reflections"],
        "pending": status["pending_sources"],
        "paused": status["paused"],
        "imported_from": status.get("imported_from"),
        "database": ledger.path,
    }


def recency(row):
    """Sort key: most recent activity first, then session id."""
    return (_desc(row.get("last_activity") or ""), row["session"])


def _desc(text):
    # Timestamps are fixed-width RFC 3339 strings: negate each code point to sort descending.
    return tuple(-ord(ch) for ch in text)


def scan(store, project=None, writable=False):
    """Yield (name, Ledger, meta) of the store's readable sessions (of one project) and (name, reason) of the rest.

    Each Ledger is open; the caller closes it.
    """
    for name in session_directories(store):
        try:
            ledger, meta = open_ledger(store, name, writable)
        except Unreadable as e:
            yield name, None, str(e)
            continue
        if project is not None and meta.get(PROJECT_KEY) != project:
            ledger.close()
            continue
        yield name, ledger, meta


def list_sessions(store, project=None):
    """{"store", "project", "sessions": [rows, most recent first], "skipped": [{directory, error}]}."""
    store = open_store(store)
    root = project_filter(project) if project is not None else None
    rows, skipped = [], []
    for name, ledger, meta in scan(store, root):
        if ledger is None:
            skipped.append({"directory": os.path.join(store, name), "error": meta})
            continue
        try:
            with ledger:
                rows.append(summarize(ledger, meta))
        except (database_error(), StoreError) as e:
            skipped.append({"directory": os.path.join(store, name), "error": f"not a readable ledger: {e}"})
    rows.sort(key=recency)
    return {"store": store, "project": root, "sessions": rows, "skipped": skipped}


# -- the text table -------------------------------------------------------------

COLUMNS = (
    ("SESSION", "session"),
    ("PROJECT", "project"),
    ("CREATED", "created"),
    ("LAST CAPTURE", "last_capture"),
    ("LAST CHECKPOINT", "last_checkpoint"),
    ("SOURCES", "sources"),
    ("OBS", "observations"),
    ("REFL", "reflections"),
    ("PENDING", "pending"),
    ("NOTES", None),
)
NUMERIC = {"sources", "observations", "reflections", "pending"}


def printable(text):
    """Text on one line: control and other non-printable characters escaped."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in str(text))


def _notes(row):
    notes = []
    if row["paused"]:
        notes.append("paused")
    if row["imported_from"]:
        notes.append("from " + printable(row["imported_from"]["session"]))
    return ", ".join(notes)


def render_table(listing):
    """The listing as an aligned table a person reads."""
    rows = listing["sessions"]
    if not rows:
        where = f" of project {listing['project']}" if listing.get("project") else ""
        return f"No sessions{where} in {listing['store']}.\n"
    cells = []
    for row in rows:
        line = []
        for _, key in COLUMNS:
            if key is None:
                line.append(_notes(row))
            elif key == "project":
                line.append(printable(row[key]) if row[key] else "unknown")
            else:
                value = row[key]
                line.append("-" if value is None else printable(value))
        cells.append(line)
    widths = [max(len(title), *(len(line[i]) for line in cells)) for i, (title, _) in enumerate(COLUMNS)]

    def fmt(line):
        parts = []
        for i, (cell, (_, key)) in enumerate(zip(line, COLUMNS)):
            parts.append(cell.rjust(widths[i]) if key in NUMERIC else cell.ljust(widths[i]))
        return "  ".join(parts).rstrip()

    out = [fmt([title for title, _ in COLUMNS])] + [fmt(line) for line in cells]
    return "\n".join(out) + "\n"


# -- removal ----------------------------------------------------------------------


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
    listing = list_sessions(store, project)
    rows = [row for row in listing["sessions"] if _older(row, cutoff)]
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
