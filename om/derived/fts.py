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
- Two columns per document: `text`, the text as unicode61 folds it (exact
  words, phrases, prefixes), and `stems`, the same words each replaced by its
  stem (`stems_text`: om.porter over the folded words), which is what terms
  are ranked by. Both are written by this module's SQL functions at insert
  time, so the index and the scan (om.search) tokenize with the same code.
- Row identity: a source is document `seq`, an entry is document
  `ENTRY_BASE + seq`. One table (so BM25 statistics are shared and scores of
  memories and evidence are comparable), split by rowid range (so a search of
  memories alone never scores evidence).
- Catch-up goes by seq in chunks, each its own short write transaction, so a
  capture from a hook waits for at most one chunk. It follows om/derived's
  protocol (`NAME`, `catch_up`, `invalidate`) and its rewrite rule: the
  indexed prefix of each v1 table must still end in the same row.
- The table's name carries its format (`NAME`); the index of an earlier
  format (`om_fts`, one column) is dropped when this one is created, so a
  store indexed by an earlier om is reindexed on its next search.
- Importing this module compiles no pattern and loads neither `re` nor `functools`
  (with `collections`, about 15 ms together here): the store index and the start
  pointer import it for its SQL and formats, and a hook pays for what it imports.
  Patterns are compiled the first time text is tokenized (`pattern`).
"""

import unicodedata

from om import porter
from om.derived import names
from om.sqlite import Transaction, load

sqlite3 = load()

#: Changing tokenizing, stemming or row identity changes this; a different value means rebuild.
FORMAT = "2;unicode61 remove_diacritics 2;cjk-chars;entry-base-40;porter-stems"
ENTRY_BASE = 1 << 40
CHUNK = 2000
MEMBERS_CHUNK = 500
TABLE = "om_fts_v2"
STATE = "om_fts_v2_state"
NAME = TABLE
#: The index's columns and tokenizer, and the SQL of each row's columns from a v1 row's text: one
#: definition for this index and for every other full-text table built the same way (the store index).
COLUMNS = "text, stems"
TOKENIZE = "unicode61 remove_diacritics 2"


def definition(content=""):
    """The `USING fts5(...)` arguments of a table tokenized as this index is (contentless by default)."""
    stored = "" if content is None else f", content='{content}'"
    return f"fts5({COLUMNS}{stored}, tokenize='{TOKENIZE}')"


def documents(rows, offset="0"):
    """SQL selecting (seq + `offset`, then COLUMNS) of `rows`, a FROM clause of v1 rows (seq, body);
    the functions it calls are those `register` makes known."""
    return (f"SELECT seq + {offset}, om_spread_cjk(t), om_stems(t)"
            f" FROM (SELECT seq, json_extract(body, '$.text') AS t FROM {rows})")


def register(conn):
    """Make the functions of `documents` known to `conn`."""
    conn.create_function("om_spread_cjk", 1, spread_cjk, deterministic=True)
    conn.create_function("om_stems", 1, stems_text, deterministic=True)


#: The first format's tables (one column, no stems): dropped when this format is created.
LEGACY = ("om_fts", "om_fts_state")
LEGACY_SHADOWS = ("om_fts_data", "om_fts_idx", "om_fts_docsize", "om_fts_config", "om_fts_content")

#: A word as both columns and the scan see it: a run of letters and digits.
WORD_PATTERN = r"[^\W_]+"

# Scripts written without spaces between words. unicode61 would keep a whole
# run as one token; indexing each character as a token lets a query word match
# anywhere inside a run (as a phrase of characters).
_CJK = (
    "\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f"
    "\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f"
)
CJK_CLASS = "[" + _CJK + "]"


_PATTERNS: dict = {}


def pattern(source):
    """`source` compiled, once per process (the CJK class alone takes milliseconds to compile)."""
    compiled = _PATTERNS.get(source)
    if compiled is None:
        import re

        compiled = _PATTERNS[source] = re.compile(source)
    return compiled


def spread_cjk(text):
    """Text with every CJK character made a token of its own."""
    if not text or text.isascii():
        return text or ""
    return pattern("(" + CJK_CLASS + ")").sub(r" \1 ", text)


def fold(text):
    """Case- and diacritic-folded text, as unicode61 remove_diacritics 2 compares it."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFD", text)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return unicodedata.normalize("NFC", stripped).lower()


#: Most words whose stems are kept: a vocabulary's common words are met first and stay.
STEMS_KEPT = 65536
_STEMS: dict = {}


def stem_of(word):
    """The stem a folded word is indexed and matched under: Porter's for ASCII letters, else the word."""
    stem = _STEMS.get(word)
    if stem is None:
        stem = porter.stem(word) if word.isascii() and word.isalpha() else word
        if len(_STEMS) < STEMS_KEPT:
            _STEMS[word] = stem
    return stem


#: ASCII text folded and split in C: letters lower-cased, digits kept, everything else a space.
#: WORD_PATTERN finds exactly these words in ASCII text, four times slower (a first build of a
#: large store splits millions of documents).
_ASCII_WORDS = {i: (chr(i).lower() if chr(i).isalnum() else " ") for i in range(128)}


def words_of(text):
    """The folded words of a text, CJK characters one word each: what both columns hold."""
    if not text:
        return []
    if text.isascii():
        return text.translate(_ASCII_WORDS).split()
    return pattern(WORD_PATTERN).findall(fold(spread_cjk(text)))


