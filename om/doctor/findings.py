"""The shape of doctor's findings and the commands they tell the user to run.

Invariants:
- A finding is {"check", "status" (ok|warn|fail), "finding", "fix"}; an ok
  finding carries no fix.
- Every command a fix names works as written in the user's shell: paths are
  absolute and quoted, and this runtime is named the way the shell can run it
  (om.invocation.runtime_command), never as a bare `om` that is not on PATH.
"""

ORDER = {"ok": 0, "warn": 1, "fail": 2}


def check(name, status, finding, fix=""):
    return {"check": name, "status": status, "finding": finding, "fix": fix if status != "ok" else ""}


def worst(checks):
    return max((c["status"] for c in checks), key=ORDER.__getitem__, default="ok")


def quote(path):
    """A path quoted for a POSIX shell."""
    return "'" + str(path).replace("'", "'\\''") + "'"
