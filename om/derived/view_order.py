"""The view order: per entry, its view rank as one integer and its view line's byte size.

Invariants:
- Both values are functions of the immutable entry body (om.viewline defines
  them for render too), so rows never change; whether an entry is active is
  always read from `entries`.
- The table covers exactly the entries up to its highest seq (om/derived's
  protocol): apply extends it in its own transaction, and rows written by v1
  peers, which know nothing of it, are added on the next read that can write.
  A newest row naming another entry means `entries` was rewritten: rebuilt.
- Readers that cannot write rank in memory with the same key and size
  (`om.viewline.list_oracle`), so a read-only ledger prints the same view.
"""

from om.derived import covered
from om.sqlite import load

NAME = "om_view_order_v1"
#: An index, not a change of the v1 table: SQLite maintains it for every writer,
#: v1 peers included, and it makes the active counts of status index-only.
ACTIVE_INDEX = "CREATE INDEX IF NOT EXISTS om_entries_active ON entries(active, id)"


def is_current(conn):
    """True when the table covers every entry (and no rewrite happened). Never writes."""
    try:
        top = covered(conn, NAME, "entries")
    except load().OperationalError:
        return False
    if top is False:
        return False
    return top[0] == conn.execute("SELECT coalesce(max(seq), 0) FROM entries").fetchone()[0]


def catch_up(conn):
    """Add rows for entries above the table's highest seq (inside a write transaction)."""
    from om.ledger.bodies import entry_fields
    from om.viewline import line_size, sort_key

    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {NAME}"
        " (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, rank INTEGER NOT NULL, size INTEGER NOT NULL)"
    )
    conn.execute(f"CREATE INDEX IF NOT EXISTS {NAME}_rank ON {NAME}(rank, size)")
    conn.execute(ACTIVE_INDEX)
    top = covered(conn, NAME, "entries")
    if top is False:
        conn.execute(f"DELETE FROM {NAME}")
        top = (0, None)
    rows = []
    for row in conn.execute(
        "SELECT seq, id, body FROM entries WHERE seq > ? ORDER BY seq", (top[0],)
    ):
        seq, entry_id, body = row
        entry = entry_fields(seq, entry_id, body)
        rows.append((entry["seq"], entry["id"], sort_key(entry), line_size(entry)))
    conn.executemany(f"INSERT INTO {NAME}(seq, id, rank, size) VALUES (?, ?, ?, ?)", rows)
    return rows[-1][0] if rows else top[0]


def invalidate(conn):
    conn.execute(f"DROP TABLE IF EXISTS {NAME}")


def next_fitting_query():
    # CROSS JOIN and +e.active pin the plan: walk the order index and stop
    # at the first fit. Left to itself the planner may prefer scanning
    # om_entries_active and sorting every active entry.
    return (
        f"SELECT v.rank, e.seq, e.id, e.body, e.retirement FROM {NAME} v"
        " CROSS JOIN entries e ON e.seq = v.seq"
        " WHERE v.rank > ? AND v.size <= ? AND +e.active = 1 AND e.id = v.id ORDER BY v.rank LIMIT 1"
    )
