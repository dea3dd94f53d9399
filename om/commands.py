"""The table of commands: each command's arguments and handler, and the parser built from them.

Invariants:
- The commands are the table `COMMANDS`: one `Command(name, help, add, run)`
  each, where `add(parser)` declares the command's own arguments (or is None)
  and `run(args)` handles it. Adding a command is one entry plus its handler.
- Handlers return a `Reply` (stdout text, exit status, notice lines for
  stderr) or raise `om.errors.OmError`; they never print or exit themselves:
  `om.cli.main` is the one boundary that prints and exits.
- `--store` and `--session` may stand before or after the command word (v1
  accepted both), once each: the same option with two different values is a
  usage error.
- A command line pays only for its own command. The plainest ones (the scope
  options spelled exactly, a command word, and none of the command's own
  options, or only its positionals: a row's `plain`) are read without argparse
  into the namespace argparse would build; any other line builds the top-level
  parser plus only the named command's subparser, or every subparser when no
  command word can be told for sure (`om --help`, an unknown or misplaced word),
  so help, messages and exit codes are argparse's own whichever way is taken.
- Handlers import their modules lazily; this module is not on the hook's path
  (`om.cli` handles the registered hook command without it).
"""

import os
import sys

from om import CLIENTS, STORE_ENV, __version__
from om.errors import NotFound, OmError, UsageError


class Reply:
    """What a handler asks `main` to print: `text` on stdout, each of `notices` as a stderr line.

    `notice` is one line, several, or None.
    """

    __slots__ = ("text", "code", "notices")

    def __init__(self, text=None, code=0, notice=None):
        self.text, self.code = text, code
        self.notices = () if notice is None else (notice,) if isinstance(notice, str) else tuple(notice)


class Command:
    """One row of `COMMANDS`: its name and help, `add(parser)` for its own arguments, `run(args)`.

    `plain` is how the command reads when given none of its own options:
    `(positional names, {dest: default of each option})`, where a name ending
    in `+` takes one or more words (argparse's `nargs="+"`, read as a list). A
    command without arguments has `((), {})`; None (the default for one with
    arguments) sends every line of that command through argparse.
    """

    __slots__ = ("name", "help", "add", "run", "plain")

    def __init__(self, name, help_, add, run, plain=None):
        self.name, self.help, self.add, self.run = name, help_, add, run
        self.plain = ((), {}) if add is None else plain


# -- shared pieces of the handlers ------------------------------------------------


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
    return Reply(_json_out(value), notice=notice)


def _read_stdin():
    from om.jsonio import decode_input, read_stdin_limited

    return decode_input(read_stdin_limited(sys.stdin.buffer))


def _open(args):
    from om.ledger import Ledger

    return Ledger.open(_store_path(args), _session(args))


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

    return never_captured_notice(ledger.session, ledger.store)


def _absent(ledger):
    """The notice of a reading command that found no ledger (and created none), else None."""
    if not ledger.absent:
        return None
    from om.render import no_ledger_notice

    return no_ledger_notice(ledger.session, ledger.store, os.path.isdir(ledger.store))


# -- the commands: one `_add_<verb>` (its arguments) and one `_run_<verb>` each -------


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
    from om.schema import CHECKPOINT, validate

    checkpoint = validate(CHECKPOINT, _read_stdin())
    with _open(args) as ledger:
        return _json(ledger.apply(checkpoint))


def _run_status(args):
    with _read(args) as ledger:
        return _json(ledger.status(), notice=_absent(ledger))


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
    with _read(args) as ledger:
        try:
            return _json(ledger.recall(args.id))
        except NotFound as e:
            notice = _never_captured(ledger)
            if notice is None:
                raise
            raise NotFound(f"{e}; {notice[len('om: '):]}") from None


def _run_pause(args):
    with _open(args) as ledger:
        return _json(ledger.set_paused(True))


def _run_resume(args):
    with _open(args) as ledger:
        return _json(ledger.set_paused(False))


def _add_fork(p):
    p.add_argument("--to-session", required=True)


def _run_fork(args):
    from om.transfer import fork

    return _json(fork(_store_path(args), _session(args), args.to_session))


