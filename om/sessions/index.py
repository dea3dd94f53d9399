"""The store's sessions at one stat each: the store index kept true by the readers.

Every store-wide read (`sessions`, `search --all-sessions`, `export
--all-sessions`, the MCP tools) asks `current` for the store's catalogue: one
row per readable session, exactly what reading every ledger would give,
and the session directories that cannot be read. Rows come from the store
index (om.derived.store_index) when the ledger is provably unchanged, and
from the ledger itself otherwise; what was read afresh is written back.

Invariants:
- Same answers as reading every ledger (`scan`): a row is taken from the
  index only when the ledger file has the stamp it was read at (directory and
  file inode, size, modification and change times, in nanoseconds), and its
  last change was SETTLE_NS or more before that read began. Any later write
  changes the change time past that point, which no program can set back, so
  a ledger written meanwhile (by a hook, a v1 peer, ingest, import, fork,
  forget, a copy by hand) is always read again. A row read while its ledger
  had just changed is stored unsettled and read again next time. Directories
  that cannot be read are never cached: each call opens them and reports why.
- Readers write, writers never: the hooks and the ledger commands do not
  touch the index. A reader that cannot write (a read-only store, a busy
  index) answers from what it read and changes nothing; where no index
  exists and none can be made, every ledger is read (`scan`) and nothing is
  created.
- The index never decides an answer: a missing, damaged or foreign index is
  a slow call, never a wrong one.
"""

import os
import time
from stat import S_IFDIR, S_IFREG

from om.errors import StoreError
from om.store import DB_NAME

#: A ledger changed less than this before it was read is read again on the next call
#: (file systems stamp times from a clock that lags by up to a tick; 2 s covers the coarsest).
SETTLE_NS = 3_000_000_000
#: Reading this many ledgers in one call says so on stderr (the first call after the index was deleted).
NOTICE_AT = 500
#: Rows read afresh are stored in transactions of this many, so a killed first build keeps its progress.
CHUNK = 500


def stamps(store):
    """{name: (stamp, changed_ns)} of the store's session directories; (None, 0) when one is not a plain
    directory holding a plain ledger file (then only opening it can say why).

    A stamp is bytes: the directory's and the file's inode, the file's size and
    its modification and change times in nanoseconds.
    """
    from struct import Struct

    found: dict = {}
    odd = (None, 0)
    pack = Struct(STAMP).pack
    try:
        folder = os.open(store, os.O_RDONLY)
    except OSError as e:
        raise StoreError(f"om: cannot read store {store}: {e.strerror or e}") from None
    try:
        with os.scandir(folder) as entries:
            # d_type and d_ino: no system call for either.
            listed = [(e.name, e.inode() if e.is_dir(follow_symlinks=False) else None)
                      for e in entries if e.name.startswith("session-")]
        lstat = os.lstat
        for name, inode in listed:
            if inode is None:
                found[name] = odd
                continue
            try:
                st = lstat(name + LEDGER, dir_fd=folder)  # relative to the store: the shortest path walk
            except OSError:
                found[name] = odd
                continue
            if st.st_mode & 0o170000 != S_IFREG:
                found[name] = odd
                continue
            found[name] = (pack(inode, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns), st.st_ctime_ns)
    except OSError as e:
        raise StoreError(f"om: cannot read store {store}: {e.strerror or e}") from None
    finally:
        os.close(folder)
    return found


LEDGER = "/" + DB_NAME
#: What a row read afresh holds in the columns only the index's search part fills.
MISSING = {"id": None, "searched": b"", "docs": 0, "tokens": 0}
STAMP = "<QQQqq"


