"""The project memory counted: its active and retired entries, and the sessions that promoted them.

What `status`, `om sessions`, a session's start and doctor show of a project's
memory without quoting it. The rows are written by om.ledger.promotion, whose
provenance key (`om_promoted:<entry id>`) is defined here.

Invariants:
- Read-only: a project ledger is opened with `mode=ro` (links refused, as in
  any store), never created; a project nobody promoted into costs one stat.
- Each answer is one statement on that connection, whose cost is the number
  of promoted entries (a range of meta's primary key, each row finding its
  entry by its unique id), never the number of sessions.
- Import-light: no om.ledger (a warm `om sessions` never loads the ledger
  layer) and nothing a hook would pay for beyond SQLite, which it has loaded.
"""

#: The meta key prefix of a promoted entry's provenance in a project ledger (v1 readers ignore it).
PROVENANCE_PREFIX = "om_promoted:"

#: The provenance rows joined to their entries.
_PROMOTED = " FROM meta m JOIN entries e ON e.id = substr(m.key, ?1) WHERE m.key >= ?2 AND m.key < ?3"
_ARGS = (len(PROVENANCE_PREFIX) + 1, PROVENANCE_PREFIX, PROVENANCE_PREFIX[:-1] + ";")


def open_read_only(key, timeout):
    """A read-only connection to project `key`'s ledger, or None when nobody promoted into it (one stat)."""
    from om.fastpath import exists
    from om.project.home import project_home, project_session
    from om.sqlite import open_connection
    from om.store import database_path, refuse_symlinks

    path = database_path(project_home(), project_session(key))
    if not exists(path):
        return None
    refuse_symlinks(path)
    return open_connection(path, readonly=True, timeout=timeout)


def counts(conn):
    """(active, retired) entries of a project ledger that are project memory (promoted, not carried evidence)."""
    active, retired = conn.execute(
        "SELECT coalesce(sum(e.active = 1), 0), coalesce(sum(e.active != 1), 0)" + _PROMOTED, _ARGS).fetchone()
    return active, retired


def promoting_sessions(conn):
    """The session ids the provenance of a project ledger's active entries names (first promotion and
    last confirmation); a record that is not JSON names none."""
    found = set()
    for first, last in conn.execute(
            "SELECT json_extract(m.value, '$.promoted.session'), json_extract(m.value, '$.confirmed.session')"
            + _PROMOTED + " AND e.active = 1 AND json_valid(m.value)", _ARGS):
        found.update(s for s in (first, last) if isinstance(s, str) and s)
    return found