def _add_import(p):
    p.add_argument("--from-store", required=True)
    p.add_argument("--from-session", required=True)


def _run_import(args):
    from om.transfer import import_session

    return _json(import_session(_store_path(args), _session(args), args.from_store, args.from_session))


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
    from om.search import search

    with _read(args) as ledger:
        result = search(ledger, " ".join(args.query), args.sources, args.include_retired, args.limit)
        return _json(result, notice=_never_captured(ledger))


def _search_all(args):
    from om.sessions.crosssearch import search_all

    if not args.all_sessions:
        raise UsageError("om: search --project goes with --all-sessions")
    found = search_all(_store_path(args), " ".join(args.query), args.sources, args.include_retired, args.limit,
                       args.project, progress=sys.stderr)
    return _json(found, notice=_skipped(found))


def _add_sessions(p):
    p.add_argument("--project", help="only sessions of the project holding DIR")
    p.add_argument("--json", action="store_true", help="print the listing as one JSON document")
    p.add_argument("--remove", metavar="ID", help="delete session ID from the store for good")
    p.add_argument("--prune", action="store_true", help="delete the sessions inactive for --inactive-for DAYS")
    p.add_argument("--inactive-for", metavar="DAYS", type=int, help="with --prune: days without activity")
    p.add_argument("--dry-run", action="store_true", help="with --prune: list what would be deleted")
    p.add_argument("-y", "--yes", action="store_true", help="with --remove or --prune: do not ask for confirmation")


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
        return Reply(text, notice=_skipped({"skipped": skipped}))
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
    if args.dry_run:
        report = forget.dry_run(plan)
    else:
        _confirm(f"om: {plan.describe()}, for good?", args.yes, "forgetting")
        report = forget.carry_out(plan)
    return _json(report, notice=forget.notices(report))


def _skipped(report):
    # Sessions that could not be read are named on stderr; the rest of the report stands.
    return [f"om: skipped {item['directory']}: {item['error']}" for item in report["skipped"]]


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
    return Reply(_json_out(report) if args.json else render(report), notice=notices)


def _add_doctor(p):
    p.add_argument("--json", action="store_true", help="print the findings as JSON")


def _run_doctor(args):
    from om.doctor import diagnose, render

    report = diagnose(args.store or os.environ.get(STORE_ENV))
    text = _json_out(report) if args.json else render(report)
    return Reply(text, 1 if report["status"] == "fail" else 0)


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


#: Every command, in the order `om --help` lists them.
COMMANDS = (
    Command("capabilities", "print version, protocol and clients as JSON (no store)", None, _run_capabilities),
    Command("check-compatibility", "exit 0 when this runtime speaks a protocol for a client",
            _add_check_compatibility, _run_check_compatibility),
    Command("capture", "record one source read as {kind,text,key} JSON on stdin", _add_capture, _run_capture,
            ((), {})),
    Command("pending", "print evidence not yet covered by a checkpoint", None, _run_pending),
    Command("apply", "apply a checkpoint read as JSON on stdin", None, _run_apply),
    Command("status", "print the session's ledger status", None, _run_status),
    Command("prime", "print prepared memory for a fresh context", None, _run_prime),
    Command("view", "print quoted active memory (at most 12,000 bytes)", _add_view, _run_view,
            ((), {"all": False})),
    Command("recall", "print an entry or source with its evidence", _add_recall, _run_recall, (("id",), {})),
    Command("pause", "pause automatic capture by client adapters", None, _run_pause),
    Command("resume", "resume automatic capture", None, _run_resume),
    Command("fork", "copy this session's ledger into a new session", _add_fork, _run_fork),
    Command("import", "import another session's memory into this uncheckpointed session",
            _add_import, _run_import),
    Command("search", "print memories (and with --sources, evidence) matching words, ranked, as JSON",
            _add_search, _run_search, (("query+",), {"sources": False, "include_retired": False, "limit": 10,
                                                      "all_sessions": False, "project": None})),
    Command("sessions", "list the store's sessions, most recent first, or remove one or the inactive ones",
            _add_sessions, _run_sessions,
            ((), {"project": None, "json": False, "remove": None, "prune": False, "inactive_for": None,
                  "dry_run": False, "yes": False})),
    Command("forget", "take text out of memory for good: literals, or sources and entries by id", _add_forget,
            _run_forget),
    Command("export", "write memory as Markdown, JSON or a self-contained HTML browser (read-only)",
            _add_export, _run_export),
    Command("ingest", "capture what the hooks missed from a client's transcripts (Codex rollouts, Claude Code "
            "transcripts), with the hooks' own source ids", _add_ingest, _run_ingest),
    Command("doctor", "check the runtime, the stores, and each client om is set up in (Codex, Claude Code): "
            f"plugin, hooks, MCP server, capture (also checks --store or ${STORE_ENV})", _add_doctor, _run_doctor,
            ((), {"json": False})),
    Command("mcp", "serve the ledger as MCP tools over stdio (JSON-RPC 2.0, one message a line; store: "
            f"--store, the client's store for --plugin-data, ${STORE_ENV}, else the store of the installed "
            "plugin it runs from)", _add_mcp, _run_mcp, ((), {"client": None, "plugin_data": None})),
    Command("hook", "handle one client hook event on stdin (fails open)", _add_hook, _run_hook),
    Command("self", "update, switch channel, roll back, install or uninstall this standalone om", _add_self,
            _run_self),
)


