"""`om ingest`: capture from a client's own transcripts the evidence its hooks missed, with the hooks' ids.

The data path: a transcript file (om.ingest.transcripts chooses which) is
read as complete JSON lines (om.ingest.lines); the client's reader
(om.ingest.codex, om.ingest.claude) turns them into the events the hooks
would have seen; om.ingest.replay applies the hooks' own rules to them and
captures each source with `Ledger.capture` into a private scratch ledger;
the scratch's sources the session's ledger lacks are then merged into it.

Invariants:
- Each source is the one the hook would have made (same kind, key and text,
  so the same id), built by the adapter's functions (om.adapter.operations),
  so an ingest adds only what the hooks missed, a second ingest adds nothing,
  and hooks that run after an ingest add nothing either.
- The session is the client's own id (the hooks'), and the ledger records the
  transcript's working directory as the hooks do (om.project), so `prime`,
  `sessions` and the start pointer see an ingested session like any other.
- Transcripts are only read. A file that cannot be read is reported and the
  rest go on; odd content (unknown lines, bad JSON, an unfinished last line)
  is skipped and counted, never fatal.
- One transcript's sources reach its session's ledger in one write
  transaction, after the whole file was read: a kill leaves the ledger as it
  was before or as it is after, and the ledger is locked only for that merge.
  A session whose ledger is paused is left alone; a session with nothing to
  capture gets no ledger.
- `dry_run` writes nothing at all: no store, no session, no marker (its
  scratch ledgers live in a private temporary folder, removed at the end).
- An unchanged transcript is not read again: the ledger keeps, per transcript,
  a meta key `om_ingest:<path>` with the file's size, modification time,
  inode and a hash of its last bytes as of the last ingest (v1 readers ignore
  it; it only saves time, since a repeated capture is a no-op anyway).
"""

import os

from om.errors import InputError, NotFound, OmError
from om.ingest import lines, transcripts
from om.ingest.transcripts import reader_of

#: The format of a marker's value; a new format (or new mapping rules) makes every transcript read again.
MARKER_FORMAT = "1"
MARKER_PREFIX = "om_ingest:"
_TAIL_BYTES = 4096


def profile_of(client):
    from om.adapter import client_hook

    return client_hook(client).PROFILE


def run(store, client, paths=(), session=None, project=None, since=None, dry_run=False):
    """Ingest the client's transcripts into `store`; the report (see docs/ingest.md).

    `paths`: transcript files and folders (default: the client's transcript
    home); `session`, `project` (a directory) and `since` (YYYY-MM-DD) narrow
    what is read.
    """
    from om.store import canonical_store, resolve_store

    reader = reader_of(client)
    since_at = None if since is None else transcripts.since_time(since)
    root = None
    if project is not None:
        from om.sessions.catalogue import project_filter

        root = project_filter(project)
    if session is not None:
        from om.store import validate_session

        validate_session(session)
    if not paths:
        top = transcripts.home(client, store)
        if not os.path.isdir(top):
            raise NotFound(f"om: no {client} transcripts at {top}")
        paths = [top]
    files, problems = transcripts.choose(reader, list(paths), session, since_at)
    store = canonical_store(store) if dry_run else resolve_store(store)
    report = {"client": client, "store": store, "dry_run": dry_run, "sessions": [],
              "unreadable": [{"transcript": p, "error": e} for p, e in problems]}
    with _Workspace(store, dry_run) as work:
        for path in files:
            entry = Transcript(store, reader, path, work, root, dry_run).ingest()
            if entry is None:
                continue
            if entry["outcome"] == "unreadable":
                report["unreadable"].append({"transcript": path, "error": entry["error"]})
            else:
                report["sessions"].append(entry)
    report["captured"] = sum(e["captured"] for e in report["sessions"])
    report["present"] = sum(e["present"] for e in report["sessions"])
    return report


