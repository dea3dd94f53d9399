"""Which project a session works in, recorded by the client adapters; the project tier's package.

This module is the session's project record. The project memory itself (one
ledger per repository, shared by every client) is the rest of the package:
om.project.identity (which repository), om.project.home (where its memory
lives), om.project.memory (promote, retire, read), om.project.counts (what
`status`, `sessions`, a start and doctor count of it) and om.project.block (the
text `prime` and `om project view` print).

Invariants:
- Five `om_`-prefixed meta keys of the session's own ledger (v1 readers ignore
  them): `om_cwd`, the working directory the client reported; `om_project`, its
  project root (the nearest ancestor holding `.git`, else the working directory
  itself, symlinks resolved); `om_project_id`, the project's identity key
  (om.project.identity: the repository's root commits, the same in every clone),
  recorded once it is known; `om_created_at`, when it was first recorded;
  `om_client`, the client whose hooks started it (codex, claude).
- Written only when the reported directory differs from the recorded one, or
  the identity is not recorded yet: a session pays two meta reads per
  SessionStart or UserPromptSubmit and one write when it starts (or moves), and
  a session recorded before identities existed gets one on its next hook.
  PostToolUse never calls this.
- Never while the session is paused: pause means the adapters leave the ledger alone.
- Adapter state under the existing rules: fork keeps only the v1 keys, so a fork
  records its own place when a client first runs in it; import keeps the
  destination's keys and never copies the source's (the importing session works
  where it works).
- Import-light: not even `os` (om.fastpath's path functions), since it runs on the hook path.
"""

from om.fastpath import isabs, normpath
from om.project.root import project_root  # noqa: F401  (the package's name for it)

CWD_KEY = "om_cwd"
PROJECT_KEY = "om_project"
PROJECT_ID_KEY = "om_project_id"
CLIENT_KEY = "om_client"
CREATED_KEY = "om_created_at"
MAX_PATH_CHARS = 4096


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


def record_project(ledger, cwd, seconds=None, client=None):
    """Record the session's working directory, project root and identity; True when something was written.

    `seconds`: how long git may take to name a repository not seen before
    (om.project.identity); by default its hook bound in a new place and its
    cache alone in the recorded one, so a repository too slow for a hook is not
    asked again on every prompt (SessionStart passes the hook bound: one try per start).
    `client` (SessionStart's adapter: "codex", "claude") is recorded once, as
    `om_client`, so a promotion can say which client made it.
    Joins the caller's write transaction when one is open (UserPromptSubmit),
    else opens its own only when there is something to write (SessionStart).
    """
    cwd = _usable(cwd)
    if cwd is None:
        return False
    same_place = ledger.meta_get(CWD_KEY) == cwd
    if same_place and ledger.meta_get(PROJECT_ID_KEY) is not None:
        return False
    from om.project.identity import HOOK_SECONDS, identify

    if seconds is None:
        seconds = 0 if same_place else HOOK_SECONDS
    identity = identify(cwd, seconds)
    if same_place and not identity.known:
        return False
    with ledger.transaction():
        if ledger.is_paused() or (ledger.meta_get(CWD_KEY) == cwd
                                  and ledger.meta_get(PROJECT_ID_KEY) == identity.key):
            return False
        ledger.meta_set(CWD_KEY, cwd)
        ledger.meta_set(PROJECT_KEY, identity.root)
        if identity.known:
            ledger.meta_set(PROJECT_ID_KEY, identity.key)
        else:
            ledger.meta_delete(PROJECT_ID_KEY)
        if ledger.meta_get(CREATED_KEY) is None:
            from om.ledger import now

            ledger.meta_set(CREATED_KEY, now())
        if client and ledger.meta_get(CLIENT_KEY) is None:
            ledger.meta_set(CLIENT_KEY, client)
    return True
