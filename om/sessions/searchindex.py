"""The store index's search part kept current: every session's documents, read from its ledger when it changed.

For every session the catalogue lists, the index holds its ledger's documents
(sources and entries) in one full-text table for the store
(om.derived.store_index.docs), so cross-session search (om.sessions.storerank) ranks
the whole store at once. This module decides which sessions' documents are
not current and reads them.

Invariants:
- Kept true like the catalogue: a session's documents were read at its
  catalogue stamp; any other stamp, or an unsettled one, reads them again, only
  the rows after what they cover when the ledger's first rows are unchanged
  (om_fts's rule: same count, same id at the covered seq) and its
  `om_generation` is the same, else all of them. A session whose documents
  cannot be brought up to date here (unreadable, an index this process cannot
  write, ids past the table's bits) is `behind`: cross-session search searches
  it alone and never takes its rows from the table.
- A ledger is only read: attached with `mode=ro` to a private in-memory
  database (om.derived.store_index.reader.Reader).
- Bounded: what is read is stored CHUNK sessions at a time, so memory holds a
  few chunks whatever the store's size. A build (NOTICE_AT sessions or more)
  commits every COMMIT_SECONDS, with FTS5's automatic merging off while it
  inserts, then merges its segments into one and switches merging on again; a
  killed build keeps what it committed (the next call goes on from there) and
  the next catch-up switches merging on.
- Many sessions to read are read by forked worker processes, one per CPU this
  process may use (at most WORKERS), each with its own Reader; only this
  process writes the index, and it gets every read back in order. A worker
  opens nothing this process has open, writes only to its pipe and exits
  without running the parent's cleanup; it dies with a broken pipe when this
  process dies, and a worker that dies leaves its sessions unread, which
  means behind, never skipped.
"""

import os

#: Reading this many sessions' search rows in one call says so on stderr.
NOTICE_AT = 200
#: Sessions whose documents are stored in one call (what memory holds at once).
CHUNK = 50
#: A build (NOTICE_AT sessions or more) commits what it stored about this often (seconds): FTS5 writes a
#: segment at every commit, and merging many small ones cost more than the inserts; other writers of
#: the index wait at most this long (BUSY_SECONDS is longer).
COMMIT_SECONDS = 4.0
#: A long read says how far it got this often (seconds).
PROGRESS_SECONDS = 10.0
#: Sessions to read at least before worker processes share the reading, and sessions each of them gets at least.
PARALLEL_AT = 200
PER_WORKER = 100
#: How much less CPU a worker asks for than this process: on a machine with fewer CPUs than processes, this
#: process's inserts are what the build waits for (a quarter faster on 2 CPUs).
NICE = 5
#: Worker processes at most: past a few, this process's writes of what they read are the bottleneck.
WORKERS = 8


def bring_up_to_date(index, store, rows, progress=None):
    """Read the documents of the catalogue `rows` (Candidates) that are not current, and store them.

    Returns the names whose documents are still not current (unreadable ledgers, an
    index this process cannot write): those must be searched alone.
    """
    import time

    from om.derived.store_index.docs import fits
    from om.sessions.index import _say

    # Not current (the store index's `search_scope` asks the same of its rows in SQL):
    stale = [r for r in rows if r.id is None or not r.stamp or r.searched != r.stamp]
    if not stale or not index.writable:
        return {r.name for r in stale}
    loud = progress is not None and len(stale) >= NOTICE_AT
    began = time.monotonic()
    if loud:
        _say(progress, f"om: reading {len(stale)} sessions into the search part of the store index of {store}"
                       " (once; later searches read only what changed)")
    behind = {r.name for r in stale if r.id is None}
    work = [r for r in stale if r.id is not None]
    known = {r.id: index.coverage(r.id) for r in work}
    batch, done, told = [], 0, began
    workers, shared = _workers(len(work)), []
    # A build: no automatic merging while it inserts (om.derived.store_index.docs.set_merging), and a
    # transaction of COMMIT_SECONDS rather than of CHUNK sessions. Merging is switched on again after,
    # and by the next catch-up when a killed build left it off.
    build = len(work) >= NOTICE_AT
    if not index.merging(not build):
        return {r.name for r in stale}
    reads = _forked_reads(store, work, known, workers, shared) if workers > 1 else _read_each(store, work, known)
    held = time.monotonic()
    try:
        if build and not index.begin():
            return {r.name for r in stale}
        for row, read in reads:
            done += 1
            if read is None or not fits(row.id, read[0]["coverage"]):
                behind.add(row.name)
                continue
            batch.append((row.name, row.id, row.stamp, *read))
            if len(batch) >= CHUNK:
                if not index.save_search(batch):
                    return {r.name for r in stale}
                batch = []
                if build and time.monotonic() - held >= COMMIT_SECONDS:
                    if not (index.end() and index.begin()):
                        return {r.name for r in stale}
                    held = time.monotonic()
                if loud and time.monotonic() - told >= PROGRESS_SECONDS:
                    told = time.monotonic()
                    _say(progress, f"om: ... {done} of {len(stale)} sessions read ({told - began:.0f} s)")
        if batch and not index.save_search(batch):
            return {r.name for r in stale}
        if build and not index.end():
            return {r.name for r in stale}
        if build:
            # Its segments, left unmerged, made each later search look a term up in dozens of them.
            if loud:
                _say(progress, f"om: merging the search part of the store index ({time.monotonic() - began:.0f} s)")
            index.merge_all()
    finally:
        index.end(keep=False)
        reads.close()
        if build:
            index.merging(True)
    if loud:
        by = f" ({shared[0]} processes reading them)" if shared else ""
        _say(progress, f"om: read {len(stale)} sessions' search rows in {time.monotonic() - began:.1f} s{by}")
    return behind


