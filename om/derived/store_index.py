"""The store index: one database beside a store's session directories, and all SQL on it.

What the store-wide reads (`om sessions`, `search --all-sessions`, `export
--all-sessions`, the start pointer, the MCP tools) consult instead of opening
every ledger. om.sessions.index and om.sessions.searchindex decide what in it
is still true; this module only keeps it, and reads ledgers for it.

Invariants:
- Derived and disposable: om.derived's protocol lifted to the store. Every row
  is a function of one session's ledger, read at a recorded moment; nothing
  in it exists anywhere else, so deleting the folder loses nothing (the next
  reader that can write rebuilds it). It lies outside every session
  directory: v1 readers never see it and never need it.
- One file, `<store>/index/store-v1.sqlite3` (0600, in a 0700 folder), named
  for NAME's version; the `format` meta row carries the exact FORMAT, which
  includes om_fts's (om.derived.fts), so a change of tokenizing rebuilds it.
  A file of another format is emptied and rebuilt in place; one that SQLite
  cannot read as a database is replaced. A folder or file that is a symlink
  is never opened (om never follows links inside the store).
- Never created where it cannot be written: `open_index(create=True)` makes
  the folder and the file only when both can be made, and leaves nothing
  behind otherwise; a reader that cannot write reads an existing index
  read-only and never changes it.
- Durable and atomic like a ledger: SQLite's rollback journal, synchronous=FULL,
  and every change one BEGIN IMMEDIATE transaction, so a killed writer leaves
  the state before it. A session's search rows (its terms, its memories, what
  they cover, the stamp they were read at) always change together.
- Nothing replaced survives in the file: every connection runs with
  secure_delete on, so a deleted or rewritten row leaves no bytes in its page
  or in the free pages; `purge` also merges the memories' full-text segments,
  which would otherwise keep a deleted row's tokens (`om forget`).
- Ledgers are only read, each attached with `mode=ro` to a private in-memory
  database (`Reader`), tokenized there exactly as om_fts tokenizes them.
"""

import math

from om.derived import fts
from om.fastpath import isdir, islink, join, lexists, posix
from om.sqlite import Transaction, load, open_connection

