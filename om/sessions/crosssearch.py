"""`om search QUERY --all-sessions [--project DIR]`: one ranked list over a store's sessions.

Invariants:
- Each session is searched by om.search exactly as a search of that session
  alone would search it (same query rules, same score), so a result's score
  means the same thing in both. The session's own derived index may be built
  or caught up in its ledger (the only write, under the same locking as
  today); its v1 tables are never written, and a ledger this process cannot
  write is scanned instead.
- Merge rule: higher score first; at equal score a memory before a source, then
  the more recently active session, then that session's own order. Every
  session contributes at most `limit` results, which is enough: the merged top
  `limit` cannot need a session's result ranked below its own top `limit`.
- Feedback (om.feedback) happens once, on the merged list: when it holds fewer
  than `limit` results, the expansion's words are searched across the sessions
  the same way and its results come after every first-pass one.
- Every result names its session; a session directory that cannot be read is
  skipped and named, never fatal; nothing is created.
"""

import os

from om.errors import InputError, StoreError
from om.sessions import catalogue


def search_all(store, query, sources=False, retired=False, limit=10, project=None):
    """{"query", "project", "sessions", "results": [{session, ...}], "skipped": [...]},
    and "expansion" when a weak merged list was expanded (om.feedback)."""
    from om import search as single

    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= single.MAX_LIMIT:
        raise InputError(f"om: --limit must be 1 to {single.MAX_LIMIT}")
    q = single.Query(query)  # a query without searchable words fails before any ledger is opened
    store = catalogue.open_store(store)
    root = catalogue.project_filter(project) if project is not None else None
    merged, skipped, searched = _merged(store, root, query, sources, retired, limit)
    found = {"query": query, "project": root, "sessions": searched, "results": merged, "skipped": skipped}
    # One expansion for the whole list, from its merged first pass, by one session's rule.
    expanded = single.expand(q, merged, limit,
                             lambda qx: _merged(store, root, qx.text, sources, retired, limit, prefix=False)[0])
    if expanded is not None:
        found["expansion"], found["results"] = expanded
    single.cut_snippets(found, q)
    return found


def _merged(store, root, query, sources, retired, limit, prefix=True):
    """(the merged top `limit` with whole texts, skipped directories, sessions searched)."""
    from om import search as single
    from om.sessions.catalogue import database_error

    found, skipped, searched = [], [], 0
    for name, ledger, meta in catalogue.scan(store, root, writable=True):
        if ledger is None:
            skipped.append({"directory": os.path.join(store, name), "error": meta})
            continue
        try:
            with ledger:
                last = _last_activity(ledger)
                # Whole texts: only the results that survive the merge are cut into snippets.
                results = single.search(ledger, query, sources, retired, limit, snippets=False, feedback=False,
                                        prefix=prefix)["results"]
        except (database_error(), StoreError) as e:
            skipped.append({"directory": os.path.join(store, name), "error": f"not a readable ledger: {e}"})
            continue
        searched += 1
        for rank, result in enumerate(results):
            found.append((ledger.session, last, rank, result))
    # Most recently active session first among equals: sort by the tie-breakers, then stably by score.
    found.sort(key=lambda f: (catalogue.recency({"session": f[0], "last_activity": f[1]}), f[2]))
    found.sort(key=lambda f: (-f[3]["score"], f[3]["kind"] == "source"))
    return [dict({"session": session}, **result) for session, _, _, result in found[:limit]], skipped, searched


def _last_activity(ledger):
    with ledger.reading():
        capture = ledger.sources_span()[2]
        checkpoint = ledger.meta_get("last_checkpoint_at")
    return max((t for t in (capture, checkpoint) if t), default=None)
