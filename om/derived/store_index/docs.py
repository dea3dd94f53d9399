"""The store index's documents: every session's memory and evidence in one full-text table, and all SQL on it.

Cross-session search (om.sessions.storerank) ranks the whole store at once from
here: one FTS5 table `docs` with om_fts's columns and tokenizer
(om.derived.fts), so BM25 counts documents, lengths and frequencies over every
session, and om.search's index path asks it what it asks a ledger's own index
(`Corpus`). om.derived.store_index keeps the file this lives in; this module
keeps the search part of it.

Invariants:
- Rows: a document's rowid is KIND << 62 | session id << 32 | seq (KIND 0 for a
  source, 1 for an entry), so memories are one range of rowids, a session's
  sources another, and a source's neighbours are its rowid +- 1. A session id
  or a seq too large for its bits is never stored: that session is searched
  alone (`fits`).
- Contentless (`content=''`): the table holds tokens, not text. What deleting
  a document needs (FTS5 deletes a contentless row by its original values) is
  kept per stored batch in `originals`, compressed; nothing else keeps text.
- Each session's rows change together with what they cover (`coverage`: om_fts's
  consistency test plus `om_generation`) and the stamp they were read at, in the
  caller's one transaction; a rewritten session's rows are replaced whole.
- Nothing deleted survives in the file: secure_delete is on for every
  connection (om.derived.store_index), and after deleting rows of a session
  that was rewritten or purged, FTS5's segments are merged (`optimize`), since
  a contentless delete otherwise only marks the tokens deleted in older
  segments. Where SQLite's FTS5 has `secure-delete` (3.42 and later) it removes
  them at once and no merge is needed.
- `retired` lists the entries that are not active: apply retires an entry in
  place, so each read of a session replaces its list whole.
"""

from om.derived import fts

TABLE = "docs"
#: The first rowid of the memories (entries); sources are below it.
ENTRIES = 1 << 62
END = (1 << 63) - 1
SHIFT = 32
SESSION_BITS = (1 << 30) - 1
SEQ_LIMIT = 1 << SHIFT
#: FTS5's in-memory table of new tokens before it writes a segment (its default is 1 MB): fewer, larger
#: segments on a first build, so fewer merges.
HASH_BYTES = 8 << 20

SCHEMA = (
    # What the documents of a session cover: om_fts's consistency test, plus the rewrite generation.
    "CREATE TABLE IF NOT EXISTS coverage (id INTEGER PRIMARY KEY, generation TEXT NOT NULL,"
    " sources_seq INTEGER NOT NULL, sources_count INTEGER NOT NULL, sources_id TEXT NOT NULL,"
    " entries_seq INTEGER NOT NULL, entries_count INTEGER NOT NULL, entries_id TEXT NOT NULL)",
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {TABLE} USING {fts.definition()}",
    # Per stored batch of one session's documents: [(rowid, text)] as marshal, zlib-compressed.
    "CREATE TABLE IF NOT EXISTS originals (batch INTEGER PRIMARY KEY, id INTEGER NOT NULL, data BLOB NOT NULL)",
    "CREATE INDEX IF NOT EXISTS originals_id ON originals(id)",
    "CREATE TABLE IF NOT EXISTS retired (doc INTEGER PRIMARY KEY)",
)


def configure(conn):
    """Settings of a new `docs` table (inside the caller's transaction): a larger hash; secure-delete where
    FTS5 has it. Returns whether it has."""
    conn.execute(f"INSERT INTO {TABLE}({TABLE}, rank) VALUES ('hashsize', ?)", (HASH_BYTES,))
    try:
        conn.execute(f"INSERT INTO {TABLE}({TABLE}, rank) VALUES ('secure-delete', 1)")
    except fts.sqlite3.Error:
        return False
    return True


#: FTS5's automatic merging of segments (its default): switched off while a first build inserts, since
#: merging what the next transactions merge again made that build twice as slow; FTS5's crisis merge
#: still bounds how many segments pile up, and the build merges them all once at its end (merge_all).
AUTOMERGE = 4


def merging(conn):
    """Whether FTS5's automatic merging is on (the table's `automerge`, AUTOMERGE when never set)."""
    row = conn.execute(f"SELECT v FROM {TABLE}_config WHERE k = 'automerge'").fetchone()
    return (int(row[0]) if row else AUTOMERGE) != 0


def set_merging(conn, on):
    """Switch FTS5's automatic merging on (its default) or off (inside the caller's transaction), when it
    is not so already; returns whether it changed."""
    if merging(conn) == on:
        return False
    conn.execute(f"INSERT INTO {TABLE}({TABLE}, rank) VALUES ('automerge', ?)", (AUTOMERGE if on else 0,))
    return True


def rowid(session_id, kind, seq):
    return kind << 62 | session_id << SHIFT | seq


def session_of(doc):
    return doc >> SHIFT & SESSION_BITS


def fits(session_id, coverage):
    """Whether a session's documents can be stored under its id (ids and seqs within their bits)."""
    return session_id <= SESSION_BITS and max(coverage["sources_seq"], coverage["entries_seq"]) < SEQ_LIMIT


