"""Derived tables of a session ledger: additive, disposable, rebuilt from the v1 tables.

Invariants:
- Derived from immutable rows only: each table is a function of rows of
  `sources` or `entries` that never change for a given seq, so a table that
  covers seq N stays right for every row up to N; whether an entry is active
  is always read from `entries`, never stored here.
- One protocol for every table (a module in this package): `NAME` (the
  table's name, which carries its format version, so a new format starts a
  new table), `catch_up(conn)` (extend the table to the newest v1 row) and
  `invalidate(conn)` (drop it; the next catch-up rebuilds it). A v1 peer
  knows nothing of these tables, so catch-up goes by seq from whatever the
  table last covered.
- One rewrite rule (`covered`): a table covers its v1 table up to its newest
  row while that row's seq still names the same id there. Anything else
  means the v1 table was rewritten (an import) and the table is rebuilt.
  A command that rewrites rows in place (forget, import) drops every table
  in its own transaction (`Ledger.rows_rewritten`, which names them).
"""


def covered(conn, table, v1_table):
    """`(seq, newest row)` of a derived `table` with one row per v1 row, `(0, None)` when empty.

    False when the newest row's seq no longer names the same id in `v1_table`:
    the v1 table was rewritten and `table` must be rebuilt. A missing table
    raises sqlite3.OperationalError (the caller creates it or reads around it).
    """
    top = conn.execute(f"SELECT * FROM {table} ORDER BY seq DESC LIMIT 1").fetchone()
    if top is None:
        return 0, None
    if not names(conn, v1_table, top[0], top[1]):
        return False
    return top[0], top


def names(conn, v1_table, seq, row_id):
    """True when `seq` in `v1_table` is still the row `row_id` (seq 0: nothing to name, true)."""
    if not seq:
        return True
    row = conn.execute(f"SELECT id FROM {v1_table} WHERE seq = ?", (seq,)).fetchone()
    return row is not None and row[0] == row_id

