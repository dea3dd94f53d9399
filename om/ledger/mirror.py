"""A mirror's ledger file: another writer's published session written as a read-only v1 ledger.

What om.sync.mirrors calls to turn a checked session file (om.sync.projection)
into a database; the only SQL of sync (the ledger layer owns SQLite).

Invariants:
- The file is new (created 0600 by this call, never an existing ledger), made
  whole in one transaction without a journal, then fsynced; the caller renames
  it into place, so a reader sees the old mirror or the new one, never a part.
- Its rows are v1's: the three tables, the v1 bodies in v1's field order
  (what `Ledger.capture` and a checkpoint write), the published seqs kept, so
  a v1 reader opens it and `recall` follows every citation.
- What om adds lives in `om_*` meta keys v1 readers ignore: `om_mirror_of`
  (where it came from), `om_project_id`, `om_created_at`, and each promoted
  entry's provenance (`om_promoted:<id>`, as in a project ledger).
"""

from om.jsonio import dumps


def build(path, session, meta, sources, entries):
    """Write a new ledger file at `path`: session `session`, meta {key: value} and the rows given.

    `sources`: [{seq, id, kind, timestamp, text, truncated}]; `entries`: [{seq, id,
    kind, timestamp, importance, text, support, active, retirement: None or
    {reason, replacement_ids}}], both as om.sync.projection reads them.
    """
    import os

    from om.ledger import ACTIVE_INDEX, SCHEMA
    from om.sqlite import scratch

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)
    conn = scratch(path)
    try:
        conn.execute("BEGIN")
        for statement in SCHEMA:
            conn.execute(statement)
        conn.execute(ACTIVE_INDEX)
        rows = [("session", session), ("version", "1")] + sorted((k, str(v)) for k, v in meta.items())
        conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", rows)
        conn.executemany("INSERT INTO sources(seq, id, body) VALUES (?, ?, ?)", [
            (s["seq"], s["id"], dumps({"seq": 0, "id": s["id"], "kind": s["kind"], "timestamp": s["timestamp"],
                                       "text": s["text"], "truncated": bool(s["truncated"])}))
            for s in sources])
        conn.executemany("INSERT INTO entries(seq, id, body, active, retirement) VALUES (?, ?, ?, ?, ?)", [
            (e["seq"], e["id"], dumps({"seq": 0, "id": e["id"], "kind": e["kind"], "timestamp": e["timestamp"],
                                       "importance": e["importance"], "text": e["text"], "support": e["support"],
                                       "active": True, "retirement": None}),
             1 if e["active"] else 0,
             None if e["retirement"] is None else dumps({"id": e["id"], "reason": e["retirement"]["reason"],
                                                         "replacement_ids": e["retirement"]["replacement_ids"]}))
            for e in entries])
        conn.execute("COMMIT")
    finally:
        conn.close()
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
