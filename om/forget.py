"""`om forget`: take text out of memory on purpose, and out of every file om keeps.

Invariants:
- Asked for, never automatic: nothing in om calls this but the `forget` command.
- Two steps: `prepare` reads (a plan per session: which ids change, how many
  occurrences; ids that name nothing anywhere, and with `refuse_unmatched`
  literals found nowhere, are refused before anything is written),
  `carry_out` writes. Each session is rewritten in one transaction
  (om.ledger.forget), so a kill or a failure leaves each ledger before or after,
  and running the same forget again finishes what a killed one started.
- Other machines' sessions this store mirrors (om sync) are in scope with
  `--all-sessions`: the mirror is rewritten as a session is, and a tombstone
  per rewritten record is published by the next sync (om.sync.tombstones),
  which every machine applies; a rewritten own ledger makes the next sync
  republish without history. Both under the store's sync lock.
- Really gone: every rewritten ledger is compacted (VACUUM). Then the files
  under the store that the forget covers (the session directories it read; with
  `--all-sessions` every file of the store) are scanned raw for the literals,
  as stored and JSON-escaped once or twice (inside a tool result's text inside
  a row): a ledger still holding one
  is compacted too, `hook-errors.log` loses its lines holding one, the store
  index drops what it read of the rewritten sessions (om.sessions.index.forget),
  leftovers of killed removals and abandoned staging folders are deleted, and any other file
  still holding one is reported, never silently kept. The MCP export tool's files
  holding a forgotten text are deleted (om.export.discard_containing). Exports
  written elsewhere are the user's: om does not know them and says so.
"""

import os

from om.errors import InputError, NotFound, NothingMatched, StoreError
from om.ledger.forget import MARKER, Request

NOT_CHANGED = ("om: documents exported before (export --out, copies you saved) are not changed:"
               " om does not know where they are")


def request(texts=(), sources=(), entries=()):
    """The Request for `--text`, `--source` and `--entry` values, checked."""
    texts, sources, entries = list(texts or ()), list(sources or ()), list(entries or ())
    if not (texts or sources or entries):
        raise InputError("om: forget needs --text, --source or --entry")
    for text in texts:
        if not text.strip():
            raise InputError("om: forget --text must not be blank")
        if text in MARKER:
            raise InputError(f"om: forget --text {text!r} is part of the marker {MARKER}; give a longer literal")
    for value in sources:
        if not value.startswith("s-"):
            raise InputError(f"om: forget --source takes a source id (s-...), got {value[:80]!r}")
    for value in entries:
        if not value.startswith(("o-", "r-")):
            raise InputError(f"om: forget --entry takes an entry id (o-... or r-...), got {value[:80]!r}")
    return Request(texts, sources, entries)


class Plan:
    """What `prepare` found: the store, the session directories in scope and each one's changes."""

    def __init__(self, store, request, all_sessions):
        self.store = store
        self.request = request
        self.all_sessions = all_sessions
        self.sessions = []  # (directory, session, {"sources", "entries", "occurrences"})
        self.mirrors = []  # (directory, session, summary, origin): other machines' sessions (om sync)
        self.skipped = []
        self.exports = []

    def changes(self):
        return [dict(session=session, **summary) for _, session, summary in self.sessions if summary["occurrences"]]

    def mirror_changes(self):
        return [dict(session=session, writer=origin["writer"], label=origin["label"], **summary)
                for _, session, summary, origin in self.mirrors if summary["occurrences"]]

    def describe(self):
        """One line for the confirmation question."""
        changes = self.changes()
        occurrences = sum(c["occurrences"] for c in changes)
        rows = sum(len(c["sources"]) + len(c["entries"]) for c in changes)
        where = "every session" if self.all_sessions else f"session {self.sessions[0][1]}"
        mirrored = self.mirror_changes()
        others = (f", {sum(len(c['sources']) + len(c['entries']) for c in mirrored)} record(s) other machines"
                  " published (a tombstone each, published by the next om sync)" if mirrored else "")
        return (f"forget {occurrences} occurrence(s) in {rows} record(s) of {len(changes)} session(s)"
                f" ({where} of {self.store}){others}, and {len(self.exports)} MCP export file(s)")


def prepare(store, session, all_sessions, req):
    """The Plan for forgetting `req` in one session or every session of `store` (reads only)."""
    from om.export import files_containing
    from om.sessions.catalogue import open_store, scan
    from om.store import session_dir, validate_session

    store = open_store(store)
    plan = Plan(store, req, all_sessions)
    # Writable connections, though this only reads: a ledger a killed writer left with a
    # hot journal can only be read by a connection that may roll it back.
    if all_sessions:
        targets = scan(store, writable=True)
    else:
        validate_session(session)
        directory = session_dir(store, session)
        if not os.path.isdir(directory):
            raise NotFound(f"om: no session {session!r} in store {store}")
        targets = [(os.path.basename(directory), _open(directory), None)]
    targets = [(os.path.join(store, name), ledger, error) for name, ledger, error in targets]
    targets += _project_ledgers()
    if all_sessions:
        targets += _mirror_ledgers(store)
    unknown = set(req.sources | req.entries)
    originals = []
    for directory, ledger, error, *origin in targets:
        if ledger is None:
            plan.skipped.append({"directory": directory, "error": error})
            continue
        with ledger:
            unknown &= ledger.unknown_ids(unknown)
            if origin:
                plan.mirrors.append((directory, ledger.session, ledger.forget_plan(req), origin[0]))
            else:
                plan.sessions.append((directory, ledger.session, ledger.forget_plan(req)))
            originals.extend(_whole_texts(ledger, req))
    if unknown:
        raise NotFound(f"om: nothing was changed: no source or entry {', '.join(sorted(unknown))[:200]}"
                       f" in {'the store' if all_sessions else 'the session'}")
    plan.exports = files_containing(list(req.texts) + originals)
    return plan


