"""What each command does: its `_add_<verb>` (the command's own arguments) and `_run_<verb>`.

The table of commands and the reading of a command line are om.commands; the
handlers are here, grouped by what they act on: one session's ledger, the
store's sessions, the runtime and its clients, after what they all share.

Invariants:
- A handler returns a `Reply` (stdout text, exit status, notice lines for
  stderr) or raises om.errors.OmError; it never prints or exits (om.cli does).
- Each handler imports the modules it needs when it runs: loading this module
  costs a command line little beyond its own text.
- There is no implicit store: `--store`, else OBSERVATIONAL_MEMORY_STORE, else a
  usage error naming the stores that exist as the exact argument. A reading
  command creates nothing (`_read`: Ledger.read) and says so in a notice.
- What removes or forgets for good asks first (`_confirm`) unless given -y; the
  hook and the MCP server own their output.
"""

import os
import sys

from om import CLIENTS, STORE_ENV, __version__
from om.errors import NotFound, OmError, UsageError

# -- what every handler shares: the scope of the command line, stdin, the Reply --------


class Reply:
    """What a handler asks `main` to print: `text` on stdout, each of `notices` as a stderr line.

    `notice` is one line, several, or None. `json` says `text` is one JSON document
    (compact, as v1 prints it); `pretty` (the command line's `--pretty`) asks for it
    indented, as `main` also gives it on a terminal.
    """

    __slots__ = ("text", "code", "notices", "json", "pretty")

    def __init__(self, text=None, code=0, notice=None, json=False):
        self.text, self.code, self.json, self.pretty = text, code, json, False
        self.notices = () if notice is None else (notice,) if isinstance(notice, str) else tuple(notice)


def _store_path(args):
    store = args.store if args.store is not None else os.environ.get(STORE_ENV)
    if not store:
        raise UsageError(f"om: --store is required (or set {STORE_ENV}=DIR); " + _stores_here())
    return store


def _stores_here():
    """The stores of this user's clients that exist, each as the exact argument (there is no implicit store)."""
    from om.fastpath import shell_quote
    from om.location import CLIENTS, client_store, display_name, has_sessions, plugin_data_dir

    found, missing = [], []
    for client in CLIENTS:
        store, data = client_store(client), plugin_data_dir(client)
        if os.path.isdir(store):
            found.append(f"--store {shell_quote(store)} ({display_name(client)})")
        elif has_sessions(data):
            found.append(f"--store {shell_quote(data)} ({display_name(client)}, where an earlier version kept it;"
                         " its next hook moves it)")
        else:
            missing.append(f"{display_name(client)}'s would be {store}")
    if found:
        return "the stores here: " + ", ".join(found)
    return "no client store exists yet (" + "; ".join(missing) + ")"


def _session(args):
    if args.session is None:
        raise UsageError("om: --session is required for this command")
    return args.session


def _json_out(value):
    from om.jsonio import dumps

    return dumps(value) + "\n"


def _json(value, notice=None):
    return Reply(_json_out(value), notice=notice, json=True)


def _read_stdin():
    from om.jsonio import decode_input, read_stdin_limited

    return decode_input(read_stdin_limited(sys.stdin.buffer))


def _open(args):
    from om.ledger import Ledger

    return Ledger.open(_store_path(args), _session(args))


def _existing(args):
    """The session's ledger for a write that must not begin a session (om.views.existing)."""
    from om.views import existing

    return existing(_store_path(args), _session(args))


def _read(args):
    """The session's ledger for a reading command: nothing is created when there is none (Ledger.read)."""
    from om.ledger import Ledger

    return Ledger.read(_store_path(args), _session(args))


def _never_captured(ledger):
    """The notice for a session id under which this store holds no evidence, else None."""
    if ledger.absent:
        return _absent(ledger)
    if ledger.has_sources():
        return None
    from om.render import never_captured_notice

    return never_captured_notice(ledger.session, ledger.store, hint=True)


def _absent(ledger):
    """The notice of a reading command that found no ledger (and created none), else None."""
    if not ledger.absent:
        return None
    from om.render import no_ledger_notice

    return no_ledger_notice(ledger.session, ledger.store, os.path.isdir(ledger.store))


