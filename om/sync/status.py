"""What `om sync status` and the MCP tool `sync_status` report: read from the sync folder alone.

Invariants:
- Read-only and offline: no git runs, no remote is asked, nothing is
  written; it says what the last sync saw.
- Per remote: where it is (credentials in a URL redacted), the share level,
  the project and the hold, the last sync, the last commit pushed, whether a
  forget waits to be republished without history, how many ledgers changed
  since the last publication, and the writers seen (label, when their ref last
  changed).
- This writer's tombstones that their owner has not acknowledged yet (as of
  the last sync), with what they name but never their text.
"""

from om.sync import config as configs


def report(store):
    """The status document of `store`'s sync (NotFound when sync is not set up)."""
    from om.sessions.catalogue import open_store
    from om.sync import outbox, tombstones

    store = open_store(store)
    config = configs.require(store)
    state = configs.load_state(store)
    own = tombstones.own(store)
    acked = {}
    remotes = []
    for described in describe_remotes(config):
        name = described["name"]
        rstate = configs.remote_state(state, name)
        writers = []
        for writer, seen in sorted(rstate["writers"].items(), key=lambda x: (x[1].get("label") or "", x[0])):
            writers.append({"writer": writer, "label": seen.get("label") or "", "last_seen": seen.get("seen")})
            acked.setdefault(writer, set()).update(seen.get("acks") or ())
        remotes.append(dict(described, last_sync=rstate["last_sync"], last_pushed=rstate["last_pushed"],
                            pending_rewrite=bool(rstate["pending_rewrite"]),
                            changed_ledgers=outbox.waiting(store, config["remotes"][name], rstate["published"]),
                            writers=writers))
    unacked = [{k: t[k] for k in ("tid", "owner", "session", "id", "field", "at") if k in t}
               for t in sorted(own, key=lambda t: (t.get("at") or "", t["tid"]))
               if not t.get("whole") and not t.get("done") and t["tid"] not in acked.get(t["owner"], set())]
    return {"store": store, "writer": config["writer"], "label": config.get("label") or "", "remotes": remotes,
            "tombstones": {"published": len(own), "unacknowledged": unacked}}


def render(doc):
    """The status as lines a person reads."""
    lines = [f"writer {doc['writer']} ({doc['label'] or 'no label'}) of store {doc['store']}"]
    for r in doc["remotes"]:
        project = f", project {r['project']}" if r["project"] else ""
        hold = f", hold {r['hold_seconds']}s" if r["hold_seconds"] else ""
        lines.append(f"remote {r['name']}: {r['where']} ({r['kind']}, share {r['share']}{project}{hold})")
        lines.append(f"  last sync: {r['last_sync'] or 'never'}; last pushed: {r['last_pushed'] or 'nothing'}")
        waiting = f"{r['changed_ledgers']} ledger(s) changed since the last publication"
        if r["pending_rewrite"]:
            waiting += "; a forget waits to be republished without history"
        lines.append(f"  waiting to go out: {waiting}")
        for w in r["writers"]:
            lines.append(f"  writer {w['writer']} ({w['label'] or 'no label'}): last changed {w['last_seen'] or '?'}")
    unacked = doc["tombstones"]["unacknowledged"]
    lines.append(f"tombstones: {doc['tombstones']['published']} published, {len(unacked)} not yet acknowledged")
    for t in unacked:
        lines.append(f"  {t['tid']}: {t['id']} of session {t['session']!r} by writer {t['owner']} ({t['at']})")
    return "\n".join(lines) + "\n"


def describe_remotes(config):
    from om.sync.transport import shown

    found = []
    for name in sorted(config["remotes"]):
        r = config["remotes"][name]
        where = shown(r["url"]) if r.get("url") else ("origin of " + r["origin"]) if r.get("origin") else r["folder"]
        found.append({"name": name, "kind": r["kind"], "where": where, "share": r["share"],
                      "project": (r.get("project") or {}).get("key"), "hold_seconds": r.get("hold") or 0})
    return found
