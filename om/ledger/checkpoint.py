"""A checkpoint becomes entry rows: what `Ledger.apply` does.

Invariants:
- One write transaction: observations, reflections, retirements, the view
  order's new rows and the cursor are committed together or not at all.
- The input rules are om.schema's (checked again here for a caller that did
  not); the rules that need the ledger are checked here, in the order the
  description lists the fields.
- Entry IDs and bodies are v1's: an entry another implementation would write
  from the same checkpoint is the same row.
"""

from om import ids
from om.errors import Conflict, InputError, NotFound
from om.jsonio import dumps, loads
from om.ledger.recall import entry_by_id, extend_view_order, shown, source_row
from om.schema import SAME_APPLY


def apply(ledger, checkpoint, promotion=None):
    """Apply a checkpoint (om.schema.CHECKPOINT) in one transaction.

    The input rules were checked by om.schema (here too, for a caller that
    did not); the rules that need the ledger are checked here, in the
    order the description lists the fields: every cited id must name a row
    of the kind its `Ids.refers` says, covered by this checkpoint's cursor.

    Promotions (an entry's `promote: true`, the top-level `promote` ids) go
    into the project ledger the caller attached (om.ledger.promotion), in this
    same transaction, stamped with `promotion` ({client, session, at}); the
    receipt then lists them under `promoted`.
    """
    from om.ledger.promotion import retire
    from om.redact import redact, strip_private
    from om.schema import CHECKPOINT, validate

    checkpoint = validate(CHECKPOINT, checkpoint)
    through = checkpoint["through"]
    receipt = {"through": through, "observations": [], "reflections": [], "retired": []}
    with ledger.transaction():
        cursor = ledger.cursor()
        latest = ledger.conn.execute("SELECT coalesce(max(seq), 0) FROM sources").fetchone()[0]
        if not cursor <= through <= max(latest, cursor):
            raise Conflict(
                f"om: stale or out-of-range cursor {through} (checkpointed through {cursor},"
                f" latest source {latest}); reread pending and retry"
            )
        for i, o in enumerate(checkpoint["observations"]):
            where = f"observations[{i}]"
            support = o["source_ids"]
            stamps = []
            for sid in support:
                row = source_row(ledger, sid)
                if row is None:
                    raise NotFound(f"om: {where} cites unknown source {shown(sid)}")
                if row[0] > through:
                    # v1's rule and words: a checkpoint may cite only the evidence it covers.
                    raise InputError(
                        f"om: {where} cites {shown(sid)} (seq {row[0]}, through {through}):"
                        " source is beyond checkpoint cursor"
                    )
                stamps.append(loads(row[1])["timestamp"])
            text = redact(strip_private(o["text"]))
            importance = o["importance"]
            oid = ids.observation_id(text, support, importance)
            _insert_entry(ledger, oid, "observation", max(stamps), importance, text, support)
            receipt["observations"].append(oid)
        for i, r in enumerate(checkpoint["reflections"]):
            where = f"reflections[{i}]"
            support = r["observation_ids"]
            stamps = []
            for oid in support:
                entry = entry_by_id(ledger, oid)
                if entry is None or entry["kind"] != "observation":
                    raise NotFound(f"om: {where} cites unknown observation {shown(oid)}")
                if not entry["active"]:
                    raise Conflict(f"om: {where} cites retired observation {shown(oid)}")
                stamps.append(entry["timestamp"])
            text = redact(strip_private(r["text"]))
            rid = ids.reflection_id(text, support)
            _insert_entry(ledger, rid, "reflection", max(stamps), "medium", text, support)
            receipt["reflections"].append(rid)
        for i, r in enumerate(checkpoint["retire"]):
            hint = f"; {SAME_APPLY}" if checkpoint["observations"] or checkpoint["reflections"] else ""
            receipt["retired"].append(
                retire(ledger.conn, "main", f"retire[{i}]", r["id"], r["reason"], r["replacement_ids"], hint)
            )
        promoted = _promotions(checkpoint, receipt)
        if promoted:
            from om.ledger.promotion import promote

            receipt["promoted"] = promote(ledger.conn, promoted, promotion)
        extend_view_order(ledger)
        ledger.meta_set("cursor", through)
        ledger.meta_set("last_checkpoint_at", ledger.now())
    return receipt

def wants_promotion(checkpoint):
    """Whether a (validated) checkpoint asks for any promotion: the caller must attach the project first."""
    return bool(checkpoint["promote"]) or any(
        e["promote"] for e in checkpoint["observations"] + checkpoint["reflections"]
    )


def _promotions(checkpoint, receipt):
    """The ids to promote, in order: this checkpoint's flagged entries, then the earlier ones it names."""
    chosen = []
    for kind in ("observations", "reflections"):
        for entry, entry_id in zip(checkpoint[kind], receipt[kind]):
            if entry["promote"] and entry_id not in chosen:
                chosen.append(entry_id)
    for entry_id in checkpoint["promote"]:
        if entry_id not in chosen:
            chosen.append(entry_id)
    return chosen


def _insert_entry(ledger, entry_id, kind, timestamp, importance, text, support):
    body = dumps(
        {
            "seq": 0,
            "id": entry_id,
            "kind": kind,
            "timestamp": timestamp,
            "importance": importance,
            "text": text,
            "support": support,
            "active": True,
            "retirement": None,
        }
    )
    ledger.conn.execute(
        "INSERT OR IGNORE INTO entries(id, body, active, retirement) SELECT ?1, ?2, 1, NULL"
        " WHERE NOT EXISTS (SELECT 1 FROM entries WHERE id = ?1)",
        (entry_id, body),
    )

