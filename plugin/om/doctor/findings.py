"""The shape of doctor's findings and the commands they tell the user to run.

Invariants:
- A finding is {"check", "status" (ok|warn|fail), "finding", "fix"}; an ok
  finding carries no fix.
- Every command a fix names works as written in the user's shell: paths are
  absolute and quoted, and this runtime is named the way the shell can run it
  (`runtime_command`), never as a bare `om` that is not on PATH.
"""

import os
import shutil
import sys

ORDER = {"ok": 0, "warn": 1, "fail": 2}


def check(name, status, finding, fix=""):
    return {"check": name, "status": status, "finding": finding, "fix": fix if status != "ok" else ""}


def worst(checks):
    return max((c["status"] for c in checks), key=ORDER.__getitem__, default="ok")


def quote(path):
    """A path quoted for a POSIX shell."""
    return "'" + str(path).replace("'", "'\\''") + "'"


def runtime_command():
    """How a shell runs this very runtime: `om` when that is what PATH finds, else python3 and its path."""
    from om.selfupdate.locations import entry_path, runtime_root

    path = entry_path()
    if not path or os.path.basename(path) == "__main__.py":
        # `python -m om` from a source tree: the tree's own launcher runs it from anywhere.
        launcher = os.path.join(runtime_root(), "bin", "om")
        if not os.path.isfile(launcher):
            return f"{quote(sys.executable)} -m om"
        path = launcher
    found = shutil.which("om")
    if found and os.path.realpath(found) == os.path.realpath(path):
        return "om"
    return "python3 " + quote(path)
