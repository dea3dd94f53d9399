"""Doctor's store checks: each store's folder, its permissions, each session database, leftovers.

Invariants:
- One verdict per check over every store of the run (each judged client's, and the
  one doctor was given, om.doctor.scope), each finding naming the stores it is about.
- A client's store that does not exist yet is no fault (its first hook creates it);
  one that is not a directory blocks that client's hooks (its capture is not judged).
- Databases are only read, through the ledger layer (`om.ledger.files.integrity_problem`:
  read-only, URI-quoted like every other command), so doctor reads any store path
  capture and status can read. The one thing it removes is what the next fork or
  import would remove too: staging folders no live process owns (`om.store.sweep_staging`).
"""

import os
import stat

from om.doctor.findings import check, quote


def checks(scope):
    if not scope.stores:
        return []
    present, missing, broken = [], [], []
    for store, label in scope.stores:
        if not os.path.exists(store):
            missing.append((store, label))
        elif not os.path.isdir(store):
            broken.append((store, label))
        else:
            present.append((store, label, sorted(d for d in _listdir(store) if d.startswith("session-"))))
    for client in scope.clients:
        if any(store == scope.store_of(client) for store, _ in broken):
            client.blocked = client.blocked or "store.exists"
    found = [_exists_check(present, missing, broken)]
    if present:
        found += [_permissions_check(present), _integrity_check(present), _staging_check(present)]
    found += _left_behind(scope)
    return found


def _exists_check(present, missing, broken):
    name = "store.exists"
    if broken:
        store, label = broken[0]
        return check(name, "fail", f"store {store} ({label}) is not a directory: the hooks run but can record nothing",
                     " && ".join(f"mv {quote(s)} {quote(s + '.bak')}" for s, _ in broken))
    explicit = [(s, label) for s, label in missing if label in ("--store", "OBSERVATIONAL_MEMORY_STORE")]
    if explicit:
        store, label = explicit[0]
        return check(name, "warn", f"store {store} ({label}) does not exist: nothing has been captured there",
                     f"check {label}: the stores of your clients are {_names(present, missing)}")
    parts = [f"{s} ({label}) holds {len(sessions)} session(s)" for s, label, sessions in present]
    parts += [f"{s} ({label}) is not created yet: the first hook creates it" for s, label in missing]
    return check(name, "ok", "store " + "; store ".join(parts))


def _names(present, missing):
    stores = [(s, label) for s, label, _ in present] + missing
    found = [f"{s} ({label})" for s, label in stores if label not in ("--store", "OBSERVATIONAL_MEMORY_STORE")]
    return ", ".join(found) or "not created yet"


def _staging_check(present):
    from om.store import sweep_staging

    removed, kept = [], []
    for store, _, _ in present:
        gone, in_use = sweep_staging(store)
        removed += gone
        kept += in_use
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


def _permissions_check(present):
    loose = []
    for store, _, sessions in present:
        for path in [store] + [os.path.join(store, s) for s in sessions]:
            if _mode(path) & 0o077:
                loose.append(path)
            if path != store:
                for f in _listdir(path):
                    if f.startswith("memory.sqlite3") and _mode(os.path.join(path, f)) & 0o077:
                        loose.append(os.path.join(path, f))
    if loose:
        stores = sorted({store for store, _, _ in present if any(p == store or p.startswith(store + os.sep)
                                                                   for p in loose)})
        return check(
            "store.permissions",
            "warn",
            f"{len(loose)} path(s) readable by other users, e.g. {loose[0]}",
            "chmod -R go-rwx " + " ".join(quote(s) for s in stores),
        )
    return check("store.permissions", "ok", "store folders 0700, databases 0600")


def _mode(path):
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return 0


def _integrity_check(present):
    from om.ledger.files import integrity_problem

    bad, count = [], 0
    for store, _, sessions in present:
        for s in sessions:
            db = os.path.join(store, s, "memory.sqlite3")
            if os.path.exists(db):
                count += 1
                problem = integrity_problem(db)
                if problem:
                    bad.append((db, problem))
    if bad:
        db, problem = bad[0]
        return check(
            "store.integrity",
            "fail",
            f"{len(bad)} session database(s) unusable, e.g. {db}: {problem}",
            " && ".join(f"mv {quote(d)} {quote(d + '.damaged')}" for d, _ in bad)
            + "  # keeps them for recovery (sqlite3 FILE .recover); those sessions start afresh",
        )
    return check("store.integrity", "ok", f"{count} session database(s) pass integrity_check, schema version 1")


def _left_behind(scope):
    """Sessions in a plugin's data folder that the move could not take (one in both places, or a link)."""
    from om.location import has_sessions

    found = []
    for client in scope.clients:
        store = scope.store_of(client)
        if not os.path.isdir(store) or not has_sessions(client.data):
            continue
        both = [d for d in sorted(_listdir(client.data))
                if d.startswith("session-") and os.path.lexists(os.path.join(store, d))]
        if both:
            found.append(check(
                f"{client.name}.store.moved", "warn",
                f"{len(both)} session(s) exist both in {store} and in the plugin's data folder {client.data}, "
                f"written there by an earlier om after the move, e.g. {both[0]}; the hooks use {store}",
                "keep the store's copy (remove the other once no session of the earlier om runs): rm -rf "
                + " ".join(quote(os.path.join(client.data, d)) for d in both)))
    return found
