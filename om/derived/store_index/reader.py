"""What the store index's documents are read from: a session's ledger, read-only.

Invariants:
- A ledger is only read: attached with `mode=ro` to a private in-memory
  database, in one read transaction, so what is read is one moment of it.
- A document's columns are made here exactly as om_fts makes them
  (om.derived.fts: `spread_cjk` and `stems_text` of the row's text), so the
  store's table holds what each ledger's own index would; the writer of the
  store index only inserts them (the reads may run in other processes).
- Only what follows the stored coverage is read, unless the ledger's first rows
  changed (om_fts's rule: the same count up to the covered seq, the same id at
  it) or its `om_generation` did: then all of it (`full`).
"""

from om.derived import fts
from om.derived.store_index.docs import ENTRIES
from om.sqlite import Transaction


class Reader:
    """Reads sessions' documents from their ledgers, each attached read-only to one private database."""

    def __init__(self):
        from om.sqlite import memory

        self.conn = memory()

    def close(self):
        self.conn.close()

    def read(self, path, session, coverage):
        """The documents of the ledger at `path` after what `coverage` (store_docs.coverage) covers, in one
        read snapshot: (rows, full) where full means every row was read (the first rows changed, or
        another generation); None when the ledger is not `session`'s v1 ledger any more.

        rows: {"docs": [(kind << 62 | seq, text column, stems column)], "originals": what deleting them
        needs (store_docs), "retired": the seqs of every entry not active, "coverage": what it covers
        now, "generation", "read_at": when the read began (ns), "after": the coverage it was read after}.
        """
        import time

        from om.sqlite import uri

        conn = self.conn
        began = time.time_ns()
        conn.execute("ATTACH ? AS ledger", (uri(path, readonly=True),))
        try:
            with Transaction(conn, "DEFERRED", raw=True):
                meta = dict(conn.execute("SELECT key, value FROM ledger.meta WHERE key IN ('session', 'version')"))
                if meta != {"session": session, "version": "1"}:
                    return None
                full = not self._covers(coverage)
                after = (0, 0) if full else (coverage["sources_seq"], coverage["entries_seq"])
                rows = self._documents(after)
                rows["coverage"] = self._coverage()
                rows["generation"] = rows["coverage"]["generation"]
                rows["read_at"] = began
                rows["after"] = coverage
                return rows, full
        finally:
            conn.execute("DETACH ledger")

    def _documents(self, after):
        import marshal
        import zlib

        conn, originals = self.conn, []
        for kind, table, seq in ((0, "sources", after[0]), (1, "entries", after[1])):
            for s, text in conn.execute(
                    f"SELECT seq, json_extract(body, '$.text') FROM ledger.{table} WHERE seq > ? ORDER BY seq", (seq,)):
                originals.append((kind * ENTRIES | s, text if isinstance(text, str) else ""))
        docs = [(doc, fts.spread_cjk(text), fts.stems_text(text)) for doc, text in originals]
        retired = [s for (s,) in conn.execute("SELECT seq FROM ledger.entries WHERE active != 1")]
        return {"docs": docs, "originals": zlib.compress(marshal.dumps(originals), 1), "retired": retired}

    def _coverage(self):
        found = {"generation": self._generation()}
        for table in ("sources", "entries"):
            seq, count = self.conn.execute(f"SELECT coalesce(max(seq), 0), count(*) FROM ledger.{table}").fetchone()
            row = self.conn.execute(f"SELECT id FROM ledger.{table} WHERE seq = ?", (seq,)).fetchone()
            found.update({table + "_seq": seq, table + "_count": count, table + "_id": row[0] if row else ""})
        return found

    def _covers(self, coverage):
        # om_fts's rule (om.derived.fts.is_consistent), and the same rewrite generation.
        if coverage is None or coverage["generation"] != self._generation():
            return False
        for table in ("sources", "entries"):
            seq = coverage[table + "_seq"]
            have = self.conn.execute(f"SELECT count(*) FROM ledger.{table} WHERE seq <= ?", (seq,)).fetchone()[0]
            row = self.conn.execute(f"SELECT id FROM ledger.{table} WHERE seq = ?", (seq,)).fetchone()
            if have != coverage[table + "_count"] or (seq and (row is None or row[0] != coverage[table + "_id"])):
                return False
        return True

    def _generation(self):
        row = self.conn.execute("SELECT value FROM ledger.meta WHERE key = 'om_generation'").fetchone()
        return row[0] if row else "0"
