"""Command line: parse, dispatch, and map errors to exit codes in one place.

Invariant: this is the only module that prints to stdout/stderr or decides an
exit status. Everything it calls returns data or raises `om.errors.OmError`.
Handlers import their modules lazily so that a command pays only for itself.
"""

import os
import sys

from om import STORE_ENV, __version__
from om.errors import OmError, UsageError


def _parser():
    import argparse

    class Parser(argparse.ArgumentParser):
        # argparse exits 2 on bad usage, and Codex reads exit 2 as "block".
        def error(self, message):
            raise UsageError(f"{self.prog}: {message}")

    p = Parser(prog="om", description="Observational memory for coding agents.")
    p.add_argument("--version", action="version", version=f"om {__version__}")
    p.add_argument("--store", help=f"store directory (default: ${STORE_ENV})")
    p.add_argument("--session", help="session identity")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    def cmd(name, help_):
        return sub.add_parser(name, help=help_, description=help_)

    cmd("capabilities", "print version, protocol and clients as JSON (no store)")
    c = cmd("check-compatibility", "exit 0 when this runtime speaks a protocol for a client")
    c.add_argument("--protocol", required=True)
    c.add_argument("--client", required=True)
    cmd("capture", "record one source read as {kind,text,key} JSON on stdin")
    cmd("pending", "print evidence not yet covered by a checkpoint")
    cmd("apply", "apply a checkpoint read as JSON on stdin")
    cmd("status", "print the session's ledger status")
    cmd("prime", "print prepared memory for a fresh context")
    v = cmd("view", "print quoted active memory (at most 12,000 bytes)")
    v.add_argument("--all", action="store_true", help="JSON of every entry, active and retired")
    r = cmd("recall", "print an entry or source with its evidence")
    r.add_argument("id")
    cmd("pause", "pause automatic capture by client adapters")
    cmd("resume", "resume automatic capture")
    f = cmd("fork", "copy this session's ledger into a new session")
    f.add_argument("--to-session", required=True)
    i = cmd("import", "import another session's memory into this uncheckpointed session")
    i.add_argument("--from-store", required=True)
    i.add_argument("--from-session", required=True)
    s = cmd("search", "print memories (and with --sources, evidence) matching words, ranked, as JSON")
    s.add_argument("query", nargs="+", help="natural-language words")
    s.add_argument("--sources", action="store_true", help="include captured evidence")
    s.add_argument("--include-retired", action="store_true", help="include retired memories")
    s.add_argument("--limit", type=int, default=10, help="at most N results (1 to 100, default 10)")
    s.add_argument("--all-sessions", action="store_true", help="search every session of the store in one list")
    s.add_argument("--project", help="with --all-sessions: only sessions of the project holding DIR")
    _sessions_parser(cmd("sessions", "list the store's sessions, most recent first, or remove one"))
    x = cmd("export", "write memory as Markdown, JSON or a self-contained HTML browser (read-only)")
    x.add_argument("--format", required=True, choices=["md", "json", "html"], help="document format")
    x.add_argument("--out", metavar="PATH", help="write the document to PATH (atomically, 0600) instead of stdout")
    x.add_argument("--all-sessions", action="store_true", help="every session of the store, with an index")
    d = cmd("doctor", "check runtime, store, Codex hooks and capture receipts")
    d.add_argument("--json", action="store_true", help="print the findings as JSON")
    d.add_argument("--store", dest="doctor_store", help="store to check (default: the global --store, "
                   f"${STORE_ENV}, or the Codex plugin's data folder)")
    m = cmd("mcp", "serve the ledger as MCP tools over stdio (JSON-RPC 2.0, one message a line)")
    m.add_argument("--store", dest="mcp_store", metavar="STORE",
                   help=f"store directory (default: --store, ${STORE_ENV}, else the Codex plugin data folder)")
    h = cmd("hook", "handle one client hook event on stdin (fails open)")
    h.add_argument("--client", required=True, choices=["codex"])
    _self_parser(cmd("self", "update, switch channel, roll back or install this standalone om"), Parser)
    return p


def _sessions_parser(s):
    s.add_argument("--project", help="only sessions of the project holding DIR")
    s.add_argument("--json", action="store_true", help="print the listing as one JSON document")
    s.add_argument("--remove", metavar="ID", help="delete session ID from the store for good")
    s.add_argument("-y", "--yes", action="store_true", help="with --remove: do not ask for confirmation")


