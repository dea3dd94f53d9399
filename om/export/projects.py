"""The project memory in an export: the project memories of the exported sessions, read as they are.

A session's project is the key its hooks recorded (`om_project_id`); its
memory is the project's ledger in the project home (om.project.home). An
export of one session holds that session's project memory; a store-wide
export holds the memory of every project an exported session belongs to.

Invariants:
- Read-only, as every export read (om.export.reader): the project ledger is
  opened with `mode=ro` in one read snapshot; nothing is created, in the
  project home or anywhere, and a project nobody promoted into has no record.
- A record holds what a reader needs to rebuild the project ledger: every
  entry as `view --all` prints it (the observations carried along as a
  reflection's evidence too) with its `provenance` (None for carried
  evidence: only promoted entries are project memory), and every source as
  `recall` prints it.
- A project memory that cannot be read is a record with its `error`, never a
  failed export: the sessions are exported whole and the document says so.
- Deterministic: a record is a function of the ledger alone (no path of this
  machine but the project's own recorded root folder).
"""

from om.errors import OmError

#: The record fields of a readable project memory, in order.
FIELDS = ("project", "session", "root", "counts", "entries", "sources")


def read_projects(keys):
    """The records of the project memories of `keys` (project keys; None and malformed ones ignored), by key;
    projects without a memory left out."""
    found = []
    for key in sorted({k for k in keys if _is_key(k)}):
        record = read_project(key)
        if record is not None:
            found.append(record)
    return found


def _is_key(value):
    """A project key as om.project.identity makes them (anything else a ledger holds names no project)."""
    from om.project.identity import KEY_HEX

    return isinstance(value, str) and len(value) == KEY_HEX and all(c in "0123456789abcdef" for c in value)


def read_project(key):
    """The record of project `key`'s memory (see the module docstring); None when it has none."""
    import os

    from om.export.reader import UNREADABLE, _reason, database_error
    from om.ledger import Ledger, promotion
    from om.project.home import project_home, project_session
    from om.project.memory import ROOT_KEY
    from om.store import database_path, session_dir

    home, session = project_home(), project_session(key)
    if not os.path.isfile(database_path(home, session)):
        return None
    try:
        with Ledger.open_directory(home, session_dir(home, session)) as ledger:
            with ledger.reading():
                entries = ledger.entries()
                marks = promotion.provenance(ledger.conn)
                sources = ledger.all_sources()
                root = ledger.meta_get(ROOT_KEY)
    except (OmError, database_error(), *UNREADABLE) as e:
        return {"project": key, "session": session, "error": f"cannot read the project memory: {_reason(e)}"}
    for entry in entries:
        entry["provenance"] = marks.get(entry["id"])
    return {"project": key, "session": session, "root": root, "counts": counts(entries), "entries": entries,
            "sources": sources}


def memory(record):
    """The entries of a record that are project memory (promoted: active and retired), in ledger order."""
    return [e for e in record.get("entries") or () if e["provenance"] is not None]


def counts(entries):
    promoted = [e for e in entries if e["provenance"] is not None]
    active = sum(1 for e in promoted if e["active"])
    return {"active": active, "retired": len(promoted) - active, "carried": len(entries) - len(promoted)}


def provenance_facts(entry):
    """The provenance of a promoted entry: ([(label, client name, session, time)], times promoted, reason),
    the marks being its first promotion and, when it was confirmed since, its last confirmation."""
    from om.project.block import client_name

    record = entry["provenance"] or {}
    first = record.get("promoted") or {}
    last = record.get("confirmed") or first
    marks = [("promoted", client_name(first.get("client")), first.get("session"), first.get("at"))]
    if last != first:
        marks.append(("last confirmed", client_name(last.get("client")), last.get("session"), last.get("at")))
    times = record.get("times")
    return marks, times if isinstance(times, int) and times > 0 else 1, record.get("reason")
