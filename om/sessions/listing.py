"""`om sessions` and the MCP `sessions` tool: the store's listing, as a table or one JSON document.

Invariants:
- The listing is read through the store index (om.sessions.index), which it
  creates or brings up to date when the store can be written, and which gives
  what reading every ledger gives; where the store cannot be written and has
  no index, every ledger is read and nothing is created.
- Rows stay as the index keeps them (om.sessions.catalogue encodes them, in
  listing order) and are decoded only for what is printed: the table's cells,
  or each row's JSON.
- While nothing changed in the store since the index last changed, the text
  printed then is printed again, from the index; so are the listed sessions'
  projects. Their project memory's counts are read afresh on every call (the
  project memory changes without the store changing): one stat per distinct
  project, and one read-only query for each that has a memory, never a read
  per session, never git (a session recorded without an identity is known by
  its root folder's cached identity alone: om.project.identity, seconds=0).
- `--project DIR` selects by identity (om.sessions.catalogue.Project): the
  sessions of DIR's repository in any folder, and those of its root folder.
- The mirrors `om sync` keeps (om.sync.readers) follow the store's own
  sessions, named by the writer that published them: a second table, or the
  JSON document's `mirrors` list (absent when the store has none).
"""

import os

from om.sessions.catalogue import COLUMNS, NUMERIC, UNIT, open_store, project_scope
from om.sessions.index import FIXED
from om.store import DB_NAME


def list_sessions(store, project=None, progress=None, use_index=True, payload=("doc", "cells")):
    """{"store", "project", "project_id", "sessions": Rows (most recent first), "skipped": [{directory, error}]}.

    Read through the store index (om.sessions.index), which gives what reading
    every ledger gives; `use_index=False` reads every ledger and touches no
    index. `payload` names what each row carries: "doc" (its JSON, its
    fields) and "cells" (the table).
    """
    from om.sessions.index import current

    store = open_store(store)
    scope = project_scope(project) if project is not None else None
    found = current(store, progress, keep_index=True, use_index=use_index)
    try:
        return _listing(found, scope, payload)
    finally:
        if found.index is not None:
            found.index.close()


def _listing(found, scope, payload):
    rows = found.carrying(payload).rows
    rows = rows if scope is None else [r for r in rows if scope.holds(r[3], r[4])]
    return {"store": found.store, "project": None if scope is None else scope.root,
            "project_id": None if scope is None else scope.key, "sessions": Rows(found.store, rows, payload),
            "skipped": found.skipped}


def listing_text(store, project=None, as_json=False, progress=None):
    """(What `om sessions [--json]` prints, the skipped directories).

    While nothing changed in the store since the index last changed, the
    listing is the text printed then, kept in the index (`Index.output`);
    the project memories of the listed projects follow it, counted now.
    """
    from om.sessions.index import current

    store = open_store(store)
    scope = project_scope(project) if project is not None else None
    found = current(store, progress, keep_index=True)
    index = found.index
    try:
        key = "\x1f".join(("json" if as_json else "table", store, *(() if scope is None else (scope.root,
                                                                                           scope.key or ""))))
        text = None
        if found.version is not None:
            text = index.output(key, found.version)
        listing = None
        if text is None:
            listing = _listing(found, scope, ("doc",) if as_json else ("cells",))
            text = listing_json(listing) + "\n" if as_json else render_table(listing)
            if found.version is not None:
                index.save_output(key, found.version, text)
        projects = project_memories(_projects(found, scope, listing))
        if as_json:
            from om.jsonio import dumps

            text = text[:-2] + ',"projects":' + dumps(projects) + "}\n"
        else:
            text += render_projects(projects)
        return _with_mirrors(store, scope, text, as_json), found.skipped
    finally:
        if index is not None:
            index.close()


def _projects(found, scope, listing):
    """[(project_id, root folder, how many listed sessions)] of the listing, in listing order (the project
    of the most recently active session first): from the index (and kept in it, as the listing is)
    while it holds exactly the listed rows, else from the rows themselves."""
    from om.jsonio import dumps, loads

    index = found.index
    if found.version is not None:
        key = "\x1f".join(("projects", *(() if scope is None else (scope.root, scope.key or ""))))
        try:
            kept = index.output(key, found.version)
            if kept is not None:
                return [tuple(p) for p in loads(kept)]
            version, pairs = index.projects(scope)
        except _sqlite_error():  # a busy or damaged index: the rows say the same
            version = None
        if version == found.version:
            index.save_output(key, version, dumps([list(p) for p in pairs]))
            return pairs
    rows = listing["sessions"].rows if listing is not None else _listing(found, scope, ())["sessions"].rows
    seen, order = {}, []
    for row in rows:
        pair = (row[4], row[3])
        if pair not in seen:
            seen[pair] = 0
            order.append(pair)
        seen[pair] += 1
    return [(pid, root, seen[pid, root]) for pid, root in order]


def _sqlite_error():
    from om.sqlite import load

    return load().Error


