"""The shape of doctor's findings and the commands they tell the user to run.

Invariants:
- A finding is {"check", "status" (ok|warn|fail|skip), "finding", "fix"}; an ok
  or skip finding carries no fix. `skip` says a check was not judged because an
  earlier finding already names the cause (one cause, one verdict); it counts as ok.
- Every command a fix names works as written in the user's shell: paths are
  absolute and quoted, and this runtime is named the way the shell can run it
  (om.invocation.runtime_command), never as a bare `om` that is not on PATH.
"""

ORDER = {"skip": 0, "ok": 0, "warn": 1, "fail": 2}


def check(name, status, finding, fix=""):
    return {"check": name, "status": status, "finding": finding, "fix": fix if status in ("warn", "fail") else ""}


def skipped(name, cause):
    """The one line for checks not judged because the check `cause` names why the hooks cannot run."""
    return check(name, "skip", f"not judged: see {cause}, which keeps the hooks from running")


def marketplace_source():
    """What `<client> plugin marketplace add` should be given: this checkout, or the project on GitHub."""
    import os

    from om.selfupdate.locations import DEFAULT_REPO, runtime_root

    root = runtime_root()
    if os.path.exists(os.path.join(root, ".git")) and os.path.isfile(
            os.path.join(root, ".claude-plugin", "marketplace.json")):
        return quote(root)
    return DEFAULT_REPO


def install_command(client):
    """The exact commands that install the om plugin into `client` (codex or claude)."""
    source = marketplace_source()
    if client == "codex":
        return f"codex plugin marketplace add {source} && codex plugin add om@observational-memory"
    return f"claude plugin marketplace add {source} && claude plugin install om@observational-memory"


def worst(checks):
    status = max((c["status"] for c in checks), key=ORDER.__getitem__, default="ok")
    return "ok" if status == "skip" else status


def quote(path):
    """A path quoted for a POSIX shell."""
    return "'" + str(path).replace("'", "'\\''") + "'"
