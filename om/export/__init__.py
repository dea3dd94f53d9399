"""`om export`: a session's memory as one JSON, Markdown or HTML document.

Invariants:
- Read-only for the ledgers. They are opened with SQLite's `mode=ro` and read
  in one snapshot each; nothing in a session directory is created, migrated
  or cached, so an export works on a store the process cannot write and never
  changes a ledger. A store-wide export lists the sessions through the store
  index (om.sessions.index), which it brings up to date when it can.
- Deterministic. A document is a function of the ledgers alone (no export
  time in it): exporting twice gives the same bytes, and the CLI and the MCP
  tool give the same document.
- The project memory goes with its sessions: a document holds the project
  memory of every session it exports (om.export.projects), read as read-only
  as the sessions.
- A document is written whole or not at all: `write` renames a finished,
  fsynced private file (0600) into place.
- A store-wide export exports every session it can read and names each one
  it cannot (om.export.reader) in the document, in the receipt and in one
  stderr line; the exit status stays 0, as for `sessions` and `search
  --all-sessions`. A single session that cannot be read is an error (74).
- Not on the hook's path: nothing outside `om.commands` and `om.mcp` imports
  this package.
- The MCP tool's files live in one private folder per server process
  (`om-export-<pid>-*`, 0700, in the temporary directory; `om forget` deletes
  the ones holding forgotten text, `files_containing`): the server removes
  it when it stops (`discard_fresh`), and the next one removes any folder
  whose process is gone (a server that was killed), so exports never pile up.
"""

import os

from om.errors import InputError, StoreError

FORMATS = ("md", "json", "html")


def render(store, session, fmt, all_sessions=False):
    """(The export document of one session, or with `all_sessions` of the whole store;
    the [{directory, error}] of the session directories it could not read, None for one session)."""
    if fmt not in FORMATS:
        raise InputError(f"om: export format must be md, json or html, got {fmt!r}")
    from om.export.projects import read_projects
    from om.export.reader import read_all, read_session

    mirrors = []
    if all_sessions:
        from om.export.reader import read_mirrors

        snapshots, skipped = read_all(store)
        mirrors = read_mirrors(store)
    else:
        snapshots, skipped = [read_session(store, session)], None
    projects = read_projects(s["project_id"] for s in snapshots)
    if fmt == "json":
        from om.export.jsondoc import render_json

        return render_json(snapshots, all_sessions, skipped or (), projects, mirrors), skipped
    if fmt == "md":
        from om.export.markdown import render_markdown

        return render_markdown(snapshots + mirrors, all_sessions, skipped or (), projects), skipped
    from om.export.browser import render_html
    from om.export.projecthtml import sections

    return render_html(snapshots + mirrors, all_sessions, skipped or (), sections(projects)), skipped


def run(store, session, fmt, out=None, all_sessions=False):
    """`om export`: (text, notice). The text is the document itself, or with `out` the receipt
    of the file written; the notice is the one line naming the sessions left out, or None."""
    text, skipped = render(store, session, fmt, all_sessions)
    if out is not None:
        from om.jsonio import dumps

        path, data = write(out, text, store)
        text = dumps(receipt(path, fmt, data, skipped)) + "\n"
    return text, (skipped_notice(skipped) if skipped else None)


def receipt(path, fmt, data, skipped=None):
    """What `export --out` prints and the MCP tool returns; a store-wide export adds `skipped`."""
    found = {"format": fmt, "path": path, "bytes": len(data)}
    if skipped is not None:
        found["skipped"] = skipped
    return found


def skipped_notice(skipped):
    """The one line naming every session directory a store-wide export left out."""
    listed = "; ".join(f"{s['directory']} ({s['error']})" for s in skipped)
    noun = "session" if len(skipped) == 1 else "sessions"
    return f"om: export left out {len(skipped)} unreadable {noun}: {listed}"


