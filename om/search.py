"""Full-text search over a session's memory and evidence.

Invariants:
- A query is always plain words: it is tokenized here and every term is sent
  to FTS5 as a quoted string, so no query text can be FTS syntax or fail to
  parse. Stop words are dropped unless the query holds nothing else, then
  they are the terms; only a query without any word is an InputError.
- Search never fails because of its index: a missing, damaged or stale index
  is rebuilt (om.derived.fts); when it cannot be written (read-only store) the
  rows it does not cover are scanned; without FTS5 everything is scanned. All
  paths return the same shape and rank by the same rule.
- Ranking rule, one number per result (higher is better):
  score = covered terms + (number of terms, when the query's words occur as
  one phrase) + BM25 relevance squashed into [0, 1). So an exact phrase beats
  scattered terms, a result with more of the query's terms beats one with
  fewer, and BM25 orders results within the same coverage.
- Memories and evidence are scored in one BM25 corpus, so an observation and a
  source with the same text get the same score. Ties go to the memory (then to
  the newer row): a memory beats a source only at equal relevance, which can
  only arise when evidence was asked for with --sources.
"""

import itertools
import math
import re
import unicodedata

from om.derived import fts as ix
from om.errors import InputError
from om.jsonio import loads
from om.sqlite import load

sqlite3 = load()

MAX_LIMIT = 100
SNIPPET_CHARS = 160
K1, B = 1.2, 0.75
#: Most combinations of near stop words tried for partial matches (each is one cheap query).
COMBINATIONS = 16

STOP_WORDS = frozenset(
    """a about an and any are as at be been but by can could did do does for from had has have
    how i if in into is it its me my of on or our so than that the their them then there these
    they this those to was we were what when where which who whom why will with would you your""".split()
)

WORD = re.compile(r"[^\W_]+")
CJK_RUN = re.compile("[" + ix._CJK + "]+")


