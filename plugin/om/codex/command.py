"""The exact ledger command the adapter advertises to the agent.

Invariant: the command is an absolute interpreter plus an absolute runtime path
plus `--store`/`--session` arguments, each quoted for a POSIX shell, so it runs
unchanged from the agent's shell in any working directory and `shlex.split`
recovers exactly `argv()`. Quoting is `om.fastpath.shell_quote`, not `shlex`
(which imports `re`): the hook must stay cheap.
"""

import os
import sys

from om.fastpath import shell_quote as quote


def runtime_argv():
    """[interpreter, runtime] that run this very runtime from anywhere."""
    # Not realpath: a virtualenv interpreter must stay the virtualenv one.
    interpreter = os.path.abspath(sys.executable) if sys.executable else "python3"
    script = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if script and os.path.basename(script) == "__main__.py" and os.path.dirname(script) == package:
        # `python -m om`: point at the source tree's launcher when there is one.
        launcher = os.path.join(os.path.dirname(package), "bin", "om")
        if os.path.isfile(launcher):
            return [interpreter, launcher]
        return [interpreter, "-m", "om"]
    if script and os.path.exists(script):
        return [interpreter, script]
    return [interpreter, "-m", "om"]


def ledger_argv(store, session):
    return runtime_argv() + ["--store", store, "--session", session]


def ledger_command(store, session):
    return " ".join(quote(word) for word in ledger_argv(store, session))