def _skipped(report):
    # Sessions that could not be read are named on stderr; the rest of the report stands.
    return [f"om: skipped {item['directory']}: {item['error']}" for item in report["skipped"]]


# -- one session's ledger: capture, pending, apply, status, prime, view, recall, pause, resume,
#    fork, import, search -----------------------------------------------------------------


def _add_capture(p):
    import argparse

    from om.schema import CAPTURE

    # The fields as om.schema describes them (the one description the MCP schema uses too).
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = "stdin fields:\n" + "\n".join(f"  {f.name:5} {f.description}" for f in CAPTURE.fields.values()) + (
        "\nThe same kind, key and text again is the same source: a no-op that prints its id.")


def _run_capture(args):
    from om.schema import CAPTURE, validate

    request = validate(CAPTURE, _read_stdin())  # before opening: a rejected capture creates no ledger
    with _open(args) as ledger:
        return _json({"source_id": ledger.capture(**request)})


def _run_pending(args):
    with _read(args) as ledger:
        return _json(ledger.pending(), notice=_absent(ledger))


def _run_apply(args):
    from om.project.memory import apply_checkpoint
    from om.schema import CHECKPOINT, validate

    checkpoint = validate(CHECKPOINT, _read_stdin())
    with _existing(args) as ledger:
        return _json(apply_checkpoint(ledger, checkpoint))


def _run_status(args):
    from om.project.memory import status_of

    with _read(args) as ledger:
        return _json(status_of(ledger), notice=_absent(ledger))


def _run_prime(args):
    from om.views import prime_text

    with _read(args) as ledger:
        return Reply(prime_text(ledger), notice=_never_captured(ledger))


def _add_view(p):
    p.add_argument("--all", action="store_true", help="JSON of every entry, active and retired")


def _run_view(args):
    with _read(args) as ledger:
        if args.all:
            return _json(ledger.entries(), notice=_never_captured(ledger))
        from om.views import view_text

        return Reply(view_text(ledger), notice=_never_captured(ledger))


def _add_recall(p):
    p.add_argument("id")


def _run_recall(args):
    from om.project.memory import recall

    with _read(args) as ledger:
        try:
            return _json(recall(ledger, args.id))
        except NotFound as e:
            notice = _never_captured(ledger)
            if notice is None:
                raise
            raise NotFound(f"{e}; {notice[len('om: '):]}") from None


def _run_pause(args):
    with _existing(args) as ledger:
        return _json(ledger.set_paused(True))


def _run_resume(args):
    with _existing(args) as ledger:
        return _json(ledger.set_paused(False))


def _add_fork(p):
    p.add_argument("--to-session", required=True)


def _run_fork(args):
    from om.transfer import fork

    return _json(fork(_store_path(args), _session(args), args.to_session))


def _add_import(p):
    p.add_argument("--from-store", help="the store holding the session to import (with --from-session)")
    p.add_argument("--from-session", help="the session to import")
    p.add_argument("--from-mirror", metavar="WRITER/SESSION",
                   help="a session another machine published (om sync): its writer's id or label, then its id")


def _run_import(args):
    from om.transfer import import_session

    if args.from_mirror is not None:
        if args.from_store is not None or args.from_session is not None:
            raise UsageError("om: import takes --from-mirror, or --from-store and --from-session")
        writer, slash, session = args.from_mirror.partition("/")
        if not slash or not writer or not session:
            raise UsageError("om: import --from-mirror takes WRITER/SESSION (om sessions lists the mirrors)")
        from om.sync.readers import writer_folder

        store = _store_path(args)
        return _json(import_session(store, _session(args), writer_folder(store, writer), session))
    if args.from_store is None or args.from_session is None:
        raise UsageError("om: import needs --from-store and --from-session (or --from-mirror WRITER/SESSION)")
    return _json(import_session(_store_path(args), _session(args), args.from_store, args.from_session))


