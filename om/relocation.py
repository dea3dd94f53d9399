"""Moving the store out of the plugin's data folder into the client's store (om.location), once.

Earlier versions kept the store in the plugin's data folder, which the client
deletes with the plugin. The first hook or MCP server of this version to find the
client's store missing, or sessions left in the data folder, moves them (`move`).

Invariants:
- A session is in the old place or in the new one, never in both, never in part:
  each session directory moves with one rename (its journal with its database),
  under the ledger's exclusive lock, so no writer's transaction is cut in two; a
  session whose lock stays taken past a short wait stays where it is for the next
  call, and one that exists in both places is never overwritten (doctor names it).
- One mover at a time: movers (the hooks of every session, the MCP server) hold an
  exclusive lock on `<data folder>/.om-move.lock` while they move, and a process
  that finds sessions still to move waits for that lock before it opens any ledger,
  so nobody starts an empty ledger for a session that is on its way.
- Killed at any point, a move leaves every session whole in one of the two places,
  and the next call carries on where it stopped.
- What stays in the data folder is that installation's own: `.om-python`, an
  installed `runtime/`, the bytecode of its modules (`pycache/`, see bin/om), the
  lock, and `.om-moved` naming the new store, which makes every command given the
  old path say where the store went (om.store) instead of starting a second store
  there.
"""

from om.errors import Conflict
from om.fastpath import isdir, isfile, islink, join, lexists, posix
from om.store import DB_NAME, MOVED_MARKER, fsync_dir, make_private_dir, write_atomically

LOCK_NAME = ".om-move.lock"
#: Store-level files that move with the sessions (when the new store has none yet).
STORE_FILES = ("receipts", "hook-errors.log")
#: How long a mover waits for another mover, and, over one whole move, for writers holding ledgers.
MOVER_WAIT_S = 20.0
LEDGER_WAIT_S = 2.0


def move(data, store):
    """Create `store` (0700) if missing and move the data folder's sessions into it; returns the store.

    Raises Conflict when another mover keeps the lock past MOVER_WAIT_S.
    """
    if not isdir(data):
        make_private_dir(store, parents=True)  # a fresh install: nothing to move
        return store
    from om.filelock import FileLock

    with FileLock(join(data, LOCK_NAME), MOVER_WAIT_S, f"another process is moving the store to {store}"):
        if not isdir(store):
            make_private_dir(store, parents=True)
        budget = _Budget(LEDGER_WAIT_S)
        for name in sorted(posix.listdir(data)):
            if name.startswith("session-"):
                _move_session(join(data, name), join(store, name), budget)
        for name in STORE_FILES:
            if lexists(join(data, name)) and not lexists(join(store, name)):
                posix.rename(join(data, name), join(store, name))
        fsync_dir(store)
        fsync_dir(data)
        marker = join(data, MOVED_MARKER)
        if not isfile(marker):
            write_atomically(marker, (store + "\n").encode("utf-8"), 0o600)
    return store


def _move_session(source, target, budget):
    if lexists(target) or islink(source) or not isdir(source):
        return False
    database = join(source, DB_NAME)
    lock = None
    if isfile(database):
        from om.ledger.files import ExclusiveLock

        try:
            lock = ExclusiveLock(database, timeout=budget.left())
        except Conflict:
            return False  # in use past the wait: it moves on a later call
    try:
        posix.rename(source, target)
    finally:
        if lock is not None:
            lock.__exit__(None, None, None)
    return True


class _Budget:
    """Seconds left to wait for ledger locks over one move, so many busy ledgers cannot stall a hook."""

    def __init__(self, seconds):
        import time

        self.clock = time.monotonic
        self.deadline = self.clock() + seconds

    def left(self):
        return max(0.0, self.deadline - self.clock())
