"""Where each client keeps its transcripts, which of them one ingest reads, and the reader of each client's.

Invariants:
- A client's transcript home is `$CODEX_HOME/sessions` (else the CODEX_HOME
  whose plugin data folder the store is, else ~/.codex) for Codex, and
  `projects/` of `$CLAUDE_CONFIG_DIR` (else the folder whose plugin data the
  store is, else ~/.claude) for Claude Code: the same reading of the clients'
  homes doctor uses.
- Files are chosen by name and modification time only, without opening them:
  `--session` picks the file named for that session, `--since` the files
  modified on or after that local day. A folder is walked without following
  links; Claude Code's `subagents/` folders are never walked.
- Nothing here reads a transcript's content or writes anything; an unlistable
  folder or a file that cannot be stat'ed is reported, and the walk goes on.
"""

import os

from om.errors import InputError, NotFound

#: The folder of a client's home its transcripts are written to.
FOLDERS = {"codex": "sessions", "claude": "projects"}


def reader_of(client):
    """The module that reads `client`'s transcripts (om.ingest.codex, om.ingest.claude)."""
    if client == "codex":
        from om.ingest import codex

        return codex
    if client == "claude":
        from om.ingest import claude

        return claude
    raise InputError(f"om: ingest knows no client {str(client)[:40]!r} (codex or claude)")


def home(client, store=None, client_home=None):
    """The folder the client writes its transcripts to.

    In `client_home` when given; else in the home whose store `store` is (`<home>/om`, om.location,
    beside that home's transcripts) or whose plugin data folder it is (where earlier versions kept
    the store); else in the client's own home ($CODEX_HOME or ~/.codex, $CLAUDE_CONFIG_DIR or ~/.claude).
    """
    from om.location import STORE_NAME, home_of_plugin_data
    from om.location import client_home as default_home

    folder = FOLDERS[client]
    if client_home is None and store:
        store = os.path.abspath(store)
        parent = os.path.dirname(store)
        if os.path.basename(store) == STORE_NAME and os.path.isdir(os.path.join(parent, folder)):
            client_home = parent
        else:
            client_home = home_of_plugin_data(store)
    return os.path.join(client_home or default_home(client), folder)


def since_time(day):
    """The epoch seconds of local midnight starting `day` (YYYY-MM-DD); InputError otherwise."""
    import time

    try:
        return time.mktime(time.strptime(day, "%Y-%m-%d"))
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"om: --since wants a date as YYYY-MM-DD, not {str(day)[:40]!r}") from None


def choose(reader, paths, session=None, since=None):
    """(files to read in order, [(path, reason)] of those that cannot be listed or read).

    `paths`: files and folders; a file named explicitly is read whatever its
    name. NotFound when a named path does not exist, or `session` matches nothing.
    """
    files, problems = [], []
    for path in paths:
        path = os.path.abspath(path)
        if os.path.isdir(path):
            files += _walk(reader, path, session, problems)
        elif os.path.lexists(path):
            if session is None or reader.session_of_name(os.path.basename(path)) == session:
                files.append(path)
        else:
            raise NotFound(f"om: no transcript or folder at {path}")
    if since is not None:
        files = [f for f in files if _modified(f, problems) >= since]
    if session is not None and not files and not problems:
        raise NotFound(f"om: no {reader.NAME} transcript of session {session[:80]!r} under {', '.join(paths)}")
    return files, problems


def _walk(reader, top, session, problems):
    found = []

    def report(error):
        problems.append((error.filename or top, error.strerror or str(error)))

    for folder, dirs, names in os.walk(top, onerror=report):
        dirs[:] = sorted(d for d in dirs if d != "subagents")
        for name in sorted(names):
            if reader.compressed(name):
                problems.append((os.path.join(folder, name), "compressed transcript (zstd), not read"))
            elif reader.listed(name) and (session is None or reader.session_of_name(name) == session):
                found.append(os.path.join(folder, name))
    return found


def _modified(path, problems):
    try:
        return os.stat(path).st_mtime
    except OSError as e:
        problems.append((path, e.strerror or str(e)))
        return float("-inf")


def newest(reader, top, count):
    """At most `count` transcripts under `top`, most recently modified first (for doctor: bounded)."""
    found = []
    for path in _walk(reader, top, None, []):
        try:
            found.append((os.stat(path).st_mtime, path))
        except OSError:
            continue
    found.sort(reverse=True)
    return [path for _, path in found[:count]]


def of_session(store, session):
    """(client, path) of the transcript a client wrote for `session`, looked up by name; NotFound otherwise.

    For the MCP tool, which ingests only the calling session's own transcript.
    """
    looked = []
    for client in CLIENT_ORDER:
        top = home(client, store)
        looked.append(top)
        if os.path.isdir(top):
            found = _walk(reader_of(client), top, session, [])
            if found:
                return client, found[-1]
    raise NotFound(f"om: no transcript of session {session[:80]!r} in {' or '.join(looked)}")


#: The order `of_session` looks in (a session id names one client's transcript).
CLIENT_ORDER = ("codex", "claude")
