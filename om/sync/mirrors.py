"""What other writers publish, read from om's repository and kept as read-only v1 ledgers: mirrors.

Invariants:
- A fetched writer's tree is read as data, never as paths: only `writer.json`,
  `tombstones.jsonl`, `acks.jsonl` and `p/<16 hex>/<24 hex>.jsonl` regular
  files count; anything else (`../x`, links, submodules, names that are not
  UTF-8) is reported and ignored. A `writer.json` of a format this om does
  not read, or naming another writer than its ref, skips that writer
  (reported); a session file that does not parse (om.sync.projection) skips
  that session (reported) and removes its mirror. Nothing remote crashes a sync.
- A mirror is `sync/mirrors/<remote>/<writer>/session-<hash>/memory.sqlite3`,
  outside the store's `session-*` folders: no v1 reader and no hook sees it.
  It is derived (deletable, rebuilt from om's repository) and written only
  here, under the sync lock, and by `om forget` (which holds it too).
- Rebuilt only when what it is made from changed: the blob, the tombstones
  that apply to it, the writer's label (all in its `om_mirror_of` meta key).
  A rebuild writes a new file beside the old one and renames it into place
  (om.ledger.mirror): readers see the old mirror or the new one.
- Tombstones its owner has not acknowledged are applied to the published
  text by om.sync.tombstones' rule; a text its writer withheld reads
  projection.WITHHELD. A writer forgotten by a whole-writer tombstone, and
  this writer itself, have no mirrors.
"""

import os
import shutil

from om.sync.layout import is_session_path, is_writer, writer_dir

MAX_META_BYTES = 64 * 1024 * 1024
MIRROR_KEY = "om_mirror_of"
FORMAT = 1


class Writer:
    """One fetched writer's publication: its label, tombstones, acks and session files (path -> blob)."""

    def __init__(self, writer, commit):
        self.writer, self.commit = writer, commit
        self.label = ""
        self.usable = False
        self.tombstones, self.acks = [], set()
        self.sessions = {}  # (key, digest) -> blob
        self.problems = []


def read_writers(repo, commits):
    """{writer: Writer} for the fetched commits {writer: commit}; what cannot be read is in each one's problems."""
    found = {}
    small = {}
    for writer, commit in sorted(commits.items()):
        w = found[writer] = Writer(writer, commit)
        if not is_writer(writer):
            w.problems.append(f"a ref named {writer[:80]!r} is no writer id")
            continue
        try:
            entries = repo.tree(commit)
        except Exception as e:
            w.problems.append(f"its tree cannot be read: {e}")
            continue
        odd = 0
        for mode, kind, sha, raw in entries:
            try:
                path = raw.decode("utf-8")
            except UnicodeDecodeError:
                odd += 1
                continue
            if mode != "100644" or kind != "blob":
                odd += 1
                continue
            if path in ("writer.json", "tombstones.jsonl", "acks.jsonl"):
                small[(writer, path)] = sha
                continue
            where = is_session_path(path)
            if where is None:
                odd += 1
                continue
            w.sessions[where] = sha
        if odd:
            w.problems.append(f"{odd} tree entr{'y' if odd == 1 else 'ies'} that are not om's files, ignored")
    blobs = repo.blobs(small.values(), MAX_META_BYTES) if small else {}
    for writer, w in found.items():
        if not is_writer(writer) or (writer, "writer.json") not in small:
            if is_writer(writer):
                w.problems.append("no writer.json")
            continue
        _read_meta(w, blobs.get(small[(writer, "writer.json")]))
        if not w.usable:
            continue
        from om.sync import tombstones

        for name in ("tombstones.jsonl", "acks.jsonl"):
            data = blobs.get(small.get((writer, name)))
            if data is None:
                continue
            if name == "acks.jsonl":
                w.acks = tombstones.parse_acks(data)
            else:
                w.tombstones = tombstones.parse(data)
    return found


def _read_meta(w, data):
    from om.errors import InputError
    from om.jsonio import loads

    try:
        value = loads(data.decode("utf-8")) if data is not None else None
    except (UnicodeDecodeError, InputError):
        value = None
    if not isinstance(value, dict):
        w.problems.append("writer.json is not JSON")
        return
    if value.get("format") != FORMAT:
        w.problems.append(f"it publishes format {str(value.get('format'))[:20]}; this om reads format {FORMAT}")
        return
    if value.get("writer") != w.writer:
        w.problems.append("its writer.json names another writer")
        return
    label = value["label"] if isinstance(value.get("label"), str) else ""
    w.label = "".join(c for c in label if c.isprintable())[:64]
    w.usable = True


def mirror_state(directory):
    """The `om_mirror_of` record of the mirror in `directory` (a dict), or None."""
    from om.errors import InputError
    from om.jsonio import loads
    from om.ledger import Ledger

    found = Ledger.glance(directory, MIRROR_KEY)
    if not found or not found[0]:
        return None
    try:
        value = loads(found[0])
    except InputError:
        return None
    return value if isinstance(value, dict) else None


