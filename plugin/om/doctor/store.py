"""Doctor's store checks: the folder, its permissions, each session database, leftovers.

Invariants:
- Read-only: databases are opened through the ledger layer's own connection
  helper (`om.ledger.connect`, read-only, URI-quoted like every other command),
  so doctor reads any store path capture and status can read.
- `database_problem(path)` is the whole per-database question (None when
  healthy), kept apart so the ledger layer can answer it instead.
"""

import os
import stat

from om.doctor.findings import check, quote

TEMP_PREFIX = ".om-tmp-"


def checks(store, source):
    name = "store.exists"
    if not os.path.exists(store):
        return [
            check(
                name,
                "warn",
                f"store {store} ({source}) does not exist yet: nothing has been captured",
                f"mkdir -m 700 -p {quote(store)}  # or start a Codex session with the plugin enabled",
            )
        ]
    if not os.path.isdir(store):
        return [
            check(
                name,
                "fail",
                f"store {store} is not a directory: the hooks run but can record nothing",
                f"mv {quote(store)} {quote(store + '.bak')}",
            )
        ]
    sessions = sorted(d for d in _listdir(store) if d.startswith("session-"))
    found = [check(name, "ok", f"store {store} ({source}) holds {len(sessions)} session(s)")]
    found.append(_permissions_check(store, sessions))
    found.append(_integrity_check(store, sessions))
    leftovers = sorted(d for d in _listdir(store) if d.startswith(TEMP_PREFIX))
    if leftovers:
        found.append(
            check(
                "store.temp",
                "warn",
                f"{len(leftovers)} leftover temporary snapshot folder(s) from an interrupted fork or import",
                "rm -rf " + " ".join(quote(os.path.join(store, d)) for d in leftovers),
            )
        )
    else:
        found.append(check("store.temp", "ok", "no leftover temporary folders"))
    return found


def _listdir(path):
    try:
        return os.listdir(path)
    except OSError:
        return []


def _permissions_check(store, sessions):
    loose = []
    for path in [store] + [os.path.join(store, s) for s in sessions]:
        if _mode(path) & 0o077:
            loose.append(path)
        if path != store:
            for f in _listdir(path):
                if f.startswith("memory.sqlite3") and _mode(os.path.join(path, f)) & 0o077:
                    loose.append(os.path.join(path, f))
    if loose:
        return check(
            "store.permissions",
            "warn",
            f"{len(loose)} path(s) readable by other users, e.g. {loose[0]}",
            f"chmod -R go-rwx {quote(store)}",
        )
    return check("store.permissions", "ok", "store folders 0700, databases 0600")


def _mode(path):
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return 0


def database_problem(path):
    """Why the session database at `path` is unusable, or None."""
    from om.errors import StoreError
    from om.ledger import connect, sqlite3

    try:
        conn = connect(path, readonly=True)
    except StoreError as e:
        return str(e).replace(f"om: cannot open {path}: ", "")
    try:
        result = conn.execute("PRAGMA integrity_check").fetchall()
        if result != [("ok",)]:
            return "integrity_check: " + "; ".join(str(r[0]) for r in result[:3])
        version = conn.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
        if version is None or version[0] != "1":
            return f"schema version {version[0] if version else 'missing'!r}, this runtime reads 1"
        return None
    except sqlite3.Error as e:
        return str(e)
    finally:
        conn.close()


def _integrity_check(store, sessions):
    bad = []
    for s in sessions:
        db = os.path.join(store, s, "memory.sqlite3")
        if os.path.exists(db):
            problem = database_problem(db)
            if problem:
                bad.append((db, problem))
    if bad:
        db, problem = bad[0]
        return check(
            "store.integrity",
            "fail",
            f"{len(bad)} session database(s) unusable, e.g. {db}: {problem}",
            f"mv {quote(db)} {quote(db + '.damaged')}  # keeps it for recovery (sqlite3 FILE .recover); the session starts afresh",
        )
    return check("store.integrity", "ok", f"{len(sessions)} session database(s) pass integrity_check, schema version 1")