class Transcript:
    """One transcript's ingest: read whole into a scratch ledger, then merged into its session's ledger."""

    def __init__(self, store, reader, path, work, project_root=None, dry_run=False):
        self.store = store
        self.reader = reader
        self.path = path
        self.marker_key = MARKER_PREFIX + os.path.realpath(path)
        self.work = work
        self.project_root = project_root
        self.dry_run = dry_run
        self.skipped = {}
        self.entry = {"session": None, "transcript": path, "format": None, "version": None, "verified": False,
                      "outcome": "read", "captured": 0, "present": 0, "kinds": {}, "skipped": self.skipped}
        self.filtered = False
        self.replay = None
        self.scratch = None
        self.scratch_path = None
        self.stamp = None

    def skip(self, reason, count=1):
        self.skipped[reason] = self.skipped.get(reason, 0) + count

    def ingest(self):
        """The report entry (None when the project filter leaves the session out)."""
        try:
            try:
                with open(self.path, "rb") as stream:
                    self.stamp = _stamp(stream)
                    self.reader.read(lines.records(stream, self.skip, self.reader.QUIET), self.begin, self.path)
                if self.filtered:
                    return None
                if self.replay is None or self.scratch is None:
                    if self.entry["outcome"] == "read":
                        # Lines, but no JSON object among them (random bytes, another format), or
                        # only a first line still being written.
                        reason = ("not a transcript" if lines.BAD_LINE in self.skipped
                                  else "no complete line yet" if lines.UNFINISHED in self.skipped
                                  else "empty transcript")
                        self.entry.update(outcome="skipped", reason=reason)
                    return self.entry
                scratch, self.scratch = self.scratch, None
                kinds, held = self.merge(scratch, self.replay.cwd)
            finally:
                self.discard()
        except OSError as e:
            return {"transcript": self.path, "outcome": "unreadable", "error": e.strerror or str(e)}
        except OmError as e:
            return {"transcript": self.path, "outcome": "unreadable", "error": str(e).removeprefix("om: ")}
        if kinds is None:
            self.entry.update(outcome="skipped", reason="the session's ledger is paused")
        else:
            self.entry.update(captured=sum(kinds.values()), present=held, kinds=kinds)
        return self.entry

    def begin(self, head):
        """The Replay for a transcript whose first lines gave `head`, or None when it is not to be read."""
        self.entry.update(session=head.session, format=head.format, version=head.version,
                          verified=head.version in self.reader.VERIFIED)
        if self.project_root is not None:
            from om.project import project_root

            if not isinstance(head.cwd, str) or project_root(head.cwd) != self.project_root:
                self.filtered = True
                return None
        if head.skip:
            self.entry.update(outcome="skipped", reason=head.skip)
            return None
        from om.store import validate_session

        try:
            validate_session(head.session)
        except InputError:
            self.entry.update(outcome="skipped", reason="not a usable session id")
            return None
        existing = _existing(self.store, head.session)
        if existing is not None:
            with existing:
                paused, marker = existing.is_paused(), existing.meta_get(self.marker_key)
            if paused:
                self.entry.update(outcome="skipped", reason="the session's ledger is paused")
                return None
            if marker == self.stamp:
                self.entry.update(outcome="unchanged")
                return None
        from om.ingest.replay import Replay
        from om.invocation import ledger_argv
        from om.ledger import Ledger

        self.scratch_path = self.work.scratch_path()
        self.scratch = Ledger.scratch(self.scratch_path, head.session)
        own = [(ledger_argv(self.store, head.session), self.store)]
        self.replay = Replay(profile_of(self.reader.NAME), self.scratch, own, self.skipped)
        self.replay.cwd = head.cwd
        return self.replay

    def merge(self, scratch, cwd):
        """({kind: added}, already held) once `scratch` is merged (or, dry, counted); (None, 0) if paused."""
        from om.ledger import Ledger
        from om.store import database_path

        session = self.entry["session"]
        has_sources = scratch.has_sources()
        scratch.close()
        if self.dry_run:
            existing = _existing(self.store, session)
            if existing is None:
                with Ledger.scratch(":memory:", session) as empty:
                    return empty.missing_sources(self.scratch_path)[0], 0
            with existing:
                return (None, 0) if existing.is_paused() else existing.missing_sources(self.scratch_path)
        if not has_sources and not os.path.isfile(database_path(self.store, session)):
            return {}, 0  # nothing to capture: no ledger for it
        from om.project import record_project

        with Ledger.open(self.store, session) as ledger, ledger.attached(self.scratch_path):
            with ledger.transaction():
                if ledger.is_paused():
                    return None, 0
                added, held = ledger.merge_sources(self.scratch_path)
                record_project(ledger, cwd)
                ledger.meta_set(self.marker_key, self.stamp)
        return added, held

    def discard(self):
        if self.scratch is not None:
            self.scratch.close()
            self.scratch = None
        if self.scratch_path is not None:
            try:
                os.unlink(self.scratch_path)
            except OSError:
                pass


