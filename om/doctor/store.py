"""Doctor's store checks: the folder, its permissions, each session database, leftovers.

Invariants:
- Databases are only read, through the ledger layer (`om.ledger.files.integrity_problem`:
  read-only, URI-quoted like every other command), so doctor reads any store path
  capture and status can read. The one thing it removes is what the next fork or
  import would remove too: staging folders no live process owns (`om.store.sweep_staging`).
"""

import os
import stat

from om.doctor.findings import check, quote


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
    found.append(_staging_check(store))
    return found


def _staging_check(store):
    from om.store import sweep_staging

    removed, kept = sweep_staging(store)
    if kept:
        return check(
            "store.temp",
            "warn",
            f"{len(kept)} temporary snapshot folder(s) of a fork or import still running or just interrupted"
            + (f"; removed {len(removed)} abandoned one(s)" if removed else ""),
            "rm -rf " + " ".join(quote(p) for p in kept) + "  # once no om fork or import is running",
        )
    if removed:
        return check("store.temp", "ok", f"removed {len(removed)} temporary folder(s) left by interrupted forks or imports")
    return check("store.temp", "ok", "no leftover temporary folders")


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


def _integrity_check(store, sessions):
    from om.ledger.files import integrity_problem

    bad = []
    for s in sessions:
        db = os.path.join(store, s, "memory.sqlite3")
        if os.path.exists(db):
            problem = integrity_problem(db)
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
