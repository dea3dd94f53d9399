"""What a remote shares of this store: its sessions in scope, each one's projection (om.sync.projection).

Invariants:
- In scope: the store's own session ledgers and the project memories of the
  project home (om.project.home), of the remote's project when it has one
  (a session's project is the identity its hooks recorded), all of them
  otherwise. Mirrors are never in scope: a writer publishes only its own.
- Ledgers are opened read-only (`mode=ro`), each read in one snapshot.
- Cheap when nothing changed: a session whose ledger file (and WAL) has the
  same inode, size and modification time as when it was last projected, and
  whose blob is already in om's repository, is not read again (with a hold
  window every session is read again: what is old enough changes with time).
- A ledger that cannot be read is skipped and named, never fatal.
- A ledger rewritten in place since it was last published (its
  `om_generation` grew: a forget, here or by another store that shares the
  project home) is noticed (`Collection.rewritten`), so the publication is
  made again without history.
"""

import os

from om.sync.layout import NO_PROJECT, is_hex, session_path


class Item:
    """One file of the writer's tree: its path, blob id (sha1) and bytes (None when the blob is already stored)."""

    __slots__ = ("path", "blob", "data")

    def __init__(self, path, blob, data):
        self.path, self.blob, self.data = path, blob, data


def blob_id(data):
    """git's object name of a blob holding `data` (sha1 repositories: om's own is one)."""
    import hashlib

    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _fingerprint(path):
    found: list = []
    for name in (path, path + "-wal"):
        try:
            st = os.stat(name)
        except OSError:
            found.append(None)
            continue
        found.append([st.st_ino, st.st_size, st.st_mtime_ns])
    return found


def _directories(store):
    """[(directory, is a project memory)] of the ledgers in scope before the project filter."""
    from om.project.home import project_home
    from om.sessions.catalogue import DIR_PREFIX, session_directories

    found = [(os.path.join(store, name), False) for name in session_directories(store)]
    home = project_home()
    try:
        names = sorted(n for n in os.listdir(home) if n.startswith(DIR_PREFIX))
    except OSError:
        names = []
    if os.path.realpath(home) != os.path.realpath(store):
        found += [(os.path.join(home, name), True) for name in names]
    return found


class Collection:
    """The outbox of one remote, read one ledger at a time as it is iterated (Items: bytes only for the
    sessions whose blob is not stored yet). Once iterated: `withheld` ([{session, id}] of texts
    held back as secrets), `skipped` ([{directory, error}] of unreadable ledgers) and `fresh` (the
    remote's new {name: {"fp", "path", "blob"}} cache)."""

    def __init__(self, store, remote, cache, have):
        self.store, self.remote, self.cache, self.have = store, remote, cache, have
        self.withheld, self.skipped, self.fresh = [], [], {}
        #: A ledger published before was rewritten in place since (a forget, here or by another
        #: store sharing the project home): the history holding its old text must go.
        self.rewritten = False

    def __iter__(self):
        from om.ledger import Ledger
        from om.store import DB_NAME

        share, hold = self.remote["share"], int(self.remote.get("hold") or 0)
        wanted = (self.remote.get("project") or {}).get("key")
        cutoff = _cutoff(hold) if hold else None
        for directory, is_project in _directories(self.store):
            name = ("project/" if is_project else "") + os.path.basename(directory)
            fp = _fingerprint(os.path.join(directory, DB_NAME)) + [share, hold]
            known = self.cache.get(name)
            if not hold and known and known.get("fp") == fp and (
                    known.get("path") is None or known.get("blob") in self.have):
                self.fresh[name] = known
                if known.get("path"):
                    yield Item(known["path"], known["blob"], None)
                continue
            try:
                with Ledger.open_directory(os.path.dirname(directory), directory) as ledger:
                    with ledger.reading():
                        snapshot = _snapshot(ledger, is_project)
            except Exception as e:  # a damaged ledger is named and skipped; the others still go out
                self.skipped.append({"directory": directory, "error": str(e).removeprefix("om: ")[:300]})
                continue
            key, generation = snapshot["key"], snapshot["generation"]
            if known and known.get("path") and (known.get("gen") or 0) < generation:
                self.rewritten = True
            if wanted is not None and key != wanted:
                self.fresh[name] = {"fp": fp, "path": None, "blob": None, "gen": generation}
                continue
            from om.ids import session_hash
            from om.sync.projection import render

            data, secret = render(snapshot, share, cutoff)
            del snapshot
            self.withheld += [{"session": ledger.session, "id": item} for item in secret]
            item = Item(session_path(key or NO_PROJECT, session_hash(ledger.session)), blob_id(data), data)
            self.fresh[name] = {"fp": fp, "path": item.path, "blob": item.blob, "gen": generation}
            yield item


def collect(store, remote, cache, have):
    """The Collection of what remote config `remote` shares now (see Collection).

    `cache` is the remote's last {directory name: {"fp", "path", "blob"}}; `have`
    the blob ids already in the published tree.
    """
    return Collection(store, remote, cache, have)


def _cutoff(hold):
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - hold))


def _snapshot(ledger, is_project):
    from om.project import CREATED_KEY, PROJECT_ID_KEY
    from om.project.home import SESSION_PREFIX

    sources = ledger.all_sources()
    entries = ledger.entries()
    checkpoint = ledger.meta_get("last_checkpoint_at")
    provenance = {}
    if is_project:
        from om.ledger.promotion import provenance as marks

        key = ledger.session[len(SESSION_PREFIX):] if ledger.session.startswith(SESSION_PREFIX) else None
        provenance = marks(ledger.conn)
    else:
        key = ledger.meta_get(PROJECT_ID_KEY)
    if not is_hex(key, 16):
        key = None
    created = ledger.meta_get(CREATED_KEY) or (sources[0]["timestamp"] if sources else None)
    stamps = [t for t in (created, checkpoint, sources[-1]["timestamp"] if sources else None) if t]
    return {"session": ledger.session, "key": key, "created": created, "last_activity": max(stamps, default=None),
            "cursor": ledger.cursor(), "last_checkpoint_at": checkpoint, "sources": sources, "entries": entries,
            "provenance": provenance, "generation": ledger.generation()}


def waiting(store, remote, cache):
    """How many ledgers in scope changed since the remote's last publication (one stat each; none is read).

    A ledger not seen before counts, whatever its project: only reading it tells.
    """
    from om.store import DB_NAME

    share, hold = remote["share"], int(remote.get("hold") or 0)
    count = 0
    for directory, is_project in _directories(store):
        name = ("project/" if is_project else "") + os.path.basename(directory)
        known = cache.get(name)
        if known is None or known.get("fp") != _fingerprint(os.path.join(directory, DB_NAME)) + [share, hold]:
            count += 1
    return count
