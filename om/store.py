"""Where ledgers live on disk, and with which permissions.

Invariants: the store path is canonical (absolute, symlinks resolved) before
anything is derived from it; only the session *hash* touches the filesystem,
so no session string can escape the store; directories are created 0700 and
databases 0600 whatever the umask, before SQLite ever opens them; a session
directory or database file that is a symlink is refused (never followed), as
a store that is a file is, and so are a session directory or a ledger file given
as a store, and a folder whose store moved away (`.om-moved`); a folder that holds
neither a session directory nor only what om keeps in a store is no store
(`foreign_names`: the store-wide reads write nothing there); staging directories (`.om-tmp-<pid>-*`) name the
process that owns them, so one left by a killed process can be told from one
still in use and removed. Durable file writes are here too, for every module
that writes one: `fsync_dir` after a rename, and `write_atomically` (a private
same-directory temporary file, fsynced, then one rename), so a reader sees the
old file or the new one, never a part.
"""

from om.errors import InputError, StoreError

# Not os, which costs a hook event about 1 ms: its system calls and path functions (om.fastpath).
from om.fastpath import abspath, basename, dirname, exists, expanduser, isdir, islink, join, lexists, posix, realpath
from om.ids import session_hash, trim_space

DB_NAME = "memory.sqlite3"
SESSION_PREFIX = "session-"
#: What om.relocation leaves in a folder whose store it moved: the new store's path.
MOVED_MARKER = ".om-moved"
MAX_SESSION_CHARS = 256
STAGING_PREFIX = ".om-tmp-"
#: What om keeps at the top of a store besides the session directories: the store index
#: (om.derived.store_index.FOLDER), the capture receipts (om.receipts.DIR), the hooks'
#: error log and what `om sync` keeps (om.sync.layout); its hidden folders (staging, a
#: removal cut short) all start with HIDDEN_PREFIX.
STORE_NAMES = ("index", "receipts", "hook-errors.log", "sync")
HIDDEN_PREFIX = ".om-"
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
    return realpath(abspath(expanduser(str(path))))


def resolve_store(path, create=True):
    """Canonical store path; created 0700 when missing (and `create`).

    Refused (StoreError): a path that is not a directory, a ledger file, a
    session directory (the store is the folder holding it), and a folder whose
    store moved elsewhere (om.relocation left its `.om-moved` there).
    """
    store = canonical_store(path)
    if isdir(store):
        refuse_non_store(store)
        return store
    if not lexists(store):
        if not create:
            raise StoreError(f"om: store {store} does not exist")
        make_private_dir(store, parents=True)
    # Checked after creating: another process may have created it meanwhile.
    if not isdir(store):
        if basename(store) == DB_NAME or _is_sqlite_file(store):
            raise StoreError(f"om: {store} is a ledger file, not a store; its store is {dirname(dirname(store))}")
        raise StoreError(f"om: store {store} is not a directory")
    return realpath(store)


def refuse_non_store(store):
    """StoreError when the directory `store` is a session directory or a store that moved away."""
    if basename(store).startswith(SESSION_PREFIX) and lexists(join(store, DB_NAME)):
        raise StoreError(f"om: {store} is a session directory, not a store; its store is {dirname(store)}")
    moved = join(store, MOVED_MARKER)
    if lexists(moved):
        try:
            with open(moved, "rb") as f:
                target = f.read(4096).decode("utf-8", "replace").strip()
        except OSError:
            target = "the client's store"
        raise StoreError(f"om: the store in {store} moved to {target}; pass --store {target}")


def foreign_names(store):
    """What makes the directory `store` no store: [] when it is one, else its names om does not keep in a store.

    A store holds session directories, or only what om keeps in one (an empty
    folder, a store whose sessions were all removed). The listing stops at the
    first session directory, which in a store of any size is among the first names.
    """
    found = []
    try:
        with posix.scandir(store) as entries:
            for entry in entries:
                name = entry.name
                if name.startswith(SESSION_PREFIX):
                    return []
                if name not in STORE_NAMES and not name.startswith(HIDDEN_PREFIX):
                    found.append(name)
    except OSError as e:
        raise StoreError(f"om: cannot read store {store}: {e.strerror or e}") from None
    return sorted(found)


