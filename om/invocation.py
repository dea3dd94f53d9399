"""How a shell runs this very runtime: the one owner of that answer.

Invariants:
- One reading of where this runtime lives (`runtime_path`): the launcher or
  zipapp the user ran, else the source tree's `bin/om` when started as
  `python -m om`, else nothing (then `-m om`). Every command any part of `om`
  prints or advertises starts from it.
- Commands the agent runs (`runtime_argv`, `ledger_argv`, `ledger_command`,
  `store_command`) are an absolute interpreter, the one running now, plus an
  absolute runtime path plus their arguments, each quoted for a POSIX shell:
  they run unchanged from the agent's shell in any working directory, whatever
  its PATH holds, and `shlex.split(ledger_command(...))` recovers exactly
  `ledger_argv(...)` (om.adapter.selfcapture recognises the agent's ledger
  calls by that argv).
- The command a person types (`runtime_command`, doctor's fixes) is `om` when
  PATH finds this very runtime, else `python3 <runtime path>`: readable, and
  what the plugin's launcher itself runs. A hint on stderr (`hint_command`)
  says `om` the same way, else gives the agent's exact command.
- Import-light, because the hook path uses it: quoting is
  `om.fastpath.shell_quote`, not `shlex` (which imports `re`), and paths are
  om.fastpath's, not `os.path`.
"""

import sys

# Not os (about 1 ms of a hook event) nor shlex (imports re): om.fastpath.
from om.fastpath import abspath, basename, dirname, exists, isfile, join, realpath
from om.fastpath import shell_quote as quote


def entry_path():
    """The file the user ran: the launcher, the pyz or om/__main__.py ('' for `-c` and the like)."""
    return abspath(sys.argv[0]) if sys.argv and sys.argv[0] not in ("", "-c", "-m") else ""


def runtime_path():
    """The file that runs this runtime from anywhere, or '' when only `python -m om` does."""
    script = entry_path()
    package = dirname(abspath(__file__))
    if script and basename(script) == "__main__.py" and dirname(script) == package:
        # `python -m om`: point at the source tree's launcher when there is one.
        launcher = join(dirname(package), "bin", "om")
        return launcher if isfile(launcher) else ""
    return script if script and exists(script) else ""


def _interpreter():
    # Not realpath: a virtualenv interpreter must stay the virtualenv one.
    return abspath(sys.executable) if sys.executable else "python3"


def runtime_argv():
    """[interpreter, runtime] that run this very runtime from anywhere."""
    path = runtime_path()
    return [_interpreter(), path] if path else [_interpreter(), "-m", "om"]


def ledger_argv(store, session):
    return runtime_argv() + ["--store", store, "--session", session]


def ledger_command(store, session):
    """The exact command the adapters advertise for one session's ledger."""
    return " ".join(quote(word) for word in ledger_argv(store, session))


def store_command(store, *words):
    """The agent's exact command for a store-wide call, e.g. store_command(store, "sessions")."""
    return " ".join(quote(word) for word in runtime_argv() + ["--store", store, *words])


def _on_path(path):
    """Whether the `om` PATH finds is the runtime at `path` (the hook path never asks)."""
    import shutil

    found = shutil.which("om")
    return bool(found) and realpath(found) == realpath(path)


def runtime_command():
    """How a person's shell runs this runtime: `om` when that is what PATH finds, else python3 and its path."""
    path = runtime_path()
    if not path:
        return f"{quote(_interpreter())} -m om"
    if _on_path(path):
        return "om"
    return "python3 " + quote(path)


def hint_command(store, *words):
    """A store-wide command named in a hint on stderr: `om --store …` when PATH's `om` is this
    runtime, else exactly `store_command` (which runs as written from any shell)."""
    path = runtime_path()
    if path and _on_path(path):
        return " ".join(quote(word) for word in ["om", "--store", store, *words])
    return store_command(store, *words)