def coverage(conn, session_id):
    """What a session's stored documents cover (a dict), or None when it has none."""
    row = conn.execute(
        "SELECT generation, sources_seq, sources_count, sources_id, entries_seq, entries_count, entries_id"
        " FROM coverage WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        return None
    keys = ("generation", "sources_seq", "sources_count", "sources_id", "entries_seq", "entries_count",
            "entries_id")
    return dict(zip(keys, row))


def store(conn, session_id, rows, full):
    """Store one session's read (om.derived.store_index.reader.Reader.read) in the caller's transaction: its
    documents, what deleting them needs, its retired entries and its coverage. `full` replaces its
    earlier documents. Returns whether documents of a rewritten session were deleted."""
    rewritten = drop(conn, [session_id]) if full else False
    base = session_id << SHIFT
    conn.executemany(f"INSERT INTO {TABLE}(rowid, {fts.COLUMNS}) VALUES (?, ?, ?)",
                     [(doc | base, text, stems) for doc, text, stems in rows["docs"]])
    if rows["docs"]:
        conn.execute("INSERT INTO originals(id, data) VALUES (?, ?)", (session_id, rows["originals"]))
    first, last = rowid(session_id, 1, 0), rowid(session_id, 1, SEQ_LIMIT - 1)
    conn.execute("DELETE FROM retired WHERE doc BETWEEN ? AND ?", (first, last))
    conn.executemany("INSERT INTO retired(doc) VALUES (?)", [(first | seq,) for seq in rows["retired"]])
    c = rows["coverage"]
    conn.execute(
        "INSERT OR REPLACE INTO coverage(id, generation, sources_seq, sources_count, sources_id, entries_seq,"
        " entries_count, entries_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (session_id, rows["generation"], c["sources_seq"], c["sources_count"], c["sources_id"],
         c["entries_seq"], c["entries_count"], c["entries_id"]))
    return rewritten


def drop(conn, ids):
    """Delete the documents of these sessions (inside the caller's transaction); whether there were any."""
    import marshal
    import zlib

    dropped = False
    for session_id in ids:
        if conn.execute("SELECT 1 FROM coverage WHERE id = ?", (session_id,)).fetchone() is None:
            continue
        base = session_id << SHIFT
        for (data,) in conn.execute("SELECT data FROM originals WHERE id = ?", (session_id,)).fetchall():
            conn.executemany(f"INSERT INTO {TABLE}({TABLE}, rowid, {fts.COLUMNS}) VALUES ('delete', ?, ?, ?)",
                             [(doc | base, fts.spread_cjk(text), fts.stems_text(text))
                              for doc, text in marshal.loads(zlib.decompress(data))])
        conn.execute("DELETE FROM originals WHERE id = ?", (session_id,))
        conn.execute("DELETE FROM retired WHERE doc BETWEEN ? AND ?",
                     (rowid(session_id, 1, 0), rowid(session_id, 1, SEQ_LIMIT - 1)))
        conn.execute("DELETE FROM coverage WHERE id = ?", (session_id,))
        dropped = True
    return dropped


def merge_deleted(conn):
    """Leave no token of a deleted document in the file (see the module invariants): FTS5's segments
    merged into one, unless this table's FTS5 deletes them at once."""
    if not secure(conn):
        conn.execute(f"INSERT INTO {TABLE}({TABLE}) VALUES ('optimize')")


def merge_all(conn):
    """FTS5's segments merged into one (inside the caller's transaction): after a build, which inserted
    without merging (set_merging), so that each term is one lookup again."""
    conn.execute(f"INSERT INTO {TABLE}({TABLE}) VALUES ('optimize')")


def secure(conn):
    row = conn.execute(f"SELECT v FROM {TABLE}_config WHERE k = 'secure-delete'").fetchone()
    return bool(row and row[0])


class Corpus:
    """The store's documents as om.search's index path asks a ledger's index (`match`, `count`,
    `members`, `scores`, with om.derived.fts's signatures). Matches are only of the sessions in
    `temp.om_scope` when `scoped` (`restrict`), and of entries not retired unless asked."""

    def __init__(self, scoped=False):
        self.scope = " AND (m.r >> 32 & 1073741823) IN temp.om_scope" if scoped else ""

    def match(self, conn, expression, lo, hi, retired, limit, newest=False):
        keep = (f"(m.r < ? OR ? OR NOT EXISTS (SELECT 1 FROM retired WHERE doc = m.r)){self.scope}",
                (ENTRIES, 1 if retired else 0))
        return fts.match(conn, expression, lo, hi, retired, limit, newest, table=TABLE, keep=keep)

    def count(self, conn, expression):
        return fts.count(conn, expression, table=TABLE)

    def members(self, conn, expression, rowids, seek=True):
        return fts.members(conn, expression, rowids, seek, table=TABLE)

    def scores(self, conn, expression, rowids, seek=True):
        # Memories are a small part of the store: scoring every match among them once beats setting
        # bm25 up again for each one (each walks the whole store's doclists of the query's phrases).
        rowids = list(rowids)
        if rowids and min(rowids) >= ENTRIES:
            seek = False
        return fts.scores(conn, expression, rowids, seek, table=TABLE)


def restrict(conn, ids):
    """Make `temp.om_scope` hold exactly these session ids (a temporary table: a read-only index may)."""
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS om_scope (id INTEGER PRIMARY KEY)")
    conn.execute("DELETE FROM temp.om_scope")
    conn.executemany("INSERT INTO temp.om_scope(id) VALUES (?)", [(i,) for i in ids])


def documents(conn):
    """How many documents the table holds (BM25's N)."""
    return conn.execute("SELECT total(docs) FROM sessions").fetchone()[0]
