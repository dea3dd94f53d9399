"""`om sessions`: the store's sessions, read without writing, and removing one for good.

Invariants:
- Listing never writes a ledger: the store must exist and be a store (a folder
  that is none is refused before anything is written into it), every ledger is opened
  read-only (`mode=ro`, no journal mode change), so it works on a store the
  caller can only read. A session directory that cannot be read as a v1
  ledger of the session its name hashes is skipped and named, never fatal.
- The listing is read through the store index (om.sessions.index), which it
  creates or brings up to date when the store can be written, and which gives
  what reading every ledger gives; where the store cannot be written and has
  no index, every ledger is read and nothing is created.
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
from om.store import DB_NAME, foreign_names, fsync_dir, resolve_store, session_dir, validate_session

DIR_PREFIX = "session-"
REMOVED_PREFIX = ".om-removed-"
META_KEYS = (PROJECT_KEY, CWD_KEY, CREATED_KEY)


class Unreadable(Exception):
    """A session directory that is not a readable v1 ledger (skipped by listings)."""


def open_store(path):
    """The canonical store path; it must exist and be a store (om.store.foreign_names), and nothing is created.

    A folder that is no store (a checkout, a home folder: a mistyped --store) is
    refused before anything, the store index above all, is written into it.
    """
    store = resolve_store(path, create=False)
    foreign = foreign_names(store)
    if foreign:
        shown = ", ".join(printable(name) for name in foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        verb = "is" if len(foreign) == 1 else "are"
        raise StoreError(f"om: {store} holds no store: no session ledger, and {shown} {verb} not what om keeps"
                         " in one; nothing was written there")
    return store


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


def list_sessions(store, project=None, progress=None, use_index=True, payload=("doc", "cells")):
    """{"store", "project", "sessions": Rows (most recent first), "skipped": [{directory, error}]}.

    Read through the store index (om.sessions.index), which gives what reading
    every ledger gives; `use_index=False` reads every ledger and touches no
    index. `payload` names what each row carries: "doc" (its JSON, its
    fields) and "cells" (the table).
    """
    from om.sessions.index import current

    store = open_store(store)
    root = project_filter(project) if project is not None else None
    found = current(store, progress, keep_index=True, use_index=use_index)
    try:
        return _listing(found, root, payload)
    finally:
        if found.index is not None:
            found.index.close()


def _listing(found, root, payload):
    rows = found.carrying(payload).rows
    rows = rows if root is None else [r for r in rows if r[3] == root]
    return {"store": found.store, "project": root, "sessions": Rows(found.store, rows, payload),
            "skipped": found.skipped}


def listing_text(store, project=None, as_json=False, progress=None):
    """(What `om sessions [--json]` prints, the skipped directories).

    While nothing changed in the store since the index last changed, this is
    the text printed then, kept in the index (`Index.output`).
    """
    from om.sessions.index import current

    store = open_store(store)
    root = project_filter(project) if project is not None else None
    found = current(store, progress, keep_index=True)
    index = found.index
    try:
        key = "\x1f".join(("json" if as_json else "table", store, root or ""))
        if found.version is not None:
            text = index.output(key, found.version)
            if text is not None:
                return text, found.skipped
        listing = _listing(found, root, ("doc",) if as_json else ("cells",))
        text = listing_json(listing) + "\n" if as_json else render_table(listing)
        if found.version is not None:
            index.save_output(key, found.version, text)
        return text, listing["skipped"]
    finally:
        if index is not None:
            index.close()


def listing_json(listing):
    """The listing as one canonical JSON document (what `dumps` of its rows' fields gives)."""
    from om.jsonio import dumps

    head = dumps({"store": listing["store"], "project": listing["project"]})[:-1]
    rows = listing["sessions"]
    docs = []
    if rows:
        # The database path of every row differs only in the directory name, which needs no escaping.
        first = rows.rows[0][0]
        before = dumps(rows.database(rows.rows[0]))[: -len(first + "/" + DB_NAME) - 1]
        after = "/" + DB_NAME + '"}'
        docs = [f'{doc[:-1]},"database":{before}{row[0]}{after}' for row, doc in zip(rows.rows, rows.docs())]
    return f'{head},"sessions":[{",".join(docs)}],"skipped":{dumps(listing["skipped"])}}}'


# -- rows as the store index keeps them ---------------------------------------------


def encode(name, stamp, row):
    """A summary (`summarize`) as the store index stores it: the columns of om.derived.store_index."""
    from om.jsonio import dumps

    doc = dumps({key: value for key, value in row.items() if key != "database"})
    activity = max((t for t in (row["last_capture"], row["last_checkpoint"]) if t), default=None)
    return (name, stamp, listing_key(row.get("last_activity"), row["session"]), row["project"], row["session"],
            activity, doc, UNIT.join(cells(row)), listing_key(activity, row["session"]))


def listing_key(activity, session):
    """`recency` as bytes that sort the same way (so the index can keep the order)."""
    # Each code point c becomes 0x110000 - c in three bytes: larger code points sort first, and a
    # timestamp that is a prefix of another sorts first, as the tuple of negated code points does.
    desc = b"".join((0x110000 - ord(ch)).to_bytes(3, "big") for ch in (activity or ""))
    return desc + b"\0\0\0" + session.encode("utf-8")


#: Separates the table cells of a stored row (never in a cell: `printable` escapes control characters).
UNIT = "\x1f"


class Rows:
    """The listing's rows as the index keeps them (tuples of om.sessions.index.current), decoded only
    when a row's fields are asked for: `doc` is each row's JSON, `cells` its table cells."""

    def __init__(self, store, rows, payload):
        self.store, self.rows = store, rows
        self._doc = payload.index("doc") + 4 if "doc" in payload else None
        self._cells = payload.index("cells") + 4 if "cells" in payload else None

    def __len__(self):
        return len(self.rows)

    def __bool__(self):
        return bool(self.rows)

    def database(self, row):
        return os.path.join(self.store, row[0], DB_NAME)

    def docs(self):
        return [row[self._doc] for row in self.rows]

    def cells(self):
        return [row[self._cells] for row in self.rows]

    def fields(self):
        """Every row as the dict `summarize` gives."""
        from om.jsonio import loads

        found = []
        for row in self.rows:
            fields = loads(row[self._doc])
            fields["database"] = self.database(row)
            found.append(fields)
        return found


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
    text = str(text)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def _notes(row):
    notes = []
    if row["paused"]:
        notes.append("paused")
    if row["imported_from"]:
        notes.append("from " + printable(row["imported_from"]["session"]))
    return ", ".join(notes)


def cells(row):
    """The table cells of one summary, in COLUMNS order."""
    line = []
    for _, key in COLUMNS:
        if key is None:
            line.append(_notes(row))
        elif key == "project":
            line.append(printable(row[key]) if row[key] else "unknown")
        else:
            value = row[key]
            line.append("-" if value is None else printable(value))
    return line


def render_table(listing):
    """The listing as an aligned table a person reads."""
    rows = listing["sessions"]
    if not rows:
        where = f" of project {listing['project']}" if listing.get("project") else ""
        return f"No sessions{where} in {listing['store']}.\n"
    titles = [title for title, _ in COLUMNS]
    table = [titles] + [cells.split(UNIT) for cells in rows.cells()]
    widths = [max(map(len, column)) for column in zip(*table)]
    # One format for every line: each cell padded to its column, numbers to the right.
    line = "  ".join("{:%s%d}" % (">" if key in NUMERIC else "<", width) for (_, key), width in zip(COLUMNS, widths))
    return "\n".join(line.format(*cells).rstrip() for cells in table) + "\n"


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
