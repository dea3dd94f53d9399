"""Doctor's project memory checks: where the project home is, what it holds, and who may read it.

Invariants:
- The project home is om.project.home's (`$OM_PROJECT_HOME`, else
  `$XDG_DATA_HOME/om-projects`, else `~/.local/share/om-projects`), shared by every
  client on the machine, so it is judged whatever clients the run judges.
- `project.memory` says where it is, how many projects it holds (one v1 ledger
  each), their active and retired entries and its total size; a home that does
  not exist yet is no fault (the first promotion or identity lookup creates it).
  A path that is not a directory, or a project ledger that cannot be read, is a
  warn: the hooks go on without the project memory (they fail open).
- `project.permissions`: every folder of the home 0700 and every file 0600, as
  in a store; anything readable by others is a warn whose fix is one chmod.
- Read-only: ledgers are opened with `mode=ro`, links are never followed, and
  nothing is created, repaired or removed.
"""

import os
import stat

from om.doctor.findings import check, quote


def checks(scope):
    from om.project.home import project_home

    home = os.path.abspath(project_home())
    where = f"project home {home} ({_chosen()})"
    if not os.path.lexists(home):
        return [check("project.memory", "ok",
                      f"{where} is not created yet: the first promotion (or a hook in a git repository) creates it")]
    if os.path.islink(home) or not os.path.isdir(home):
        return [check("project.memory", "warn",
                      f"{where} is not a directory: no session can promote into the project memory, and every"
                      " start goes without it", f"mv {quote(home)} {quote(home + '.bak')}")]
    return [_memory_check(home, where), _permissions_check(home)]


def _chosen():
    from om.project.home import HOME_ENV

    if os.environ.get(HOME_ENV):
        return f"${HOME_ENV}"
    data = os.environ.get("XDG_DATA_HOME")
    return "$XDG_DATA_HOME/om-projects" if data and os.path.isabs(data) else "the default"


def _projects(home):
    from om.store import DB_NAME

    found = []
    for name in sorted(_listdir(home)):
        path = os.path.join(home, name, DB_NAME)
        if name.startswith("session-") and os.path.isfile(path) and not os.path.islink(path):
            found.append(path)
    return found


def _memory_check(home, where):
    databases = _projects(home)
    active = retired = 0
    bad = []
    for path in databases:
        problem, counted = _counts(path)
        if problem:
            bad.append((path, problem))
        else:
            active += counted[0]
            retired += counted[1]
    finding = (f"{where}: {len(databases)} project{'s' if len(databases) != 1 else ''}, {active} active"
               f" entr{'y' if active == 1 else 'ies'} ({retired} retired), {_size(_total_size(home))}")
    if bad:
        path, problem = bad[0]
        return check("project.memory", "warn",
                     f"{finding}; {len(bad)} project ledger(s) cannot be read, e.g. {path}: {problem}",
                     " && ".join(f"mv {quote(p)} {quote(p + '.damaged')}" for p, _ in bad)
                     + "  # keeps them for recovery (sqlite3 FILE .recover); those projects start afresh")
    return check("project.memory", "ok", finding)


def _counts(path):
    """(None, (active, retired)) of one project ledger, or (the reason it cannot be read, None)."""
    from om.project.counts import counts
    from om.sqlite import load, open_connection

    sqlite3 = load()
    try:
        conn = open_connection(path, readonly=True, timeout=5.0)
    except sqlite3.Error as e:
        return str(e), None
    try:
        return None, counts(conn)
    except sqlite3.Error as e:
        return str(e), None
    finally:
        conn.close()


def _walk(home):
    """Every path under `home` (itself first), links not followed."""
    yield home
    for folder, dirs, files in os.walk(home):
        for name in dirs + files:
            yield os.path.join(folder, name)


def _total_size(home):
    total = 0
    for path in _walk(home):
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            total += st.st_size
    return total


def _size(n):
    if n < 1024:
        return f"{n} bytes"
    if n < 1 << 20:
        return f"{n / 1024:.1f} KB"
    return f"{n / (1 << 20):.1f} MB"


def _permissions_check(home):
    loose = []
    for path in _walk(home):
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)) and stat.S_IMODE(st.st_mode) & 0o077:
            loose.append(path)
    if loose:
        return check("project.permissions", "warn",
                     f"{len(loose)} path(s) of the project memory readable by other users, e.g. {loose[0]}",
                     f"chmod -R go-rwx {quote(home)}")
    return check("project.permissions", "ok", "project home folders 0700, files 0600")


def _listdir(path):
    try:
        return os.listdir(path)
    except OSError:
        return []
