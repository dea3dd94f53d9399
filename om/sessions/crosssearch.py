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
- Every result names its session; a session directory that cannot be read is
  skipped and named, never fatal; nothing is created.
"""

import os

from om.errors import InputError, StoreError
from om.sessions import catalogue


def search_all(store, query, sources=False, retired=False, limit=10, project=None):
    """{"query", "project", "sessions", "results": [{session, ...}], "skipped": [...]}."""
    from om import search as single
    from om.sessions.catalogue import database_error
    from om.sessions.index import current

    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= single.MAX_LIMIT:
        raise InputError(f"om: --limit must be 1 to {single.MAX_LIMIT}")
    q = single.Query(query)  # a query without searchable words fails before any ledger is opened
    store = catalogue.open_store(store)
    root = catalogue.project_filter(project) if project is not None else None
    listed = current(store, payload=("session", "activity"))
    # Sessions the catalogue could not summarize are searched as they always were (search reads less).
    skipped = [s for s in listed.skipped if os.path.basename(s["directory"]) not in listed.unlisted]
    found, searched = [], 0
    for name, session, last in _sessions(store, listed, root):
        try:
            ledger, meta = catalogue.open_ledger(store, name, writable=True)
        except catalogue.Unreadable as e:
            skipped.append({"directory": os.path.join(store, name), "error": str(e)})
            continue
        try:
            with ledger:
                if session is None:
                    if root is not None and meta.get(catalogue.PROJECT_KEY) != root:
                        continue
                    last = _last_activity(ledger)
                # Whole texts: only the results that survive the merge are cut into snippets.
                results = single.search(ledger, query, sources, retired, limit, snippets=False)["results"]
        except (database_error(), StoreError) as e:
            skipped.append({"directory": os.path.join(store, name), "error": f"not a readable ledger: {e}"})
            continue
        searched += 1
        for rank, result in enumerate(results):
            found.append((ledger.session, last, rank, result))
    skipped.sort(key=lambda s: s["directory"])
    # Most recently active session first among equals: sort by the tie-breakers, then stably by score.
    found.sort(key=lambda f: (catalogue.recency({"session": f[0], "last_activity": f[1]}), f[2]))
    found.sort(key=lambda f: (-f[3]["score"], f[3]["kind"] == "source"))
    merged = []
    for session, _, _, result in found[:limit]:
        result["snippet"] = single.snippet(result["snippet"], q)
        merged.append(dict({"session": session}, **result))
    return {"query": query, "project": root, "sessions": searched, "results": merged, "skipped": skipped}


def _sessions(store, listed, root):
    """(directory name, session id, last activity) of the sessions to search; (name, None, None) for one
    the catalogue could not summarize (its project and activity are read when it is opened)."""
    for name, _, _, project, session, activity in listed.rows:
        if root is None or project == root:
            yield name, session, activity
    for name in listed.unlisted:
        yield name, None, None


def _last_activity(ledger):
    with ledger.reading():
        capture = ledger.sources_span()[2]
        checkpoint = ledger.meta_get("last_checkpoint_at")
    return max((t for t in (capture, checkpoint) if t), default=None)
