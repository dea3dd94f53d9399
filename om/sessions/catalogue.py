"""The store's sessions one by one, each read without writing as a row of `om sessions`.

What the listing prints (om.sessions.listing), what the store index keeps
(om.sessions.index) and what removal describes (om.sessions.removal) are these rows.

Invariants:
- Reading never writes a ledger: the store must exist and be a store (a folder
  that is none is refused before anything is written into it), every ledger is opened
  read-only (`mode=ro`, no journal mode change), so it works on a store the
  caller can only read. A session directory that cannot be read as a v1
  ledger of the session its name hashes is skipped and named, never fatal.
- Order: most recent activity first (the newest of last capture, last
  checkpoint and creation), then session id, so equal listings print equally.
- One project (`Project`, what `--project DIR` names) is the sessions of DIR's
  project identity in any folder, and the sessions of DIR's root folder: the
  same test in Python (`holds`) and as SQL on the store index (`where`).
"""

import os

from om.errors import StoreError
from om.project import CREATED_KEY, CWD_KEY, PROJECT_ID_KEY, PROJECT_KEY, project_root
from om.store import foreign_names, resolve_store

DIR_PREFIX = "session-"
META_KEYS = (PROJECT_KEY, PROJECT_ID_KEY, CWD_KEY, CREATED_KEY)


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


class Project:
    """The sessions `--project DIR` selects: those whose recorded project identity (`om_project_id`) is
    DIR's, whatever folder they worked in (two clones of one repository are one project), and those
    whose recorded root folder is DIR's (a session recorded without an identity; a deleted checkout).

    `root` is DIR's project root (project_filter), `key` its identity key, or None when it has none
    to give (a directory that no longer exists, or git did not answer in time): then the folder alone.
    """

    __slots__ = ("root", "key")

    def __init__(self, root, key=None):
        self.root, self.key = root, key

    def holds(self, project, project_id):
        """Whether a session recorded with root folder `project` and identity `project_id` is of it."""
        return project == self.root or (self.key is not None and project_id == self.key)

    def memory_key(self):
        """The key of its project memory (om.project.home): its identity's, else its root folder's."""
        if self.key is not None:
            return self.key
        from om.project.identity import folder_key

        return folder_key(self.root)

    def where(self):
        """The same test as SQL over the store index's `project` and `project_id` columns: (clause, args)."""
        if self.key is None:
            return "project = ?", (self.root,)
        return "(project = ? OR project_id = ?)", (self.root, self.key)


def project_scope(directory):
    """The Project `--project DIR` names: DIR's root (project_filter) and its identity, for which git
    may run (om.project.identity, its 60 s bound; a cached answer costs one small read)."""
    root = project_filter(directory)
    path = os.path.abspath(os.path.expanduser(directory))
    if not os.path.isdir(path):
        return Project(root)
    from om.project.identity import SECONDS, identify

    identity = identify(path, SECONDS)
    return Project(root, identity.key if identity.known else None)


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
        "project_id": meta.get(PROJECT_ID_KEY),
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
    """Yield (name, Ledger, meta) of the store's readable sessions (of one Project) and (name, reason) of the rest.

    Each Ledger is open; the caller closes it.
    """
    for name in session_directories(store):
        try:
            ledger, meta = open_ledger(store, name, writable)
        except Unreadable as e:
            yield name, None, str(e)
            continue
        if project is not None and not project.holds(meta.get(PROJECT_KEY), meta.get(PROJECT_ID_KEY)):
            ledger.close()
            continue
        yield name, ledger, meta


# -- rows as the store index keeps them ---------------------------------------------


def encode(name, stamp, row):
    """A summary (`summarize`) as the store index stores it: the columns of om.derived.store_index."""
    from om.jsonio import dumps

    doc = dumps({key: value for key, value in row.items() if key != "database"})
    activity = max((t for t in (row["last_capture"], row["last_checkpoint"]) if t), default=None)
    return (name, stamp, listing_key(row.get("last_activity"), row["session"]), row["project"], row["session"],
            activity, doc, UNIT.join(cells(row)), listing_key(activity, row["session"]), row.get("project_id"))


def listing_key(activity, session):
    """`recency` as bytes that sort the same way (so the index can keep the order)."""
    # Each code point c becomes 0x110000 - c in three bytes: larger code points sort first, and a
    # timestamp that is a prefix of another sorts first, as the tuple of negated code points does.
    desc = b"".join((0x110000 - ord(ch)).to_bytes(3, "big") for ch in (activity or ""))
    return desc + b"\0\0\0" + session.encode("utf-8")


#: Separates the table cells of a stored row (never in a cell: `printable` escapes control characters).
UNIT = "\x1f"


# -- a row's cells of the text table (om.sessions.listing prints it) ------------------

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
