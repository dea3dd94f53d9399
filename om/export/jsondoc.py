"""The JSON export: everything a reader needs to rebuild the ledgers, in one versioned document.

Invariants:
- The document is `{"format": "om-export", "version": 1, ...}`; any change a
  version-1 reader could misread gets a new version.
- `sessions[i].sources` are exactly what `recall` prints for each source and
  `sessions[i].entries` exactly what `view --all` prints, in seq order.
- The text is the canonical encoding of `om.jsonio.dumps`, one line.
- A store-wide document (`"scope": "store"`) also lists under `skipped` the
  session directories it could not read, `{"directory", "error"}` each (an
  addition a version-1 reader may ignore: every session it does hold is whole).
- The project memory is an addition of the same kind: each session names its
  project's key (`project_id`, null when its hooks recorded none); a session's
  document holds its project memory under `project` (null when it has none),
  a store-wide one every exported session's under `projects`, each record as
  om.export.projects reads it (entries with their `provenance`, sources; or
  the `error` that kept it from being read).
- When the store keeps mirrors of other machines (om sync), a store-wide
  document lists them under `mirrors`, each a session as above with its
  `origin` {remote, writer, label}: apart from `sessions`, so rebuilding a
  store from the document rebuilds its own sessions only.
"""

from om import __version__
from om.export.reader import counts
from om.jsonio import dumps

FORMAT = "om-export"
VERSION = 1


def _session(s):
    return {
        "session": s["session"],
        "project": s["project"],
        "project_id": s.get("project_id"),
        "meta": s["meta"],
        "last_activity": s["last_activity"],
        "counts": counts(s),
        "sources": s["sources"],
        "entries": s["entries"],
    }


def document(snapshots, all_sessions, skipped=(), projects=(), mirrors=()):
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "generator": f"om {__version__}",
        "scope": "store" if all_sessions else "session",
        "sessions": [_session(s) for s in snapshots],
    }
    if all_sessions:
        doc["skipped"] = list(skipped)
        doc["projects"] = list(projects)
    else:
        doc["project"] = projects[0] if projects else None
    if mirrors:
        doc["mirrors"] = [dict(_session(s), origin=s["origin"]) for s in mirrors]
    return doc


def render_json(snapshots, all_sessions, skipped=(), projects=(), mirrors=()):
    return dumps(document(snapshots, all_sessions, skipped, projects, mirrors)) + "\n"