def refuse_unmatched(plan, dry_run):
    """NothingMatched (68) when a `--text` literal occurs nowhere this forget covers; nothing is written.

    Nowhere: in no row of the sessions in scope, no MCP export file, and no
    file of the scope (a ledger's free pages, hook-errors.log, a leftover of a
    killed forget), so a literal a killed forget already took out of the rows
    is still finished. The literal itself is never echoed: it may be a secret.
    """
    missing = [i for i in plan.request.unmatched() if not _in_files(plan, plan.request.texts[i - 1])]
    if not missing:
        return
    count = len(plan.request.texts)
    which = "--text" if count == 1 else f"--text ({', '.join(_ordinal(i) for i in missing)} of {count})"
    where = "any session" if plan.all_sessions else f"session {plan.sessions[0][1]!r}"
    hint = "" if dry_run else "; check the literal with --dry-run first, which lists what a forget would change"
    raise NothingMatched(f"om: nothing matched: {which} occurs nowhere in {where} of store {plan.store};"
                         f" nothing was changed{hint}")


def _ordinal(n):
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _in_files(plan, text):
    from om.export import files_containing

    if files_containing([text]):
        return True
    needles = raw_needles([text])
    from om.sessions.catalogue import DIR_PREFIX

    for name in sorted(os.listdir(plan.store)):
        path = os.path.join(plan.store, name)
        if name.startswith(DIR_PREFIX) and not plan.all_sessions and path != plan.sessions[0][0]:
            continue  # another session: out of this forget's scope
        if os.path.isdir(path) and not os.path.islink(path):
            if _holds(path, needles):
                return True
        elif _file_holds(path, needles):
            return True
    return False


def _open(directory):
    from om.ledger import Ledger

    return Ledger.open_directory(os.path.dirname(directory), directory, writable=True)


def _project_ledgers():
    """Every project memory of this machine (om.project.home): text forgotten anywhere leaves them too."""
    from om.project.home import project_home
    from om.sessions.catalogue import DIR_PREFIX

    home = project_home()
    try:
        names = sorted(n for n in os.listdir(home) if n.startswith(DIR_PREFIX))
    except OSError:
        return []
    found: list = []
    for name in names:
        directory = os.path.join(home, name)
        try:
            found.append((directory, _open(directory), None))
        except StoreError as e:
            found.append((directory, None, str(e)))
    return found


def _mirror_ledgers(store):
    """The mirrors of other machines' sessions this store keeps (om sync), each with its origin."""
    from om.sync.readers import ledgers

    found: list = []
    for origin, ledger in ledgers(store):
        directory = os.path.dirname(ledger.path)
        ledger.close()
        try:
            found.append((directory, _open(directory), None, origin))
        except StoreError as e:
            found.append((directory, None, str(e), origin))
    return found


def _whole_texts(ledger, req):
    """The texts of the records named by id (what the MCP export files may hold of them)."""
    texts = []
    for item_id in sorted(req.sources | req.entries):
        try:
            found = ledger.recall(item_id)
        except NotFound:
            continue
        record = found.get("entry") or found["sources"][0]
        texts.append(record["text"])
        retirement = record.get("retirement")
        if retirement:
            texts.append(retirement["reason"])
    return [t for t in texts if t and t != MARKER]


def carry_out(plan):
    """Forget as planned; the report `om forget` prints.

    In a store that syncs (om sync), under its sync lock (a running sync is
    waited for): a rewritten own ledger makes every remote republish without
    history at the next sync, and a rewritten mirror appends a tombstone per
    record for the next sync to publish (om.sync.tombstones).
    """
    from om.sync import config as sync_config

    config = sync_config.load(plan.store) if os.path.isdir(os.path.join(plan.store, "sync")) else None
    if config is None:
        return _carry_out(plan, None)
    with sync_config.lock(plan.store, sync_config.FORGET_WAIT, "om sync is running in this store; forget waited"
                          " for it too long: rerun om forget"):
        return _carry_out(plan, config)