def stamp_of(store, name):
    """The stamp `stamps` gives one session directory, or None."""
    from struct import pack

    try:
        directory = os.lstat(os.path.join(store, name))
        st = os.lstat(os.path.join(store, name, DB_NAME))
    except OSError:
        return None
    if directory.st_mode & 0o170000 != S_IFDIR or st.st_mode & 0o170000 != S_IFREG:
        return None
    return pack(STAMP, directory.st_ino, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class Catalogue:
    """The store's readable sessions as encoded rows (most recent activity first), and the skipped directories.

    `unlisted` names the skipped directories whose ledger opened but could not
    be summarized: a reader that needs less than a summary (search, export)
    tries them itself, as it always did.
    """

    def __init__(self, store, rows, skipped, unlisted=(), index=None):
        self.store = store
        self.rows = rows
        self.skipped = skipped
        self.unlisted = list(unlisted)
        self.index = index


def current(store, progress=None, keep_index=False, use_index=True, payload=()):
    """The fresh Catalogue of canonical `store` (see the module invariants).

    A call that has to read many ledgers says so in one line on the text
    stream `progress` (stderr) before it starts, and how long it took. With
    `keep_index`, the open index (or None) stays on the result for the
    caller to use and close; otherwise it is closed. `use_index=False` reads
    every ledger and neither opens nor creates an index. Each row is a tuple
    (name, stamp, listed, project, *payload): `payload` names more columns of
    om.derived.store_index.COLUMNS.
    """
    from om.derived import store_index

    columns = ("name", "stamp", "listed", "project", *payload)
    began = time.time_ns()
    found = stamps(store)
    index = store_index.open_index(store, create=True) if use_index else None
    try:
        known = {}
        if index is not None:
            try:
                known = {r[0]: r for r in index.rows(columns)}
            except _sqlite_error():
                index.close()
                index, known = None, {}
        rows, stale = [], []
        for name, (stamp, _) in found.items():
            row = known.get(name)
            if stamp is not None and row is not None and row[1] == stamp:
                rows.append(row)
            else:
                stale.append(name)
        stale.sort()
        loud = progress is not None and len(stale) >= NOTICE_AT
        if loud:
            _say(progress, f"om: reading {len(stale)} sessions into the store index of {store}"
                           " (once; later calls read only what changed)")
        skipped, fresh, unlisted, gone = [], [], [], [name for name in known if name not in found]
        for name in stale:
            row, error, opened = read_row(store, name, found[name], began)
            if error is not None:
                skipped.append({"directory": os.path.join(store, name), "error": error})
                if opened:
                    unlisted.append(name)
                if name in known:
                    gone.append(name)
                continue
            rows.append(tuple(row[store_index.COLUMNS.index(c)] if c in store_index.COLUMNS else
                              MISSING.get(c) for c in columns))
            fresh.append(row)
            if index is not None and len(fresh) >= CHUNK:
                index.save(fresh)
                fresh = []
        if index is not None:
            index.save(fresh, gone)
            if "id" in columns:  # rows read afresh learn the ids the index gave them
                at = columns.index("id")
                ids = index.ids([r[0] for r in rows if r[at] is None])
                rows = [r if r[at] is not None else r[:at] + (ids.get(r[0]),) + r[at + 1:] for r in rows]
        if loud:
            _say(progress, f"om: read {len(stale)} sessions in {(time.time_ns() - began) / 1e9:.1f} s")
        rows.sort(key=lambda r: r[2])
        return Catalogue(store, rows, skipped, unlisted, index if keep_index else None)
    finally:
        if index is not None and not keep_index:
            index.close()


def read_row(store, name, stamp, began):
    """(encoded row, None, True) of one session directory read from its ledger, or (None, reason, opened)."""
    from om.sessions.catalogue import Unreadable, database_error, encode, open_ledger, summarize

    try:
        ledger, meta = open_ledger(store, name)
    except Unreadable as e:
        return None, str(e), False
    try:
        with ledger:
            row = summarize(ledger, meta)
    except (database_error(), StoreError) as e:
        return None, f"not a readable ledger: {e}", True
    settled = stamp[0] is not None and stamp[1] < began - SETTLE_NS
    return encode(name, stamp[0] if settled else b"", row), None, True


def _say(stream, line):
    try:
        stream.write(line + "\n")
        stream.flush()
    except (OSError, ValueError):
        pass


def _sqlite_error():
    from om.sqlite import load

    return load().Error


def forget(store, sessions):
    """What `om forget` calls once it has rewritten these sessions' ledgers (and bumped `om_generation`):
    their search rows leave the store index, and no byte of them stays in its file.

    `sessions` are session ids. Rows read before this by a reader still running
    are never written back (the index remembers when). An index this cannot
    purge (read-only now, busy, damaged) is deleted whole, which is always
    safe. Never raises.
    """
    import shutil

    from om.derived import store_index
    from om.store import canonical_store, session_dir

    try:
        store = canonical_store(store)
        names = [os.path.basename(session_dir(store, session)) for session in sessions]
    except Exception:
        return
    index = store_index.open_index(store)
    if index is not None:
        with index:
            if index.purge(names):
                return
    if os.path.lexists(store_index.path_of(store)):
        shutil.rmtree(os.path.join(store, store_index.FOLDER), ignore_errors=True)