def _add_promote(p):
    p.add_argument("id", nargs="+", help="entries (o-... or r-...) of this session")
    p.add_argument("--reason", help="why it outlives this task (kept with the entry)")
    p.add_argument("--project", metavar="DIR", help="the project holding DIR (default: the one the session's hooks recorded)")


def _run_promote(args):
    from om.project.memory import promote

    with _open(args) as ledger:
        return _json(promote(ledger, args.id, args.reason, args.project))


def _add_project(p):
    from argparse import SUPPRESS

    p.add_argument("--project", metavar="DIR", help="any directory inside the project (default: this one)")
    p.add_argument("--json", action="store_true", help="name the project as JSON")
    verbs = p.add_subparsers(dest="verb", metavar="view|retire")
    view = verbs.add_parser("view", help="the project memory, quoted (--all: every entry as JSON, retired too)")
    view.add_argument("--all", action="store_true", help="JSON of every entry, with its provenance")
    view.add_argument("--json", dest="view_json", action="store_true", help="the active entries as JSON")
    retire = verbs.add_parser("retire", help="retire a project entry, keeping its history")
    retire.add_argument("id")
    retire.add_argument("--reason", required=True)
    retire.add_argument("--replacement", action="append", default=[], metavar="ID",
                        help="a newer entry that replaces it (of the project, or of --session, promoted with it)")
    for verb in (view, retire):
        # `--project` after the verb too; SUPPRESS keeps the value given before it when none comes after.
        verb.add_argument("--project", metavar="DIR", default=SUPPRESS, help="as before the verb")


def _run_project(args):
    from om.project import verbs

    directory = args.project if args.project is not None else os.getcwd()
    verb = getattr(args, "verb", None)
    if verb == "retire":
        if args.session is not None:
            with _open(args) as ledger:
                return _json(verbs.retire(directory, args, ledger))
        return _json(verbs.retire(directory, args, None))
    if verb == "view":
        store = args.store if args.store is not None else os.environ.get(STORE_ENV)
        text, value = verbs.view(directory, args.all or args.view_json, args.all, store)
        return Reply(text) if value is None else _json(value)
    text, value = verbs.name(directory)
    return _json(value) if args.json else Reply(text)


def _add_search(p):
    p.add_argument("query", nargs="+", help="natural-language words")
    p.add_argument("--sources", action="store_true", help="include captured evidence")
    p.add_argument("--include-retired", action="store_true", help="include retired memories")
    p.add_argument("--limit", type=int, default=10, help="at most N results (1 to 100, default 10)")
    p.add_argument("--all-sessions", action="store_true", help="search every session of the store in one list")
    p.add_argument("--project", help="with --all-sessions: only sessions of the project holding DIR")


def _run_search(args):
    if args.all_sessions or args.project is not None:
        return _search_all(args)
    from om.project.search import search_session

    with _read(args) as ledger:
        result = search_session(ledger, " ".join(args.query), args.sources, args.include_retired, args.limit)
        notices = _skipped(result) if "skipped" in result else []
        never = _never_captured(ledger)
        return _json(result, notice=notices + [never] if never else notices)


def _search_all(args):
    from om.sessions.crosssearch import search_all

    if not args.all_sessions:
        raise UsageError("om: search --project goes with --all-sessions")
    found = search_all(_store_path(args), " ".join(args.query), args.sources, args.include_retired, args.limit,
                       args.project, progress=sys.stderr)
    return _json(found, notice=_skipped(found))


# -- the store's sessions: sessions, forget, export, ingest --------------------------------


def _add_sessions(p):
    p.add_argument("--project", help="only sessions of the project holding DIR")
    p.add_argument("--json", action="store_true", help="print the listing as one JSON document")
    p.add_argument("--remove", metavar="ID", help="delete session ID from the store for good")
    p.add_argument("--prune", action="store_true", help="delete the sessions inactive for --inactive-for DAYS")
    p.add_argument("--inactive-for", metavar="DAYS", type=_whole_number, help="with --prune: days without activity")
    p.add_argument("--dry-run", action="store_true", help="with --prune: list what would be deleted")
    p.add_argument("-y", "--yes", action="store_true", help="with --remove or --prune: do not ask for confirmation")


