"""Full-text search over a session's memory and evidence.

Invariants:
- A query is always plain words, made terms by om.query, each sent to FTS5 as
  a quoted string, so no query text can be FTS syntax or fail to parse.
- Search never fails because of its index: a missing, damaged or stale index
  is rebuilt (om.derived.fts); when it cannot be written (read-only store) the
  rows it does not cover are scanned; without FTS5 everything is scanned. All
  paths return the same shape and rank by the same rule.
- Words match by stem (om.porter: `retries`, `retried` and `retrying` find
  each other), and the last word also as a prefix of the exact word. An exact
  word keeps its lead: it earns a bonus a stemmed match does not.
- Ranking rule, one number per document d (higher is better), computed from
  per-document statistics (term frequencies tf, length dl), corpus statistics
  of the session's ledger (N documents, their mean length avgdl, each
  phrase's document frequency df) and, for evidence, the two neighbouring
  sources d-1 and d+1 (by seq):

      score(d) = covered(d) + n * phrase(d) + R(d) / (1 + R(d))
      R(d)     = bm25(d) + NEIGHBOUR * max(bm25(d-1), bm25(d+1)) + EXACT * exact(d)
      bm25(d)  = sum over phrases p of  idf(p) * tf(p,d) * (K1 + 1) / (tf(p,d) + K1 * (1 - B + B * dl(d) / avgdl))
      idf(p)   = max(ln((N - df(p) + 0.5) / (df(p) + 0.5)), 1e-6)

  n is the number of terms; a term's phrases are its stem in the `stems`
  column and, for the last (prefix) term, also the word as a prefix in the
  `text` column; covered(d) counts the terms with a phrase in d; phrase(d) is
  1 when the query's words occur in d as one exact phrase; exact(d) counts the
  terms whose exact word occurs in d. The neighbour term applies to sources
  only (memories are not a conversation), and a neighbour contributes its bm25
  for this query (0 when it matches nothing). K1 = 1.2, B = 0.75 and the idf
  floor are FTS5's own bm25(), which the index path uses; the scan path
  computes the same formula over the rows it reads. So an exact phrase beats
  scattered terms, a result with more of the query's terms beats one with
  fewer, and relevance orders results within the same coverage.
- Where the index path evaluates the rule: on a candidate pool. It holds the
  3 x limit best documents by bm25 among those with every term, those with
  the exact phrase, and (when these are fewer than 3 x limit) the partial
  matches of `_partial_hits`. The neighbour and exact parts are computed for
  every candidate of the best coverage levels that hold `limit` candidates,
  which is exact: they never move a result across levels. The scan path
  evaluates the rule on every row it reads, so the two differ only for a
  document that its own bm25 leaves out of the pool.
- Memories and evidence are scored in one BM25 corpus, so an observation and a
  source with the same text get the same score (a source's neighbours aside).
  The corpus is every row, retired memories and evidence included, whatever the
  search asks for: N, avgdl and df are the same on the scan path as in the index.
  Ties go to the memory (then to the newer row).
- A weak first pass is followed by feedback (om.feedback), whose results come
  after every first-pass result.
- Each result's snippet is cut from its text by om.snippets.
"""

import itertools
import math

from om.derived import fts as ix
from om.derived.fts import fold
from om.errors import InputError
from om.jsonio import loads
from om.query import STOP_WORDS, Query
from om.snippets import snippet
from om.sqlite import load

sqlite3 = load()

MAX_LIMIT = 100
K1, B = 1.2, 0.75
#: Weight of the better neighbouring source's bm25 in a source's relevance.
NEIGHBOUR = 0.3
#: Relevance added per term whose exact word (not only its stem) occurs.
EXACT = 0.3
#: A term's matches are walked rather than looked up one by one when it has at most this many per document asked about.
WALK = 8
#: Most combinations of near stop words tried for partial matches (each is one cheap query).
COMBINATIONS = 16


def search(ledger, query, sources=False, retired=False, limit=10, snippets=True, feedback=True, prefix=True):
    """Ranked results: {"query", "results": [...]} (see the module docstring for the rule),
    and "expansion": [words] when a weak first pass was expanded (om.feedback).

    snippets=False leaves each result's whole text in "snippet", for a caller
    that cuts snippets only for the results it keeps; feedback=False skips the
    expansion, for a caller that expands a merged list once
    (om.sessions.crosssearch does both); prefix=False matches the last word whole.
    """
    if not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InputError(f"om: --limit must be 1 to {MAX_LIMIT}")
    q = Query(query, prefix)
    results = _search(ledger, q, sources, retired, limit)
    out = {"query": query, "results": results}
    if feedback:
        expanded = expand(q, results, limit, lambda qx: _search(ledger, qx, sources, retired, limit))
        if expanded is not None:
            out["expansion"], out["results"] = expanded
    if snippets:
        cut_snippets(out, q)
    return out