# -- parsing ------------------------------------------------------------------------

_SCOPE = {"--store": "store", "--session": "session"}
#: The command that reads no store or session (and is always read by argparse): no --store or --session.
_UNSCOPED = ("self",)
#: Commands whose stderr is not the CLI's to add to (the hook's and the server's own).
_OWN_OUTPUT = ("hook", "mcp")
_BY_NAME = {command.name: command for command in COMMANDS}


class Args:
    """The namespace of a command line read without argparse (attributes as argparse's)."""

    def __init__(self, values):
        self.__dict__.update(values)


def _plain_token(token):
    # A token argparse can only read as a value or positional, never as an option.
    return bool(token) and not token.startswith("-")


def _scope_option(argv, i):
    """`(dest, value, next index)` for `--store V`, `--store=V` (or --session) at argv[i], else None."""
    name, eq, value = argv[i].partition("=")
    dest = _SCOPE.get(name)
    if dest is None:
        return None
    if not eq:
        if i + 1 == len(argv):
            return None
        i += 1
        value = argv[i]
    return (dest, value, i + 1) if _plain_token(value) else None


def _command_word(argv):
    """The command argparse will pick, when told for sure by the exact scope options before it; else None."""
    i = 0
    while i < len(argv):
        option = _scope_option(argv, i)
        if option is None:
            return argv[i] if argv[i] in _BY_NAME else None
        i = option[2]
    return None


def _scan(argv):
    """The namespace argparse would build for a plain command line (see `Command.plain`), else None.

    None for anything else: an option argparse must judge (help, abbreviations,
    values starting with `-`, an option given twice), a command without
    `plain`, or positionals that do not match; argparse then reads the line.
    """
    values = {"store": None, "session": None}
    command, positionals, suffix, runs, in_run = None, [], "", 0, False
    i = 0
    while i < len(argv):
        option = _scope_option(argv, i)
        if option is not None:
            dest, value, i = option
            if values.get(dest + suffix) is not None:
                return None  # given twice: argparse's Once decides
            values[dest + suffix] = value
            in_run = False
            continue
        token = argv[i]
        if command is None:
            command = _BY_NAME.get(token)
            if command is None or command.plain is None:
                return None
            values.update(store_after=None, session_after=None)
            suffix = "_after"
        elif _plain_token(token):
            runs += not in_run
            in_run = True
            positionals.append(token)
        else:
            return None
        i += 1
    # Positionals split by an option read differently in argparse (a list stops at the option).
    if command is None or runs > 1:
        return None
    names, defaults = command.plain
    if names and names[-1].endswith("+"):
        if len(positionals) < len(names):
            return None
        *fixed, rest = names
        positionals[len(fixed):] = [positionals[len(fixed):]]
        names = (*fixed, rest[:-1])
    if len(positionals) != len(names):
        return None
    values.update(defaults, command=command.name, **dict(zip(names, positionals)))
    return Args(values)