def _workers(count):
    """How many processes read `count` sessions: one per CPU this process may use, where it can fork."""
    if count < PARALLEL_AT or not hasattr(os, "fork"):
        return 1
    return max(1, min(_cpus(), WORKERS, count // PER_WORKER))


def _cpus():
    """The CPUs this process may use (its affinity, where the system has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _forked_reads(store, rows, known, workers, shared):
    """_read_each's reads, made by `workers` forked processes: worker k reads rows k, k + workers, ...
    and sends each read back as one length-prefixed marshal frame (plain data: ints, strings, bytes,
    tuples, lists, dicts). A worker that ends early leaves the rest of its share unread (None).

    One thread per worker drains its pipe into a bounded queue, so the workers go on reading while
    this process stores what they read (a whole CHUNK of sessions in one transaction); the threads
    are joined before this returns. Where no process or thread can be had now, the rows are read here;
    else `shared` gets the number of workers.
    """
    import marshal
    import signal
    import threading
    from queue import Queue

    shares: list = []  # [pid, the read end of its pipe as a file, its frames, the thread draining it]
    try:
        try:
            for k in range(workers):
                part = rows[k::workers]
                readable, writable = os.pipe()
                inherited = [readable] + [s[1].fileno() for s in shares]
                # Ctrl-C held until the worker is inside its own try: a KeyboardInterrupt raised in the
                # child before that would unwind into this function's copy in the child.
                signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
                try:
                    pid = os.fork()
                except OSError:
                    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
                    os.close(readable)
                    os.close(writable)
                    raise
                if pid == 0:  # pragma: no cover - the worker's side, measured by its results
                    _work(writable, inherited, store, part, known)  # never returns
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
                os.close(writable)
                shares.append([pid, os.fdopen(readable, "rb"), Queue(CHUNK), None])
            for share in shares:
                thread = threading.Thread(target=_drain, args=(share[1], share[2]), daemon=True)
                thread.start()
                share[3] = thread
        except (OSError, RuntimeError):  # no process or thread to be had now: read here, as without workers
            _stop(shares)
            shares = []
            yield from _read_each(store, rows, known)
            return
        shared.append(workers)
        ended = [False] * workers
        for i, row in enumerate(rows):
            k = i % workers
            frame = None if ended[k] else shares[k][2].get()
            ended[k] = frame is None
            yield row, marshal.loads(frame) if frame is not None else None
    finally:
        _stop(shares)


def _stop(shares):
    """End the workers (done already, or stopped early: they only read), their threads, their pipes."""
    import signal
    from queue import Empty

    for pid, _, _, _ in shares:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    for _, _, frames, thread in shares:
        while thread is not None and thread.is_alive():  # its pipe ends with its worker; what it queues is dropped
            try:
                frames.get(timeout=0.05)
            except Empty:
                pass
    for pid, stream, _, _ in shares:
        stream.close()
        try:
            os.waitpid(pid, 0)
        except OSError:
            pass


def _drain(stream, frames):
    """Queue each frame a worker sends, then None when its pipe ends."""
    from struct import Struct

    head = Struct("<Q")
    try:
        while True:
            frame = stream.read(head.size)
            if len(frame) != head.size:
                break
            size = head.unpack(frame)[0]
            body = stream.read(size)
            if len(body) != size:
                break
            frames.put(body)
    except (OSError, ValueError):
        pass
    finally:
        frames.put(None)


def _work(out, inherited, store, rows, known):  # pragma: no cover - runs in a forked worker
    """A worker's life: read `rows`, write each read to the pipe `out`, and exit without cleanup
    (the parent's open files, buffers and connections are the parent's to close)."""
    code = 1
    try:  # from the first statement: nothing may unwind into the parent's code, which this copy also holds
        import marshal
        import signal
        from struct import Struct

        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        try:
            os.nice(NICE)
        except OSError:
            pass

        for fd in inherited:  # read ends (its own, earlier workers'): held here, no pipe would break with the parent
            os.close(fd)
        pack = Struct("<Q").pack
        with os.fdopen(out, "wb") as stream:
            for _, read in _read_each(store, rows, known):
                frame = marshal.dumps(read)
                stream.write(pack(len(frame)) + frame)
        code = 0
    finally:
        os._exit(code)


def _read_each(store, rows, known):
    """Yield (row, (statistics, full) or None) for each row, read through one Reader."""
    from om.derived.store_index.reader import Reader
    from om.sqlite import load
    from om.store import DB_NAME

    reader = Reader()
    try:
        for row in rows:
            try:
                yield row, reader.read(os.path.join(store, row.name, DB_NAME), row.session, known[row.id])
            except load().Error:
                yield row, None
    finally:
        reader.close()


def usable(index):
    """Whether this index can hold a search part (FTS5 is there to tokenize as om_fts does)."""
    from om.derived import fts

    return index is not None and fts.fts5_available(index.conn)