def expand(q, results, limit, search_with):
    """(words, results) after feedback on a weak first pass, else None (om.feedback).

    `results` hold whole texts; `search_with(query)` runs the same search for another Query.
    """
    from om import feedback

    if not feedback.weak(results, limit, len(q.terms)):
        return None
    words = feedback.words_for({stem for _, stem, _ in q.terms}, [r["snippet"] for r in results], STOP_WORDS)
    if not words:
        return None
    more = feedback.appended(results, search_with(Query(" ".join(words), prefix=False)), limit)
    return (words, more) if len(more) > len(results) else None


def cut_snippets(found, q):
    """Cut each result's whole text into its snippet: by the query, or by the expansion's words."""
    qx = Query(" ".join(found["expansion"]), prefix=False) if found.get("expansion") else None
    for result in found["results"]:
        result["snippet"] = snippet(result["snippet"], qx if result.get("expansion") else q)


def _search(ledger, q, sources, retired, limit):
    """The first pass: ranked results with whole texts."""
    conn = ledger.conn
    lo = 0 if sources else ix.ENTRY_BASE
    hi = 2 * ix.ENTRY_BASE
    state = _prepare(conn)
    hits, df = None, {}
    if state is not None:
        try:
            with ledger.transaction("DEFERRED"):
                hits = _fts_hits(conn, q, lo, hi, retired, limit, _documents(state), df)
        except Exception:
            state = _rebuild(conn)
            if state is not None:
                try:
                    with ledger.transaction("DEFERRED"):
                        hits = _fts_hits(conn, q, lo, hi, retired, limit, _documents(state), df)
                except Exception:
                    state, hits = None, None
    with ledger.transaction("DEFERRED"):
        after = (state["sources_seq"], state["entries_seq"]) if state is not None else (0, 0)
        if hits is None:
            hits = {}
        # Rows the index does not cover (read-only store, or no FTS5 at all).
        scanned, relevance, exact = _scan_hits(conn, q, sources, retired, after)
        hits.update(scanned)
        relevance.update((r, -h[0]) for r, h in hits.items())
        contenders = _contenders(q, hits, limit)
        indexed = [r for r in contenders if r not in exact]
        for stemmed, expr, (_, _, prefix) in zip(q.exprs, q.exact_exprs, q.exact):
            # The exact word is in no more documents than its stem.
            walk = prefix or df.get(stemmed, len(indexed) * WALK + 1) <= len(indexed) * WALK
            for r in ix.members(conn, expr, indexed, seek=not walk) if indexed else ():
                exact[r] = exact.get(r, 0) + 1
        if sources:
            # bm25 of the neighbouring sources that are not hits themselves: the
            # scan saw every row it covers; the index is asked for the rest.
            wanted = {r + d for r in contenders if r < ix.ENTRY_BASE for d in (-1, 1)} - relevance.keys()
            wanted = sorted(r for r in wanted if 0 < r <= after[0])
            if wanted:
                walk = len(df) == len(q.exprs) and sum(df.values()) <= len(wanted) * WALK
                relevance.update((r, -s) for r, s in ix.scores(conn, q.or_expr, wanted, seek=not walk).items())
        return _rank(conn, q, hits, contenders, relevance, exact, limit)


def _contenders(q, hits, limit):
    """The hits that can still make the top `limit`: those of the best levels that hold `limit` hits.

    A level is covered terms plus the phrase bonus, the whole-number part of
    the score; the rest of the score only orders hits within a level.
    """
    n = len(q.terms)
    levels = {}
    for r, (_, covered, phrase) in hits.items():
        levels.setdefault(covered + (n if phrase else 0), []).append(r)
    chosen = []
    for level in sorted(levels, reverse=True):
        chosen.extend(levels[level])
        if len(chosen) >= limit:
            break
    return chosen


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


