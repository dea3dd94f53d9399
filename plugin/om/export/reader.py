"""Reading ledgers for export: one consistent, read-only snapshot per session.

Invariants:
- Every database is opened with `mode=ro`: no journal, table, index or meta
  row is ever created, so a read-only store (a sandboxed shell) exports, and
  a missing session is reported, never created.
- Sources and entries come out exactly as `recall` and `view --all` print
  them (the same row decoders), so a JSON export round-trips against them.
- One snapshot: all reads of a session happen in one read transaction.
"""

import os

from om.errors import NotFound, StoreError
from om.ledger import Ledger
from om.store import DB_NAME, database_path, resolve_store, validate_session

#: The meta key in which a session's project is recorded. Sessions without it
#: export with project None ("unknown" in the documents).
PROJECT_META_KEY = "om_project"


def read_session(store, session):
    validate_session(session)
    store = resolve_store(store, create=False)
    path = database_path(store, session)
    if not os.path.isfile(path):
        raise NotFound(f"om: no ledger for session {session!r} in store {store}")
    return _read(store, path, session)


def read_all(store):
    """Snapshots of every session in the store, most recent activity first."""
    store = resolve_store(store, create=False)
    try:
        names = sorted(n for n in os.listdir(store) if n.startswith("session-"))
    except OSError as e:
        raise StoreError(f"om: cannot list store {store}: {e.strerror or e}") from None
    snapshots = []
    for name in names:
        path = os.path.join(store, name, DB_NAME)
        if os.path.isfile(path):
            snapshots.append(_read(store, path, None))
    snapshots.sort(key=lambda s: (s["last_activity"] or "", s["session"]), reverse=True)
    return snapshots


def _read(store, path, session):
    with Ledger.open_read_only(store, path, session) as ledger:
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
