"""Running git: the one program om runs, read-only on the user's repositories.

Invariants:
- `run` runs `git ARGS` with no terminal prompt (GIT_TERMINAL_PROMPT=0, no
  askpass), the user's configuration as it is but no GIT_* variable that points
  git at another repository, and a deadline; past the deadline the process is
  killed and None returned, so a slow repository (or a remote that does not
  answer) costs at most the deadline. Its standard input is the bytes given
  (fed while its output is read, so neither side can block the other), or
  /dev/null.
- `run_git` is `run` with standard error discarded and the output as text: the
  project identity's one call on the hook path.
- FileNotFoundError means git is not installed; the caller decides what that
  means (identity: the repository is its folder, as before; sync: one line).
- On the user's repositories om only reads (`rev-list`, `ls-remote
  --get-url`); what writes (om sync) writes its own repository, named by
  `--git-dir`.
- Import-light: a session's first start in a repository runs it, so it spawns
  with posix_spawnp and waits with select, without `subprocess` (which loads
  `signal`, `enum`, `re` and more, milliseconds of every such start).
"""

from om.fastpath import posix

#: GIT_* variables that say where the user's configuration is, kept; the ones that
#: point git at another repository (GIT_DIR, GIT_WORK_TREE...) are dropped, since a
#: hook inherits the client's environment, not the folder's.
_KEEP = (b"GIT_CONFIG_GLOBAL", b"GIT_CONFIG_NOSYSTEM", b"GIT_CONFIG_SYSTEM", b"GIT_SSH", b"GIT_SSH_COMMAND")
_CHUNK = 65536


def _environment(extra=None):
    env = {k: v for k, v in posix.environ.items() if not k.startswith(b"GIT_") or k in _KEEP}
    env[b"GIT_TERMINAL_PROMPT"] = b"0"
    env[b"LC_ALL"] = b"C"
    env.pop(b"GIT_ASKPASS", None)
    env.pop(b"SSH_ASKPASS", None)
    for key, value in (extra or {}).items():
        env[key.encode("utf-8")] = value.encode("utf-8", "surrogateescape")
    return env


def run(args, seconds, input=None, env=None, keep_stderr=True):
    """`(exit code, stdout bytes, stderr bytes)` of `git ARGS`, or None when it ran past `seconds`.

    `input`: bytes for its standard input, or an iterable of bytes pulled one
    piece at a time as git takes them (a stream larger than memory should hold;
    an exception it raises kills git and propagates); None: /dev/null. `env`:
    variables added to its environment. With `keep_stderr` False its standard
    error is discarded.
    """
    import select
    import time

    deadline = time.monotonic() + seconds
    null = posix.open("/dev/null", posix.O_RDWR)
    out_r, out_w = posix.pipe()
    err_r, err_w = posix.pipe() if keep_stderr else (-1, null)
    in_r, in_w = posix.pipe() if input is not None else (null, -1)
    mine = [fd for fd in (out_r, err_r, in_w) if fd >= 0]
    actions = [(posix.POSIX_SPAWN_DUP2, in_r, 0), (posix.POSIX_SPAWN_DUP2, out_w, 1),
               (posix.POSIX_SPAWN_DUP2, err_w, 2)] + [(posix.POSIX_SPAWN_CLOSE, fd) for fd in mine]
    try:
        pid = posix.posix_spawnp("git", ["git", *args], _environment(env), file_actions=actions)
    except BaseException:
        for fd in mine:
            posix.close(fd)
        raise
    finally:
        for fd in {out_w, err_w, in_r, null}:
            posix.close(fd)
    chunks: dict = {out_r: [], err_r: []}
    reading = [fd for fd in (out_r, err_r) if fd >= 0]
    feed = iter(()) if input is None else iter((input,)) if isinstance(input, (bytes, bytearray)) else iter(input)
    pending = memoryview(b"")
    writing = [in_w] if in_w >= 0 else []
    try:
        while reading or writing:
            remaining = deadline - time.monotonic()
            ready = select.select(reading, writing, [], remaining)[:2] if remaining > 0 else ([], [])
            if not ready[0] and not ready[1]:
                posix.kill(pid, 9)
                posix.waitpid(pid, 0)
                return None
            for fd in ready[0]:
                chunk = posix.read(fd, _CHUNK)
                if chunk:
                    chunks[fd].append(chunk)
                else:
                    reading.remove(fd)
                    posix.close(fd)
            if ready[1]:
                while not len(pending):
                    piece = next(feed, None)
                    if piece is None:
                        break
                    pending = memoryview(piece)
                if not len(pending):
                    posix.close(in_w)
                    writing = []
                    continue
                try:
                    written = posix.write(in_w, pending[:_CHUNK])
                except BrokenPipeError:
                    written, feed = len(pending), iter(())  # git stopped reading: its exit status says why
                pending = pending[written:]
    except BaseException:
        posix.kill(pid, 9)
        posix.waitpid(pid, 0)
        raise
    finally:
        for fd in reading + writing:
            posix.close(fd)
    status = posix.waitpid(pid, 0)[1]
    return posix.waitstatus_to_exitcode(status), b"".join(chunks[out_r]), b"".join(chunks[err_r])


def run_git(args, seconds):
    """`(exit code, stdout text)` of `git ARGS`, or None when it ran past `seconds`."""
    result = run(args, seconds, keep_stderr=False)
    if result is None:
        return None
    return result[0], result[1].decode("utf-8", "replace")
