"""The project memory in `search`: its entries beside the sessions' results, marked as the project's.

A session's search (`om --session ID search`, the MCP tool) also searches the
project memory of the session's project (the `om_project_id` its hooks
recorded); `search --all-sessions` searches every project memory of this
machine, or with `--project DIR` the one of DIR's project. Project memories
live in the project home (om.project.home), outside every store and its
index, and are few: each is searched directly.

Invariants:
- A project ledger is searched by om.search exactly as a session's ledger is
  (same query rules, same score over its own statistics), entries only (the
  evidence it holds is the sessions'); only its project entries are results
  (promoted ones: the observations carried along as a reflection's evidence
  are not), retired ones only when the search includes retired entries.
- Marks: a project result has `"scope": "project"` and `"project": KEY` (and,
  across sessions, `"session"` and `"store"`: the reserved session and the
  project home, where `recall` finds it from any shell). A session result
  keeps its shape; when its id is a project entry too it shows once, as the
  session's, with `"also_in_project": KEY` (and `"retired_in_project": true`
  when the project retired it).
- Merge: the session results in their own order; a project result goes
  before a session result only when it ranks strictly first by the merge
  order of om.sessions.crosssearch (a higher score as printed; at the same
  score a memory before a source), so ties go to the session; then the top
  `limit`. Feedback (om.feedback) runs
  once, on the merged list, and searches the project memories too.
- Without a project memory to search (no project recorded, none promoted
  into yet), a session's search is om.search's alone, byte for byte; a project
  ledger that cannot be read is named in `skipped`, never fatal.
- Nothing is created: a project ledger is opened only when it exists; a
  search may build its derived index there as in any ledger (om.derived.fts).
"""

import os

from om.project import PROJECT_ID_KEY
from om.project.home import SESSION_PREFIX, project_home, project_session

SCOPE = "project"


def search_session(ledger, query, sources=False, retired=False, limit=10):
    """om.search.search of `ledger`'s session with its project memory merged in (see the module docstring)."""
    from om import search as single

    key = None if ledger.absent else ledger.meta_get(PROJECT_ID_KEY)
    memories = Memories.of_keys([key] if key else [], retired, named=False)
    if not memories.keys:
        return single.search(ledger, query, sources, retired, limit)

    def first_pass(text, prefix):
        return single.search(ledger, text, sources, retired, limit, snippets=False, feedback=False,
                             prefix=prefix)["results"]

    first = first_pass(query, True)  # the query and the limit are checked here, as om.search checks them
    q = single.Query(query, True)
    merged = memories.merged(first, query, True, limit)
    found = {"query": query, "results": merged}
    expanded = single.expand(q, merged, limit,
                             lambda qx: memories.merged(first_pass(qx.text, False), qx.text, False, limit))
    if expanded is not None:
        found["expansion"], found["results"] = expanded
    found["results"] = memories.settled(found["results"])
    if memories.skipped:
        found["skipped"] = list(memories.skipped)
    single.cut_snippets(found, q)
    return found


def keys_in_home():
    """{directory name: None} of every session directory of the project home holding a ledger, sorted: the
    project memories there (a directory's key is known once its ledger is opened, from its session id)."""
    from om.store import DB_NAME

    home = project_home()
    try:
        names = os.listdir(home)
    except OSError:
        return {}
    found = {}
    for name in sorted(names):
        if name.startswith("session-") and os.path.isfile(os.path.join(home, name, DB_NAME)):
            found[name] = None
    return found


