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


def apply(ledger, checkpoint):
    """Apply a checkpoint (om.schema.CHECKPOINT) in one transaction.

    The input rules were checked by om.schema (here too, for a caller that
    did not); the rules that need the ledger are checked here, in the
    order the description lists the fields: every cited id must name a row
    of the kind its `Ids.refers` says, covered by this checkpoint's cursor.
    """
    from om.redact import redact
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
            text = redact(o["text"])
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
            text = redact(r["text"])
            rid = ids.reflection_id(text, support)
            _insert_entry(ledger, rid, "reflection", max(stamps), "medium", text, support)
            receipt["reflections"].append(rid)
        for i, r in enumerate(checkpoint["retire"]):
            where = f"retire[{i}]"
            old = entry_by_id(ledger, r["id"])
            if old is None:
                raise NotFound(f"om: {where} names unknown entry {shown(r['id'])}")
            replacements = r["replacement_ids"]
            for rep_id in replacements:
                rep = entry_by_id(ledger, rep_id)
                if rep is None:
                    hint = f"; {SAME_APPLY}" if checkpoint["observations"] or checkpoint["reflections"] else ""
                    raise NotFound(f"om: {where} names unknown replacement {shown(rep_id)}{hint}")
                if not rep["active"]:
                    raise Conflict(f"om: {where} replacement {shown(rep_id)} is retired")
                if rep["seq"] <= old["seq"]:
                    raise Conflict(f"om: {where} replacement {shown(rep_id)} is not newer than {old['id']}")
                cites_old = rep["kind"] == "reflection" and old["id"] in rep["support"]
                if rep["kind"] != old["kind"] and not cites_old:
                    raise Conflict(
                        f"om: {where} replacement {shown(rep_id)} must be a newer {old['kind']}"
                        " or a reflection citing the retired observation"
                    )
            retirement = dumps({"id": old["id"], "reason": redact(r["reason"]), "replacement_ids": replacements})
            ledger.conn.execute(
                "UPDATE entries SET active = 0, retirement = ? WHERE id = ?", (retirement, old["id"])
            )
            receipt["retired"].append(old["id"])
        extend_view_order(ledger)
        ledger.meta_set("cursor", through)
        ledger.meta_set("last_checkpoint_at", ledger.now())
    return receipt

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

