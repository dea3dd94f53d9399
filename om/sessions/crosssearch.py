"""`om search QUERY --all-sessions [--project DIR]`: one ranked list over a store's sessions.

Invariants:
- Each session searched is searched by om.search exactly as a search of that
  session alone would search it (same query rules, same score), so a
  result's score means the same thing in both. The session's own derived
  index may be built or caught up in its ledger (the only write, under the
  same locking as today); its v1 tables are never written, and a ledger this
  process cannot write is scanned instead.
- Only sessions that can change the merged list are searched: the store
  index (om.sessions.searchindex) bounds each session's best score, sessions
  are searched best bound first, and the search stops once the merged list
  is full and no unsearched session's bound could enter it. The answer is the
  one searching every session gives.
- Merge rule: higher score first; at equal score a memory before a source, then
  the more recently active session, then that session's own order. Every
  session contributes at most `limit` results, which is enough: the merged top
  `limit` cannot need a session's result ranked below its own top `limit`.
- Every result names its session; a session directory that cannot be read is
  skipped and named, never fatal; nothing is created but the store index,
  where the store can be written.
"""

import os

from om.errors import InputError, StoreError
from om.sessions import catalogue


class Candidate:
    """A session in the search's scope, as the catalogue lists it."""

    __slots__ = ("name", "stamp", "project", "session", "recent", "id", "searched")

    def __init__(self, row):
        self.name, self.stamp, _, self.project, self.session, self.recent, self.id, self.searched = row


def search_all(store, query, sources=False, retired=False, limit=10, project=None, progress=None):
    """{"query", "project", "sessions", "results": [{session, ...}], "skipped": [...]}."""
    from om import search as single
    from om.sessions import searchindex
    from om.sessions.index import current

    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= single.MAX_LIMIT:
        raise InputError(f"om: --limit must be 1 to {single.MAX_LIMIT}")
    q = single.Query(query)  # a query without searchable words fails before any ledger is opened
    store = catalogue.open_store(store)
    root = catalogue.project_filter(project) if project is not None else None
    listed = current(store, progress, keep_index=True, payload=("session", "recent", "id", "searched"))
    index = listed.index
    try:
        candidates = {c.name: c for c in map(Candidate, listed.rows) if root is None or c.project == root}
        first, order = list(candidates), None
        if searchindex.usable(index):
            behind = searchindex.bring_up_to_date(index, store, candidates.values(), progress)
            by_id = {c.id: c for c in candidates.values() if c.name not in behind}
            order = searchindex.ceilings(index, q, sources, exact=index.writable)
            if order is not None:
                first = sorted(behind)
        merge = Merge(store, query, sources, retired, limit)
        for name in first:
            merge.search(name, candidates[name])
        for name in listed.unlisted:
            merge.search(name, None, root)
        for session_id, kind, bucket, recent in order or ():
            if merge.full() and (-bucket, 0 if kind == 1 else 1, recent, -1) >= merge.last():
                break
            candidate = by_id.get(session_id)
            if candidate is not None and not merge.done(candidate.name):
                merge.search(candidate.name, candidate)
    finally:
        if index is not None:
            index.close()
    skipped = sorted([s for s in listed.skipped if os.path.basename(s["directory"]) not in listed.unlisted]
                     + merge.skipped, key=lambda s: s["directory"])
    searched = len(candidates) + merge.unlisted - len([s for s in merge.skipped if s["listed"]])
    for s in merge.skipped:
        del s["listed"]
    return {"query": query, "project": root, "sessions": searched, "results": merge.results(q), "skipped": skipped}


class Merge:
    """The merged list: every searched session's results, each keyed as the merge orders them.

    Key: higher score (in ten-thousandths, as printed), a memory before a
    source, the more recently active session (catalogue.listing_key of its
    activity), that session's own order.
    """

    def __init__(self, store, query, sources, retired, limit):
        self.store, self.query, self.sources, self.retired, self.limit = store, query, sources, retired, limit
        self.found, self.skipped, self.unlisted, self.seen = [], [], 0, set()

    def done(self, name):
        return name in self.seen

    def full(self):
        return len(self.found) >= self.limit

    def last(self):
        """The key of the last result that the merged list keeps now."""
        self.found.sort(key=lambda f: f[0])
        del self.found[self.limit:]
        return self.found[-1][0]

    def search(self, name, candidate, root=None):
        """Search one session as alone; a session the catalogue could not summarize (`candidate` None)
        is checked against the project `root` and its activity read here."""
        from om import search as single
        from om.sessions.catalogue import database_error, listing_key

        self.seen.add(name)
        directory = os.path.join(self.store, name)
        try:
            ledger, meta = catalogue.open_ledger(self.store, name, writable=True)
        except catalogue.Unreadable as e:
            self.skipped.append({"directory": directory, "error": str(e), "listed": candidate is not None})
            return
        try:
            with ledger:
                if candidate is None:
                    if root is not None and meta.get(catalogue.PROJECT_KEY) != root:
                        return
                    recent = listing_key(_last_activity(ledger), ledger.session)
                else:
                    recent = candidate.recent
                # Whole texts: only the results that survive the merge are cut into snippets.
                results = single.search(ledger, self.query, self.sources, self.retired, self.limit,
                                        snippets=False)["results"]
        except (database_error(), StoreError) as e:
            self.skipped.append({"directory": directory, "error": f"not a readable ledger: {e}",
                                 "listed": candidate is not None})
            return
        if candidate is None:
            self.unlisted += 1
        for rank, result in enumerate(results):
            key = (-round(result["score"] * 10000), result["kind"] == "source", recent, rank)
            self.found.append((key, ledger.session, result))

    def results(self, q):
        from om import search as single

        self.found.sort(key=lambda f: f[0])
        merged = []
        for _, session, result in self.found[: self.limit]:
            result["snippet"] = single.snippet(result["snippet"], q)
            merged.append(dict({"session": session}, **result))
        return merged


def _last_activity(ledger):
    with ledger.reading():
        capture = ledger.sources_span()[2]
        checkpoint = ledger.meta_get("last_checkpoint_at")
    return max((t for t in (capture, checkpoint) if t), default=None)
