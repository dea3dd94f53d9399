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
- Feedback (om.feedback) happens once, on the merged list: when it holds fewer
  than `limit` results, the expansion's words are searched across the sessions
  the same way (bounds included) and its results come after every first-pass one.
- Every result names its session; a session directory that cannot be read is
  skipped and named, never fatal; nothing is created but the store index,
  where the store can be written.
- The mirrors `om sync` keeps (om.sync.readers) are searched too, each as one
  session (read-only), their results naming their writer under `mirror`; then
  every record id is shown once (a session on two machines, the same evidence
  imported twice): the most forgotten copy wins, then a retired one, then the
  store's own, then the better score.
"""

import os
from operator import itemgetter

from om.errors import InputError, StoreError
from om.sessions import catalogue

#: The catalogue columns a Candidate holds, in its order.
CANDIDATE = ("name", "stamp", "listed", "project", "session", "recent", "id", "searched")


class Candidate(tuple):
    """A session in the search's scope: its catalogue row (CANDIDATE) as it is, read by name.
    A tuple made in C: a large store has one per session."""

    __slots__ = ()
    name = property(itemgetter(0))
    stamp = property(itemgetter(1))
    project = property(itemgetter(3))
    session = property(itemgetter(4))
    recent = property(itemgetter(5))
    id = property(itemgetter(6))
    searched = property(itemgetter(7))


def search_all(store, query, sources=False, retired=False, limit=10, project=None, progress=None):
    """{"query", "project", "sessions", "results": [{session, ...}], "skipped": [...]},
    and "expansion" when a weak merged list was expanded (om.feedback)."""
    from om import search as single
    from om.sessions.index import current

    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= single.MAX_LIMIT:
        raise InputError(f"om: --limit must be 1 to {single.MAX_LIMIT}")
    q = single.Query(query)  # a query without searchable words fails before any ledger is opened
    store = catalogue.open_store(store)
    root = catalogue.project_filter(project) if project is not None else None
    listed = current(store, progress, keep_index=True, payload=CANDIDATE[4:])
    try:
        scope = Scope(store, listed, root, progress)
        merge = scope.merged(q, True, sources, retired, limit)
        merged = merge.results()
        found = {"query": query, "project": root, "sessions": scope.searched(merge), "results": merged,
                 "skipped": scope.skipped(merge)}
        # One expansion for the whole list, from its merged first pass, by one session's rule.
        expanded = single.expand(q, merged, limit,
                                 lambda qx: scope.merged(qx, False, sources, retired, limit).results())
    finally:
        if listed.index is not None:
            listed.index.close()
    if expanded is not None:
        found["expansion"], found["results"] = expanded
    _with_mirrors(store, found, root, sources, retired, limit)
    single.cut_snippets(found, q)
    return found


def _forgotten(result):
    from om.ledger.forget import MARKER

    return str(result.get("snippet") or "").count(MARKER)


def _with_mirrors(store, found, root, sources, retired, limit):
    """Add the results of the store's mirrors (om sync), each record once (see the module docstring)."""
    from om.sync import readers

    if not readers.has_mirrors(store):
        return
    key = None
    if root is not None:
        from om.project.identity import identify

        key = identify(root).key
    mirrored, searched = readers.search(store, found["query"], sources, retired, limit, key)
    found["mirrors"] = searched
    best = {}
    for rank, result in enumerate(found["results"] + mirrored):
        # The most forgotten copy, then a retired one, then this store's own, then the better score.
        order = (-_forgotten(result), result.get("active", True), "mirror" in result, -result["score"], rank)
        if result["id"] not in best or order < best[result["id"]][0]:
            best[result["id"]] = (order, result)
    merged = sorted(best.values(), key=lambda item: (-item[1]["score"], item[0][-1]))
    found["results"] = [result for _, result in merged[:limit]]


