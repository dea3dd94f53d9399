"""An exclusive lock on a file, waited for up to a deadline: one process at a time does the job.

Invariants:
- The lock is the operating system's (flock on POSIX, msvcrt's byte lock on
  Windows): it is released when its holder exits, even by kill -9, so a killed
  holder never leaves it taken.
- Waiting is bounded: a lock still held after `timeout` seconds raises Conflict
  naming `what` and the lock file; nothing was done under it.
- The lock file is created 0600 if missing and never deleted (deleting it would
  let two processes lock two different files of the same name).
"""

import sys
import time

from om.errors import Conflict
from om.fastpath import posix


class FileLock:
    """`with FileLock(path, timeout, what): ...`: the job runs while this process holds the lock."""

    def __init__(self, path, timeout, what):
        self.path, self.timeout, self.what = path, timeout, what
        self._fd = None

    def __enter__(self):
        fd = posix.open(self.path, posix.O_RDWR | posix.O_CREAT, 0o600)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                _try_lock(fd)
                break
            except OSError:
                if time.monotonic() >= deadline:
                    posix.close(fd)
                    raise Conflict(f"om: {self.what} (lock {self.path})") from None
                time.sleep(0.02)
        self._fd = fd
        return self

    def __exit__(self, *exc):
        fd, self._fd = self._fd, None
        if fd is None:  # never entered
            return
        try:
            _unlock(fd)
        finally:
            posix.close(fd)


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(fd):
        posix.lseek(fd, 0, 0)
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)

    def _unlock(fd):
        posix.lseek(fd, 0, 0)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try_lock(fd):
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def _unlock(fd):
        fcntl.flock(fd, fcntl.LOCK_UN)