def _whole_number(value):
    # Not type=int: argparse's "invalid int value" would be a second message and exit code for
    # what the handler refuses itself (65, `om:`) when the number is no good. Past 300,000 days
    # (about 800 years: no session is older) the cutoff would leave the four-digit years that
    # timestamps compare by, or the platform's time range.
    return min(int(value), 300_000) if value.isascii() and value.isdigit() else value


def _run_sessions(args):
    from om.sessions import listing, removal

    if args.prune:
        return _prune(args)
    if args.inactive_for is not None or args.dry_run:
        raise UsageError("om: sessions: --inactive-for and --dry-run go with --prune")
    if args.remove is None:
        if args.yes:
            raise UsageError("om: sessions: -y goes with --remove ID or --prune")
        text, skipped = listing.listing_text(_store_path(args), args.project, args.json, progress=sys.stderr)
        return Reply(text, notice=_skipped({"skipped": skipped}), json=args.json)
    if args.project is not None or args.json:
        raise UsageError("om: sessions --remove takes no --project or --json")
    store, directory, what = removal.describe(_store_path(args), args.remove)
    _confirm(f"om: remove {what} from {store} for good?", args.yes, "removing a session")
    return _json(removal.remove_session(store, directory, args.remove))


def _confirm(question, yes, what):
    from om.selfupdate.command import confirm

    confirm(question, yes, sys.stdin, sys.stderr, f"om: {what} needs confirmation; rerun with -y")


def _prune(args):
    from om.sessions import catalogue, removal

    if args.remove is not None or args.json:
        raise UsageError("om: sessions --prune takes no --remove or --json")
    if args.inactive_for is None:
        raise UsageError("om: sessions --prune needs --inactive-for DAYS")
    store, cutoff, rows, skipped = removal.inactive(_store_path(args), args.inactive_for, args.project)
    notice = _skipped({"skipped": skipped})
    if not args.dry_run:
        removal.sweep_removed(store)  # what a killed removal left: each was one rename, so cleanup only
    if args.dry_run or not rows:
        return _json({"store": store, "before": cutoff, "dry_run": args.dry_run, "pruned": rows, "in_use": [],
                      "active": [], "skipped": skipped}, notice=notice)
    names = ", ".join(catalogue.printable(row["session"]) for row in rows[:5]) + (", ..." if len(rows) > 5 else "")
    _confirm(f"om: remove {len(rows)} session(s) inactive since before {cutoff} ({names}) from {store} for good?",
             args.yes, "pruning sessions")
    report = removal.prune(store, rows, cutoff)
    notice += [f"om: kept {session}: in use by another process" for session in report["in_use"]]
    return _json(dict(report, dry_run=False, skipped=skipped), notice=notice)


def _add_forget(p):
    p.add_argument("--all-sessions", action="store_true", help="forget in every session of the store")
    p.add_argument("--text", action="append", metavar="LITERAL", help="every occurrence of LITERAL (repeatable)")
    p.add_argument("--source", action="append", metavar="ID", help="the whole text of source s-... (repeatable)")
    p.add_argument("--entry", action="append", metavar="ID", help="the whole text of entry o-/r-... (repeatable)")
    p.add_argument("--dry-run", action="store_true", help="list what would change (ids and counts), change nothing")
    p.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")


def _run_forget(args):
    from om import forget

    if args.all_sessions == (args.session is not None):
        raise UsageError("om: forget needs --session ID or --all-sessions (one of them)")
    request = forget.request(args.text, args.source, args.entry)
    plan = forget.prepare(_store_path(args), args.session, args.all_sessions, request)
    forget.refuse_unmatched(plan, args.dry_run)
    if args.dry_run:
        report = forget.dry_run(plan)
    else:
        _confirm(f"om: {plan.describe()}, for good?", args.yes, "forgetting")
        report = forget.carry_out(plan)
    return _json(report, notice=forget.notices(report))