NAME = "om_store_index_v1"
FOLDER = "index"
FILE = "store-v1.sqlite3"
#: Changing what a row holds or how it is keyed, or how om_fts tokenizes, changes this: another value means rebuild.
FORMAT = "store-index 1;catalogue 2;terms 2;" + fts.FORMAT
#: A reader waits at most this long for another process's short write; a hook never waits.
BUSY_SECONDS = 15.0

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    # One row per readable session directory. `stamp` is the ledger file's identity when the
    # row was read (empty when it must be read again); `listed` sorts the listing; `doc` is the
    # listing row as canonical JSON (without the path of the database), `cells` as table cells;
    # `project` and `project_id` are the session's recorded root folder and project identity (om.project).
    # `recent` sorts cross-session search's ties (activity without creation); `searched` is the
    # stamp the session's search rows were read at (empty: read them again), `docs` and `tokens`
    # its corpus as om_fts counts it, `once` the bm25 part of a phrase one document holds once
    # at no length at all (so, times k1 + 1 over 1, the most any phrase's part can be there).
    "CREATE TABLE IF NOT EXISTS sessions (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL,"
    " stamp BLOB NOT NULL, session TEXT NOT NULL, project TEXT, activity TEXT, listed BLOB NOT NULL,"
    " doc TEXT NOT NULL, cells TEXT NOT NULL, recent BLOB NOT NULL, searched BLOB NOT NULL DEFAULT x'',"
    " docs INTEGER NOT NULL DEFAULT 0, tokens INTEGER NOT NULL DEFAULT 0, once REAL NOT NULL DEFAULT 0,"
    " project_id TEXT)",
    "CREATE INDEX IF NOT EXISTS sessions_listed ON sessions(listed)",
    "CREATE INDEX IF NOT EXISTS sessions_project ON sessions(project, listed)",
    "CREATE INDEX IF NOT EXISTS sessions_project_id ON sessions(project_id, listed)",
    # What the search rows of a session cover: om_fts's consistency test (om.derived.fts), plus the
    # rewrite generation (`om_generation`).
    "CREATE TABLE IF NOT EXISTS coverage (id INTEGER PRIMARY KEY, generation TEXT NOT NULL,"
    " sources_seq INTEGER NOT NULL, sources_count INTEGER NOT NULL, sources_id TEXT NOT NULL,"
    " entries_seq INTEGER NOT NULL, entries_count INTEGER NOT NULL, entries_id TEXT NOT NULL)",
    # Per session, token (as om_fts tokenizes), column and kind (0 sources, 1 entries): in how
    # many documents it occurs, and bounds on its frequency in one of them (at most tf) and on
    # the length of a document holding it (at least dl); `w` bounds what it adds to FTS5's bm25
    # of one such document, at the session's corpus. Bounds, so appending rows only widens them.
    # `doc` is the one document holding it when df is 1 (its seq), else NULL: a query whose words a
    # session holds in one source alone gives that source no neighbour that matches.
    # Keyed by session, so a session's rows are appended and dropped together; searched by token
    # through TERMS_INDEX, which a large build drops and makes again once (sorting beats inserting).
    "CREATE TABLE IF NOT EXISTS terms (id INTEGER NOT NULL, term TEXT NOT NULL, col TEXT NOT NULL,"
    " kind INTEGER NOT NULL, df INTEGER NOT NULL, tf INTEGER NOT NULL, dl INTEGER NOT NULL,"
    " w REAL NOT NULL DEFAULT 0, doc INTEGER, PRIMARY KEY (id, term, col, kind)) WITHOUT ROWID",
    # Every session's entries, tokenized as om_fts: which sessions hold a memory matching a query
    # exactly (rowid: session id << 32 | entry seq). Content kept, so a session's rows can be deleted.
    f"CREATE VIRTUAL TABLE IF NOT EXISTS memories USING {fts.definition(content=None)}",
    # Sessions whose text was forgotten, and when: rows read before that are never written back.
    "CREATE TABLE IF NOT EXISTS purged (name TEXT PRIMARY KEY, at INTEGER NOT NULL)",
    # Listings as printed from the catalogue at meta `version` (which every change of the index
    # increments): printed again as they are while nothing changed.
    "CREATE TABLE IF NOT EXISTS outputs (key TEXT PRIMARY KEY, version INTEGER NOT NULL, text TEXT NOT NULL)",
)
#: The schema's index on `terms` (kept apart: a large build drops it while it appends).
TERMS_INDEX = "CREATE INDEX IF NOT EXISTS terms_by_term ON terms(term, col, kind, id, w, doc)"
#: Terms occurring in at most this many documents of a batch get exact tf and dl bounds.
RARE = 4

#: The columns of a catalogue row, in the order `save` takes them.
COLUMNS = ("name", "stamp", "listed", "project", "session", "activity", "doc", "cells", "recent", "project_id")


def path_of(store):
    return join(store, FOLDER, FILE)