def _carry_out(plan, config):
    from om.export import discard
    from om.sessions.index import forget as unindex

    needles = raw_needles(plan.request.texts)
    changed, remaining = [], []
    for directory, session, _ in plan.sessions:
        with _open(directory) as ledger:
            summary = ledger.forget(plan.request)
            if summary["occurrences"] or _holds(directory, needles):
                ledger.compact()
        if summary["occurrences"]:
            changed.append(dict(session=session, **summary))
        remaining += _holding(directory, needles)
    mirrored, tombs = [], []
    for directory, session, _, origin in plan.mirrors:
        from om.sync.tombstones import for_change

        with _open(directory) as ledger:
            summary = ledger.forget(plan.request)
            rewrites = list(plan.request.changes)
            if summary["occurrences"] or _holds(directory, needles):
                ledger.compact()
        if summary["occurrences"]:
            mirrored.append(dict(session=session, writer=origin["writer"], label=origin["label"], **summary))
        tombs += [for_change(origin["writer"], session, item, field, old, new)
                  for item, field, old, new in rewrites]
        remaining += _holding(directory, needles)
    report = {"store": plan.store, "dry_run": False, "marker": MARKER, "sessions": changed}
    if config is not None:
        from om.sync import config as sync_config
        from om.sync.tombstones import append

        append(plan.store, tombs)
        if changed:
            sync_config.mark_rewrite(plan.store, config)
        report["sync"] = {"mirrors": mirrored, "tombstones": len(tombs), "republish": bool(changed)}
    # The store index (derived, beside the sessions) keeps their words: it drops what it read of them.
    unindex(plan.store, [session for _, session, _ in plan.sessions])
    scanned = {directory for directory, _, _ in plan.sessions} | {m[0] for m in plan.mirrors}
    remaining += _store_files(plan.store, needles, plan.all_sessions, scanned)
    removed = discard(plan.exports)
    report.update(exports_removed=removed, remaining=sorted(remaining), skipped=plan.skipped)
    return report


def dry_run(plan):
    report = {"store": plan.store, "dry_run": True, "marker": MARKER, "sessions": plan.changes(),
              "exports_removed": plan.exports, "remaining": [], "skipped": plan.skipped}
    if plan.mirrors:
        report["sync"] = {"mirrors": plan.mirror_changes()}
    return report


def notices(report):
    """The stderr lines of a report: what was skipped or still holds the text, and what om cannot reach."""
    lines = [f"om: skipped {item['directory']}: {item['error']}" for item in report["skipped"]]
    lines += [f"om: the forgotten text still occurs in {path} (not text forget rewrites: a session id, a"
              " meta value or a file om does not own)" for path in report["remaining"]]
    if not report["dry_run"]:
        sync = report.get("sync")
        if sync is not None and (sync["tombstones"] or sync["republish"]):
            lines.append(f"om: this store syncs: om --store {report['store']} sync publishes this forget; copies"
                         " already pushed stay on the remote until its own gc, and on machines that never sync"
                         " again: rotate a leaked secret")
        lines.append(NOT_CHANGED)
    return lines


# -- raw bytes ----------------------------------------------------------------------


def raw_needles(texts):
    """The byte strings under which a literal can sit in a file om writes (see the module docstring)."""
    from om.jsonio import dumps

    found = set()
    for text in texts:
        once = dumps(text)[1:-1]
        for form in (text, once, dumps(once)[1:-1]):
            found.add(form.encode("utf-8", "surrogatepass"))
    return sorted(found, key=len, reverse=True)


def _file_holds(path, needles):
    if not needles:
        return False
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return False
    return any(n in data for n in needles)


def _files(directory):
    """Every regular file under `directory`, links not followed."""
    for root, dirs, names in os.walk(directory):
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
        for name in names:
            path = os.path.join(root, name)
            if os.path.isfile(path) and not os.path.islink(path):
                yield path


def _holding(directory, needles):
    return [path for path in _files(directory) if _file_holds(path, needles)]


def _holds(directory, needles):
    return bool(needles) and bool(_holding(directory, needles))


def _store_files(store, needles, all_sessions, scanned):
    """Clean what lies outside the session directories already `scanned`; the files still holding a needle.

    With `all_sessions` the other session directories count too (a damaged one
    forget could not rewrite is reported here); without, they are out of scope.
    """
    from om.adapter import LOG_NAME
    from om.sessions.catalogue import DIR_PREFIX
    from om.sessions.removal import sweep_removed
    from om.store import sweep_staging

    sweep_removed(store)
    sweep_staging(store)
    log = os.path.join(store, LOG_NAME)
    if _file_holds(log, needles):
        _scrub_log(log, needles)
    remaining = []
    for name in sorted(os.listdir(store)):
        path = os.path.join(store, name)
        if path in scanned or name.startswith(DIR_PREFIX) and not all_sessions:
            continue
        if os.path.isdir(path) and not os.path.islink(path):
            remaining += _holding(path, needles)
        elif _file_holds(path, needles):
            remaining.append(path)
    return remaining


def _scrub_log(path, needles):
    """Rewrite `hook-errors.log` without the lines holding a needle (atomically)."""
    from om.store import write_atomically

    try:
        with open(path, "rb") as f:
            lines = f.read().splitlines(keepends=True)
        write_atomically(path, b"".join(line for line in lines if not any(n in line for n in needles)), 0o600)
    except OSError as e:
        raise StoreError(f"om: cannot rewrite {path}: {e.strerror or e}") from None
