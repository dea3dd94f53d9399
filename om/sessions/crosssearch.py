"""`om search QUERY --all-sessions [--project DIR]`: one ranked list over a store's sessions.

Invariants:
- One ranking for the store: where the store index can hold every session's
  documents, the list is om.sessions.storerank's, which scores the whole
  store's documents at once by om.search's rule (same query rules, BM25 over
  the store as one corpus). What holds is quality, measured
  (bench/retrieval.py's cross-session form), not equality with each session's
  own search: a result's score is the store's.
- A session the index cannot answer for now (its documents behind: unreadable
  into it, an index this process cannot write) is searched alone by om.search,
  as is every session where there is no index to use (a read-only store
  without one, no FTS5): that is the per-session merge, whose results keep
  their own sessions' scores. Such a session's own derived index may be built
  or caught up in its ledger (the only write, under the same locking as a
  search of that session); its v1 tables are never written.
- Merge rule: higher score first; at equal score a memory before a source, then
  the more recently active session, then the order it was ranked in. Every
  session searched alone contributes at most `limit` results, which is enough.
- Feedback (om.feedback) happens once, on the merged list: when it holds fewer
  than `limit` results, the expansion's words are searched across the sessions
  the same way and its results come after every first-pass one.
- Every result names its session and is read from that session's ledger, so
  `recall` finds it there; a session directory that cannot be read is skipped
  and named, never fatal; nothing is created but the store index, where the
  store can be written.
- The project memories (om.project.search) are searched beside the sessions,
  directly (they live outside the store and its index, and are few): every
  one of this machine, or with `--project DIR` the one of DIR's project; their
  results are merged into the list (first pass and feedback alike) and marked
  `"scope": "project"`, and an entry a session result holds shows once, as
  the session's.
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
CANDIDATE = ("name", "stamp", "listed", "project", "project_id", "session", "recent", "id", "searched")


class Candidate(tuple):
    """A session in the search's scope: its catalogue row (CANDIDATE) as it is, read by name.
    A tuple made in C: a large store has one per session."""

    __slots__ = ()
    name = property(itemgetter(0))
    stamp = property(itemgetter(1))
    project = property(itemgetter(3))
    project_id = property(itemgetter(4))
    session = property(itemgetter(5))
    recent = property(itemgetter(6))
    id = property(itemgetter(7))
    searched = property(itemgetter(8))


def search_all(store, query, sources=False, retired=False, limit=10, project=None, progress=None):
    """{"query", "project", "project_id", "sessions", "results": [{session, ...}], "skipped": [...], "projects"},
    and "expansion" when a weak merged list was expanded (om.feedback). `project` (a directory) selects
    by identity (om.sessions.catalogue.Project): its repository's sessions in any folder, and its root's."""
    from om import search as single
    from om.sessions.index import current

    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= single.MAX_LIMIT:
        raise InputError(f"om: --limit must be 1 to {single.MAX_LIMIT}")
    q = single.Query(query)  # a query without searchable words fails before any ledger is opened
    store = catalogue.open_store(store)
    chosen = catalogue.project_scope(project) if project is not None else None
    memories = _memories(chosen, retired)
    listed = current(store, progress, keep_index=True, payload=CANDIDATE[5:])
    try:
        scope = Scope(store, listed, chosen, progress)
        merge = scope.merged(q, sources, retired, limit)
        merged = memories.merged(merge.results(), query, q.prefix, limit)
        found = {"query": query, "project": None if chosen is None else chosen.root,
                 "project_id": None if chosen is None else chosen.key, "sessions": scope.searched(merge),
                 "results": merged, "skipped": scope.skipped(merge)}
        # One expansion for the whole list, from its merged first pass, by one session's rule.
        expanded = single.expand(q, merged, limit, lambda qx: memories.merged(
            scope.merged(qx, sources, retired, limit).results(), qx.text, qx.prefix, limit))
    finally:
        if listed.index is not None:
            listed.index.close()
    if expanded is not None:
        found["expansion"], found["results"] = expanded
    found["results"] = memories.settled(found["results"])
    found["projects"] = memories.searched()
    found["skipped"] = sorted(found["skipped"] + memories.skipped, key=lambda s: s["directory"])
    _with_mirrors(store, found, chosen, sources, retired, limit)
    single.cut_snippets(found, q)
    return found


def _memories(chosen, retired):
    """The project memories a cross-session search covers (om.project.search): every one of this machine,
    or with --project the one of that project (om.sessions.catalogue.Project: its identity, or the
    folder's when it has none to give)."""
    from om.project import search as projects

    if chosen is None:
        return projects.Memories.of_home(retired)
    return projects.Memories.of_keys([chosen.memory_key()], retired, named=True)


def _forgotten(result):
    from om.ledger.forget import MARKER

    return str(result.get("snippet") or "").count(MARKER)


def _with_mirrors(store, found, chosen, sources, retired, limit):
    """Add the results of the store's mirrors (om sync), each record once (see the module docstring)."""
    from om.sync import readers

    if not readers.has_mirrors(store):
        return
    key = None if chosen is None else chosen.memory_key()
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
    """The sessions a cross-session search covers, and the store index that ranks them when there is one.

    When the catalogue is the index's own rows at the version they were checked at and every session's
    search rows are current (a warm search of an unchanged store), the rows are not read at all: the
    index counts them, and only the sessions of the results are read, by id. Any other state, or
    a change of the index meanwhile, reads them all (`_every`).
    """

    def __init__(self, store, listed, project, progress):
        from om.sessions import searchindex

        self.store, self.listed, self.project = store, listed, project
        self.index, self.count, self._candidates, self._by_id, self._scoped = None, None, None, None, None
        stale = None
        if searchindex.usable(listed.index):
            self.index = listed.index
            if listed.version is not None:
                version, count, rows = self.index.search_scope(CANDIDATE, project)
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
        project = self.project
        self._candidates = {c.name: c for c in map(Candidate, self.listed.rows)
                            if project is None or project.holds(c.project, c.project_id)}
        self.count = None

    def candidate(self, session_id):
        """The Candidate of an indexed session whose search rows are current, by id; None otherwise."""
        if self.count is not None and self.index is not None:
            version, row = self.index.row_of(CANDIDATE, session_id)
            if version == self.listed.version:
                candidate = None if row is None else Candidate(row)
                if candidate is None or self.project is not None and not self.project.holds(
                        candidate.project, candidate.project_id):
                    return None
                return candidate
            self._every()  # the index changed meanwhile: take the catalogue as it was checked
        if self._by_id is None:
            self._by_id = {c.id: c for c in self.candidates.values() if c.name not in self.behind}
        return self._by_id.get(session_id)

    def merged(self, q, sources, retired, limit):
        """The Merge of the store's ranking for Query `q` and of the sessions searched alone."""
        from om.sessions import storerank

        merge = Merge(self.store, q.text, q.prefix, sources, retired, limit)
        if self.index is None:
            for name, candidate in self.candidates.items():
                merge.search(name, candidate)
        else:
            for name in sorted(self.behind):
                merge.search(name, self.candidates[name])
            scored = storerank.ranked(self.index.conn, q, sources, retired, limit, self._restricted())
            merge.add(*storerank.results(self.store, scored, self.candidate, retired, limit))
        for name in self.listed.unlisted:
            merge.search(name, None, self.project)
        return merge

    def _restricted(self):
        """Whether the index's table may be asked only about some sessions (then `temp.om_scope` holds them):
        those of the project, and only the ones whose documents are current (`candidate`'s rule)."""
        from om.derived.store_index import docs as store_docs

        index = self.index
        assert index is not None
        if self._scoped is None:
            if self.count is not None:  # the catalogue is the index's own rows, all current
                ids = None if self.project is None else index.project_ids(self.project)
            else:
                ids = [c.id for c in self.candidates.values() if c.id is not None and c.name not in self.behind]
            if ids is not None:
                store_docs.restrict(index.conn, ids)
            self._scoped = ids is not None
        return self._scoped

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
        self.found, self.skipped, self.unlisted = [], [], 0

    def search(self, name, candidate, project=None):
        """Search one session as alone; a session the catalogue could not summarize (`candidate` None)
        is checked against `project` (om.sessions.catalogue.Project) and its activity read here."""
        from om import search as single
        from om.sessions.catalogue import database_error, listing_key

        directory = os.path.join(self.store, name)
        try:
            ledger, meta = catalogue.open_ledger(self.store, name, writable=True)
        except catalogue.Unreadable as e:
            self.skipped.append({"directory": directory, "error": str(e), "listed": candidate is not None})
            return
        try:
            with ledger:
                if candidate is None:
                    if project is not None and not project.holds(meta.get(catalogue.PROJECT_KEY),
                                                                 meta.get(catalogue.PROJECT_ID_KEY)):
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

    def add(self, found, failed):
        """Results ranked elsewhere, keyed as here, and the sessions whose ledgers failed to read."""
        self.found.extend(found)
        self.skipped.extend({"directory": os.path.join(self.store, name), "error": error, "listed": True}
                            for name, error in failed)

    def results(self):
        """The merged top `limit`, each result naming its session, with whole texts (snippets cut later)."""
        self.found.sort(key=lambda f: f[0])
        return [dict({"session": session}, **result) for _, session, result in self.found[: self.limit]]


def _last_activity(ledger):
    with ledger.reading():
        capture = ledger.sources_span()[2]
        checkpoint = ledger.meta_get("last_checkpoint_at")
    return max((t for t in (capture, checkpoint) if t), default=None)
