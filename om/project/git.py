"""Running git: the one program om runs, always read-only on the user's repositories.

Invariants:
- `run_git` runs `git ARGS` with no terminal prompt, standard input and error
  on /dev/null, the user's configuration as it is but no GIT_* variable that
  points git at another repository, and a deadline; past the deadline the
  process is killed and None returned, so a slow repository costs at most the
  deadline.
- FileNotFoundError means git is not installed; the caller decides what that
  means (identity: the repository is its folder, as before).
- Import-light: a session's first start in a repository runs it, so it spawns
  with posix_spawnp and waits with select, without `subprocess` (which loads
  `signal`, `enum`, `re` and more, milliseconds of every such start).
"""

from om.fastpath import posix

#: GIT_* variables that say where the user's configuration is, kept; the ones that
#: point git at another repository (GIT_DIR, GIT_WORK_TREE...) are dropped, since a
#: hook inherits the client's environment, not the folder's.
_KEEP = (b"GIT_CONFIG_GLOBAL", b"GIT_CONFIG_NOSYSTEM", b"GIT_CONFIG_SYSTEM")


def _environment():
    env = {k: v for k, v in posix.environ.items() if not k.startswith(b"GIT_") or k in _KEEP}
    env[b"GIT_TERMINAL_PROMPT"] = b"0"
    env[b"LC_ALL"] = b"C"
    return env


def run_git(args, seconds):
    """`(exit code, stdout text)` of `git ARGS`, or None when it ran past `seconds`."""
    import select
    import time

    deadline = time.monotonic() + seconds
    read_end, write_end = posix.pipe()
    null = posix.open("/dev/null", posix.O_RDWR)
    try:
        pid = posix.posix_spawnp("git", ["git", *args], _environment(), file_actions=[
            (posix.POSIX_SPAWN_DUP2, null, 0), (posix.POSIX_SPAWN_DUP2, write_end, 1),
            (posix.POSIX_SPAWN_DUP2, null, 2), (posix.POSIX_SPAWN_CLOSE, read_end)])
    except BaseException:
        posix.close(read_end)
        raise
    finally:
        posix.close(write_end)
        posix.close(null)
    chunks = []
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([read_end], [], [], remaining)[0]:
                posix.kill(pid, 9)
                posix.waitpid(pid, 0)
                return None
            chunk = posix.read(read_end, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        posix.close(read_end)
    status = posix.waitpid(pid, 0)[1]
    return posix.waitstatus_to_exitcode(status), b"".join(chunks).decode("utf-8", "replace")
