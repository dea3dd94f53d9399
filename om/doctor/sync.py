"""Doctor's sync checks, for each checked store where `om sync` is set up: git, and how the last sync went.

Invariants: read-only and offline (no remote is asked: `om sync status` says
the same from the same files); a store without sync gives no finding (git is
needed only for sync); a missing or too old git fails, since every `om sync`
would; a rewrite still waiting to be published and tombstones not yet
acknowledged warn, each with the command that moves them on.
"""

import os

from om.doctor.findings import check, quote


def checks(scope):
    synced = []
    for store, _ in scope.stores:
        if os.path.isfile(os.path.join(store, "sync", "config.json")):
            synced.append(store)
    if not synced:
        return []
    from om.errors import OmError
    from om.sync.repo import git_version

    try:
        version = git_version()
        found = [check("sync.git", "ok", f"git {version[0]}.{version[1]} for om sync")]
    except OmError as e:
        found = [check("sync.git", "fail", str(e).removeprefix("om: "),
                       "install git 2.20 or newer (https://git-scm.com/downloads)")]
    for store in synced:
        found.append(_status_check(store))
    return found


def _status_check(store):
    from om.errors import OmError
    from om.invocation import runtime_command
    from om.sync.status import report

    rerun = f"{runtime_command()} --store {quote(store)} sync"
    try:
        doc = report(store)
    except OmError as e:
        return check("sync.status", "warn", f"store {store}: {str(e).removeprefix('om: ')}", rerun)
    never = [r["name"] for r in doc["remotes"] if not r["last_sync"]]
    rewrite = [r["name"] for r in doc["remotes"] if r["pending_rewrite"]]
    unacked = doc["tombstones"]["unacknowledged"]
    last = ", ".join(f"{r['name']} {r['last_sync'] or 'never'}" for r in doc["remotes"])
    if rewrite or never:
        what = (f"a forget waits to be republished to {', '.join(rewrite)}" if rewrite
                else f"never synced with {', '.join(never)}")
        return check("sync.status", "warn", f"store {store}: {what}", rerun)
    if unacked:
        return check("sync.status", "warn", f"store {store}: {len(unacked)} tombstone(s) not yet acknowledged by"
                     " their writers (their machines apply them at their next om sync); last sync: " + last,
                     rerun)
    return check("sync.status", "ok", f"store {store} (writer {doc['label'] or doc['writer']}): last sync {last}")
