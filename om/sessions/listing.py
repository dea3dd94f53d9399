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
  printed then is printed again, from the index.
- The mirrors `om sync` keeps (om.sync.readers) follow the store's own
  sessions, named by the writer that published them: a second table, or the
  JSON document's `mirrors` list (absent when the store has none).
"""

import os

from om.sessions.catalogue import COLUMNS, NUMERIC, UNIT, open_store, project_filter
from om.store import DB_NAME


def list_sessions(store, project=None, progress=None, use_index=True, payload=("doc", "cells")):
    """{"store", "project", "sessions": Rows (most recent first), "skipped": [{directory, error}]}.

    Read through the store index (om.sessions.index), which gives what reading
    every ledger gives; `use_index=False` reads every ledger and touches no
    index. `payload` names what each row carries: "doc" (its JSON, its
    fields) and "cells" (the table).
    """
    from om.sessions.index import current

    store = open_store(store)
    root = project_filter(project) if project is not None else None
    found = current(store, progress, keep_index=True, use_index=use_index)
    try:
        return _listing(found, root, payload)
    finally:
        if found.index is not None:
            found.index.close()


def _listing(found, root, payload):
    rows = found.carrying(payload).rows
    rows = rows if root is None else [r for r in rows if r[3] == root]
    return {"store": found.store, "project": root, "sessions": Rows(found.store, rows, payload),
            "skipped": found.skipped}


def listing_text(store, project=None, as_json=False, progress=None):
    """(What `om sessions [--json]` prints, the skipped directories).

    While nothing changed in the store since the index last changed, this is
    the text printed then, kept in the index (`Index.output`).
    """
    from om.sessions.index import current

    store = open_store(store)
    root = project_filter(project) if project is not None else None
    found = current(store, progress, keep_index=True)
    index = found.index
    try:
        key = "\x1f".join(("json" if as_json else "table", store, root or ""))
        if found.version is not None:
            text = index.output(key, found.version)
            if text is not None:
                return _with_mirrors(store, root, text, as_json), found.skipped
        listing = _listing(found, root, ("doc",) if as_json else ("cells",))
        text = listing_json(listing) + "\n" if as_json else render_table(listing)
        if found.version is not None:
            index.save_output(key, found.version, text)
        return _with_mirrors(store, root, text, as_json), listing["skipped"]
    finally:
        if index is not None:
            index.close()


def _with_mirrors(store, root, text, as_json):
    """The listing with the store's mirrors (om sync) after its own sessions: a second table, or a
    `mirrors` list in the JSON document; unchanged for a store that has none."""
    from om.sync import readers

    if not readers.has_mirrors(store):
        return text
    key = None
    if root is not None:
        from om.project.identity import identify

        key = identify(root).key
    found = readers.rows(store, key)
    if as_json:
        from om.jsonio import dumps

        return text.rstrip("\n")[:-1] + ',"mirrors":' + dumps(found) + "}\n"
    return text + readers.table(found)


def listing_json(listing):
    """The listing as one canonical JSON document (what `dumps` of its rows' fields gives)."""
    from om.jsonio import dumps

    head = dumps({"store": listing["store"], "project": listing["project"]})[:-1]
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
        self._doc = payload.index("doc") + 4 if "doc" in payload else None
        self._cells = payload.index("cells") + 4 if "cells" in payload else None

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