class Index:
    """An open store index: `conn`, its `path`, and whether this process may write it."""

    def __init__(self, conn, path, writable):
        self.conn = conn
        self.path = path
        self.writable = writable

    def close(self):
        try:
            self.conn.close()
        except load().Error:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- the catalogue ----------------------------------------------------------------

    def rows(self, columns=COLUMNS, ordered=False):
        """(version, every catalogue row as a tuple of `columns`, in no particular order unless `ordered`:
        then in listing order), read together."""
        order = " ORDER BY listed" if ordered else ""
        with Transaction(self.conn, "DEFERRED", raw=True):
            return self.version(), self.conn.execute(f"SELECT {', '.join(columns)} FROM sessions{order}").fetchall()

    def version(self):
        """How many changes the index has had (a listing printed at this version is still true at it)."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
        return int(row[0]) if row else 0

    def output(self, key, version):
        """The text printed for `key` at `version`, or None."""
        row = self.conn.execute("SELECT text FROM outputs WHERE key = ? AND version = ?", (key, version)).fetchone()
        return row[0] if row else None

    def save_output(self, key, version, text):
        """Keep what was printed for `key` from the catalogue at `version`, while that is still the version."""
        def change(conn):
            if self.version() == version:
                conn.execute("INSERT OR REPLACE INTO outputs(key, version, text) VALUES (?, ?, ?)", (key, version, text))

        return self._write(change, bump=False)

    def project_rows(self, project, limit, columns=COLUMNS):
        """The first `limit` catalogue rows of one project (om.sessions.catalogue.Project), in listing order."""
        where, args = project.where()
        return self.conn.execute(
            f"SELECT {', '.join(columns)} FROM sessions WHERE {where} ORDER BY listed LIMIT ?", (*args, limit)
        ).fetchall()

    def projects(self, project=None):
        """(version, [(project_id, project, how many rows)] of every distinct pair the catalogue holds (of one
        Project), the pair of the row listed first first), read together."""
        where, args = project.where() if project is not None else ("1", ())
        with Transaction(self.conn, "DEFERRED", raw=True):
            return self.version(), [tuple(row[:3]) for row in self.conn.execute(
                f"SELECT project_id, project, count(*), min(listed) AS first FROM sessions WHERE {where}"
                " GROUP BY project_id, project ORDER BY first", args)]

    def search_scope(self, columns, project=None):
        """(version, how many catalogue rows there are, those whose search rows are not current as tuples
        of `columns`: never read, or read at another stamp or an unsettled one), read together; of one
        project (om.sessions.catalogue.Project) when `project` is not None."""
        scope, args = project.where() if project is not None else ("1", ())
        # Not current: om.sessions.searchindex.bring_up_to_date's rule, for rows the index holds (all have an id).
        stale = "(stamp = x'' OR searched != stamp)"
        with Transaction(self.conn, "DEFERRED", raw=True):
            version = self.version()
            count = self.conn.execute(f"SELECT count(*) FROM sessions WHERE {scope}", args).fetchone()[0]
            rows = self.conn.execute(
                f"SELECT {', '.join(columns)} FROM sessions WHERE {scope} AND {stale}", args).fetchall()
            return version, count, rows

    def row_of(self, columns, session_id):
        """(version, the catalogue row of the session `session_id` as a tuple of `columns`, or None)."""
        with Transaction(self.conn, "DEFERRED", raw=True):
            return self.version(), self.conn.execute(
                f"SELECT {', '.join(columns)} FROM sessions WHERE id = ?", (session_id,)).fetchone()

    def names(self):
        """Every session directory name the catalogue holds a row for."""
        # One row joined in SQLite, split in C: a set built row by row costs twice as much on
        # 10,000 sessions. A directory name never holds "/".
        joined = self.conn.execute("SELECT group_concat(name, '/') FROM sessions").fetchone()[0]
        return set(joined.split("/")) if joined else set()

    def ids(self, names):
        """{name: id} of the catalogue rows of these session directories."""
        found = {}
        for name in names:
            row = self.conn.execute("SELECT id FROM sessions WHERE name = ?", (name,)).fetchone()
            if row is not None:
                found[name] = row[0]
        return found

    def save(self, changed, removed=()):
        """Store rows read afresh (tuples of COLUMNS) and drop the rows of directories that are gone.

        One transaction. Returns False, changing nothing, when the index cannot
        be written now (read-only, or busy beyond BUSY_SECONDS).
        """
        if not (changed or removed):
            return False

        def change(conn):
            gone = list(self.ids(removed).values())
            self._drop_search(gone)
            conn.executemany("DELETE FROM sessions WHERE id = ?", [(i,) for i in gone])
            conn.executemany(
                f"INSERT INTO sessions({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
                " ON CONFLICT(name) DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in COLUMNS[1:]),
                changed,
            )

        return self._write(change)

    def _write(self, change, bump=True):
        """Run `change(conn)` in one write transaction that counts as a change of the index (unless not `bump`);
        False (and never again) when this index cannot be written."""
        if not self.writable:
            return False
        try:
            with Transaction(self.conn, "IMMEDIATE", raw=True):
                change(self.conn)
                if bump:
                    self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('version', ?)",
                                      (str(self.version() + 1),))
                    self.conn.execute("DELETE FROM outputs")
        except load().Error:
            self.writable = False
            return False
        return True

    # -- the search part: storing -------------------------------------------------------

    def coverage(self, session_id):
        """What a session's search rows cover (a dict), or None when it has none."""
        row = self.conn.execute(
            "SELECT generation, sources_seq, sources_count, sources_id, entries_seq, entries_count, entries_id"
            " FROM coverage WHERE id = ?", (session_id,)).fetchone()
        if row is None:
            return None
        keys = ("generation", "sources_seq", "sources_count", "sources_id", "entries_seq", "entries_count",
                "entries_id")
        return dict(zip(keys, row))

    def save_search(self, batch, k1, b):
        """Store search rows read from ledgers; each item (name, id, stamp, rows, full) (`Reader.read`).

        `full` replaces the session's earlier rows; other rows add to them, so
        they are stored only while the index still covers what they were read
        after (another reader may have stored them meanwhile). A session whose
        catalogue row is gone or renamed, or that was forgotten (`purge`) after
        it was read, is left alone. Each term's `w` is FTS5's bm25 (`k1`, `b`) of its bounds at
        the session's corpus. One transaction; False when the index cannot be
        written now.
        """
        if not batch:
            return False

        def change(conn):
            fts.register(conn)
            kept = []
            for name, session_id, stamp, rows, full in batch:
                if conn.execute("SELECT 1 FROM sessions WHERE id = ? AND name = ?", (session_id, name)).fetchone():
                    purged = conn.execute("SELECT at FROM purged WHERE name = ?", (name,)).fetchone()
                    if (purged is None or purged[0] < rows["read_at"]) and (
                            full or self.coverage(session_id) == rows["after"]):
                        kept.append((name, session_id, stamp, rows, full))
            rewritten = self._drop_search([session_id for _, session_id, _, _, full in kept if full])
            if rewritten:
                # A ledger rewritten in place (an import, a forget): its old tokens leave the older segments.
                conn.execute("INSERT INTO memories(memories) VALUES ('optimize')")
            terms = []
            for name, session_id, stamp, rows, full in kept:
                docs, tokens = (0, 0) if full else conn.execute(
                    "SELECT docs, tokens FROM sessions WHERE id = ?", (session_id,)).fetchone()
                docs, tokens = docs + rows["docs"], tokens + rows["tokens"]
                merged = {} if full else {(t, c, k): [df, tf, dl, doc] for t, c, k, df, tf, dl, doc in conn.execute(
                    "SELECT term, col, kind, df, tf, dl, doc FROM terms WHERE id = ?", (session_id,))}
                for key, (df, tf, dl, doc) in rows["terms"]:
                    have = merged.get(key)
                    merged[key] = [df, tf, dl, doc] if have is None else [
                        have[0] + df, max(have[1], tf), min(have[2], dl), None]  # two documents at least
                nhit = {}
                for (term, col, _), (df, _, _, _) in merged.items():
                    nhit[term, col] = nhit.get((term, col), 0) + df
                terms.extend(_with_parts(session_id, merged, nhit, docs, tokens, k1, b))
                self._save_rest(name, session_id, stamp, rows, docs, tokens, bm25_part(1, 0, docs, tokens, 1, k1, b))
            # Sorted by the table's key: appended pages, not scattered ones.
            conn.executemany("INSERT OR REPLACE INTO terms(id, term, col, kind, df, tf, dl, w, doc)"
                             " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", sorted(terms))

        return self._write(change)

    def _save_rest(self, name, session_id, stamp, rows, docs, tokens, once):
        conn = self.conn
        base = session_id << 32
        conn.executemany(
            f"INSERT INTO memories(rowid, {fts.COLUMNS}) " + fts.documents("(SELECT ? AS seq, ? AS body)"),
            [(base + seq, body) for seq, body in rows["entries"]],
        )
        c = rows["coverage"]
        conn.execute(
            "INSERT OR REPLACE INTO coverage(id, generation, sources_seq, sources_count, sources_id, entries_seq,"
            " entries_count, entries_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (session_id, rows["generation"], c["sources_seq"], c["sources_count"], c["sources_id"],
             c["entries_seq"], c["entries_count"], c["entries_id"]))
        conn.execute("UPDATE sessions SET searched = ?, docs = ?, tokens = ?, once = ? WHERE id = ?",
                     (stamp, docs, tokens, once, session_id))
        conn.execute("DELETE FROM purged WHERE name = ?", (name,))

    def _drop_search(self, ids):
        """Delete the search rows of these sessions (inside the caller's transaction); whether there were any."""
        conn = self.conn
        ids = [i for i in ids if conn.execute("SELECT 1 FROM coverage WHERE id = ?", (i,)).fetchone()]
        if not ids:
            return False
        marks = ", ".join("?" * len(ids))
        conn.execute(f"DELETE FROM terms WHERE id IN ({marks})", ids)
        conn.execute(f"DELETE FROM coverage WHERE id IN ({marks})", ids)
        for session_id in ids:
            base = session_id << 32
            conn.execute("DELETE FROM memories WHERE rowid >= ? AND rowid < ?", (base, base + (1 << 32)))
        conn.execute(f"UPDATE sessions SET searched = x'', docs = 0, tokens = 0, once = 0 WHERE id IN ({marks})", ids)
        return True

    def purge(self, names):
        """Delete the search rows of these session directories and leave none of their bytes in the file.

        Rows a reader read before now are never written back; their catalogue
        rows are read again next time too. Returns False when it could not.
        """
        import time

        def change(conn):
            ids = list(self.ids(names).values())
            self._drop_search(ids)
            conn.executemany("UPDATE sessions SET stamp = x'' WHERE id = ?", [(i,) for i in ids])
            now = time.time_ns()
            conn.executemany("INSERT OR REPLACE INTO purged(name, at) VALUES (?, ?)", [(name, now) for name in names])
            # Deleted rows leave their tokens in FTS5's older segments until they are merged.
            conn.execute("INSERT INTO memories(memories) VALUES ('optimize')")

        return self._write(change)

    def searchable(self):
        """Whether `terms` can be searched by token now (a large build killed midway leaves it without)."""
        return self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'terms_by_term'").fetchone() is not None

    def bulk(self, starting, threads=1):
        """Before a large build (`starting`), drop the token index of `terms`; after it, make it again,
        sorting with up to `threads` threads (SQLite's sorter: 3.6 s, not 5.1 s, at 10,000 sessions)."""
        def change(conn):
            if starting:
                conn.execute("DROP INDEX IF EXISTS terms_by_term")
                return
            conn.execute(f"PRAGMA threads = {int(threads)}")
            conn.execute(TERMS_INDEX)

        return self._write(change)

    # -- the search part: bounding ------------------------------------------------------

    def tokens(self, phrases):
        """The tokens FTS5 makes of each phrase text, in order (tokenized as om_fts tokenizes)."""
        conn = self.conn
        first = fts.COLUMNS.split(",")[0].strip()
        conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.om_query USING {fts.definition(content=None)}")
        conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.om_query_words USING fts5vocab(temp, om_query, 'instance')")
        conn.execute("DELETE FROM temp.om_query")
        conn.executemany(f"INSERT INTO temp.om_query(rowid, {first}) VALUES (?, ?)", list(enumerate(phrases)))
        found = [[] for _ in phrases]
        for doc, term in conn.execute("SELECT doc, term FROM temp.om_query_words ORDER BY doc, offset"):
            found[doc].append(term)
        return found

    def memory_sessions(self, expression):
        """Ids of the sessions holding a memory (active or not) that matches an FTS5 expression."""
        return {r for (r,) in self.conn.execute(
            "SELECT DISTINCT rowid >> 32 FROM memories WHERE memories MATCH ?", (expression,))}

    def ceilings(self, phrases, n, rule, memories, exact, k1, has_phrase=True, sources=True):
        """(id, kind, bucket, recent) of every indexed session and kind that could hold a result, best first.

        `phrases`: (term index, column or None, [(token, is prefix)]) of the query's FTS5
        phrases. A session and kind yields a row when one of its documents may match some
        phrase; `bucket` bounds the score any such document can reach, in ten-thousandths,
        by `rule` (om.search.ceiling) over each phrase's `w` (a prefix: the sum of its terms',
        which bounds its bm25 part too; a phrase of several tokens: the session's `once`
        times k1 + 1); a source's neighbours add nothing where every token row names one and
        the same document (`doc`). `memories` maps session ids to 2 when one of their entries holds the
        phrase, 1 when one holds every term; with `exact` False the relevance is bounded by
        nothing (a session may be scanned, not scored by FTS5); `has_phrase` False when the
        query has no phrase to earn the bonus; `sources` False leaves out the sources' rows
        (kind 0). Ordered as cross-session search merges: bucket, memories first, `recent`.

        Each token's rows are read through `terms_by_term` (a covering index) and combined per
        session in one statement; only the score of each session and kind is computed here.
        """
        only = "" if sources else " AND kind = 1"
        parts, args = [], []

        def rows_of(token, prefix, col, what):
            where = "term >= ? AND term < ?" if prefix else "term = ?"
            args.extend([token, token + "\U0010ffff"] if prefix else [token])
            if col is not None:
                where += " AND col = ?"
                args.append(col)
            return f"SELECT {what} FROM terms WHERE {where}{only}"

        for term, col, tokens in phrases:
            if len(tokens) == 1 and not tokens[0][1] and col is not None:  # one row per session and kind
                parts.append(rows_of(tokens[0][0], False, col,
                                     f"{int(term)} AS ti, id, kind, w, doc AS lo, doc AS hi, doc IS NULL AS unknown"))
            elif len(tokens) == 1:
                (token, prefix), = tokens
                what = "id, kind, sum(w) AS w, min(doc) AS lo, max(doc) AS hi, count(*) - count(doc) AS unknown"
                parts.append(f"SELECT {int(term)} AS ti, id, kind, w, lo, hi, unknown FROM"
                             f" ({rows_of(token, prefix, col, what)} GROUP BY id, kind)")
            else:  # every token present somewhere in the session: the phrase's part is bounded by `once`
                present = " INTERSECT ".join(rows_of(token, prefix, col, "id, kind") for token, prefix in tokens)
                parts.append(f"SELECT {int(term)} AS ti, id, kind, NULL AS w, NULL AS lo, NULL AS hi, 1 AS unknown"
                             f" FROM ({present})")
        if not parts:
            return []
        # `alone`: every token row of the query in this session and kind names one and the same
        # document, so only that document matches (a source with no matching neighbour). Grouped
        # first, then joined: one lookup of the session per group, not per token row.
        found = self.conn.execute(
            "SELECT g.id, g.kind, g.covered, g.w + g.open * s.once * ?, s.recent, g.alone FROM ("
            "SELECT p.id, p.kind, count(DISTINCT p.ti) AS covered, total(p.w) AS w, count(*) - count(p.w) AS open,"
            " sum(p.unknown) = 0 AND min(p.lo) = max(p.hi) AS alone"
            f" FROM ({' UNION ALL '.join(parts)}) p GROUP BY p.id, p.kind) g JOIN sessions s ON s.id = g.id",
            [k1 + 1, *args])
        rows = []
        for session_id, kind, count, r, recent, alone in found:
            level = memories.get(session_id, 0)
            if kind == 1:
                cover = min(count, n - 1) if level == 0 else count
                phrase = 1 if level == 2 else 0
            else:
                cover = count
                phrase = 1 if count == n and has_phrase else 0
            relevance = r if exact else 1e300
            # A source's neighbours are sources of the same session: its own row bounds them too,
            # unless the session holds the query's tokens in one document alone (no neighbour matches).
            score = rule(cover, phrase, n, relevance, 0.0 if alone and exact else relevance, 1 - kind)
            rows.append((session_id, kind, int(score * 10000.0 * (1 + 1e-9) + 0.500001), recent))
        rows.sort(key=lambda row: (-row[2], -row[1], row[3]))
        return rows


