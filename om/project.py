"""Which project a session works in, recorded by the client adapters.

Invariants:
- Three `om_`-prefixed meta keys of the session's own ledger (v1 readers ignore
  them): `om_cwd`, the working directory the client reported; `om_project`, its
  project root (the nearest ancestor holding `.git`, else the working directory
  itself, symlinks resolved); `om_created_at`, when it was first recorded.
- Written only when the reported directory differs from the recorded one: a
  session pays one meta read per SessionStart or UserPromptSubmit and one write
  when it starts (or moves). PostToolUse never calls this.
- Never while the session is paused: pause means the adapters leave the ledger alone.
- Adapter state under the existing rules: fork keeps only the v1 keys, so a fork
  records its own place when a client first runs in it; import keeps the
  destination's keys and never copies the source's (the importing session works
  where it works).
- Import-light: not even `os` (om.fastpath's path functions), since it runs on the hook path.
"""

from om.fastpath import dirname, isabs, join, lexists, normpath, realpath

CWD_KEY = "om_cwd"
PROJECT_KEY = "om_project"
CREATED_KEY = "om_created_at"
MAX_PATH_CHARS = 4096


def project_root(directory):
    """The nearest ancestor of `directory` (itself included) holding `.git`, else `directory`; resolved."""
    path = realpath(directory)
    probe = path
    while True:
        if lexists(join(probe, ".git")):
            return probe
        parent = dirname(probe)
        if parent == probe:
            return path
        probe = parent


def _usable(cwd):
    if not isinstance(cwd, str) or not cwd or len(cwd) > MAX_PATH_CHARS or "\0" in cwd:
        return None
    if not isabs(cwd):
        return None
    try:
        cwd.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return normpath(cwd)


def record_project(ledger, cwd):
    """Record the session's working directory and project root; True when something was written.

    Joins the caller's write transaction when one is open (UserPromptSubmit),
    else opens its own only when there is something to write (SessionStart).
    """
    cwd = _usable(cwd)
    if cwd is None or ledger.meta_get(CWD_KEY) == cwd:
        return False
    root = project_root(cwd)
    with ledger.transaction():
        if ledger.is_paused() or ledger.meta_get(CWD_KEY) == cwd:
            return False
        ledger.meta_set(CWD_KEY, cwd)
        ledger.meta_set(PROJECT_KEY, root)
        if ledger.meta_get(CREATED_KEY) is None:
            from om.ledger import now

            ledger.meta_set(CREATED_KEY, now())
    return True