class Scope:
    """The sessions a cross-session search covers, with the store index's bounds when there are any.

    When the catalogue is the index's own rows at the version they were checked at and every session's
    search rows are current (a warm search of an unchanged store), the rows are not read at all: the
    index counts them, and only the sessions the bounds lead to are read, by id. Any other state, or
    a change of the index meanwhile, reads them all (`_every`).
    """

    def __init__(self, store, listed, root, progress):
        from om.sessions import searchindex

        self.store, self.listed, self.root = store, listed, root
        self.index, self.count, self._candidates, self._by_id = None, None, None, None
        stale = None
        if searchindex.usable(listed.index):
            self.index = listed.index
            if listed.version is not None:
                version, count, rows = self.index.search_scope(CANDIDATE, root)
                if version == listed.version and not rows:
                    self.count, stale = count, []
        if stale is None:
            stale = self.candidates.values()
        self.behind = set(self.candidates) if self.index is None else searchindex.bring_up_to_date(
            self.index, store, stale, progress)

    @property
    def candidates(self):
        """{name: Candidate} of every session in scope (read on first use)."""
        if self._candidates is None:
            self._every()
        return self._candidates

    def _every(self):
        root = self.root
        self._candidates = {c.name: c for c in map(Candidate, self.listed.rows) if root is None or c.project == root}
        self.count = None

    def candidate(self, session_id):
        """The Candidate of an indexed session whose search rows are current, by id; None otherwise."""
        if self.count is not None and self.index is not None:
            version, row = self.index.row_of(CANDIDATE, session_id)
            if version == self.listed.version:
                candidate = None if row is None else Candidate(row)
                return None if candidate is None or self.root not in (None, candidate.project) else candidate
            self._every()  # the index changed meanwhile: take the catalogue as it was checked
        if self._by_id is None:
            self._by_id = {c.id: c for c in self.candidates.values() if c.name not in self.behind}
        return self._by_id.get(session_id)

    def merged(self, q, prefix, sources, retired, limit):
        """The Merge of every session's search for `q`: searching only the sessions its bounds keep."""
        from om.sessions import searchindex

        order = None
        if self.index is not None:
            order = searchindex.ceilings(self.index, q, sources, exact=self.index.writable)
        merge = Merge(self.store, q.text, prefix, sources, retired, limit)
        for name in sorted(self.behind) if order is not None else list(self.candidates):
            merge.search(name, self.candidates[name])
        for name in self.listed.unlisted:
            merge.search(name, None, self.root)
        for session_id, kind, bucket, recent in order or ():
            if merge.full() and (-bucket, 0 if kind == 1 else 1, recent, -1) >= merge.last():
                break
            candidate = self.candidate(session_id)
            if candidate is not None and not merge.done(candidate.name):
                merge.search(candidate.name, candidate)
        return merge

    def skipped(self, merge):
        listed = self.listed
        found = [s for s in listed.skipped if os.path.basename(s["directory"]) not in listed.unlisted]
        return sorted(found + [{"directory": s["directory"], "error": s["error"]} for s in merge.skipped],
                      key=lambda s: s["directory"])

    def searched(self, merge):
        """Sessions searched, as searching every one counts them: every one in scope that could be read."""
        every = self.count if self.count is not None else len(self.candidates)
        return every + merge.unlisted - sum(1 for s in merge.skipped if s["listed"])


class Merge:
    """The merged list: every searched session's results, each keyed as the merge orders them.

    Key: higher score (in ten-thousandths, as printed), a memory before a
    source, the more recently active session (catalogue.listing_key of its
    activity), that session's own order.
    """

    def __init__(self, store, query, prefix, sources, retired, limit):
        self.store, self.query, self.prefix = store, query, prefix
        self.sources, self.retired, self.limit = sources, retired, limit
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
                                        snippets=False, feedback=False, prefix=self.prefix)["results"]
        except (database_error(), StoreError) as e:
            self.skipped.append({"directory": directory, "error": f"not a readable ledger: {e}",
                                 "listed": candidate is not None})
            return
        if candidate is None:
            self.unlisted += 1
        for rank, result in enumerate(results):
            key = (-round(result["score"] * 10000), result["kind"] == "source", recent, rank)
            self.found.append((key, ledger.session, result))

    def results(self):
        """The merged top `limit`, each result naming its session, with whole texts (snippets cut later)."""
        self.found.sort(key=lambda f: f[0])
        return [dict({"session": session}, **result) for _, session, result in self.found[: self.limit]]


def _last_activity(ledger):
    with ledger.reading():
        capture = ledger.sources_span()[2]
        checkpoint = ledger.meta_get("last_checkpoint_at")
    return max((t for t in (capture, checkpoint) if t), default=None)