def _with_parts(session_id, merged, nhit, docs, tokens, k1, b):
    """`terms` rows of one session: its merged bounds and each one's bm25 part (`bm25_part`, inlined: a
    large build computes millions)."""
    log, scale = math.log, b * docs / max(tokens, 1)
    idf = {}
    for key, hits in nhit.items():
        ratio = (docs - hits + 0.5) / (hits + 0.5)
        idf[key] = max(log(ratio), 1e-6) if ratio > 0 else 1e-6
    top, base = k1 + 1, k1 * (1 - b)
    return [(session_id, term, col, kind, df, tf, dl, idf[term, col] * tf * top / (tf + base + k1 * scale * dl), doc)
            for (term, col, kind), (df, tf, dl, doc) in merged.items()]


def bm25_part(tf, dl, docs, tokens, nhit, k1, b):
    """One phrase's part of FTS5's bm25 for a document with `tf` matches and `dl` tokens in a corpus of
    `docs` documents and `tokens` tokens, `nhit` of which hold the phrase (fts5_aux.c's formula)."""
    ratio = (docs - nhit + 0.5) / (nhit + 0.5)
    idf = max(math.log(ratio), 1e-6) if ratio > 0 else 1e-6
    return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl * docs / max(tokens, 1)))


# -- what a session's search rows are read from: its ledger -------------------------------------