def _fts_hits(conn, q, lo, hi, retired, limit, documents, df, corpus=ix):
    """{rowid: (bm25, covered terms, is phrase)} from the index of `documents` rows.

    Fills `df` with the number of documents of each term expression it counted. `corpus` answers
    the index's questions (match, count, members, scores): the ledger's own index (om.derived.fts),
    or another index of the same columns (the store index's, om.derived.store_index.docs).

    The pool is wider than `limit` so that the neighbour and exact-word parts
    of the relevance can reorder documents of equal coverage.
    """
    n = len(q.terms)
    pool = 3 * limit
    phrase = set()
    if q.phrase_expr is not None:
        phrase = {r for r, _ in corpus.match(conn, q.phrase_expr, lo, hi, retired, pool)}
    hits = {r: [s, n] for r, s in corpus.match(conn, q.and_expr, lo, hi, retired, pool + len(phrase))}
    if n > 1 and len(hits.keys() | phrase) < pool:
        _partial_hits(conn, q, lo, hi, retired, limit, documents, hits, df, corpus)
    missing = [r for r in phrase if r not in hits]
    if missing:
        scored = corpus.scores(conn, q.and_expr, missing)
        for r in missing:
            hits[r] = [scored.get(r, 0.0), n]
    return {r: (s, c, r in phrase) for r, (s, c) in hits.items()}


def _partial_hits(conn, q, lo, hi, retired, limit, documents, hits, df, corpus=ix):
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
    exprs = q.exprs
    df.update((e, corpus.count(conn, e)) for e in exprs)
    common = [e for e in exprs if 2 * df[e] >= documents]
    rare = [e for e in exprs if e not in common]
    candidates = []
    if rare:
        candidates = corpus.match(conn, " OR ".join(rare), lo, hi, retired, cap)
    if common:
        # Newest first within each coverage level: all near stop words together,
        # then smaller combinations, then any one of them.
        seen = {r for r, _ in candidates}
        groups = [" AND ".join(c) for size in range(len(common), 1, -1) for c in itertools.combinations(common, size)]
        for expr in groups[:COMBINATIONS] + [" OR ".join(common)]:
            if len(candidates) >= cap:
                break
            for r, _ in corpus.match(conn, expr, lo, hi, retired, cap - len(candidates), newest=True):
                if r not in seen:
                    seen.add(r)
                    candidates.append((r, 0.0))
    fresh = [r for r, _ in candidates if r not in hits]
    covered = dict.fromkeys(fresh, 0)
    for i, expr in enumerate(exprs):
        walk = (i == n - 1 and q.prefix) or df[expr] <= len(fresh) * WALK
        for r in corpus.members(conn, expr, fresh, seek=not walk):
            covered[r] += 1
    # Each candidate's bm25 over every phrase of the query, as the scan computes it: the
    # rare terms' search scored it on those terms alone, the near stop words' not at all,
    # and a near stop word's prefix phrase can itself be rare.
    # One pass over the expression's matches when they are few enough, else a lookup per candidate.
    walk = sum(df[e] for e in exprs) <= len(fresh) * WALK
    scored = corpus.scores(conn, q.or_expr, fresh, seek=not walk) if fresh else {}
    for r in fresh:
        hits[r] = [scored.get(r, 0.0), max(covered.get(r, 1), 1)]


# -- the scan path --------------------------------------------------------------


