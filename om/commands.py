"""The table of commands: each command's arguments and handler, and the parser built from them.

Invariants:
- The commands are the table `COMMANDS`: one `Command(name, help, add, run)`
  each, where `add(parser)` declares the command's own arguments (or is None)
  and `run(args)` handles it (om.handlers). Adding a command is one entry plus
  its handler.
- Handlers return a `Reply` (stdout text, exit status, notice lines for
  stderr) or raise `om.errors.OmError`; they never print or exit themselves:
  `om.cli.main` is the one boundary that prints and exits.
- `--store` and `--session` may stand before or after the command word (v1
  accepted both), once each: the same option with two different values is a
  usage error. So may `--pretty`; no other option stands before the word.
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

from om import STORE_ENV, __version__
from om.errors import UsageError
from om.handlers import (
    Reply,
    _add_capture,
    _add_check_compatibility,
    _add_doctor,
    _add_export,
    _add_forget,
    _add_fork,
    _add_hook,
    _add_import,
    _add_ingest,
    _add_mcp,
    _add_project,
    _add_promote,
    _add_recall,
    _add_search,
    _add_self,
    _add_sessions,
    _add_sync,
    _add_view,
    _run_apply,
    _run_capabilities,
    _run_capture,
    _run_check_compatibility,
    _run_doctor,
    _run_export,
    _run_forget,
    _run_fork,
    _run_hook,
    _run_import,
    _run_ingest,
    _run_mcp,
    _run_pause,
    _run_pending,
    _run_prime,
    _run_project,
    _run_promote,
    _run_recall,
    _run_resume,
    _run_search,
    _run_self,
    _run_sessions,
    _run_status,
    _run_sync,
    _run_view,
)


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
    Command("promote", "move entries of this session into the project memory every later session starts with",
            _add_promote, _run_promote),
    Command("project", "name this folder's project, view its memory (view, view --all) or retire an entry of it",
            _add_project, _run_project),
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
    Command("sync", "share memory between machines over git (init, status, forget-writer; nothing is shared before"
            " init)", _add_sync, _run_sync),
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
    values = {"store": None, "session": None, "pretty": False}
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
            if command.name not in _UNSCOPED:
                values["pretty_after"] = False
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
        parser.add_argument("--pretty", dest="pretty" + suffix, action="store_true",
                            help="indent JSON output for reading (the default when stdout is a terminal)")

    class Top(Parser):
        # The check that names a mistyped option before the command word (not the value after it).
        def parse_known_args(self, args=None, namespace=None):
            _refuse_unknown_leading_option(sys.argv[1:] if args is None else list(args))
            return super().parse_known_args(args, namespace)

    p = Top(prog="om", description="Observational memory for coding agents.")
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


#: The options that may stand before the command word.
_LEADING = ("--store", "--session", "--pretty", "--version", "--help")


def _refuse_unknown_leading_option(argv):
    """UsageError naming an unknown option before the command word, with the option it may be a typo of.

    argparse would set the unknown option aside and read its value as the command
    (`om --sesion alpha status`: "invalid choice: 'alpha'"), blaming the session.
    Abbreviations argparse accepts (`--sess`) and everything from the command
    word on are left to argparse.
    """
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--" or not token.startswith("-") or token == "-":
            return
        name, eq, _ = token.partition("=")
        known = [option for option in _LEADING if option.startswith(name)] if name.startswith("--") else []
        if known == ["--pretty"]:
            i += 1
            continue
        if name == "-h" or known and not set(known) <= set(_SCOPE) or len(known) > 1:
            return  # help, the version, or an ambiguous abbreviation: argparse's own answer
        if not known:
            import difflib

            close = difflib.get_close_matches(name, _LEADING, n=1, cutoff=0.75)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise UsageError(f"om: unknown option {name[:80]} before the command{hint}; before it go only"
                             f" {', '.join(_LEADING)}, and a command's own options after it")
        i += 1 if eq else 2


def merge_scope(args):
    """`--store`/`--session` given before and after the command word become one value each."""
    for name in ("store", "session"):
        before, after = getattr(args, name), getattr(args, name + "_after", None)
        if before is not None and after is not None and before != after:
            raise UsageError(f"om: --{name} is given twice with different values")
        setattr(args, name, after if after is not None else before)
    args.pretty = bool(getattr(args, "pretty", False) or getattr(args, "pretty_after", False))
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
    args = parse(argv)
    reply = dispatch(args)
    reply.pretty = args.pretty
    return reply
