"""Command line boundary: run one command line, and map errors to exit codes in one place.

Invariants:
- This is the only module that prints to stdout/stderr or decides an exit
  status. A JSON reply is printed as the handler wrote it (one line, as v1),
  or indented for a person when stdout is a terminal or `--pretty` asks. Handlers (the table of commands, `om.commands.COMMANDS`) return a
  `Reply` or raise `om.errors.OmError`; `main` is the one boundary that turns
  either into output and an exit code.
- The registered hook commands (`hook --client NAME --plugin-data DIR`, what
  the plugin's launcher runs, and `--store DIR hook --client NAME`, the
  settings-file form), spelled exactly so, go straight to the client's adapter:
  they load neither argparse nor the command table, which every other command
  line loads (`om.commands`, where `--store`/`--session` are read either side of
  the command word, once each).
- Run as the process, every command line ends in `_end`: output flushed, then
  `_exit`, without interpreter teardown. So handlers leave nothing for it:
  no threads, no atexit handlers, no file or temporary directory left open.
"""

import sys

from om import CLIENTS
from om.errors import OmError
from om.fastpath import posix  # not os: see om.fastpath


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
    # The registered hook commands: skip the command table and argparse (several ms per event).
    if len(argv) == 5 and argv[0] == "--store" and argv[2:4] == ["hook", "--client"] and argv[4] in CLIENTS:
        code = _fast_hook(argv[4], store=argv[1])
    elif len(argv) == 5 and argv[:2] == ["hook", "--client"] and argv[2] in CLIENTS and argv[3] == "--plugin-data":
        code = _fast_hook(argv[2], plugin_data=argv[4])
    else:
        code = _command_line(argv)
    if program:
        _end(code)
    return code


def _end(code):
    """Exit now, skipping interpreter teardown (1 to 2 ms of every command and event).

    Nothing is left for it: handlers close what they open (ledgers in `with`
    blocks, files written atomically), start no threads and register no atexit
    handlers, and the output is flushed here.
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    posix._exit(code)


def _command_line(argv):
    try:
        from om.commands import run as run_command

        reply = run_command(argv)
        out, code = reply.text, reply.code
        if out and reply.json and (reply.pretty or _on_a_terminal(sys.stdout)):
            from om.jsonio import pretty

            out = pretty(out) + "\n"  # for a person; piped, it stays v1's one line
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
    for line in reply.notices:
        _emit_error(line)
    if out:
        try:
            _write(sys.stdout, out, "strict")
        except BrokenPipeError:
            return 0
    return code


def _on_a_terminal(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _fast_hook(client, store=None, plugin_data=None):
    from om.adapter import run_client_hook

    out = run_client_hook(client, sys.stdin.buffer, sys.stderr, store, plugin_data)
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