def _add_sync(p):
    p.add_argument("--remote", dest="sync_remote", metavar="NAME", help="sync only this remote (default: every one)")
    verbs = p.add_subparsers(dest="verb", metavar="init|status|forget-writer")
    init = verbs.add_parser("init", help="share this store's memory through a git remote or a folder (asks first)")
    init.add_argument("--remote", dest="init_remote", metavar="URL|origin",
                      help="a git URL (a private memory repository), or origin: the project's own remote")
    init.add_argument("--folder", metavar="DIR", help="a folder a file-sync tool or a USB stick carries (git bundles)")
    init.add_argument("--share", choices=["all", "entries"],
                      help="all: evidence too (default for a URL or folder); entries: distilled memory only"
                           " (default for origin)")
    init.add_argument("--project", metavar="DIR", help="only the sessions and project memory of the project holding DIR")
    init.add_argument("--label", metavar="NAME", help="how other machines name this one (default: none)")
    init.add_argument("--hold", metavar="DURATION", help="publish only records older than this (0, 90s, 30m, 1h, 2d)")
    init.add_argument("--name", metavar="NAME", help="the remote's name in this store (default: origin, memory or folder)")
    init.add_argument("--new-identity", action="store_true",
                      help="publish under a new writer id (a store copied from another machine or image)")
    init.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    status = verbs.add_parser("status", help="last sync per remote, what waits to go out, tombstones, writers seen")
    status.add_argument("--json", action="store_true", help="print the status as one JSON document")
    forget = verbs.add_parser("forget-writer", help="hide a lost machine's memory everywhere and remove its ref")
    forget.add_argument("writer", metavar="ID")


class _InitArgs:
    def __init__(self, args):
        self.remote, self.folder, self.share = args.init_remote, args.folder, args.share
        self.project, self.label, self.hold, self.name = args.project, args.label, args.hold, args.name
        self.new_identity = args.new_identity


def _run_sync(args):
    from om.sync import verbs

    verb = getattr(args, "verb", None)
    store = _store_path(args)
    if verb is not None and args.sync_remote is not None:
        raise UsageError("om: sync --remote NAME goes with om sync itself (use sync init --remote URL)")
    if verb == "init":
        receipt = verbs.init(store, _InitArgs(args), lambda question: _confirm(question, args.yes, "om sync init"))
        # Asked on a terminal, or said here when -y answered for the user.
        return _json(receipt, notice=f"om: {receipt['publishes']}" if args.yes and "publishes" in receipt else None)
    if verb == "status":
        from om.sync import status

        doc = status.report(store)
        return _json(doc) if args.json else Reply(status.render(doc))
    if verb == "forget-writer":
        receipt, notices = verbs.forget_writer(store, args.writer)
        return _json(receipt, notice=notices)
    receipt, notices, errors = verbs.sync(store, args.sync_remote)
    if errors and not receipt["remotes"]:
        if len(errors) == 1:
            raise errors[0]
        notices += [str(e) for e in errors[1:]]
        return Reply(None, max(e.exit_code for e in errors), notice=[str(errors[0])] + notices)
    reply = _json(receipt, notice=notices + [str(e) for e in errors])
    reply.code = max((e.exit_code for e in errors), default=0)
    return reply


def _add_export(p):
    p.add_argument("--format", required=True, choices=["md", "json", "html"], help="document format")
    p.add_argument("--out", metavar="PATH", help="write the document to PATH (atomically, 0600) instead of stdout")
    p.add_argument("--all-sessions", action="store_true", help="every session of the store, with an index")


def _run_export(args):
    from om.export import run as export

    session = None if args.all_sessions else _session(args)
    text, notice = export(_store_path(args), session, args.format, args.out, args.all_sessions)
    return Reply(text, notice=notice)


def _add_ingest(p):
    p.add_argument("--client", required=True, choices=list(CLIENTS), help="whose transcripts to read")
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="transcript files or folders (default: the client's own transcript folder)")
    p.add_argument("--project", metavar="DIR", help="only sessions of the project holding DIR")
    p.add_argument("--since", metavar="YYYY-MM-DD", help="only transcripts modified on or after that day")
    p.add_argument("--dry-run", action="store_true", help="report what would be captured; write nothing")
    p.add_argument("--json", action="store_true", help="print the report as one JSON document")


