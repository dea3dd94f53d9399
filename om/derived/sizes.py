"""Running totals of source sizes: what the hooks' backlog policy and status read.

Invariants:
- One row per source, with the running totals of UTF-8 bytes, code points and
  sources up to that seq. Sizes are of the immutable source text, so a row
  never changes; catch-up adds rows by seq (om/derived's protocol), usually
  one per event, whoever wrote the sources (om's captures, v1 peers).
- Rewrite rule from om.derived.covered: when the newest row no longer names
  the same source (an import rewrote `sources`), the table is emptied and
  rebuilt.
- Readers never write: `valid_top` reads the table as far as it is valid and
  callers scan the sources after it, so a read-only ledger still answers.
"""

from om.derived import covered
from om.sqlite import load

NAME = "om_source_sizes_v1"


def catch_up(conn):
    """Extend the table to the newest source (inside a write transaction); the seq it now covers."""
    return current(conn)[0]


def current(conn):
    """`catch_up`, returning (seq, bytes, chars, count) of the newest row: what `valid_top` would read next."""
    try:
        top = covered(conn, NAME, "sources")
    except load().OperationalError as e:  # no table yet: most events find it, so create it only then
        if "no such table" not in str(e):
            raise
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {NAME} (seq INTEGER PRIMARY KEY, id TEXT NOT NULL,"
            " total INTEGER NOT NULL, chars INTEGER NOT NULL, count INTEGER NOT NULL)"
        )
        top = (0, None)
    if top is False:
        conn.execute(f"DELETE FROM {NAME}")
        top = (0, None)
    seq, row = top
    total, chars, count = (row[2], row[3], row[4]) if row else (0, 0, 0)
    rows = []
    for seq, source_id, size, length in conn.execute(
        "SELECT seq, id, coalesce(length(CAST(json_extract(body, '$.text') AS BLOB)), 0),"
        " coalesce(length(json_extract(body, '$.text')), 0)"
        " FROM sources WHERE seq > ? ORDER BY seq",
        (seq,),
    ):
        total += size
        chars += length
        count += 1
        rows.append((seq, source_id, total, chars, count))
    if rows:
        conn.executemany(f"INSERT INTO {NAME}(seq, id, total, chars, count) VALUES (?, ?, ?, ?, ?)", rows)
    return seq, total, chars, count


def invalidate(conn):
    conn.execute(f"DROP TABLE IF EXISTS {NAME}")


def valid_top(conn):
    """(seq, bytes, chars, count) of the newest row while it is valid, else None. Never writes."""
    try:
        top = covered(conn, NAME, "sources")
    except load().OperationalError:
        return None  # no table yet
    if not top or top[1] is None:
        return None
    row = top[1]
    return row[0], row[2], row[3], row[4]


def totals_through(conn, seq):
    """(bytes, chars, count) of the sources up to `seq`, from the table (zeros before its first row)."""
    return conn.execute(
        f"SELECT total, chars, count FROM {NAME} WHERE seq <= ? ORDER BY seq DESC LIMIT 1", (seq,)
    ).fetchone() or (0, 0, 0)