def _self_parser(s, parser_class):
    # `om self ...` (standalone distribution); its module is imported only when run.
    ss = s.add_subparsers(dest="self_command", metavar="SUBCOMMAND", parser_class=parser_class)
    u = ss.add_parser("update", help="update to the newest release of the channel")
    u.add_argument("--check", action="store_true", help="only check: exit 100 when an update exists")
    u.add_argument("--force", action="store_true", help="reinstall, or move back to an older release")
    u.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    c = ss.add_parser("channel", help="print or set the update channel")
    c.add_argument("channel", nargs="?", choices=["stable", "rc", "nightly"])
    c.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    ss.add_parser("rollback", help="switch back to the previously installed version")
    ss.add_parser("install", help="install the running zipapp as the `om` command")


def _store_path(args):
    store = args.store if args.store is not None else os.environ.get(STORE_ENV)
    if not store:
        raise UsageError(f"om: --store is required (or set {STORE_ENV})")
    return store


def _session(args):
    if args.session is None:
        raise UsageError("om: --session is required for this command")
    return args.session


def _json_out(value):
    from om.jsonio import dumps

    return dumps(value) + "\n"


def _read_stdin():
    from om.jsonio import read_stdin_limited

    return read_stdin_limited(sys.stdin.buffer)


def _open(args):
    from om.ledger import Ledger

    return Ledger.open(_store_path(args), _session(args))


def _run(args):
    """Return the text to print on success (or None)."""
    command = args.command
    if command == "capabilities":
        from om import CLIENTS, LEDGER_SCHEMA, PROTOCOL_VERSION

        return _json_out(
            {
                "version": __version__,
                "protocol_version": PROTOCOL_VERSION,
                "ledger_schema": LEDGER_SCHEMA,
                "clients": list(CLIENTS),
            }
        )
    if command == "check-compatibility":
        from om import CLIENTS, PROTOCOL_VERSION
        from om.errors import OmError as Incompatible

        ok = args.protocol.strip() == str(PROTOCOL_VERSION) and args.client in CLIENTS
        if not ok:
            raise Incompatible(
                f"om: incompatible: protocol {args.protocol!r} for client {args.client!r} "
                f"(this runtime speaks protocol {PROTOCOL_VERSION} for {', '.join(CLIENTS)})"
            )
        return _json_out({"compatible": True})
    if command == "hook":
        from om.codex.hook import run_hook

        # The hook owns its own output and never raises past this point.
        return run_hook(_store_path(args), sys.stdin.buffer, sys.stderr)
    if command == "self":
        from om.selfupdate.command import run

        return run(args, sys.stdin, sys.stderr)
    if command == "mcp":
        from om.mcp import serve

        # The server owns stdout (protocol only) until end of input.
        store = args.mcp_store if args.mcp_store is not None else args.store
        serve(store, sys.stdin.buffer, sys.stdout.buffer)
        return None
    if command == "capture":
        from om.jsonio import parse_capture
        from om.ledger import check_capture

        request = parse_capture(_read_stdin())
        check_capture(**request)  # before opening: a rejected capture creates no ledger
        with _open(args) as ledger:
            return _json_out({"source_id": ledger.capture(**request)})
    if command == "apply":
        from om.jsonio import parse_checkpoint

        checkpoint = parse_checkpoint(_read_stdin())
        with _open(args) as ledger:
            return _json_out(ledger.apply(checkpoint))
    if command == "pending":
        with _open(args) as ledger:
            return _json_out(ledger.pending())
    if command == "status":
        with _open(args) as ledger:
            return _json_out(ledger.status())
    if command in ("pause", "resume"):
        with _open(args) as ledger:
            return _json_out(ledger.set_paused(command == "pause"))
    if command == "view":
        with _open(args) as ledger:
            if args.all:
                return _json_out(ledger.entries())
            from om.views import view_text

            return view_text(ledger)
    if command == "prime":
        from om.views import prime_text

        with _open(args) as ledger:
            return prime_text(ledger)
    if command == "recall":
        with _open(args) as ledger:
            return _json_out(ledger.recall(args.id))
    if command == "fork":
        from om.transfer import fork

        return _json_out(fork(_store_path(args), _session(args), args.to_session))
    if command == "import":
        from om.transfer import import_session

        return _json_out(
            import_session(_store_path(args), _session(args), args.from_store, args.from_session)
        )
    if command == "sessions":
        return _sessions(args)
    if command == "search" and (args.all_sessions or args.project is not None):
        return _search_all(args)
    if command == "search":
        from om.search import search

        with _open(args) as ledger:
            return _json_out(
                search(ledger, " ".join(args.query), args.sources, args.include_retired, args.limit)
            )
    if command == "export":
        from om.export import run as export

        session = None if args.all_sessions else _session(args)
        return export(_store_path(args), session, args.format, args.out, args.all_sessions)
    if command == "doctor":
        return _doctor(args)
    raise UsageError("om: a command is required (see om --help)")


