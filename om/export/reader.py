"""Reading ledgers for export: one consistent, read-only snapshot per session.

Invariants:
- Every database is opened with `mode=ro`: no journal, table, index or meta
  row is ever created, so a read-only store (a sandboxed shell) exports, and
  a missing session is reported, never created.
- Sources and entries come out exactly as `recall` and `view --all` print
  them (the same row decoders), so a JSON export round-trips against them.
- One snapshot: all reads of a session happen in one read transaction.
- A store-wide export also reads the store's mirrors (`read_mirrors`: what
  other machines published, om sync), each naming its writer.
- A store-wide read skips what it cannot read: a session directory that is not
  a readable v1 ledger of the session its name hashes (the test `om sessions`
  applies, om.sessions.catalogue) is named with its reason, and every other
  session is still exported. A single session that cannot be read fails.
"""

import os

from om.errors import NotFound, OmError, StoreError
from om.project import PROJECT_ID_KEY, PROJECT_KEY
from om.store import database_path, resolve_store, session_dir, validate_session

#: The meta key in which a session's project is recorded (om.project). Sessions
#: without it export with project None ("unknown" in the documents).
PROJECT_META_KEY = PROJECT_KEY


def read_session(store, session):
    validate_session(session)
    store = resolve_store(store, create=False)
    path = database_path(store, session)
    if not os.path.isfile(path):
        raise NotFound(f"om: no ledger for session {session!r} in store {store}")
    from om.ledger import Ledger

    try:
        # open_directory checks that the ledger is the session its directory name hashes.
        with Ledger.open_directory(store, session_dir(store, session)) as ledger:
            return _read(ledger)
    except (OmError, database_error(), *UNREADABLE) as e:
        raise StoreError(f"om: cannot read the ledger {path}: {_reason(e)}") from None


def read_all(store):
    """(snapshots of every readable session, most recent activity first; [{directory, error}] of the rest).

    The store index (om.sessions.index) names the sessions and the
    directories that cannot be opened; every session is then read whole.
    """
    from om.ledger import Ledger
    from om.sessions.catalogue import open_store
    from om.sessions.index import current

    store = open_store(store)
    listed = current(store)
    skipped = [s for s in listed.skipped if os.path.basename(s["directory"]) not in listed.unlisted]
    snapshots = []
    for name in [row[0] for row in listed.rows] + listed.unlisted:
        directory = os.path.join(store, name)
        try:
            with Ledger.open_directory(store, directory) as ledger:
                snapshots.append(_read(ledger))
        except (OmError, database_error(), *UNREADABLE) as e:
            skipped.append({"directory": directory, "error": _failure(e)})
    skipped.sort(key=lambda s: s["directory"])
    snapshots.sort(key=lambda s: (s["last_activity"] or "", s["session"]), reverse=True)
    return snapshots, skipped


def read_mirrors(store):
    """Snapshots of the store's mirrors (om sync), most recent activity first, each with its `origin`
    ({remote, writer, label}); a mirror that cannot be read is passed over (it is derived)."""
    from om.sync import readers

    if not readers.has_mirrors(store):
        return []
    found = []
    for origin, ledger in readers.ledgers(resolve_store(store, create=False)):
        with ledger:
            try:
                snapshot = _read(ledger)
            except (OmError, database_error(), *UNREADABLE):
                continue
        snapshot["origin"] = origin
        snapshot["meta"]["imported_from"] = None
        found.append(snapshot)
    found.sort(key=lambda s: (s["last_activity"] or "", s["session"]), reverse=True)
    return found


def database_error():
    from om.sessions.catalogue import database_error

    return database_error()


def _failure(error):
    # A directory that stopped being a ledger since the catalogue looked reads as a scan would name it.
    if isinstance(error, StoreError) and not str(error).startswith("om: "):
        return str(error)
    return f"not a readable ledger: {_reason(error)}"


#: What a damaged row raises while it is decoded (a body that is not the JSON v1 writes);
#: om's own errors (a body om.jsonio refuses, a failed read) are caught beside them.
UNREADABLE = (ValueError, KeyError, TypeError)


def _reason(error):
    if isinstance(error, KeyError):
        return f"a row lacks its {error.args[0]!r} field"
    text = str(error).removeprefix("om: ")
    return " ".join(text.split()) or type(error).__name__


def _read(ledger):
    # Errors inside the read transaction come out as one-line StoreErrors.
    with ledger.reading():
        return _snapshot(ledger)


def _snapshot(ledger):
    status = ledger.status()
    meta = {
        "cursor": status["through"],
        "paused": status["paused"],
        "last_checkpoint_at": status.get("last_checkpoint_at"),
        "imported_from": status.get("imported_from"),
    }
    sources = ledger.all_sources()
    stamps = [meta["last_checkpoint_at"] or ""]
    if sources:
        stamps.append(sources[-1]["timestamp"])
    return {
        "session": ledger.session,
        "project": ledger.meta_get(PROJECT_META_KEY),
        "project_id": ledger.meta_get(PROJECT_ID_KEY),
        "meta": meta,
        "last_activity": max(stamps) or None,
        "sources": sources,
        "entries": ledger.entries(),
    }


def counts(snapshot):
    """Counts shown in every format's header and index."""
    entries = snapshot["entries"]
    active = [e for e in entries if e["active"]]
    return {
        "sources": len(snapshot["sources"]),
        "observations": sum(e["kind"] == "observation" for e in active),
        "reflections": sum(e["kind"] == "reflection" for e in active),
        "retired": len(entries) - len(active),
    }


def links(snapshot):
    """The evidence chain both ways: {id: {"cited_by": [...], "replaces": [...]}} in seq order.

    `cited_by` of a source lists the observations citing it; of an observation,
    the reflections resting on it. `replaces` of an entry lists the retired
    entries that name it as their replacement.
    """
    out = {}
    for e in snapshot["entries"]:
        for cited in e["support"]:
            out.setdefault(cited, {"cited_by": [], "replaces": []})["cited_by"].append(e["id"])
        retirement = e["retirement"] or {}
        for new in retirement.get("replacement_ids") or ():
            out.setdefault(new, {"cited_by": [], "replaces": []})["replaces"].append(e["id"])
    return out


IMPORTANCE_ORDER = ("critical", "high", "medium", "low")
_HEX = frozenset("0123456789abcdef")


def well_formed(item_id):
    """True for an id of the v1 form (`s-`, `o-` or `r-` and 24 lowercase hex digits).

    Only such ids are written into a document as names, anchors and links; any
    other value a foreign ledger may hold is shown as escaped text.
    """
    return (
        isinstance(item_id, str)
        and len(item_id) == 26
        and item_id[:2] in ("s-", "o-", "r-")
        and _HEX.issuperset(item_id[2:])
    )