class Reader:
    """Reads sessions' search rows from their ledgers: each attached read-only (`mode=ro`) to one
    private in-memory database whose full-text table is defined and filled as om_fts is."""

    def __init__(self):
        from om.sqlite import memory

        self.conn = memory()
        fts.register(self.conn)
        self.conn.execute(f"CREATE VIRTUAL TABLE batch USING {fts.definition()}")
        self.conn.execute("CREATE VIRTUAL TABLE batch_terms USING fts5vocab(batch, 'col')")
        self.conn.execute("CREATE VIRTUAL TABLE batch_words USING fts5vocab(batch, 'instance')")

    def close(self):
        self.conn.close()

    def read(self, path, session, coverage):
        """The search rows of the ledger at `path` after what `coverage` (Index.coverage) covers, in one
        read snapshot: (rows, full) where full means every row was read (the first rows changed, or
        another generation); None when the ledger is not `session`'s v1 ledger any more.

        rows: {"terms": [((term, col, kind), (df, tf, dl, doc))] (doc: the seq of the one document
        holding the token, or None), "docs", "tokens", "entries": [(seq, body)], "coverage": what
        it covers now, "generation", "read_at": when the read began (ns), "after": the coverage it
        was read after}.
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
                rows = self._statistics(after)
                rows["coverage"] = self._coverage()
                rows["generation"] = rows["coverage"]["generation"]
                rows["read_at"] = began
                rows["after"] = coverage
                return rows, full
        finally:
            conn.execute("DETACH ledger")

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

    def _statistics(self, after):
        conn = self.conn
        terms, docs, tokens = [], 0, 0
        for kind, table, seq in ((0, "sources", after[0]), (1, "entries", after[1])):
            docs += conn.execute(f"INSERT INTO batch(rowid, {fts.COLUMNS}) "
                                 + fts.documents(f"ledger.{table} WHERE seq > ?"), (seq,)).rowcount
            sizes = {doc: _size(blob) for doc, blob in conn.execute("SELECT id, sz FROM batch_docsize")}
            if sizes:
                tokens += sum(sizes.values())
                terms.extend(self._terms(kind, sizes))
                conn.execute("INSERT INTO batch(batch) VALUES ('delete-all')")
        entries = conn.execute("SELECT seq, body FROM ledger.entries WHERE seq > ? ORDER BY seq", (after[1],))
        return {"terms": terms, "docs": docs, "tokens": tokens, "entries": entries.fetchall()}

    def _terms(self, kind, sizes):
        """Bounds per token of the documents in `batch`: exact for a token in at most RARE of them,
        and the document itself for a token in one (its rowid: the row's seq)."""
        rare = {}
        for term, col, doc, tf in self.conn.execute(
            "SELECT w.term, w.col, w.doc, count(*) FROM batch_terms t JOIN batch_words w"
            " ON w.term = t.term AND w.col = t.col WHERE t.doc <= ? GROUP BY w.term, w.col, w.doc", (RARE,)
        ):
            dl = sizes[doc]
            bounds = rare.get((term, col))
            if bounds is None:
                rare[term, col] = (tf, dl, doc)
            else:
                rare[term, col] = (max(bounds[0], tf), min(bounds[1], dl), None)
        # A token in df documents, count times in all: at most count - df + 1 times in one of them.
        smallest = min(sizes.values())
        return [((term, col, kind), (df,) + (rare.get((term, col)) or (count - df + 1, smallest, None)))
                for term, col, df, count in self.conn.execute("SELECT term, col, doc, cnt FROM batch_terms")]


def _size(blob):
    """A row's token count from FTS5's docsize record (one varint per column)."""
    total = value = 0
    for byte in blob:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            total += value
            value = 0
    return total


def open_index(store, create=False, timeout=BUSY_SECONDS, readonly=False):
    """The store's index, or None when there is none this process can use.

    With `create`, a missing index is made (folder 0700, file 0600) when the
    store can be written; nothing is made otherwise. An index of another
    format is emptied, and one SQLite cannot read is replaced, when this
    process can write it; else None. `readonly` opens it with `mode=ro` and
    never changes it (the start pointer, on the hook's path). Never raises.
    """
    folder = join(store, FOLDER)
    path = join(folder, FILE)
    try:
        if lexists(folder) and (islink(folder) or not isdir(folder)):
            return None
        if lexists(path):
            if islink(path):
                return None
        elif readonly or not create or not _make(folder, path):
            return None
        return _open(path, timeout, readonly)
    except OSError:
        return None


def _make(folder, path):
    """Create the folder and an empty private file; False (and nothing left behind) when the store is read-only."""
    made = False
    try:
        posix.mkdir(folder, 0o700)
        made = True
        posix.chmod(folder, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return False
    try:
        fd = posix.open(path, posix.O_WRONLY | posix.O_CREAT | posix.O_EXCL, 0o600)
    except FileExistsError:
        return True
    except OSError:
        if made:
            try:
                posix.rmdir(folder)
            except OSError:
                pass
        return False
    try:
        posix.fchmod(fd, 0o600)
    finally:
        posix.close(fd)
    return True


def _open(path, timeout, readonly=False):
    sqlite3 = load()
    for attempt in (0, 1):
        try:
            index = _connect(path, timeout, readonly)
            if index is None:
                return None
            state = _format_of(index.conn)
        except sqlite3.DatabaseError as e:
            # Not a database at all: nothing in it can be kept, so a writer starts a new one.
            if attempt or readonly or not _replaceable(e) or not _replace(path):
                return None
            continue
        if state == FORMAT:
            return index
        if not index.writable:
            index.close()
            return None
        try:
            _initialize(index.conn, state is not None)
        except sqlite3.Error:
            index.close()
            return None
        return index
    return None


def _connect(path, timeout, readonly):
    """An Index on `path`, read-write when this process may write it; None when SQLite cannot open it."""
    sqlite3 = load()
    conn = None
    if not readonly:
        try:
            conn = open_connection(path, timeout=timeout)
        except sqlite3.DatabaseError as e:
            if _replaceable(e):
                raise
        except sqlite3.Error:
            pass
    writable = conn is not None
    if conn is None:
        try:
            conn = open_connection(path, readonly=True, timeout=timeout)
        except sqlite3.Error:
            return None
    try:
        conn.execute("PRAGMA secure_delete = ON")
    except BaseException:
        conn.close()
        raise
    return Index(conn, path, writable)


def _format_of(conn):
    """The file's `format` row; None for an empty file; raises for a file that is not a database."""
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
    except load().OperationalError as e:
        if "no such table" not in str(e):
            raise
        if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
            return ""  # someone else's tables: start over
        return None
    return row[0] if row else ""


def _initialize(conn, reset):
    with Transaction(conn, "IMMEDIATE", raw=True):
        if reset or _format_of(conn) not in (None, FORMAT):
            invalidate(conn)
        if _format_of(conn) == FORMAT:
            return  # another process initialized it meanwhile
        for statement in SCHEMA + (TERMS_INDEX,):
            conn.execute(statement)
        conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('format', ?)", (FORMAT,))


def _replaceable(error):
    text = str(error).lower()
    return "not a database" in text or "malformed" in text or "encrypted" in text


def _replace(path):
    """Delete a file that is not a database (and its journal) and make an empty private one; False if it cannot."""
    for name in (path, path + "-journal"):
        try:
            posix.unlink(name)
        except FileNotFoundError:
            pass
        except OSError:
            return False
    folder = path[: -len(FILE) - 1]
    return _make(folder, path)


def invalidate(conn):
    """Drop every table of the index (inside the caller's transaction); the next catch-up rebuilds it."""
    names = [name for (name,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
    for name in names:
        conn.execute(f'DROP TABLE IF EXISTS "{name}"')


def catch_up(index, changed, removed=()):
    """om.derived's catch-up for the store: store what readers read afresh (see `Index.save`)."""
    return index.save(changed, removed)
