"""The row bodies of the v1 tables read back: one decoder for `sources.body`, one for `entries.body`.

Invariant: these are the only decoders of the two bodies. Everything derived
from a row (an entry's view rank and line size, om.derived.view_order) and
every row the ledger hands out (`recall`, `pending`, `entries`, export) reads
its body through here, so a field read back means the same everywhere. The
bodies are written by `Ledger.capture` and om.ledger.checkpoint, in v1's format.
"""

from om.jsonio import loads


def source_fields(seq, body):
    """A source as `recall` and `pending` print it."""
    b = loads(body)
    return {
        "seq": seq,
        "id": b["id"],
        "kind": b["kind"],
        "timestamp": b["timestamp"],
        "text": b["text"],
        "truncated": bool(b.get("truncated", False)),
    }


def entry_fields(seq, entry_id, body):
    """The fields of an entry's immutable body (its active flag and retirement are columns of their own)."""
    b = loads(body)
    return {
        "seq": seq,
        "id": entry_id,
        "kind": b["kind"],
        "timestamp": b["timestamp"],
        "importance": b.get("importance", "medium"),
        "text": b["text"],
        "support": b.get("support") or [],
    }