def _existing(store, session):
    """The session's ledger opened read-only, or None when the store has none (nothing is created)."""
    from om.ledger import Ledger
    from om.store import database_path, session_dir

    if not os.path.isfile(database_path(store, session)):
        return None
    try:
        return Ledger.open_directory(store, session_dir(store, session))
    except OmError as e:
        raise OmError(f"om: the ledger of session {session[:80]!r} cannot be read: {e}") from None


def _stamp(stream):
    """What identifies this version of an append-only file: size, modification time, inode, hash of its tail."""
    from om.fastpath import sha256

    st = os.fstat(stream.fileno())
    stream.seek(max(0, st.st_size - _TAIL_BYTES))
    tail = stream.read(min(st.st_size, _TAIL_BYTES))
    stream.seek(0)
    return f"{MARKER_FORMAT} {st.st_size} {st.st_mtime_ns} {st.st_ino} {sha256(tail).hexdigest()[:32]}"


class _Workspace:
    """A private folder for this run's scratch ledgers: a staging folder of the store, or for a dry run
    (which writes nothing in the store) a temporary one; removed at the end, swept by the next run if killed."""

    def __init__(self, store, dry_run):
        self.store = store
        self.dry_run = dry_run
        self.folder = ""
        self.count = 0

    def __enter__(self):
        if self.dry_run:
            import tempfile

            self.folder = tempfile.mkdtemp(prefix="om-ingest-")
        else:
            from om.store import make_staging_dir, sweep_staging

            sweep_staging(self.store)
            self.folder = make_staging_dir(self.store)
        return self

    def scratch_path(self):
        self.count += 1
        return os.path.join(self.folder, f"scratch-{self.count}.sqlite3")

    def __exit__(self, *exc):
        import shutil

        shutil.rmtree(self.folder, ignore_errors=True)


def render(report):
    """The report as text: one line per transcript, then the totals."""
    verb = "would capture" if report["dry_run"] else "captured"
    out = []
    for entry in report["sessions"]:
        who = entry["session"] or "(no session)"
        if entry["outcome"] == "skipped":
            what = f"skipped: {entry['reason']}"
        elif entry["outcome"] == "unchanged":
            what = "unchanged since the last ingest"
        else:
            what = f"{verb} {entry['captured']}, already present {entry['present']}"
        if entry["skipped"]:
            what += "; not evidence: " + ", ".join(f"{n} {reason}" for reason, n in sorted(entry["skipped"].items()))
        if entry.get("version") and not entry.get("verified") and entry["outcome"] == "read":
            what += f" (client version {entry['version']} not verified)"
        out.append(f"{who}  {what}  {entry['transcript']}")
    for item in report["unreadable"]:
        out.append(f"unreadable  {item['error']}  {item['transcript']}")
    sessions = len(report["sessions"])
    out.append(f"om ingest ({report['client']}{', dry run' if report['dry_run'] else ''}): {sessions} transcript"
               f"{'' if sessions == 1 else 's'}, {verb} {report['captured']}, already present {report['present']}"
               f" (store {report['store']})")
    return "\n".join(out) + "\n"
