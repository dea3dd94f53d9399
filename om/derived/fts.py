"""The derived full-text index of one session ledger, and all SQL that touches it.

Invariants:
- Additive: only tables whose names start with `om_fts` are created, written or
  dropped here. The three v1 tables are only read, so a v1 peer keeps reading
  and writing the ledger as before, and ignores these tables.
- Derived: everything in the index can be rebuilt from `sources` and
  `entries`; losing it loses nothing. A missing, damaged or inconsistent index
  is dropped and rebuilt, never repaired in place.
- Immutable content only: a document is a source's text or an entry's text,
  and neither ever changes for a given seq. Whether an entry is active or
  retired is read from `entries` at query time, so `apply` never has to touch
  the index and a peer's retirement is seen at once.
- Row identity: a source is document `seq`, an entry is document
  `ENTRY_BASE + seq`. One table (so BM25 statistics are shared and scores of
  memories and evidence are comparable), split by rowid range (so a search of
  memories alone never scores evidence).
- Catch-up goes by seq in chunks, each its own short write transaction, so a
  capture from a hook waits for at most one chunk. It follows om/derived's
  protocol (`NAME`, `catch_up`, `invalidate`) and its rewrite rule: the
  indexed prefix of each v1 table must still end in the same row.
"""

import re

from om.derived import names
from om.sqlite import Transaction, load

sqlite3 = load()

#: Changing tokenizing or row identity changes this; a different value means rebuild.
FORMAT = "1;unicode61 remove_diacritics 2;cjk-chars;entry-base-40"
ENTRY_BASE = 1 << 40
CHUNK = 2000
MEMBERS_CHUNK = 500
TABLE = "om_fts"
STATE = "om_fts_state"
NAME = TABLE
#: The index's columns and tokenizer, and the SQL of each row's columns from a v1 row's `body`: one
#: definition for this index and for every other full-text table built the same way (the store index).
COLUMNS = "text"
TOKENIZE = "unicode61 remove_diacritics 2"
DOCUMENT = "om_spread_cjk(json_extract(body, '$.text'))"


def definition(content=""):
    """The `USING fts5(...)` arguments of a table tokenized as this index is (contentless by default)."""
    stored = "" if content is None else f", content='{content}'"
    return f"fts5({COLUMNS}{stored}, tokenize='{TOKENIZE}')"


def register(conn):
    """Make DOCUMENT's functions known to `conn`."""
    conn.create_function("om_spread_cjk", 1, spread_cjk, deterministic=True)

# Scripts written without spaces between words. unicode61 would keep a whole
# run as one token; indexing each character as a token lets a query word match
# anywhere inside a run (as a phrase of characters).
_CJK = (
    "\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f"
    "\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f"
)
CJK_CHAR = re.compile("([" + _CJK + "])")


def spread_cjk(text):
    """Text with every CJK character made a token of its own."""
    if not text or text.isascii():
        return text or ""
    return CJK_CHAR.sub(r" \1 ", text)


def fts5_available(conn):
    try:
        return bool(conn.execute("SELECT sqlite_compileoption_used('ENABLE_FTS5')").fetchone()[0])
    except sqlite3.Error:
        return False


def read_state(conn):
    """The index's bookkeeping, or None when there is no usable index."""
    try:
        rows = dict(conn.execute(f"SELECT key, value FROM {STATE}"))
        conn.execute(f"SELECT rowid FROM {TABLE} WHERE rowid = 0").fetchall()
    except sqlite3.Error:
        return None
    if rows.get("format") != FORMAT:
        return None
    try:
        return {
            "sources_seq": int(rows["sources_seq"]),
            "sources_count": int(rows["sources_count"]),
            "sources_id": rows.get("sources_id", ""),
            "entries_seq": int(rows["entries_seq"]),
            "entries_count": int(rows["entries_count"]),
            "entries_id": rows.get("entries_id", ""),
        }
    except (KeyError, ValueError):
        return None


def is_consistent(conn, state):
    """False when the indexed prefix of a table no longer matches it (an import rewrote it)."""
    for table in ("sources", "entries"):
        seq, count, last_id = state[table + "_seq"], state[table + "_count"], state[table + "_id"]
        have = conn.execute(f"SELECT count(*) FROM {table} WHERE seq <= ?", (seq,)).fetchone()[0]
        if have != count or not names(conn, table, seq, last_id):
            return False
    return True


def index_exists(conn):
    return bool(
        conn.execute(
            "SELECT count(*) FROM sqlite_master WHERE name = ? OR name = ?", (TABLE, STATE)
        ).fetchone()[0]
    )


def drop(conn):
    """Remove every om_fts table, even when FTS5 can no longer open a damaged one."""
    with _write(conn):
        try:
            conn.execute(f"DROP TABLE IF EXISTS {TABLE}")
        except sqlite3.Error:
            # FTS5 cannot destroy a table whose shadow tables are gone or
            # unreadable. Drop what is left as plain tables, then remove the
            # virtual table's schema row: it owns no pages, so nothing leaks.
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND substr(name, 1, 7) = 'om_fts_'"
            ).fetchall():
                conn.execute(f'DROP TABLE IF EXISTS "{name}"')
            conn.execute("PRAGMA writable_schema = ON")
            try:
                conn.execute("DELETE FROM sqlite_master WHERE type = 'table' AND name = ?", (TABLE,))
            finally:
                conn.execute("PRAGMA writable_schema = OFF")
        conn.execute(f"DROP TABLE IF EXISTS {STATE}")
    try:
        conn.execute("PRAGMA writable_schema = RESET")
    except sqlite3.Error:
        pass


