"""Entries and sources read back: recall, the entry list and the view order.

What `Ledger.recall`, `Ledger.entries`, `Ledger.refresh_view_order` and
`Ledger.view_oracle` do (they call these; the hook path never loads this module).

Invariants:
- Read-only, except `refresh_view_order`/`extend_view_order`, which only extend
  the derived view-order table (om.derived.view_order) and never touch a v1 row.
- Every row handed out is decoded by om.ledger.bodies.
"""

from om.errors import InputError, NotFound, StoreError
from om.jsonio import loads
from om.ledger.bodies import entry_fields, source_fields


def entries(ledger, active_only=False):
    sql = "SELECT seq, id, body, active, retirement FROM entries"
    if active_only:
        sql += " WHERE active = 1"
    return [_entry(*row) for row in ledger.conn.execute(sql + " ORDER BY seq")]

# -- the view order (derived: om.derived.view_order) ----------------------

def refresh_view_order(ledger):
    """Bring the order table up to date when the ledger can be written; never fails."""
    if _view_order_current(ledger):
        return
    try:
        with ledger.transaction():
            extend_view_order(ledger)
    except StoreError:
        pass  # a read-only ledger (a sandboxed shell): view_oracle ranks in memory

def view_oracle(ledger):
    """`(next_fitting, total)` for om.render.select over the active entries.

    Call inside `reading()`, after `refresh_view_order()`: uses the order
    table when it covers every entry, else ranks the entries in memory.
    """
    if not _view_order_current(ledger):
        from om.viewline import list_oracle

        active = entries(ledger, active_only=True)
        return list_oracle(active), len(active)
    from om.derived.view_order import next_fitting_query

    query = next_fitting_query()

    def next_fitting(after, remaining):
        row = ledger.conn.execute(query, (-1 if after is None else after, remaining)).fetchone()
        if row is None:
            return None
        rank, seq, entry_id, body, retirement = row
        return rank, _entry(seq, entry_id, body, 1, retirement)

    return next_fitting, ledger.active_count()

def _view_order_current(ledger):
    from om.derived import view_order

    return view_order.is_current(ledger.conn)

def extend_view_order(ledger):
    """Add order rows for entries above the table's highest seq (inside a write transaction)."""
    from om.derived import view_order

    view_order.catch_up(ledger.conn)


def recall(ledger, item_id):
    if not isinstance(item_id, str) or not item_id:
        raise InputError("om: recall needs an id")
    with ledger.reading():
        if item_id.startswith("s-"):
            row = source_row(ledger, item_id)
            if row is None:
                raise NotFound(f"om: no source {shown(item_id)}")
            return {"sources": [source_fields(*row)]}
        entry = entry_by_id(ledger, item_id)
        if entry is None:
            raise NotFound(f"om: no entry {shown(item_id)}")
        if entry["kind"] == "observation":
            return {"entry": entry, "sources": _sources_by_ids(ledger, entry["support"])}
        observations = [e for e in (entry_by_id(ledger, i) for i in entry["support"]) if e is not None]
        observations.sort(key=lambda e: e["seq"])
        source_ids = sorted({s for o in observations for s in o["support"]})
        return {"entry": entry, "observations": observations, "sources": _sources_by_ids(ledger, source_ids)}

def entry_by_id(ledger, entry_id):
    row = ledger.conn.execute(
        "SELECT seq, id, body, active, retirement FROM entries WHERE id = ?", (entry_id,)
    ).fetchone()
    return _entry(*row) if row else None

def source_row(ledger, source_id):
    """(seq, body) of one source, or None."""
    return ledger.conn.execute("SELECT seq, body FROM sources WHERE id = ?", (source_id,)).fetchone()


def _sources_by_ids(ledger, source_ids):
    found = []
    for sid in source_ids:
        row = source_row(ledger, sid)
        if row:
            found.append(source_fields(*row))
    found.sort(key=lambda s: s["seq"])
    return found

def shown(text, limit=80):
    """An id from the input as an error message shows it: bounded, on one line."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _entry(seq, entry_id, body, active, retirement):
    entry = entry_fields(seq, entry_id, body)
    entry["active"] = bool(active)
    entry["retirement"] = loads(retirement) if retirement else None
    return entry
