"""Where a project's memory lives: one folder shared by every client on this machine.

The project memory of a repository is one v1 ledger, of the reserved session
`project-<key>` (om.project.identity names the key), in the project home: a store
of its own, beside neither client's store, so a Codex session and a Claude Code
session of one repository read and write the same memory, and uninstalling
either plugin (or the standalone om) leaves it.

Invariants:
- `project_home()` is the only place that says where the project home is:
  `$OM_PROJECT_HOME` when set, else `$XDG_DATA_HOME/om-projects` (default
  `~/.local/share/om-projects`). It is a store like the clients' (0700, ledgers
  0600, symlinks refused: om.store), so `recall`, `search`, `export` and `forget`
  read it as they read any store.
- A project's ledger is an ordinary v1 ledger: v1 readers open it; what om adds
  (provenance, the project's roots) lives in `om_*` meta keys they ignore.
- `folders/` holds the identity cache (om.project.identity); it holds no memory.
- Import-light: the hook path asks it, so it uses om.fastpath, never `os`.
"""

from om.fastpath import expanduser, getenv, isabs, join

HOME_ENV = "OM_PROJECT_HOME"
#: The reserved session id prefix of a project's ledger in the project home.
SESSION_PREFIX = "project-"
FOLDERS = "folders"


def project_home():
    """The project home (it may not exist yet)."""
    explicit = getenv(HOME_ENV)
    if explicit:
        return expanduser(explicit)
    data = getenv("XDG_DATA_HOME")
    if not data or not isabs(data):
        data = expanduser("~/.local/share")
    return join(data, "om-projects")


def project_session(key):
    """The reserved session id of project `key`'s ledger."""
    return SESSION_PREFIX + key


def is_project_session(session):
    return isinstance(session, str) and session.startswith(SESSION_PREFIX)