def create(conn):
    with _write(conn):
        conn.execute(
            f"CREATE VIRTUAL TABLE {TABLE} USING {definition()}"
        )
        conn.execute(f"CREATE TABLE {STATE} (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.executemany(
            f"INSERT INTO {STATE}(key, value) VALUES (?, ?)",
            [
                ("format", FORMAT),
                ("sources_seq", "0"),
                ("sources_count", "0"),
                ("sources_id", ""),
                ("entries_seq", "0"),
                ("entries_count", "0"),
                ("entries_id", ""),
            ],
        )


def catch_up(conn, chunk=CHUNK):
    """Make the index current: (re)create it when missing, stale in format or rewritten, then extend it.

    Raises sqlite3.Error when it cannot (a read-only ledger, a damaged index).
    """
    state = read_state(conn)
    if state is None or not is_consistent(conn, state):
        if index_exists(conn):
            drop(conn)
        create(conn)
    return extend(conn, chunk)


def invalidate(conn):
    drop(conn)


def extend(conn, chunk=CHUNK):
    """Index rows added since the last search; returns how many were indexed."""
    register(conn)
    done = 0
    for table, base in (("sources", 0), ("entries", ENTRY_BASE)):
        while True:
            with _write(conn):
                state = read_state(conn)
                if state is None:
                    raise sqlite3.DatabaseError("search index vanished during catch-up")
                seq = state[table + "_seq"]
                rows = conn.execute(
                    f"SELECT seq, id FROM {table} WHERE seq > ? ORDER BY seq LIMIT ?", (seq, chunk)
                ).fetchall()
                if not rows:
                    break
                last_seq, last_id = rows[-1]
                conn.execute(
                    f"INSERT INTO {TABLE}(rowid, {COLUMNS}) SELECT seq + ?, {DOCUMENT}"
                    f" FROM {table} WHERE seq > ? AND seq <= ?",
                    (base, seq, last_seq),
                )
                conn.executemany(
                    f"UPDATE {STATE} SET value = ? WHERE key = ?",
                    [
                        (str(last_seq), table + "_seq"),
                        (str(state[table + "_count"] + len(rows)), table + "_count"),
                        (last_id, table + "_id"),
                    ],
                )
            done += len(rows)
            if len(rows) < chunk:
                break
    return done


def match(conn, expression, lo, hi, retired, limit, newest=False):
    """(rowid, bm25) of documents in [lo, hi) matching, best first; retired entries only when asked.

    newest=True orders by rowid, newest first, and skips BM25 (reported as 0.0),
    so FTS5 can stop after `limit` rows instead of scoring every match.
    """
    score, order = ("0.0", "m.r DESC") if newest else (f"bm25({TABLE})", "m.s, m.r DESC")
    return conn.execute(
        f"SELECT m.r, m.s FROM (SELECT rowid AS r, {score} AS s FROM {TABLE}"
        f" WHERE {TABLE} MATCH ? AND rowid >= ? AND rowid < ?) AS m"
        " WHERE m.r < ? OR EXISTS (SELECT 1 FROM entries e WHERE e.seq = m.r - ? AND (e.active = 1 OR ?))"
        f" ORDER BY {order} LIMIT ?",
        (expression, lo, hi, ENTRY_BASE, ENTRY_BASE, 1 if retired else 0, limit),
    ).fetchall()


def count(conn, expression):
    """How many documents match (no scoring: a walk of the doclists)."""
    return conn.execute(f"SELECT count(*) FROM {TABLE} WHERE {TABLE} MATCH ?", (expression,)).fetchone()[0]


def members(conn, expression, rowids, seek=True):
    """The subset of the given documents that match.

    seek=True looks each rowid up (cheap for a plain term); seek=False walks the
    expression's matches over the rowids' range once, which is far cheaper for
    a prefix, whose every lookup merges all the doclists the prefix covers.
    """
    rowids = list(rowids)
    if not rowids:
        return set()
    if not seek:
        wanted = set(rowids)
        return {
            r
            for (r,) in conn.execute(
                f"SELECT rowid FROM {TABLE} WHERE {TABLE} MATCH ? AND rowid >= ? AND rowid <= ?",
                (expression, min(rowids), max(rowids)),
            )
            if r in wanted
        }
    # A literal IN list lets FTS5 seek each rowid; a subquery (json_each) made
    # it walk the whole doclist once per row.
    found = set()
    for i in range(0, len(rowids), MEMBERS_CHUNK):
        part = rowids[i : i + MEMBERS_CHUNK]
        marks = ",".join("?" * len(part))
        found.update(
            r
            for (r,) in conn.execute(
                f"SELECT rowid FROM {TABLE} WHERE {TABLE} MATCH ? AND rowid IN ({marks})", (expression, *part)
            )
        )
    return found


def scores(conn, expression, rowids):
    """bm25 of a few given documents (each costs a lookup; keep the list short)."""
    marks = ",".join("?" * len(rowids))
    return dict(
        conn.execute(
            f"SELECT rowid, bm25({TABLE}) FROM {TABLE} WHERE {TABLE} MATCH ? AND rowid IN ({marks})",
            (expression, *rowids),
        )
    )


def _write(conn):
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK; joins a transaction already open; SQLite errors pass through."""
    return Transaction(conn, "IMMEDIATE", raw=True)