def _run_ingest(args):
    from om.ingest import render, run

    report = run(_store_path(args), args.client, args.paths, args.session, args.project, args.since, args.dry_run)
    notices = [f"om: could not read {item['transcript']}: {item['error']}" for item in report["unreadable"]]
    return Reply(_json_out(report) if args.json else render(report), notice=notices, json=args.json)


# -- the runtime and its clients: capabilities, check-compatibility, doctor, mcp, hook, self --


def _run_capabilities(args):
    from om import LEDGER_SCHEMA, PROTOCOL_VERSION

    return _json(
        {"version": __version__, "protocol_version": PROTOCOL_VERSION, "ledger_schema": LEDGER_SCHEMA,
         "clients": list(CLIENTS)}
    )


def _add_check_compatibility(p):
    p.add_argument("--protocol", required=True)
    p.add_argument("--client", required=True)


def _run_check_compatibility(args):
    from om import PROTOCOL_VERSION

    if not (args.protocol.strip() == str(PROTOCOL_VERSION) and args.client in CLIENTS):
        raise OmError(
            f"om: incompatible: protocol {args.protocol!r} for client {args.client!r} "
            f"(this runtime speaks protocol {PROTOCOL_VERSION} for {', '.join(CLIENTS)})"
        )
    return _json({"compatible": True})


def _add_doctor(p):
    p.add_argument("--json", action="store_true", help="print the findings as JSON")


def _run_doctor(args):
    from om.doctor import diagnose, render

    report = diagnose(args.store or os.environ.get(STORE_ENV))
    text = _json_out(report) if args.json else render(report)
    return Reply(text, 1 if report["status"] == "fail" else 0, json=args.json)


def _add_mcp(p):
    p.add_argument("--client", choices=list(CLIENTS), help="the client that starts this server (with --plugin-data)")
    _add_plugin_data(p)


def _run_mcp(args):
    from om.mcp import serve

    if args.plugin_data is not None and args.store is not None:
        raise UsageError("om: mcp takes --store or --plugin-data, not both")
    # The server owns stdout (protocol only) until end of input.
    serve(args.store, sys.stdin.buffer, sys.stdout.buffer, client=args.client, plugin_data=args.plugin_data)
    return Reply()


def _add_hook(p):
    p.add_argument("--client", required=True, choices=list(CLIENTS))
    _add_plugin_data(p)


def _add_plugin_data(p):
    p.add_argument("--plugin-data", metavar="DIR",
                   help="the data folder the client gives the om plugin: the store is then the client's own "
                        "(CODEX_HOME/om, CLAUDE_CONFIG_DIR/om), moved there from DIR once")


def _run_hook(args):
    from om.adapter import run_client_hook

    if args.plugin_data is not None and args.store is not None:
        raise UsageError("om: hook takes --store or --plugin-data, not both")
    store = None if args.plugin_data is not None else _store_path(args)
    # The hook owns its own output and never raises past this point.
    return Reply(run_client_hook(args.client, sys.stdin.buffer, sys.stderr, store, args.plugin_data))


def _add_self(s):
    # `om self ...` (standalone distribution); its module is imported only when run.
    ss = s.add_subparsers(dest="self_command", metavar="SUBCOMMAND", parser_class=type(s))
    u = ss.add_parser("update", help="update to the newest release of the channel")
    u.add_argument("--check", action="store_true", help="only check: exit 100 when an update exists")
    u.add_argument("--force", action="store_true", help="reinstall, or move back to an older release")
    u.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    c = ss.add_parser("channel", help="print or set the update channel")
    c.add_argument("channel", nargs="?", choices=["stable", "rc", "nightly"])
    c.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    ss.add_parser("rollback", help="switch back to the previously installed version")
    ss.add_parser("install", help="install the running zipapp as the `om` command")
    un = ss.add_parser("uninstall", help="remove the standalone om (launcher, versions, settings, shiv's unpacked "
                                         "copies); the memory stays")
    un.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")


def _run_self(args):
    from om.selfupdate.command import run

    return Reply(run(args, sys.stdin, sys.stderr))