def write(path, text, store=None):
    """Write `text` to `path` atomically, as a private file; return (absolute path, bytes written).

    Refuses a path inside the store: an export must never replace a ledger.
    """
    data = text.encode("utf-8")
    target = os.path.abspath(os.path.expanduser(path))
    real = os.path.realpath(target)
    if store is not None:
        from om.store import canonical_store

        root = canonical_store(store)
        if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
            raise InputError("om: --out must name a file outside the store")
    if os.path.isdir(real):
        raise InputError(f"om: --out {target} is a directory")
    directory = os.path.dirname(real)
    if not os.path.isdir(directory):
        raise InputError(f"om: --out directory {directory} does not exist")
    from om.store import write_atomically

    try:
        write_atomically(real, data, mode=0o600)
    except OSError as e:
        raise StoreError(f"om: cannot write {target}: {e.strerror or e}") from None
    return real, data


#: Prefix of the MCP server's export folders in the temporary directory (then `<pid>-`).
FRESH_PREFIX = "om-export-"
_fresh = []  # this process's export folder, once made


def write_fresh(text, fmt):
    """Write `text` to a new private file in this process's export folder; return (path, bytes).

    For the MCP tool: the server may run outside the agent's sandbox, so it
    never writes where a caller names, only to a file nobody else could have
    chosen. The file lasts until this process calls `discard_fresh`.
    """
    import tempfile

    data = text.encode("utf-8")
    try:
        fd, path = tempfile.mkstemp(prefix=FRESH_PREFIX, suffix="." + fmt, dir=_fresh_directory())
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except OSError as e:
        raise StoreError(f"om: cannot write the export: {e.strerror or e}") from None
    return path, data


def _fresh_directory():
    if not _fresh:
        import tempfile

        sweep_fresh()
        _fresh.append(tempfile.mkdtemp(prefix=f"{FRESH_PREFIX}{os.getpid()}-"))
    return _fresh[0]


def discard_fresh():
    """Remove this process's export folder and every file in it (the MCP server, when it stops)."""
    import shutil

    while _fresh:
        shutil.rmtree(_fresh.pop(), ignore_errors=True)


def encodings(text):
    """The forms `text` takes inside the documents of every format (as written, JSON-escaped,
    the browser's script-safe JSON, HTML-escaped): a document holding `text` holds one of them."""
    from html import escape

    from om.export.browser import script_json
    from om.jsonio import dumps

    return {text, dumps(text)[1:-1], script_json(text)[1:-1], escape(text, quote=True)}


def files_containing(texts):
    """The MCP export tool's files (of this user's export folders, live servers' too) holding any of `texts`."""
    import tempfile

    needles = sorted({form.encode("utf-8", "surrogatepass") for text in texts for form in encodings(text)},
                     key=len, reverse=True)
    if not needles:
        return []
    directory = tempfile.gettempdir()
    try:
        folders = sorted(n for n in os.listdir(directory) if n.startswith(FRESH_PREFIX))
    except OSError:
        return []
    found = []
    for folder in folders:
        path = os.path.join(directory, folder)
        try:
            st = os.lstat(path)
            names = sorted(os.listdir(path)) if os.path.isdir(path) and not os.path.islink(path) else []
        except OSError:
            continue
        if st.st_uid != os.getuid():
            continue
        for name in names:
            file = os.path.join(path, name)
            try:
                with open(file, "rb") as f:
                    data = f.read()
            except OSError:
                continue
            if any(n in data for n in needles):
                found.append(file)
    return found


def discard(paths):
    """Delete the given export files; the ones that are gone now."""
    gone = []
    for path in paths:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError:
            continue
        gone.append(path)
    return gone


def sweep_fresh():
    """Remove the export folders of this user's processes that are gone.

    Only folders named `om-export-<pid>-*`, owned by this user, not links, whose
    process no longer exists. Never raises."""
    import shutil
    import stat
    import tempfile

    from om.store import owner_pid, process_alive

    directory = tempfile.gettempdir()
    try:
        names = sorted(n for n in os.listdir(directory) if n.startswith(FRESH_PREFIX))
    except OSError:
        return
    for name in names:
        pid = owner_pid(name, FRESH_PREFIX)
        if pid is None or process_alive(pid):
            continue
        path = os.path.join(directory, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid():
            shutil.rmtree(path, ignore_errors=True)
