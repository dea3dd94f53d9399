"""Forgetting in one ledger: text taken out of its rows in place, and the file made to hold none of it.

What `Ledger.forget_plan`, `Ledger.forget` and `Ledger.compact` do (they call
these; only `om forget` loads this module).

Invariants:
- Only text changes: every occurrence of a literal (and of its JSON-escaped
  form, which is how it sits inside a tool result's text) in source texts,
  entry texts and retirement reasons becomes `MARKER`, and a record named by id
  gets `MARKER` as its whole text (an entry's retirement reason too). Ids, seqs,
  kinds, timestamps, importance, support, active flags and replacement ids stay,
  and every body keeps v1's fields in v1's order: a v1 reader opens the ledger
  as before, and `recall` and `prime` still follow every citation.
- A later capture of the same evidence brings nothing back: ids are hashes of
  the original text and every insert is insert-or-ignore by id.
- `forget` is one write transaction (BEGIN IMMEDIATE: a capture of another
  process lands wholly before it, and is rewritten, or wholly after it), with
  `secure_delete` on so that the cells and pages it frees are zeroed. In the
  same transaction it drops every derived table (they cache row contents; the
  next reader rebuilds them) and increments `om_generation`, which derived data
  kept outside the ledger compares (both `Ledger.rows_rewritten`).
- `compact` rebuilds the file with VACUUM (no free page, no stale cell left)
  and, for a ledger a peer put in WAL mode, empties the WAL. It changes no row.
"""

from om.errors import StoreError
from om.jsonio import dumps, loads
from om.sqlite import load

sqlite3 = load()

#: What forgotten text is replaced by (documented in docs/forget.md).
MARKER = "[FORGOTTEN]"


class Request:
    """What to forget: literals (`texts`), records by id (`sources`, `entries`), and given rewrites.

    `rewrites` ({id: {"text": new, "reason": new}}) sets a record's text (or an
    entry's retirement reason) to the text given: how `om sync` applies a
    tombstone another machine published (om.sync.tombstones) to this
    writer's own ledger, in the same transaction as any forget.
    After `forget` (or `plan`), `changes` lists what was rewritten in that
    ledger: (id, "text" or "reason", old text, new text).
    """

    def __init__(self, texts=(), sources=(), entries=(), rewrites=None):
        self.texts = tuple(texts)
        self.sources = frozenset(sources)
        self.entries = frozenset(entries)
        self.rewrites = dict(rewrites or {})
        self.changes = []
        needles = set()
        for text in self.texts:
            needles.add(text)
            needles.add(dumps(text)[1:-1])
        # Longest first, so a literal inside a longer one never leaves a piece of the longer.
        self.needles = sorted(needles, key=lambda n: (-len(n), n))
        #: The needles some scrubbed text held (before any replacement: a literal inside a longer one counts).
        self.seen = set()

    def unmatched(self):
        """The 1-based positions of the literals no scrubbed text held, in either form."""
        return [i for i, text in enumerate(self.texts, 1)
                if text not in self.seen and dumps(text)[1:-1] not in self.seen]

    def scrub(self, text):
        """(`text` with every needle replaced by MARKER, occurrences replaced)."""
        self.seen.update(needle for needle in self.needles if needle in text)
        count = 0
        for needle in self.needles:
            found = text.count(needle)
            if found:
                count += found
                text = text.replace(needle, MARKER)
        return text, count


def _rewritten(request, item_id, field, text):
    """(new text, occurrences) of one text of record `item_id` under `request`."""
    given = request.rewrites.get(item_id)
    if given is not None and field in given:
        new = given[field]
        return new, int(new != text)
    if field == "text" and (item_id in request.sources or item_id in request.entries):
        return MARKER, 1
    if field == "reason" and item_id in request.entries:
        return MARKER, 0  # counted with the entry's text, as one record
    return request.scrub(text)


def _rows(ledger, request):
    """The rows `request` touches, each with its new body (and retirement): (sources, entries)."""
    conn = ledger.conn
    request.changes = []
    text_hits = " OR ".join(["instr(json_extract(body, '$.text'), ?) > 0"] * len(request.needles)) or "0"
    named = dumps(sorted(request.sources | request.entries | set(request.rewrites)))
    sources = []
    for seq, source_id, body in conn.execute(
        f"SELECT seq, id, body FROM sources WHERE id IN (SELECT value FROM json_each(?)) OR {text_hits}",
        (named, *request.needles),
    ):
        b = loads(body)
        old = b["text"]
        b["text"], count = _rewritten(request, source_id, "text", old)
        if count:
            request.changes.append((source_id, "text", old, b["text"]))
            sources.append((seq, source_id, dumps(b), count))
    reason_hits = " OR ".join(
        ["instr(json_extract(retirement, '$.reason'), ?) > 0"] * len(request.needles)) or "0"
    entries = []
    for seq, entry_id, body, retirement in conn.execute(
        "SELECT seq, id, body, retirement FROM entries WHERE id IN (SELECT value FROM json_each(?))"
        f" OR {text_hits} OR {reason_hits}",
        (named, *request.needles, *request.needles),
    ):
        b = loads(body)
        r = loads(retirement) if retirement is not None else None
        old = b["text"]
        b["text"], count = _rewritten(request, entry_id, "text", old)
        if count:
            request.changes.append((entry_id, "text", old, b["text"]))
        if r is not None:
            old = r["reason"]
            r["reason"], more = _rewritten(request, entry_id, "reason", old)
            if r["reason"] != old:
                request.changes.append((entry_id, "reason", old, r["reason"]))
            count += more
        if count:
            entries.append((seq, entry_id, dumps(b), None if r is None else dumps(r), count))
    return sources, entries


def _summary(sources, entries):
    return {
        "sources": [row[1] for row in sources],
        "entries": [row[1] for row in entries],
        "occurrences": sum(row[-1] for row in sources) + sum(row[-1] for row in entries),
    }


def plan(ledger, request):
    """What `forget` would change now: {"sources": [ids], "entries": [ids], "occurrences": n}. Reads only."""
    with ledger.reading():
        return _summary(*_rows(ledger, request))


def missing(ledger, ids):
    """The ids among `ids` that name no source or entry of this ledger."""
    ids = sorted(ids)
    if not ids:
        return set()
    found = {row[0] for row in ledger.conn.execute(
        "SELECT id FROM sources WHERE id IN (SELECT value FROM json_each(?1))"
        " UNION SELECT id FROM entries WHERE id IN (SELECT value FROM json_each(?1))", (dumps(ids),))}
    return set(ids) - found


def forget(ledger, request):
    """Rewrite the rows in one transaction (see the module docstring); what it changed, as `plan` says."""
    conn = ledger.conn
    conn.execute("PRAGMA secure_delete = ON")
    with ledger.transaction():
        sources, entries = _rows(ledger, request)
        if sources or entries:
            conn.executemany("UPDATE sources SET body = ? WHERE seq = ?", [(body, seq) for seq, _, body, _ in sources])
            conn.executemany(
                "UPDATE entries SET body = ?, retirement = ? WHERE seq = ?",
                [(body, retirement, seq) for seq, _, body, retirement, _ in entries],
            )
            ledger.rows_rewritten()
    return _summary(sources, entries)


def compact(ledger):
    """VACUUM the ledger, and empty its WAL if it has one. Raises StoreError when it cannot."""
    conn = ledger.conn
    try:
        conn.execute("PRAGMA secure_delete = ON")
        conn.execute("VACUUM")
        if ledger.in_wal():
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.Error as e:
        raise StoreError(f"om: cannot compact {ledger.path}: {e}") from None
