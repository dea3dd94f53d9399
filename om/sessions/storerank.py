"""Cross-session search's one ranking: the whole store's documents scored at once, from the store index.

The store index holds every session's memory and evidence in one full-text
table (om.derived.store_index.docs), tokenized as each ledger's own index is. This
module asks it what om.search's index path asks a ledger's index, with the
same query rules and the same ranking rule (om.search.rule), over one corpus:
BM25's document count, lengths and frequencies are the store's, not each
session's.

Invariants:
- The rule is om.search's, evaluated as its index path evaluates it: a pool of
  the best documents by BM25 among those with every term, those with the
  query's phrase and (when these are few) the partial matches; the exact-word
  and neighbour parts computed for every candidate of the best coverage levels
  that hold `limit` of them. A source's neighbours are the sources of its own
  session next to it.
- Only what is current is found: the table is asked only about the sessions
  in scope whose documents are current (`scope`), so a session read here alone
  (behind) or out of the project is never found from the table, and retired
  entries only when asked.
- The index path's own steps are om.search's (`_fts_hits`, `_contenders`,
  `_materialize`), asked of the store's table through store_docs.Corpus: one
  rule, two corpora.
- Results are read from the ledgers: each result's row is read (read-only)
  from its session's ledger, so it says what the ledger says now; a row that
  is gone, or an entry retired since, is left out.
"""

from om import search as single
from om.derived.fts import ENTRY_BASE
from om.derived.store_index import docs as store_docs


def ranked(conn, q, sources, retired, limit, scoped):
    """[(score, rowid)] of the best documents of the store for Query `q`, best first (ties: a memory
    first, then the newer document); `scoped` when only the sessions of `temp.om_scope` may be found."""
    corpus = store_docs.Corpus(scoped)
    lo, hi = (0 if sources else store_docs.ENTRIES), store_docs.END
    df: dict = {}
    hits = single._fts_hits(conn, q, lo, hi, retired, limit, store_docs.documents(conn), df, corpus)
    contenders = single._contenders(q, hits, limit)
    relevance = {r: -h[0] for r, h in hits.items()}
    exact: dict = {}
    for expr, (_, _, prefix) in zip(q.exact_exprs, q.exact):
        for r in corpus.members(conn, expr, contenders, seek=not prefix) if contenders else ():
            exact[r] = exact.get(r, 0) + 1
    if sources:
        # A source's neighbours: the next sources of its session (same session bits, seq 1 and up).
        near = {r + d for r in contenders if r < store_docs.ENTRIES for d in (-1, 1)} - relevance.keys()
        wanted = sorted(r for r in near if r & (store_docs.SEQ_LIMIT - 1))
        if wanted:
            relevance.update((r, -s) for r, s in corpus.scores(conn, q.or_expr, wanted).items())
    return single.ranked(q, hits, contenders, relevance, exact, store_docs.ENTRIES)


def results(store, scored, candidate, retired, limit):
    """[(key, session, result)] of the first `limit` of `scored` in the merge's order whose rows the ledgers
    still hold, keyed as om.sessions.crosssearch.Merge keys them (the session's recency breaks ties of
    the printed score, then the newer document); `candidate(session id)` gives a session's Candidate.
    Also [(name, error)] of the sessions whose ledger could not be read now."""
    from om.sessions import catalogue
    from om.sessions.catalogue import database_error

    sessions: dict = {}
    keyed = []
    for score, doc in scored:
        sid = store_docs.session_of(doc)
        c = sessions[sid] if sid in sessions else sessions.setdefault(sid, candidate(sid))
        if c is not None:
            keyed.append(((-round(round(score, 4) * 10000), doc < store_docs.ENTRIES, c.recent, -doc), c, score, doc))
    keyed.sort(key=lambda item: item[0])
    found, failed, ledgers = [], {}, {}
    try:
        for key, c, score, doc in keyed:
            if len(found) == limit:
                break
            if c.name in failed:
                continue
            ledger = ledgers.get(c.name)
            seq = doc & (store_docs.SEQ_LIMIT - 1)
            try:
                if ledger is None:
                    ledger = ledgers[c.name] = catalogue.open_ledger(store, c.name)[0]
                result = single._materialize(ledger.conn, seq + (ENTRY_BASE if doc >= store_docs.ENTRIES else 0),
                                             score)
            except catalogue.Unreadable as e:
                failed[c.name] = str(e)
                continue
            except database_error() as e:
                failed[c.name] = f"not a readable ledger: {e}"
                continue
            if result is not None and (retired or result["active"]):
                found.append((key, c.session, result))
    finally:
        for ledger in ledgers.values():
            ledger.close()
    return found, list(failed.items())
