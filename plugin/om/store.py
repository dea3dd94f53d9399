"""Where ledgers live on disk, and with which permissions.

Invariants: the store path is canonical (absolute, symlinks resolved) before
anything is derived from it; only the session *hash* touches the filesystem,
so no session string can escape the store; directories are created 0700 and
databases 0600 whatever the umask, before SQLite ever opens them; a session
directory or database file that is a symlink is refused (never followed), as
a store that is a file is; staging directories (`.om-tmp-<pid>-*`) name the
process that owns them, so one left by a killed process can be told from one
still in use and removed. Durable file writes are here too, for every module
that writes one: `fsync_dir` after a rename, and `write_atomically` (a private
same-directory temporary file, fsynced, then one rename), so a reader sees the
old file or the new one, never a part.
"""

import os

from om.errors import InputError, StoreError
from om.ids import session_hash, trim_space

DB_NAME = "memory.sqlite3"
MAX_SESSION_CHARS = 256
STAGING_PREFIX = ".om-tmp-"
#: A staging directory whose name carries no pid (written before names did) is
#: taken as abandoned once it is this old: no fork or import runs that long.
UNOWNED_STAGING_SECONDS = 3600


def validate_session(session):
    if not isinstance(session, str):
        raise InputError("om: session must be a string")
    if any("\ud800" <= ch <= "\udfff" for ch in session):
        raise InputError("om: session is not valid UTF-8")
    if not trim_space(session):
        raise InputError("om: session must not be blank")
    if len(session) > MAX_SESSION_CHARS:
        raise InputError(f"om: session exceeds {MAX_SESSION_CHARS} characters")
    return session


def canonical_store(path):
    """The canonical form of a store path, without creating anything."""
    if not path or not str(path).strip():
        raise InputError("om: store path must not be empty")
    return os.path.realpath(os.path.abspath(os.path.expanduser(str(path))))


def resolve_store(path, create=True):
    """Canonical store path; created 0700 when missing (and `create`)."""
    store = canonical_store(path)
    if os.path.isdir(store):
        return store
    if not os.path.lexists(store):
        if not create:
            raise StoreError(f"om: store {store} does not exist")
        make_private_dir(store, parents=True)
    # Checked after creating: another process may have created it meanwhile.
    if not os.path.isdir(store):
        raise StoreError(f"om: store {store} is not a directory")
    return os.path.realpath(store)


def make_private_dir(path, parents=False):
    try:
        if parents:
            # Not os.makedirs: it creates missing ancestors 0777 minus the umask,
            # world-writable under umask 000, so anyone could swap the store out.
            _make_ancestors(path)
            try:
                os.mkdir(path, 0o700)
            except FileExistsError:
                return  # made by a concurrent process; its modes are its own
        else:
            os.mkdir(path, 0o700)
        os.chmod(path, 0o700)
    except FileExistsError:
        raise
    except OSError as e:
        raise StoreError(f"om: cannot create {path}: {e.strerror or e}") from None


def _make_ancestors(path):
    parent = os.path.dirname(path)
    if parent == path or os.path.isdir(parent):
        return
    _make_ancestors(parent)
    try:
        os.mkdir(parent, 0o700)
    except FileExistsError:
        pass


def session_dir(store, session):
    return os.path.join(store, "session-" + session_hash(session))


def database_path(store, session):
    return os.path.join(session_dir(store, session), DB_NAME)


def refuse_symlinks(path):
    """StoreError when the session directory of database `path`, or the file itself, is a symlink."""
    directory = os.path.dirname(path)
    for link, what in ((directory, "session directory"), (path, "database file")):
        if os.path.islink(link):
            raise StoreError(f"om: {what} {link} is a symlink; om does not follow links inside the store")


def ensure_database_file(path):
    """Create the session directory (0700) and an empty database file (0600) if missing."""
    refuse_symlinks(path)
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        try:
            make_private_dir(directory)
        except FileExistsError:
            pass
    if not os.path.exists(path):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return
        except OSError as e:
            raise StoreError(f"om: cannot create {path}: {e.strerror or e}") from None
        try:
            os.fchmod(fd, 0o600) if hasattr(os, "fchmod") else None
        finally:
            os.close(fd)


def fsync_dir(path):
    """Make a rename or link inside `path` durable (a no-op where directories cannot be opened)."""
    if os.name == "nt":
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomically(path, data, mode=0o644):
    """Write bytes to path via a same-directory temporary file, fsync, one os.replace."""
    directory = os.path.dirname(path)
    tmp = os.path.join(directory, ".%s.%d.%s.tmp" % (os.path.basename(path), os.getpid(), os.urandom(4).hex()))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(directory)


# -- staging directories (fork, import) ------------------------------------------


def make_staging_dir(store):
    """A new private directory in `store` named for this process (removed by the caller)."""
    import tempfile

    try:
        return tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=store)
    except OSError as e:
        raise StoreError(f"om: cannot create a staging folder in {store}: {e.strerror or e}") from None


def sweep_staging(store, now=None):
    """Remove the staging directories of `store` that no live process owns.

    Returns `(removed, kept)`, two sorted lists of paths: the ones removed as
    abandoned, and the ones left alone because a live process owns them or,
    for a name without a pid, because they are too recent to tell. Never
    raises for a store it cannot list or change.
    """
    import shutil
    import time

    try:
        names = sorted(n for n in os.listdir(store) if n.startswith(STAGING_PREFIX))
    except OSError:
        return [], []
    now = time.time() if now is None else now
    removed, in_use = [], []
    for name in names:
        path = os.path.join(store, name)
        if _staging_owned(name, path, now):
            in_use.append(path)
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed, in_use


def _staging_owned(name, path, now):
    pid, _, rest = name[len(STAGING_PREFIX):].partition("-")
    if pid.isdigit() and rest:
        return process_alive(int(pid))
    try:
        return now - os.lstat(path).st_mtime < UNOWNED_STAGING_SECONDS
    except OSError:
        return True  # gone already, or unreadable: leave it alone


def process_alive(pid):
    """Whether process `pid` exists (another user's process counts), so what it owns is left alone."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by another user
    return True