class Memories:
    """The project memories one search covers, each searched on demand and remembered for the marks."""

    def __init__(self, directories, retired, named):
        #: {directory name in the project home: key, or None until its ledger says}
        self.keys = directories
        self.retired, self.named = retired, named
        self.home = project_home()
        #: {key: {entry id: active}} of the project entries of every memory searched so far.
        self.promoted = {}
        self.skipped = []
        self._failed = set()

    @classmethod
    def of_keys(cls, keys, retired, named):
        """The memories of the projects `keys` that hold a ledger (nobody promoted into the others)."""
        from om.store import database_path, session_dir

        home = project_home()
        found = {}
        for key in keys:
            if os.path.isfile(database_path(home, project_session(key))):
                found[os.path.basename(session_dir(home, project_session(key)))] = key
        return cls(found, retired, named)

    @classmethod
    def of_home(cls, retired, named=True):
        return cls(keys_in_home(), retired, named)

    def searched(self):
        """How many project memories were searched."""
        return sum(1 for name, key in self.keys.items() if key is not None and name not in self._failed)

    def merged(self, first, text, prefix, limit):
        """`first` (a session's or a merged cross-session list, whole texts) with the project results for
        `text` merged in by the module's rule, project entries already in `first` left out; at most `limit`."""
        own = self._results(text, prefix, limit)
        if not own:
            return list(first)
        taken = {r["id"] for r in first}
        own = [r for r in own if r["id"] not in taken]
        out, i = [], 0
        for result in first:
            while i < len(own) and _key(own[i]) < _key(result):
                out.append(own[i])
                i += 1
            out.append(result)
        out.extend(own[i:])
        return out[:limit]

    def settled(self, results):
        """The final list: a project result whose id a session result holds is left out, and each session
        result that is a project entry too is marked so."""
        held = {r["id"] for r in results if r.get("scope") != SCOPE}
        out = []
        for result in results:
            if result.get("scope") == SCOPE:
                if result["id"] not in held:
                    out.append(result)
                continue
            mark = self._mark(result["id"])
            if mark is not None:
                result = dict(result, also_in_project=mark[0])
                if not mark[1]:
                    result["retired_in_project"] = True
            out.append(result)
        return out

    def _mark(self, entry_id):
        for key in sorted(self.promoted):
            active = self.promoted[key].get(entry_id)
            if active is not None:
                return key, active
        return None

    def _results(self, text, prefix, limit):
        """The project results for `text` of every memory, best first, at most `limit` of each."""
        found = []
        for name in list(self.keys):
            if name in self._failed:
                continue
            for rank, result in enumerate(self._search_one(name, text, prefix, limit)):
                found.append(((_key(result), result["project"], rank), result))
        found.sort(key=lambda f: f[0])
        return [result for _, result in found]

    def _search_one(self, name, text, prefix, limit):
        from om import search as single
        from om.errors import StoreError
        from om.ledger import Ledger, promotion
        from om.sqlite import load

        directory = os.path.join(self.home, name)
        try:
            with Ledger.open_directory(self.home, directory, writable=True) as ledger:
                key = self._key_of(name, ledger.session)
                if key is None:
                    return []
                with ledger.reading():
                    marks = promotion.provenance(ledger.conn)
                    states = dict(ledger.conn.execute("SELECT id, active FROM entries"))
                    carried = len(states) - len(marks)
                if key not in self.promoted:
                    self.promoted[key] = {i: bool(states[i]) for i in marks if i in states}
                if not marks:
                    return []
                # Enough results that the carried evidence cannot push a project entry out of the top `limit`.
                wanted = min(single.MAX_LIMIT, limit + carried)
                results = single.search(ledger, text, False, self.retired, wanted, snippets=False,
                                        feedback=False, prefix=prefix)["results"]
        except (StoreError, load().Error) as e:
            self._failed.add(name)
            reason = str(e).removeprefix("om: ")
            self.skipped.append({"directory": directory, "error": f"not a readable project memory: {reason}"})
            return []
        return [self._marked(r, key) for r in results if r["id"] in marks][:limit]

    def _key_of(self, name, session):
        """The project key of the ledger in directory `name`; None (and left out) when it is no project's."""
        if not isinstance(session, str) or not session.startswith(SESSION_PREFIX):
            self._failed.add(name)
            return None
        key = session[len(SESSION_PREFIX):]
        self.keys[name] = key
        return key

    def _marked(self, result, key):
        marked = dict(result, scope=SCOPE, project=key)
        if self.named:
            marked = dict({"session": project_session(key)}, **marked, store=self.home)
        return marked


def _key(result):
    """What the merge orders by: the score as printed (higher first), then a memory before a source."""
    return -round(result["score"] * 10000), result["kind"] == "source"