def fold(text):
    """Case- and diacritic-folded text, as unicode61 remove_diacritics 2 compares it."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFD", text)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return unicodedata.normalize("NFC", stripped).lower()


class Query:
    """A natural-language query as terms: folded, stop words dropped (unless all are), CJK as bigrams."""

    def __init__(self, text):
        if not isinstance(text, str):
            raise InputError("om: search needs a query")
        self.text = text
        words = []  # (folded word, is_cjk) in order, stop words included
        for match in WORD.finditer(unicodedata.normalize("NFC", text)):
            raw = match.group()
            pos = 0
            for run in CJK_RUN.finditer(raw):
                if run.start() > pos:
                    words.append((fold(raw[pos : run.start()]), False))
                words.append((run.group(), True))
                pos = run.end()
            if pos < len(raw):
                words.append((fold(raw[pos:]), False))
        terms = []  # (key, is_cjk)
        for word, cjk in words:
            if cjk:
                grams = [word] if len(word) <= 2 else [word[i : i + 2] for i in range(len(word) - 1)]
                terms.extend((g, True) for g in grams)
            elif word not in STOP_WORDS:
                terms.append((word, False))
        if not terms:
            # Every word is a common one ("the", "a AND"): a user's query is still
            # valid input, so search for those words themselves.
            terms = [(word, False) for word, _ in words]
        seen, self.terms = set(), []
        for term in terms:
            if term[0] not in seen:
                seen.add(term[0])
                self.terms.append(term)
        if not self.terms:
            raise InputError("om: search query has no words (only punctuation or symbols)")
        last, last_cjk = self.terms[-1]
        # Prefix-match the last term: people type queries the way they type prompts.
        self.prefix = not last_cjk and len(last) >= 2
        self.words = words
        self.exprs = [_quote(key, cjk) for key, cjk in self.terms]
        starred = list(self.exprs)
        if self.prefix:
            starred[-1] += "*"
        self.and_expr = " ".join(starred)
        self.phrase_expr = None
        if len(words) > 1:
            tail_is_term = not words[-1][1] and words[-1][0] == last
            self.phrase_expr = _quote(" ".join(w for w, _ in words), True) + (
                "*" if self.prefix and tail_is_term else ""
            )
        # Folded token sequences used by the scan path and by snippets.
        self.phrase_tokens = [t for w, _ in words for t in _tokens_of_folded(w)]
        self.phrase_prefix = self.prefix and not words[-1][1] and words[-1][0] == last
        # phrases[i]: the FTS5 phrases whose matches make term i match, as (column or None for any,
        # the text FTS5 tokenizes inside the quotes, is a prefix). The store index bounds scores by them.
        self.phrases = [[(None, _body(key, cjk), self.prefix and i == len(self.terms) - 1)]
                        for i, (key, cjk) in enumerate(self.terms)]


#: The ranking rule's ceiling, as SQL over bounds of a session's statistics (om.sessions.searchindex):
#: at most {covered} terms covered, {phrase} 1 when a document may hold the query's phrase, FTS5's bm25
#: relevance at most {relevance}, {n} terms. `_rank` is the rule itself: change both together.
CEILING = "({covered}) + ({phrase}) * {n} + ({relevance}) / (1.0 + ({relevance}))"


def _quote(text, cjk):
    return '"' + _body(text, cjk).replace('"', '""') + '"'


def _body(text, cjk):
    return " ".join((ix.spread_cjk(text) if cjk else text).split())


def _tokens_of_folded(folded):
    return WORD.findall(ix.spread_cjk(folded))


def search(ledger, query, sources=False, retired=False, limit=10, snippets=True):
    """Ranked results: {"query", "results": [...]} (see the module docstring for the rule).

    snippets=False leaves each result's whole text in "snippet", for a caller
    that cuts snippets only for the results it keeps (om.sessions.crosssearch).
    """
    if not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InputError(f"om: --limit must be 1 to {MAX_LIMIT}")
    q = Query(query)
    conn = ledger.conn
    lo = 0 if sources else ix.ENTRY_BASE
    hi = 2 * ix.ENTRY_BASE
    state = _prepare(conn)
    hits = None
    if state is not None:
        try:
            with ledger.transaction("DEFERRED"):
                hits = _fts_hits(conn, q, lo, hi, retired, limit, _documents(state))
        except Exception:
            state = _rebuild(conn)
            if state is not None:
                try:
                    with ledger.transaction("DEFERRED"):
                        hits = _fts_hits(conn, q, lo, hi, retired, limit, _documents(state))
                except Exception:
                    state, hits = None, None
    with ledger.transaction("DEFERRED"):
        after = (state["sources_seq"], state["entries_seq"]) if state is not None else (0, 0)
        if hits is None:
            hits = {}
        # Rows the index does not cover (read-only store, or no FTS5 at all).
        hits.update(_scan_hits(conn, q, sources, retired, after))
        results = _rank(conn, q, hits, limit, snippets)
    return {"query": query, "results": results}


# -- the index path -----------------------------------------------------------


def _documents(state):
    """How many documents the index holds (the N of BM25)."""
    return state["sources_count"] + state["entries_count"]


def _prepare(conn):
    """An up-to-date index state, or the best usable one, or None (scan instead)."""
    if not ix.fts5_available(conn):
        return None
    try:
        ix.catch_up(conn)
        return ix.read_state(conn)
    except sqlite3.Error as e:
        if not _cannot_write(e):
            return _rebuild(conn)
    return _usable_state(conn)


def _rebuild(conn):
    try:
        ix.invalidate(conn)
        ix.catch_up(conn)
        return ix.read_state(conn)
    except sqlite3.Error:
        return _usable_state(conn)


def _usable_state(conn):
    try:
        state = ix.read_state(conn)
        if state is not None and ix.is_consistent(conn, state):
            return state
    except sqlite3.Error:
        pass
    return None


def _cannot_write(error):
    text = str(error).lower()
    return any(s in text for s in ("readonly", "read-only", "locked", "busy", "unable to open", "disk i/o"))


def _fts_hits(conn, q, lo, hi, retired, limit, documents):
    """{rowid: (bm25, covered terms, is phrase)} from the index of `documents` rows."""
    n = len(q.terms)
    phrase = set()
    if q.phrase_expr is not None:
        phrase = {r for r, _ in ix.match(conn, q.phrase_expr, lo, hi, retired, limit)}
    hits = {r: [s, n] for r, s in ix.match(conn, q.and_expr, lo, hi, retired, limit + len(phrase))}
    if n > 1 and len(hits.keys() | phrase) < limit:
        _partial_hits(conn, q, lo, hi, retired, limit, documents, hits)
    missing = [r for r in phrase if r not in hits]
    if missing:
        scored = ix.scores(conn, q.and_expr, missing)
        for r in missing:
            hits[r] = [scored.get(r, 0.0), n]
    return {r: (s, c, r in phrase) for r, (s, c) in hits.items()}


def _partial_hits(conn, q, lo, hi, retired, limit, documents, hits):
    """Add documents matching some but not all terms to `hits`, with their coverage.

    A paraphrase that shares some words still finds its evidence. Candidates
    come from two places. Terms in fewer than half of the documents are
    searched together, best BM25 first. A term in half or more of them is a
    near stop word for this corpus: BM25 gives it no weight (FTS5 clamps its
    idf to almost zero), so ranking its matches would cost a pass over most of
    the corpus and order them by noise; its newest matches are taken instead,
    which is the order ties go in anyway. Then every candidate's coverage is
    counted exactly, term by term.
    """
    n = len(q.terms)
    cap = max(20 * limit, 200)
    exprs = [e + "*" if i == n - 1 and q.prefix else e for i, e in enumerate(q.exprs)]
    common = [e for e in exprs if 2 * ix.count(conn, e) >= documents]
    rare = [e for e in exprs if e not in common]
    candidates = []
    if rare:
        candidates = ix.match(conn, " OR ".join(rare), lo, hi, retired, cap)
    if common:
        # Newest first within each coverage level: all near stop words together,
        # then smaller combinations, then any one of them.
        seen = {r for r, _ in candidates}
        groups = [" ".join(c) for size in range(len(common), 1, -1) for c in itertools.combinations(common, size)]
        for expr in groups[:COMBINATIONS] + [" OR ".join(common)]:
            if len(candidates) >= cap:
                break
            for r, _ in ix.match(conn, expr, lo, hi, retired, cap - len(candidates), newest=True):
                if r not in seen:
                    seen.add(r)
                    candidates.append((r, 0.0))
    fresh = [r for r, _ in candidates if r not in hits]
    covered = dict.fromkeys(fresh, 0)
    for i, expr in enumerate(exprs):
        prefix = i == n - 1 and q.prefix
        for r in ix.members(conn, expr, fresh, seek=not prefix):
            covered[r] += 1
    for r, s in candidates:
        if r not in hits:
            hits[r] = [s, max(covered.get(r, 1), 1)]


# -- the scan path --------------------------------------------------------------


def _scan_hits(conn, q, sources, retired, after):
    """Hits among rows after the given (source seq, entry seq), scored like the index would."""
    docs = []  # (rowid, folded tokens)
    keys = [k for k, _ in q.terms]
    tables = [("entries", ix.ENTRY_BASE, after[1])]
    if sources:
        tables.append(("sources", 0, after[0]))
    total = 0
    for table, base, seq in tables:
        sql = f"SELECT seq, body FROM {table} WHERE seq > ?"
        if table == "entries" and not retired:
            sql += " AND active = 1"
        for s, body in conn.execute(sql, (seq,)):
            total += 1
            text = loads(body).get("text") or ""
            folded = fold(text)
            if not any(k.replace(" ", "") in folded for k in keys):
                continue
            docs.append((base + s, _tokens_of_folded(folded)))
    if not docs:
        return {}
    stats = [_term_stats(tokens, q) for _, tokens in docs]
    df = [sum(1 for tfs, _ in stats if tfs[i]) for i in range(len(q.terms))]
    avgdl = max(1.0, sum(len(t) for _, t in docs) / len(docs))
    n_docs = max(total, len(docs))
    hits = {}
    for (rowid, tokens), (tfs, phrase) in zip(docs, stats):
        covered = sum(1 for tf in tfs if tf)
        if not covered:
            continue
        score = 0.0
        for i, tf in enumerate(tfs):
            if tf:
                idf = max(math.log((n_docs - df[i] + 0.5) / (df[i] + 0.5)), 1e-6)
                score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * len(tokens) / avgdl))
        hits[rowid] = (-score, covered, phrase)
    return hits


def _term_stats(tokens, q):
    """Per-term frequencies in a folded token list, and whether the query phrase occurs."""
    tfs = []
    last = len(q.terms) - 1
    for i, (key, cjk) in enumerate(q.terms):
        if cjk:
            seq = list(key)
            tfs.append(_count_seq(tokens, seq, False))
        elif i == last and q.prefix:
            tfs.append(sum(1 for t in tokens if t.startswith(key)))
        else:
            tfs.append(sum(1 for t in tokens if t == key))
    phrase = len(q.words) > 1 and _count_seq(tokens, q.phrase_tokens, q.phrase_prefix) > 0
    return tfs, phrase


def _count_seq(tokens, seq, prefix_last):
    n, m, count = len(tokens), len(seq), 0
    if not m:
        return 0
    for i in range(n - m + 1):
        if tokens[i : i + m - 1] == seq[:-1] and (
            tokens[i + m - 1].startswith(seq[-1]) if prefix_last else tokens[i + m - 1] == seq[-1]
        ):
            count += 1
    return count


# -- ranking and output -----------------------------------------------------------


def _rank(conn, q, hits, limit, snippets=True):
    n = len(q.terms)
    scored = []
    for rowid, (bm25, covered, phrase) in hits.items():
        relevance = max(0.0, -bm25)
        score = covered + (n if phrase else 0) + relevance / (1.0 + relevance)
        is_entry = rowid >= ix.ENTRY_BASE
        scored.append((-score, 0 if is_entry else 1, -rowid, rowid, score))
    scored.sort()
    results = []
    for _, _, _, rowid, score in scored:
        result = _materialize(conn, q, rowid, score, snippets)
        if result is not None:
            results.append(result)
        if len(results) == limit:
            break
    return results


def _materialize(conn, q, rowid, score, snippets=True):
    cut = snippet if snippets else (lambda text, q: text)
    if rowid >= ix.ENTRY_BASE:
        row = conn.execute(
            "SELECT seq, id, body, active, retirement FROM entries WHERE seq = ?", (rowid - ix.ENTRY_BASE,)
        ).fetchone()
        if row is None:
            return None
        seq, item_id, body, active, retirement = row
        b = loads(body)
        result = {
            "id": item_id,
            "kind": b.get("kind", "observation"),
            "seq": seq,
            "active": bool(active),
            "importance": b.get("importance", "medium"),
            "score": round(score, 4),
            "snippet": cut(b.get("text") or "", q),
        }
        if not active:
            record = loads(retirement) if retirement else {}
            result["replacement_ids"] = list(record.get("replacement_ids") or [])
        return result
    row = conn.execute("SELECT seq, id, body FROM sources WHERE seq = ?", (rowid,)).fetchone()
    if row is None:
        return None
    seq, item_id, body = row
    return {
        "id": item_id,
        "kind": "source",
        "seq": seq,
        "active": True,
        "score": round(score, 4),
        "snippet": cut(loads(body).get("text") or "", q),
    }


def snippet(text, q, width=SNIPPET_CHARS):
    """A short window of the text around the most query terms, matches marked [like this]."""
    text = unicodedata.normalize("NFC", text)
    spans = _match_spans(text, q)
    if not spans:
        window = (0, min(len(text), width))
    else:
        best, best_key = spans[0][0], None
        for start, _, _ in spans:
            inside = {t for s, e, t in spans if start <= s and e <= start + width}
            key = (len(inside), -start)
            if best_key is None or key > best_key:
                best, best_key = start, key
        a = max(0, best - width // 4)
        window = (_word_start(text, a, best), _word_end(text, min(len(text), a + width)))
    a, b = window
    out, pos = [], a
    for s, e, _ in spans:
        if s < a or e > b or s < pos:
            continue
        out.append(text[pos:s])
        out.append("[" + text[s:e] + "]")
        pos = e
    out.append(text[pos:b])
    body = " ".join("".join(out).split())
    return ("…" if a > 0 else "") + body + ("…" if b < len(text) else "")


def _word_start(text, a, limit):
    """Move a window start forward past a cut word (never past the first match)."""
    if a == 0 or text[a - 1].isspace():
        return a
    space = text.find(" ", a, limit)
    return space + 1 if space >= 0 else a


def _word_end(text, b):
    if b >= len(text) or text[b].isspace():
        return b
    space = text.rfind(" ", b - 24, b)
    return space if space > 0 else b


def _match_spans(text, q):
    """(start, end, term index) of every match of a query term in the text, in order."""
    spans = []
    last = len(q.terms) - 1
    plain = {key: i for i, (key, cjk) in enumerate(q.terms) if not cjk}
    for m in WORD.finditer(text):
        token = m.group()
        if CJK_RUN.search(token):
            continue
        folded = fold(token)
        i = plain.get(folded)
        if i is None and q.prefix and folded.startswith(q.terms[last][0]):
            i = last
        if i is not None:
            spans.append((m.start(), m.end(), i))
    for i, (key, cjk) in enumerate(q.terms):
        if cjk:
            start = text.find(key)
            while start >= 0:
                spans.append((start, start + len(key), i))
                start = text.find(key, start + len(key))
    spans.sort()
    return spans