def run():
    """Program entry point (zipapp, console script): exit with main()'s status.

    Runners differ: shiv and pip's console scripts exit with the value returned, but a
    generated zipapp `__main__` (`python -m zipapp -m om.cli:main`) drops it, which turned
    every refusal into exit 0. Exiting here gives the same status whatever runs us.
    """
    sys.exit(main())


def main(argv=None):
    program = argv is None  # run as the process itself, not called from other code
    if program:
        argv = sys.argv[1:]
    if len(argv) == 5 and argv[0] == "--store" and argv[2:] == ["hook", "--client", "codex"]:
        # The registered hook command: skip argparse (several ms per Codex event).
        code = _codex_hook(argv[1])
        if program:
            # Nothing is left to clean up (the ledger is closed, the output flushed):
            # skipping interpreter teardown saves 1 to 2 ms of every Codex event.
            os._exit(code)
        return code
    try:
        args = _parser().parse_args(argv)
        out = _run(args)
        code = 0
        if isinstance(out, tuple):  # (text, exit status) from commands that report and judge
            out, code = out
        if out:
            out.encode("utf-8")  # unencodable text is a bug reported below, not a traceback
    except OmError as e:
        _emit_error(str(e))
        return e.exit_code
    except KeyboardInterrupt:
        _emit_error("om: interrupted")
        return 130
    except SystemExit as e:
        # argparse's --help and --version: keep their output, never exit 2.
        code = e.code if isinstance(e.code, int) else 0
        return 64 if code == 2 else code
    except Exception as e:  # a bug: still one line, never a traceback
        _emit_error(f"om: internal error: {type(e).__name__}: {e}".splitlines()[0])
        return 70
    if out:
        try:
            _write(sys.stdout, out, "strict")
        except BrokenPipeError:
            return 0
    return code


def _doctor(args):
    from om.doctor import diagnose, render

    report = diagnose(args.doctor_store or args.store or os.environ.get(STORE_ENV))
    text = _json_out(report) if args.json else render(report)
    return text, (1 if report["status"] == "fail" else 0)


def _sessions(args):
    from om.sessions import catalogue

    if args.remove is None:
        if args.yes:
            raise UsageError("om: sessions: -y goes with --remove ID")
        listing = catalogue.list_sessions(_store_path(args), args.project)
        _skipped(listing)
        return _json_out(listing) if args.json else catalogue.render_table(listing)
    if args.project is not None or args.json:
        raise UsageError("om: sessions --remove takes no --project or --json")
    store, directory, what = catalogue.describe(_store_path(args), args.remove)
    from om.selfupdate.command import _confirm

    _confirm(f"om: remove {what} from {store} for good?", args.yes, sys.stdin, sys.stderr,
             "om: removing a session needs confirmation; rerun with -y")
    return _json_out(catalogue.remove_session(store, directory, args.remove))


def _search_all(args):
    from om.sessions.crosssearch import search_all

    if not args.all_sessions:
        raise UsageError("om: search --project goes with --all-sessions")
    found = search_all(_store_path(args), " ".join(args.query), args.sources, args.include_retired, args.limit,
                       args.project)
    _skipped(found)
    return _json_out(found)


def _skipped(report):
    for item in report["skipped"]:
        _emit_error(f"om: skipped {item['directory']}: {item['error']}")


def _codex_hook(store):
    from om.codex.hook import run_hook

    out = run_hook(store, sys.stdin.buffer, sys.stderr)
    if out:
        try:
            # Bytes, whatever the locale: the response may carry any Unicode.
            sys.stdout.buffer.write(out.encode("utf-8"))
            sys.stdout.flush()
        except Exception:
            pass
    try:
        sys.stderr.flush()
    except Exception:
        pass
    return 0


def _write(stream, text, errors):
    # UTF-8 bytes whatever the locale: JSON is UTF-8, the view budget is counted
    # in UTF-8 bytes, and an ASCII or Latin-1 terminal must not turn a stored
    # emoji into an encoding error after the work is done.
    buffer = getattr(stream, "buffer", None)
    if buffer is None:  # an in-memory text stream (tests running main in-process)
        stream.write(text)
    else:
        stream.flush()
        buffer.write(text.encode("utf-8", errors))
    stream.flush()


def _emit_error(message):
    line = " ".join(str(message).splitlines()).strip() or "om: error"
    try:
        _write(sys.stderr, line + "\n", "backslashreplace")
    except Exception:
        pass