def refresh(store, repo, remote, me, writers, index):
    """Bring the mirrors of remote `remote` in line with `writers` ({writer: Writer}); a report."""
    from om.ids import session_hash
    from om.sync import projection

    report: dict = {"rebuilt": 0, "removed": 0, "kept": 0, "skipped": []}
    forgotten = index.forgotten_writers()
    root = os.path.join(os.path.dirname(writer_dir(store, remote, me)))
    wanted_writers = {w for w, x in writers.items() if x.usable and w != me and w not in forgotten}
    todo = []
    for writer in sorted(wanted_writers):
        w = writers[writer]
        folder = writer_dir(store, remote, writer)
        pending_by_hash = {}
        for tomb in index.addressed_to(writer):
            pending_by_hash.setdefault(session_hash(tomb["session"]), []).append(tomb)
        keep = set()
        for (key, digest), blob in sorted(w.sessions.items()):
            directory = os.path.join(folder, "session-" + digest)
            keep.add("session-" + digest)
            applied = sorted(t["tid"] for t in pending_by_hash.get(digest, []))
            state = mirror_state(directory)
            want = {"blob": blob, "tombstones": applied, "label": w.label}
            if state is not None and {k: state.get(k) for k in want} == want:
                report["kept"] += 1
                continue
            todo.append((w, key, digest, blob, directory, pending_by_hash.get(digest, [])))
        _sweep(folder, keep, report)
    by_blob = {}
    for item in todo:
        by_blob.setdefault(item[3], []).append(item)
    for sha, data in repo.blobs_in_batches(list(by_blob), projection.MAX_FILE_BYTES):
        for w, key, digest, blob, directory, tombs in by_blob[sha]:
            _rebuild(report, remote, w, key, digest, blob, directory, tombs, data)
    try:
        present = sorted(os.listdir(root))
    except OSError:
        present = []
    for name in present:
        if is_writer(name) and name not in wanted_writers:
            _remove(os.path.join(root, name), report, count=False)
    return report


def _rebuild(report, remote, w, key, digest, blob, directory, tombs, data):
    """Rebuild one mirror from its blob's bytes, or remove it (reported) when they are not a session file."""
    from om.sync import projection

    try:
        if data is None:
            raise projection.Malformed("missing or too large")
        parsed = projection.parse(data, key, digest)
    except projection.Malformed as e:
        report["skipped"].append(f"om: skipped session file p/{key}/{digest}.jsonl of writer {w.writer}"
                                 f" ({w.label or 'no label'}): {e}")
        _remove(directory, report)
        return
    _build(directory, remote, w, blob, parsed, tombs)
    report["rebuilt"] += 1


def _sweep(folder, keep, report):
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        path = os.path.join(folder, name)
        if name.startswith("session-") and name not in keep:
            _remove(path, report)
        elif name.startswith("."):
            _remove(path, report, count=False)
        elif name.startswith("session-"):
            for inner in os.listdir(path):
                if inner.startswith(".") and inner.endswith(".tmp"):
                    os.unlink(os.path.join(path, inner))


def _remove(path, report, count=True):
    if os.path.lexists(path):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
        if count:
            report["removed"] += 1


def _build(directory, remote, w, blob, parsed, tombs):
    from om.jsonio import dumps
    from om.ledger.mirror import build
    from om.store import DB_NAME, made_atomically, make_private_dir
    from om.sync import projection
    from om.sync import tombstones as rules

    grouped = {}
    for tomb in tombs:
        grouped.setdefault((tomb["id"], tomb["field"]), []).append(tomb)

    def shown(item, field, text):
        if text is None:
            return projection.WITHHELD
        group = grouped.get((item, field))
        return rules.apply_all(text, group) if group else text

    sources = [dict(s, text=shown(s["id"], "text", s["text"])) for s in parsed["sources"]]
    entries = []
    for e in parsed["entries"]:
        entry = dict(e, text=shown(e["id"], "text", e["text"]))
        if e["retirement"] is not None:
            entry["retirement"] = dict(e["retirement"], reason=shown(e["id"], "reason", e["retirement"]["reason"]))
        entries.append(entry)
    meta = {MIRROR_KEY: dumps({"remote": remote, "writer": w.writer, "label": w.label, "session": parsed["session"],
                               "blob": blob, "tombstones": sorted(t["tid"] for t in tombs), "share": parsed["share"]},
                              sort_keys=True),
            "cursor": parsed["cursor"]}
    if parsed["key"]:
        meta["om_project_id"] = parsed["key"]
    if parsed["created"]:
        meta["om_created_at"] = parsed["created"]
    if parsed["last_checkpoint_at"]:
        meta["last_checkpoint_at"] = parsed["last_checkpoint_at"]
    for e in parsed["entries"]:
        if e["provenance"] is not None:
            meta["om_promoted:" + e["id"]] = dumps(e["provenance"], sort_keys=True)
    if not os.path.isdir(directory):
        make_private_dir(directory, parents=True)
    made_atomically(os.path.join(directory, DB_NAME), lambda tmp: build(tmp, parsed["session"], meta, sources, entries))
