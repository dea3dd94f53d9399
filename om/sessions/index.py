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
  had just changed is stored unsettled and read again next time; so is every
  row of a ledger in WAL mode (a v1 peer may choose it), whose commits go to
  its `-wal` file and can leave the ledger's own file as it was. Directories
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
    """The store's session directories, each with its ledger's stamp (Stamps).

    A stamp is bytes: the directory's and the file's inode, the file's size and
    its modification and change times in nanoseconds; None when the directory is
    not a plain directory holding a plain ledger file (then only opening it can
    say why).
    """
    from struct import Struct

    pack = Struct(STAMP).pack
    try:
        folder = os.open(store, os.O_RDONLY)
    except OSError as e:
        raise StoreError(f"om: cannot read store {store}: {e.strerror or e}") from None
    try:
        with os.scandir(folder) as entries:
            # d_type and d_ino: no system call for either.
            inodes = {e.name: e.inode() if e.is_dir(follow_symlinks=False) else None
                      for e in entries if e.name.startswith("session-")}
        names = sorted(inodes)  # strings sort several times faster than (name, inode) pairs
        lstat = os.lstat
        found: list = []
        for name in names:
            inode = inodes[name]
            st = None
            if inode is not None:
                try:
                    st = lstat(name + LEDGER, dir_fd=folder)  # relative to the store: the shortest path walk
                except OSError:
                    pass
            if st is None or st.st_mode & 0o170000 != S_IFREG:
                found.append(None)
                continue
            found.append(pack(inode, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    except OSError as e:
        raise StoreError(f"om: cannot read store {store}: {e.strerror or e}") from None
    finally:
        os.close(folder)
    return Stamps(names, found)


class Stamps:
    """The session directories of a store in name order, and their stamps.

    `snapshot` is all of it as one value (None when a directory is not a plain
    ledger's): while the store gives the same value, it holds the same ledgers,
    each with the stamp it had. `of` maps a name to (stamp, change time in ns,
    the stamp's last field), made on first use: a listing that matches its
    snapshot never needs it.
    """

    def __init__(self, names, found):
        self.names, self._found = names, found
        self._of = None

    @property
    def snapshot(self):
        if None in self._found:
            return None
        # Names hold no NUL and none is empty, so the double NUL ends them; stamps have one size.
        listing = "\0".join(self.names).encode("utf-8", "surrogateescape")
        return listing + b"\0\0" + b"".join(self._found)

    @property
    def of(self):
        if self._of is None:
            from struct import Struct

            fields = Struct(STAMP).unpack
            self._of = {name: (stamp, fields(stamp)[-1]) if stamp is not None else (None, 0)
                        for name, stamp in zip(self.names, self._found)}
        return self._of


LEDGER = "/" + DB_NAME
#: The columns every catalogue row starts with (the payload's follow).
FIXED = ("name", "stamp", "listed", "project", "project_id")
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
    """The store's readable sessions, and the skipped directories.

    `rows` (made on first use) are tuples FIXED + payload columns (name, stamp,
    listed, project, project_id, ...), most recent activity first. `unlisted` names the
    skipped directories whose ledger opened but could not be summarized: a
    reader that needs less than a summary (search, export) tries them itself,
    as it always did. `version` is the index's version when nothing was read
    afresh, skipped or gone (then a listing printed at it is still true), else None:
    at that version the index holds a row for each of `names` and for nothing
    else, so while it is still at it the rows are its rows, in the order it keeps.
    """

    def __init__(self, store, names, skipped, unlisted, index, fresh, version, payload, saved=()):
        self.store, self.names, self.skipped, self.unlisted = store, names, skipped, list(unlisted)
        self.index, self.fresh, self.version, self.payload = index, fresh, version, payload
        self.saved = set(saved)  # rows read afresh that the index now holds too
        self._rows = None

    def carrying(self, payload):
        """These rows will carry the `payload` columns (before the rows are first used)."""
        assert self._rows is None
        self.payload = payload
        return self

    @property
    def rows(self):
        if self._rows is None:
            self._rows = self._made()
        return self._rows

    def _made(self):
        from om.derived.store_index import COLUMNS

        columns = (*FIXED, *self.payload)
        have = {}
        if self.index is not None:
            version, rows = self.index.rows(columns, ordered=self.version is not None)
            if version == self.version:
                return rows
            have = {r[0]: r for r in rows}
        made = []
        for name in self.names:
            row, read = have.get(name), self.fresh.get(name)
            if read is not None and (row is None or name not in self.saved):  # read here, not in the index
                row = tuple(read[COLUMNS.index(c)] if c in COLUMNS else MISSING.get(c) for c in columns)
            if row is not None:
                made.append(row)
        made.sort(key=lambda r: r[2])
        return made

    def column(self, name):
        """{directory name: that column} of every row."""
        at = (*FIXED, *self.payload).index(name)
        return {row[0]: row[at] for row in self.rows}


def current(store, progress=None, keep_index=False, use_index=True, payload=()):
    """The fresh Catalogue of canonical `store` (see the module invariants).

    A call that has to read many ledgers says so in one line on the text
    stream `progress` (stderr) before it starts, and how long it took. With
    `keep_index`, the open index (or None) stays on the result for the
    caller to use and close (the rows are made from it on first use);
    otherwise it is closed and the rows are made now. `use_index=False` reads
    every ledger and neither opens nor creates an index. `payload` names
    more columns of the rows (om.derived.store_index's `sessions` table).
    """
    from om.derived import store_index

    began = time.time_ns()
    found = stamps(store)
    # A store without a session has nothing to index: a new index is made only beside ledgers.
    index = store_index.open_index(store, create=bool(found.names)) if use_index else None
    try:
        known, version, snapshot = {}, None, None
        if index is not None:
            try:
                snapshot = found.snapshot
                version = index.version()
                if snapshot is not None and index.output(SNAPSHOT, version) == snapshot:
                    # Every ledger has the stamp its row was read at: the rows need not be read to know it.
                    return _made(Catalogue(store, found.names, [], [], index, {}, version, payload), keep_index)
                version, rows = index.rows(("name", "stamp"))
                known = dict(rows)
            except _sqlite_error():
                index.close()
                index, known = None, {}
        names, stale = [], []
        of = found.of
        for name, (stamp, _) in of.items():
            if stamp is not None and known.get(name) == stamp:
                names.append(name)
            else:
                stale.append(name)
        stale.sort()
        loud = progress is not None and len(stale) >= NOTICE_AT
        if loud:
            _say(progress, f"om: reading {len(stale)} sessions into the store index of {store}"
                           " (once; later calls read only what changed)")
        skipped, fresh, unlisted, gone = [], [], [], [name for name in known if name not in of]
        read, saved = {}, []
        for name in stale:
            row, error, opened = read_row(store, name, of[name], began)
            if error is not None:
                skipped.append({"directory": os.path.join(store, name), "error": error})
                if opened:
                    unlisted.append(name)
                if name in known:
                    gone.append(name)
                continue
            names.append(name)
            fresh.append(row)
            read[name] = row
            if index is not None and len(fresh) >= CHUNK:
                if index.save(fresh):
                    saved.extend(r[0] for r in fresh)
                fresh = []
        if index is not None and index.save(fresh, gone):
            saved.extend(r[0] for r in fresh)
        if loud:
            _say(progress, f"om: read {len(stale)} sessions in {(time.time_ns() - began) / 1e9:.1f} s")
        unchanged = version if index is not None and not read and not gone and not skipped else None
        if index is not None and unchanged is not None and snapshot is not None:
            index.save_output(SNAPSHOT, unchanged, snapshot)
        return _made(Catalogue(store, names, skipped, unlisted, index, read, unchanged, payload, saved), keep_index)
    finally:
        if index is not None and not keep_index:
            index.close()


#: The `outputs` key of the snapshot: every directory name and its ledger's stamp, as the index's rows held
#: them all at that version. While the store gives the same, no row needs reading to know they are all true.
SNAPSHOT = "stamps"


def _made(catalogue, keep_index):
    if not keep_index:
        catalogue.rows  # noqa: B018 - made while the index is open
        catalogue.index = None
    return catalogue


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
            wal = ledger.in_wal()
    except (database_error(), StoreError) as e:
        return None, f"not a readable ledger: {e}", True
    settled = stamp[0] is not None and stamp[1] < began - SETTLE_NS and not wal
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
