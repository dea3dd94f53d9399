"""Mirrors where memory is read: the listing's rows, search results, project memory entries, import.

What `om sessions`, `search --all-sessions`, `export --all-sessions`, the
project memory block of `prime` and `import --from-mirror` ask of the mirrors
(om.sync.mirrors makes them).

Invariants:
- Read-only: every mirror is opened with `mode=ro` (om.ledger's
  `open_directory`), so reading one never writes it (no derived table, no
  journal); a mirror that cannot be read (a sync replacing it, damage) is
  passed over: it is derived, and the next sync rebuilds it.
- Every row, result or entry read from a mirror names where it came from:
  {"remote", "writer", "label"} of its writer.
- Nothing here imports what reads memory (om.sessions' listings and search,
  om.project.memory, om.export) or the sync verbs, so those can ask it
  without a cycle.
"""

import os

from om.sync.layout import mirror_sessions, mirror_writers

ORIGIN_KEYS = ("remote", "writer", "label")


def _origin(ledger):
    from om.errors import InputError
    from om.jsonio import loads
    from om.sync.mirrors import MIRROR_KEY

    try:
        value = loads(ledger.meta_get(MIRROR_KEY) or "null")
    except InputError:
        return None
    if not isinstance(value, dict):
        return None
    return {k: value.get(k) if isinstance(value.get(k), str) else "" for k in ORIGIN_KEYS}


def ledgers(store, key=None, session=None):
    """Yield (origin, open read-only Ledger) of each readable mirror (of project `key`, of session id `session`)."""
    from om.ids import session_hash
    from om.ledger import Ledger

    wanted = None if session is None else "session-" + session_hash(session)
    for _, _, folder in mirror_sessions(store):
        if wanted is not None and os.path.basename(folder) != wanted:
            continue
        try:
            ledger = Ledger.open_directory(os.path.dirname(folder), folder)
        except Exception:
            continue
        try:
            origin = _origin(ledger)
            if origin is None or key is not None and ledger.meta_get("om_project_id") != key:
                ledger.close()
                continue
        except Exception:
            ledger.close()
            continue
        yield origin, ledger


def has_mirrors(store):
    return bool(mirror_writers(store))


def rows(store, key=None):
    """The mirrors as listing rows, most recent activity first: session, origin, project key, times, counts."""
    found = []
    for origin, ledger in ledgers(store, key):
        with ledger:
            try:
                with ledger.reading():
                    status = ledger.status()
                    count, first_at, last_at = ledger.sources_span()
                    created = ledger.meta_get("om_created_at") or first_at
                    project = ledger.meta_get("om_project_id")
            except Exception:
                continue
        checkpoint = status.get("last_checkpoint_at")
        found.append({
            "session": ledger.session, "origin": origin, "project": project, "created": created,
            "last_capture": last_at, "last_checkpoint": checkpoint,
            "last_activity": max((t for t in (last_at, checkpoint, created) if t), default=None),
            "sources": count, "observations": status["active"]["observations"],
            "reflections": status["active"]["reflections"], "database": ledger.path,
        })
    found.sort(key=lambda r: (r["last_activity"] or "", r["session"]), reverse=True)
    return found


def table(found):
    """The rows as the second table of `om sessions`."""
    from om.sessions.catalogue import printable

    if not found:
        return ""
    head = ["SESSION", "FROM", "PROJECT", "CREATED", "LAST ACTIVITY", "SOURCES", "OBS", "REFL"]
    lines = [head]
    for r in found:
        origin = r["origin"]
        lines.append([printable(r["session"]), printable(origin["label"] or origin["writer"][:12]),
                      r["project"] or "unknown", r["created"] or "-", r["last_activity"] or "-", str(r["sources"]),
                      str(r["observations"]), str(r["reflections"])])
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    out = []
    for line in lines:
        cells = [cell.rjust(w) if i >= 5 else cell.ljust(w) for i, (cell, w) in enumerate(zip(line, widths))]
        out.append("  ".join(cells).rstrip())
    return "\nMirrors (read-only: published by other machines with om sync):\n" + "\n".join(out) + "\n"


def search(store, query, sources, retired, limit, key=None):
    """(results of every mirror, each with its session and origin, whole texts in "snippet"; mirrors searched)."""
    from om import search as single

    found, searched = [], 0
    for origin, ledger in ledgers(store, key):
        with ledger:
            try:
                result = single.search(ledger, query, sources, retired, limit, snippets=False, feedback=False)
            except Exception:
                continue
        searched += 1
        for item in result["results"]:
            found.append(dict(item, session=ledger.session, mirror=origin))
    return found, searched


def project_entries(store, key):
    """The project memory entries of project `key` other writers published, each with its provenance and
    the writer's origin under provenance["from"]."""
    from om.ledger.promotion import provenance
    from om.project.home import project_session

    found = []
    for origin, ledger in ledgers(store, key=None, session=project_session(key)):
        with ledger:
            try:
                with ledger.reading():
                    entries = ledger.entries()
                    marks = provenance(ledger.conn)
            except Exception:
                continue
        for entry in entries:
            mark = marks.get(entry["id"])
            if mark is not None:
                entry["provenance"] = dict(mark, **{"from": origin})
                found.append(entry)
    return found


def writer_folder(store, name):
    """The mirror folder of the writer named `name` (its id, a unique prefix of it, or its label); one line else."""
    from om.errors import NotFound

    candidates = []
    for remote, writer, folder in mirror_writers(store):
        label = ""
        for _, ledger in ledgers_in(folder):
            with ledger:
                label = (_origin(ledger) or {}).get("label", "")
            break
        if writer == name or (len(name) >= 4 and writer.startswith(name)) or (label and label == name):
            candidates.append((remote, writer, folder))
    writers = sorted({c[1] for c in candidates})
    if not writers:
        raise NotFound(f"om: no mirror of a writer {name[:80]!r} in this store (om sessions lists the mirrors)")
    if len(writers) > 1:
        raise NotFound(f"om: {name[:80]!r} names several writers ({', '.join(w[:12] for w in writers)}); give the id")
    return candidates[0][2]


def ledgers_in(folder):
    """Yield (None, read-only Ledger) of the mirrors in one writer's folder."""
    from om.ledger import Ledger

    try:
        names = sorted(n for n in os.listdir(folder) if n.startswith("session-"))
    except OSError:
        return
    for name in names:
        try:
            yield None, Ledger.open_directory(folder, os.path.join(folder, name))
        except Exception:
            continue