def _is_sqlite_file(path):
    try:
        with open(path, "rb") as f:
            return f.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def make_private_dir(path, parents=False):
    try:
        if parents:
            # Not os.makedirs: it creates missing ancestors 0777 minus the umask,
            # world-writable under umask 000, so anyone could swap the store out.
            _make_ancestors(path)
            try:
                posix.mkdir(path, 0o700)
            except FileExistsError:
                return  # made by a concurrent process; its modes are its own
        else:
            posix.mkdir(path, 0o700)
        posix.chmod(path, 0o700)
    except FileExistsError:
        raise
    except OSError as e:
        raise StoreError(f"om: cannot create {path}: {e.strerror or e}") from None


def _make_ancestors(path):
    parent = dirname(path)
    if parent == path or isdir(parent):
        return
    _make_ancestors(parent)
    try:
        posix.mkdir(parent, 0o700)
    except FileExistsError:
        pass


def session_dir(store, session):
    return join(store, SESSION_PREFIX + session_hash(session))


def database_path(store, session):
    return join(session_dir(store, session), DB_NAME)


def refuse_symlinks(path):
    """StoreError when the session directory of database `path`, or the file itself, is a symlink."""
    directory = dirname(path)
    for link, what in ((directory, "session directory"), (path, "database file")):
        if islink(link):
            raise StoreError(f"om: {what} {link} is a symlink; om does not follow links inside the store")


def ensure_database_file(path):
    """Create the session directory (0700) and an empty database file (0600) if missing."""
    refuse_symlinks(path)
    directory = dirname(path)
    if not isdir(directory):
        try:
            make_private_dir(directory)
        except FileExistsError:
            pass
    if not exists(path):
        try:
            fd = posix.open(path, posix.O_WRONLY | posix.O_CREAT | posix.O_EXCL, 0o600)
        except FileExistsError:
            return
        except OSError as e:
            raise StoreError(f"om: cannot create {path}: {e.strerror or e}") from None
        try:
            posix.fchmod(fd, 0o600)
        finally:
            posix.close(fd)


def fsync_dir(path):
    """Make a rename or link inside `path` durable (a no-op where directories cannot be opened)."""
    try:
        fd = posix.open(path, posix.O_RDONLY)
    except OSError:
        return
    try:
        posix.fsync(fd)
    except OSError:
        pass
    finally:
        posix.close(fd)


def temp_name(directory, stem):
    """A fresh hidden name in `directory` for a file or folder about to be renamed into place."""
    return join(directory, ".%s.%d.%s.tmp" % (stem, posix.getpid(), posix.urandom(4).hex()))


def write_atomically(path, data, mode=0o644):
    """Write bytes to path via a same-directory temporary file, fsync, one posix.replace."""

    def write(tmp):
        fd = posix.open(tmp, posix.O_WRONLY | posix.O_CREAT | posix.O_EXCL, 0o600)
        with open(fd, "wb") as f:
            f.write(data)
            f.flush()
            posix.fsync(f.fileno())
        posix.chmod(tmp, mode)

    made_atomically(path, write)


def made_atomically(path, make):
    """`make(tmp)` makes a file at a fresh name beside `path` (temp_name), which then replaces `path` in
    one rename and the folder is synced: `path` is the old file or the whole new one, never a part.
    What `make` left is removed when it fails."""
    directory = dirname(path)
    tmp = temp_name(directory, basename(path))
    try:
        make(tmp)
        posix.replace(tmp, path)
    except BaseException:
        try:
            posix.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(directory)


# -- staging directories (fork, import) ------------------------------------------


def make_staging_dir(store):
    """A new private directory in `store` named for this process (removed by the caller)."""
    import tempfile

    try:
        return tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{posix.getpid()}-", dir=store)
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
        names = sorted(n for n in posix.listdir(store) if n.startswith(STAGING_PREFIX))
    except OSError:
        return [], []
    now = time.time() if now is None else now
    removed, in_use = [], []
    for name in names:
        path = join(store, name)
        if _staging_owned(name, path, now):
            in_use.append(path)
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed, in_use


def owner_pid(name, prefix):
    """The pid in a `<prefix><pid>-<rest>` name (a staging or export folder), or None."""
    pid, _, rest = name[len(prefix):].partition("-")
    return int(pid) if pid.isascii() and pid.isdigit() and rest else None


def _staging_owned(name, path, now):
    pid = owner_pid(name, STAGING_PREFIX)
    if pid is not None:
        return process_alive(pid)
    try:
        return now - posix.lstat(path).st_mtime < UNOWNED_STAGING_SECONDS
    except OSError:
        return True  # gone already, or unreadable: leave it alone


def process_alive(pid):
    """Whether process `pid` exists (another user's process counts), so what it owns is left alone."""
    if pid == posix.getpid():
        return True
    try:
        posix.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by another user
    return True