def _scan_hits(conn, q, sources, retired, after):
    """Hits among rows after the given (source seq, entry seq), scored like the index would.

    Also returns {rowid: bm25} of every scanned row that matches at all, which
    is where the neighbours' part of a source's relevance comes from, and
    {rowid: exact words} of the hits.
    """
    docs = []  # (rowid, folded words, their stems, whether the search asked for this row)
    roots = [_root(stem) for _, stem, _ in q.terms] + [key for key, _, _ in q.terms]
    total = length = 0
    # Every row counts in N, avgdl and df, as every row is in the index's corpus
    # (retired memories and evidence too); only the rows asked for become hits.
    for table, base, seq in (("entries", ix.ENTRY_BASE, after[1]), ("sources", 0, after[0])):
        sql = f"SELECT seq, body, {'active' if table == 'entries' else '1'} FROM {table} WHERE seq > ?"
        for s, body, active in conn.execute(sql, (seq,)):
            total += 1
            text = loads(body).get("text") or ""
            words = ix.words_of(text)
            length += len(words)
            folded = fold(text)
            if not any(k in folded for k in roots):
                continue
            asked = sources if table == "sources" else (retired or bool(active))
            docs.append((base + s, words, [ix.stem_of(w) for w in words], asked))
    if not any(asked for *_, asked in docs):
        return {}, {}, {}
    stats = [_term_stats(words, stems, q) for _, words, stems, _ in docs]
    phrases = [p for own in q.phrases for p in own]
    df = [sum(1 for tfs, _, _ in stats if tfs[j]) for j in range(len(phrases))]
    # N and avgdl over every row read, as FTS5 takes them over every row indexed (an
    # average below one word is kept as it is; without any word nothing matches).
    avgdl = length / total if length else 1.0
    n_docs = total
    idf = [max(math.log((n_docs - d + 0.5) / (d + 0.5)), 1e-6) for d in df]
    owner = [i for i, own in enumerate(q.phrases) for _ in own]
    hits, relevance, exact_words = {}, {}, {}
    for (rowid, words, _, asked), (tfs, phrase, exact) in zip(docs, stats):
        matched = {owner[j] for j, tf in enumerate(tfs) if tf}
        if not matched or not (asked or rowid < ix.ENTRY_BASE):
            continue
        norm = K1 * (1 - B + B * len(words) / avgdl)
        score = sum(idf[j] * tf * (K1 + 1) / (tf + norm) for j, tf in enumerate(tfs) if tf)
        relevance[rowid] = score  # a source's bm25 counts for its neighbours, asked for or not
        if asked:
            exact_words[rowid] = exact
            hits[rowid] = (-score, len(matched), phrase)
    return hits, relevance, exact_words


def _root(stem):
    """A substring every word with this stem contains (Porter only rewrites a word's last letters)."""
    return stem[: len(stem) - 2] if len(stem) > 4 else stem[:2]


def _term_stats(words, stems, q):
    """Per-phrase frequencies in a document, whether the query phrase occurs, how many exact words."""
    tfs = []
    for own in q.phrases:
        for column, seq, prefix in own:
            tfs.append(_count_seq(stems if column == "stems" else words, seq, prefix))
    phrase = len(q.words) > 1 and _count_seq(words, q.phrase_tokens, q.phrase_prefix) > 0
    exact = sum(1 for _, seq, prefix in q.exact if _count_seq(words, seq, prefix))
    return tfs, phrase, exact


def _count_seq(tokens, seq, prefix_last):
    n, m, count = len(tokens), len(seq), 0
    if not m:
        return 0
    if m == 1 and not prefix_last:
        return tokens.count(seq[0])
    for i in range(n - m + 1):
        if tokens[i : i + m - 1] == seq[:-1] and (
            tokens[i + m - 1].startswith(seq[-1]) if prefix_last else tokens[i + m - 1] == seq[-1]
        ):
            count += 1
    return count


# -- ranking and output -----------------------------------------------------------


def _rank(conn, q, hits, contenders, relevance, exact, limit):
    results = []
    for score, rowid in ranked(q, hits, contenders, relevance, exact, ix.ENTRY_BASE):
        result = _materialize(conn, rowid, score)
        if result is not None:
            results.append(result)
        if len(results) == limit:
            break
    return results


def ranked(q, hits, contenders, relevance, exact, entries):
    """[(score, rowid)] of the contenders by the rule, best first, then a memory (rowid `entries` and
    up), then the newer document. `hits`, `relevance` and `exact` as the index path makes them."""
    n = len(q.terms)
    scored = []
    for rowid in contenders:
        bm25, covered, phrase = hits[rowid]
        neighbour = 0.0 if rowid >= entries else max(relevance.get(rowid - 1, 0.0), relevance.get(rowid + 1, 0.0))
        scored.append((rule(n, covered, phrase, bm25, exact.get(rowid, 0), neighbour), rowid))
    scored.sort(key=lambda item: (-item[0], item[1] < entries, -item[1]))
    return scored


def rule(n, covered, phrase, bm25, exact, neighbour):
    """The ranking rule's score of one document (the module docstring): `covered` of the `n` terms, the
    query's phrase or not, FTS5's `bm25` (negative: better is lower), `exact` words, and the better
    neighbouring source's bm25 (positive; 0 for a memory). Cross-session search ranks by it too."""
    r = max(0.0, -bm25) + EXACT * exact + NEIGHBOUR * neighbour
    return covered + (n if phrase else 0) + r / (1.0 + r)


def _materialize(conn, rowid, score):
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
            "snippet": b.get("text") or "",
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
        "snippet": loads(body).get("text") or "",
    }