def _parser(only=None):
    """argparse's parser for the command line: every command's subparser, or only the one named `only`."""
    import argparse

    class Formatter(argparse.HelpFormatter):
        # argparse asks shutil for the width, and shutil imports zlib, bz2 and lzma (~1.5 ms).
        def __init__(self, prog, indent_increment=2, max_help_position=24, width=None, **more):
            width = _terminal_columns() - 2 if width is None else width
            super().__init__(prog, indent_increment, max_help_position, width, **more)

    class Parser(argparse.ArgumentParser):
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("formatter_class", Formatter)
            super().__init__(*args, **kwargs)

        # argparse exits 2 on bad usage, and Codex reads exit 2 as "block".
        def error(self, message):
            raise UsageError(f"{self.prog}: {message}")

    class Once(argparse.Action):
        """Store a value; the same option again with another value is a usage error."""

        def __call__(self, parser, namespace, values, option_string=None):
            previous = getattr(namespace, self.dest, None)
            if previous is not None and previous != values:
                raise UsageError(f"om: {option_string} is given twice with different values")
            setattr(namespace, self.dest, values)

    def scope(parser, suffix):
        # After the command word the values land in their own attributes: argparse
        # copies a subparser's whole namespace over its parent's.
        parser.add_argument("--store", dest="store" + suffix, metavar="STORE", action=Once,
                            help=f"store directory (default: ${STORE_ENV})")
        parser.add_argument("--session", dest="session" + suffix, metavar="SESSION", action=Once,
                            help="session identity")

    p = Parser(prog="om", description="Observational memory for coding agents.")
    p.add_argument("--version", action="version", version=f"om {__version__}")
    scope(p, "")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for command in COMMANDS:
        if only is not None and command.name != only:
            continue
        c = sub.add_parser(command.name, help=command.help, description=command.help)
        if command.name not in _UNSCOPED:
            scope(c, "_after")
        if command.add is not None:
            command.add(c)
    return p


def _terminal_columns():
    """`shutil.get_terminal_size().columns`, as argparse reads it, without importing shutil."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    stdout = sys.__stdout__
    if stdout is None:
        return 80
    try:
        columns = os.get_terminal_size(stdout.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return 80
    # A terminal reporting no width: Python 3.11 made shutil fall back to 80 there too.
    return columns or (80 if sys.version_info >= (3, 11) else 0)


def parse(argv):
    """The namespace of one command line; UsageError (or argparse's SystemExit for help) otherwise."""
    args = _scan(argv)
    if args is None:
        args = _parser(_command_word(argv)).parse_args(argv)
    return merge_scope(args)


def merge_scope(args):
    """`--store`/`--session` given before and after the command word become one value each."""
    for name in ("store", "session"):
        before, after = getattr(args, name), getattr(args, name + "_after", None)
        if before is not None and after is not None and before != after:
            raise UsageError(f"om: --{name} is given twice with different values")
        setattr(args, name, after if after is not None else before)
    return args


def dispatch(args):
    """Run the command `args` names: its handler's Reply, which also says when the command made a new store."""
    command = _BY_NAME.get(args.command)
    if command is None:
        raise UsageError("om: a command is required (see om --help)")
    given = args.store if args.store is not None else os.environ.get(STORE_ENV)
    if not given or command.name in _OWN_OUTPUT:
        return command.run(args)
    from om.store import canonical_store

    store = canonical_store(given)
    existed = os.path.lexists(store)
    reply = command.run(args)
    if not existed and os.path.isdir(store):
        # A store nobody meant, often: a relative --store run from another directory.
        where = "" if os.path.isabs(os.path.expanduser(given)) else f" (--store {given} from {os.getcwd()})"
        reply.notices += (f"om: created a new store {store}{where}",)
    return reply


def run(argv):
    """The Reply for one command line (any but the hook's registered form, which om.cli handles)."""
    if argv == ["--version"]:
        return Reply(f"om {__version__}\n")  # what argparse's version action prints
    return dispatch(parse(argv))