def stems_text(text):
    """The `stems` column of a document: its words, each replaced by its stem."""
    words = words_of(text or "")
    try:
        # Every word already met: looked up in C (a first build of a large store stems millions).
        return " ".join(map(_STEMS.__getitem__, words))
    except KeyError:
        return " ".join(map(stem_of, words))


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
    """Remove this format's tables, even when FTS5 can no longer open a damaged index."""
    shadows = tuple(f"{TABLE}_{part}" for part in ("data", "idx", "docsize", "config", "content"))
    with _write(conn):
        _drop_index(conn, TABLE, shadows)
        conn.execute(f"DROP TABLE IF EXISTS {STATE}")
    _reset_schema(conn)


def _drop_legacy(conn):
    """Remove the first format's index (inside create's transaction)."""
    table, state = LEGACY
    if conn.execute("SELECT count(*) FROM sqlite_master WHERE name = ? OR name = ?", LEGACY).fetchone()[0]:
        _drop_index(conn, table, LEGACY_SHADOWS)
        conn.execute(f"DROP TABLE IF EXISTS {state}")


def _drop_index(conn, table, shadows):
    try:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    except sqlite3.Error:
        # FTS5 cannot destroy a table whose shadow tables are gone or
        # unreadable. Drop what is left as plain tables, then remove the
        # virtual table's schema row: it owns no pages, so nothing leaks.
        for name in shadows:
            conn.execute(f'DROP TABLE IF EXISTS "{name}"')
        conn.execute("PRAGMA writable_schema = ON")
        try:
            conn.execute("DELETE FROM sqlite_master WHERE type = 'table' AND name = ?", (table,))
        finally:
            conn.execute("PRAGMA writable_schema = OFF")


def _reset_schema(conn):
    try:
        conn.execute("PRAGMA writable_schema = RESET")
    except sqlite3.Error:
        pass


def create(conn):
    with _write(conn):
        _drop_legacy(conn)
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
        _reset_schema(conn)
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
                    f"INSERT INTO {TABLE}(rowid, {COLUMNS}) " + documents(f"{table} WHERE seq > ? AND seq <= ?", "?"),
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


def match(conn, expression, lo, hi, retired, limit, newest=False, table=TABLE, keep=None):
    """(rowid, bm25) of documents in [lo, hi) matching, best first; retired entries only when asked.

    newest=True orders by rowid, newest first, and skips BM25 (reported as 0.0),
    so FTS5 can stop after `limit` rows instead of scoring every match. `table` and
    `keep` (SQL on the match's rowid `m.r` and its arguments, which decides whether
    retired is asked and which documents may be found) serve another table built the
    same way (the store index's); by default, a ledger's entries decide.
    """
    score, order = ("0.0", "m.r DESC") if newest else (f"bm25({table})", "m.s, m.r DESC")
    where, args = keep if keep is not None else (
        "m.r < ? OR EXISTS (SELECT 1 FROM entries e WHERE e.seq = m.r - ? AND (e.active = 1 OR ?))",
        (ENTRY_BASE, ENTRY_BASE, 1 if retired else 0))
    return conn.execute(
        f"SELECT m.r, m.s FROM (SELECT rowid AS r, {score} AS s FROM {table}"
        f" WHERE {table} MATCH ? AND rowid >= ? AND rowid < ?) AS m"
        f" WHERE {where} ORDER BY {order} LIMIT ?",
        (expression, lo, hi, *args, limit),
    ).fetchall()


def count(conn, expression, table=TABLE):
    """How many documents match (no scoring: a walk of the doclists)."""
    return conn.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (expression,)).fetchone()[0]


def members(conn, expression, rowids, seek=True, table=TABLE):
    """The subset of the given documents that match.

    seek=True looks each rowid up (cheap for a plain term and a few rowids);
    seek=False walks the expression's matches over the rowids' range once,
    which is far cheaper for a prefix, whose every lookup merges all the
    doclists the prefix covers, and for a term in few documents.
    """
    rowids = list(rowids)
    if not rowids:
        return set()
    if not seek:
        wanted = set(rowids)
        return {
            r
            for (r,) in conn.execute(
                f"SELECT rowid FROM {table} WHERE {table} MATCH ? AND rowid >= ? AND rowid <= ?",
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
                f"SELECT rowid FROM {table} WHERE {table} MATCH ? AND rowid IN ({marks})", (expression, *part)
            )
        )
    return found


def scores(conn, expression, rowids, seek=True, table=TABLE):
    """{rowid: bm25} of the given documents that match.

    seek=True looks each rowid up; seek=False scores every match of the
    expression between the least and the greatest of them once, cheaper when its
    terms are in few documents there (each lookup sets bm25 up again: a walk of
    every phrase's whole doclist).
    """
    rowids = list(rowids)
    if not rowids:
        return {}
    if not seek:
        wanted = set(rowids)
        return {
            r: s
            for r, s in conn.execute(f"SELECT rowid, bm25({table}) FROM {table} WHERE {table} MATCH ?"
                                     " AND rowid >= ? AND rowid <= ?", (expression, min(rowids), max(rowids)))
            if r in wanted
        }
    found = {}
    for i in range(0, len(rowids), MEMBERS_CHUNK):
        part = rowids[i : i + MEMBERS_CHUNK]
        marks = ",".join("?" * len(part))
        found.update(
            conn.execute(
                f"SELECT rowid, bm25({table}) FROM {table} WHERE {table} MATCH ? AND rowid IN ({marks})",
                (expression, *part),
            )
        )
    return found


def _write(conn):
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK; joins a transaction already open; SQLite errors pass through."""
    return Transaction(conn, "IMMEDIATE", raw=True)