def project_memories(pairs):
    """[{project_id, roots, sessions, project_memory: {active, retired}}] of each distinct project of
    `pairs` (project_id, root, sessions), in their order. A session recorded without an identity counts
    for its root folder's cached identity (no git), or for none when the cache does not know it."""
    from om.project.memory import counts

    found, order, known = {}, [], {}
    for project_id, root, n in pairs:
        if project_id is None and root:
            if root not in known:
                from om.project.identity import identify

                identity = identify(root, 0)
                known[root] = identity.key if identity.known else None
            project_id = known[root]
        if project_id is None:
            continue
        if project_id not in found:
            found[project_id] = {"project_id": project_id, "roots": set(), "sessions": 0}
            order.append(project_id)
        entry = found[project_id]
        entry["sessions"] += n
        if root:
            entry["roots"].add(root)
    projects = []
    for project_id in order:
        entry = found[project_id]
        active, retired = counts(project_id)
        projects.append({"project_id": project_id, "roots": sorted(entry["roots"]), "sessions": entry["sessions"],
                         "project_memory": {"active": active, "retired": retired}})
    return projects


def render_projects(projects):
    """The table's footer: the listed projects whose project memory holds entries ('' when none does)."""
    from om.sessions.catalogue import printable

    held = [p for p in projects if p["project_memory"]["active"] or p["project_memory"]["retired"]]
    if not held:
        return ""
    table = [("PROJECT MEMORY", "ACTIVE", "RETIRED", "SESSIONS", "ROOTS")] + [
        (printable(p["project_id"]), str(p["project_memory"]["active"]), str(p["project_memory"]["retired"]),
         str(p["sessions"]), ", ".join(printable(r) for r in p["roots"]) or "-") for p in held]
    widths = [max(len(row[i]) for row in table) for i in range(4)]
    line = "{:<%d}  {:>%d}  {:>%d}  {:>%d}  {}" % tuple(widths)
    return "\n" + "\n".join(line.format(*row).rstrip() for row in table) + "\n"


def _with_mirrors(store, scope, text, as_json):
    """The listing with the store's mirrors (om sync) after its own sessions: a second table, or a
    `mirrors` list in the JSON document; unchanged for a store that has none."""
    from om.sync import readers

    if not readers.has_mirrors(store):
        return text
    key = None if scope is None else scope.memory_key()
    found = readers.rows(store, key)
    if as_json:
        from om.jsonio import dumps

        return text.rstrip("\n")[:-1] + ',"mirrors":' + dumps(found) + "}\n"
    return text + readers.table(found)


def listing_json(listing):
    """The listing as one canonical JSON document (what `dumps` of its rows' fields gives)."""
    from om.jsonio import dumps

    head = dumps({"store": listing["store"], "project": listing["project"], "project_id": listing["project_id"]})[:-1]
    rows = listing["sessions"]
    docs = []
    if rows:
        # The database path of every row differs only in the directory name, which needs no escaping.
        first = rows.rows[0][0]
        before = dumps(rows.database(rows.rows[0]))[: -len(first + "/" + DB_NAME) - 1]
        after = "/" + DB_NAME + '"}'
        docs = [f'{doc[:-1]},"database":{before}{row[0]}{after}' for row, doc in zip(rows.rows, rows.docs())]
    return f'{head},"sessions":[{",".join(docs)}],"skipped":{dumps(listing["skipped"])}}}'



class Rows:
    """The listing's rows as the index keeps them (tuples of om.sessions.index.current), decoded only
    when a row's fields are asked for: `doc` is each row's JSON, `cells` its table cells."""

    def __init__(self, store, rows, payload):
        self.store, self.rows = store, rows
        self._doc = payload.index("doc") + len(FIXED) if "doc" in payload else None
        self._cells = payload.index("cells") + len(FIXED) if "cells" in payload else None

    def __len__(self):
        return len(self.rows)

    def __bool__(self):
        return bool(self.rows)

    def database(self, row):
        return os.path.join(self.store, row[0], DB_NAME)

    def docs(self):
        return [row[self._doc] for row in self.rows]

    def cells(self):
        return [row[self._cells] for row in self.rows]

    def fields(self):
        """Every row as the dict `summarize` gives."""
        from om.jsonio import loads

        found = []
        for row in self.rows:
            fields = loads(row[self._doc])
            fields["database"] = self.database(row)
            found.append(fields)
        return found



def render_table(listing):
    """The listing as an aligned table a person reads."""
    rows = listing["sessions"]
    if not rows:
        where = f" of project {listing['project']}" if listing.get("project") else ""
        return f"No sessions{where} in {listing['store']}.\n"
    titles = [title for title, _ in COLUMNS]
    table = [titles] + [cells.split(UNIT) for cells in rows.cells()]
    widths = [max(map(len, column)) for column in zip(*table)]
    # One format for every line: each cell padded to its column, numbers to the right.
    line = "  ".join("{:%s%d}" % (">" if key in NUMERIC else "<", width) for (_, key), width in zip(COLUMNS, widths))
    return "\n".join(line.format(*cells).rstrip() for cells in table) + "\n"
