"""om's own bare git repository (`<store>/sync/repo.git`): the only repository om writes.

Invariants:
- Every git call goes through om.project.git.run (no terminal prompt, a
  deadline, the user's configuration for credentials and URL rewrites) with
  `--git-dir` naming this repository and no hooks, no automatic gc and no
  reflog: nothing of the user's repositories is touched, and nothing runs
  behind om's back.
- Its refs: `refs/om/local/<remote>` (this writer's publication for that
  remote), `refs/om-remote/<remote>/w/<writer>` (what each remote last
  showed), `refs/om/v1/w/<writer>` (the ref a folder remote's bundle carries).
- A ref moves only by compare-and-swap (`update-ref NEW OLD`), so two om
  processes can never lose each other's update.
- `purge` expires every reflog and prunes every unreachable object at once:
  after a rewrite, no object of the old history stays in this repository.
- A git that does not answer in time, or is missing or older than 2.20,
  raises Unavailable with one line; a git that fails raises StoreError.
"""

from om.errors import StoreError, Unavailable

MIN_VERSION = (2, 20)
#: Local work (fast-import, gc) and network work (fetch, push) are bounded; OM_SYNC_SECONDS sets the latter.
LOCAL_SECONDS = 600.0
NETWORK_SECONDS = 300.0
ZERO = "0" * 40
_SETTINGS = ("core.hooksPath=/dev/null", "gc.auto=0", "maintenance.auto=false", "core.logAllRefUpdates=false",
             "fetch.writeCommitGraph=false", "credential.interactive=false")


def network_seconds():
    from om.fastpath import getenv

    value = (getenv("OM_SYNC_SECONDS") or "").strip()
    return float(value) if value.isdigit() and int(value) > 0 else NETWORK_SECONDS


def git_version():
    """The installed git's (major, minor), or Unavailable when there is none or it is older than 2.20."""
    from om.project.git import run

    try:
        result = run(["--version"], 30)
    except FileNotFoundError:
        raise Unavailable("om: om sync needs git (2.20 or newer), and none is installed") from None
    if result is None or result[0] != 0:
        raise Unavailable("om: om sync needs git (2.20 or newer), and `git --version` does not answer")
    words = result[1].decode("utf-8", "replace").split()
    numbers = words[2].split(".") if len(words) >= 3 else []
    try:
        version = (int(numbers[0]), int(numbers[1]))
    except (IndexError, ValueError):
        raise Unavailable(f"om: om sync needs git 2.20 or newer; cannot read {' '.join(words)[:80]!r}") from None
    if version < MIN_VERSION:
        raise Unavailable(f"om: om sync needs git 2.20 or newer; this is git {version[0]}.{version[1]}")
    return version


class Repo:
    """om's bare repository at `path` (created by `ensure`)."""

    def __init__(self, path):
        self.path = path

    def run(self, args, input=None, seconds=LOCAL_SECONDS, env=None):
        """(code, stdout, stderr) of `git ARGS` in this repository; Unavailable past the deadline."""
        from om.project.git import run

        argv = ["--git-dir", self.path]
        for setting in _SETTINGS:
            argv += ["-c", setting]
        try:
            result = run(argv + list(args), seconds, input=input, env=env)
        except FileNotFoundError:
            raise Unavailable("om: om sync needs git (2.20 or newer), and none is installed") from None
        if result is None:
            raise Unavailable(f"om: git {args[0]} did not finish within {int(seconds)} seconds; nothing was lost,"
                              " the next om sync completes it")
        return result

    def git(self, args, input=None, seconds=LOCAL_SECONDS):
        """stdout of `git ARGS`; StoreError naming git's own message when it fails."""
        code, out, err = self.run(args, input, seconds)
        if code != 0:
            raise StoreError(f"om: git {args[0]} failed in {self.path}: {last_line(err)}")
        return out

    def ensure(self):
        """Create the repository (0700) when it does not exist yet."""
        import os

        from om.store import make_private_dir

        if os.path.isfile(os.path.join(self.path, "HEAD")):
            return
        make_private_dir(self.path, parents=True)
        from om.project.git import run

        # sha1 whatever the user's default: the outbox names blobs by their sha1 (om.sync.publish).
        result = run(["init", "--bare", "-q", self.path], 60, env={"GIT_DEFAULT_HASH": "sha1"})
        if result is None or result[0] != 0:
            raise StoreError(f"om: cannot create om's repository {self.path}: {last_line(result[2] if result else b'')}")

    # -- refs -----------------------------------------------------------------------

    def refs(self, prefix):
        """{ref name: commit} of the refs under `prefix` (e.g. `refs/om-remote/memory/w/`)."""
        out = self.git(["for-each-ref", "--format=%(objectname) %(refname)", prefix])
        found = {}
        for line in out.decode("utf-8", "replace").splitlines():
            sha, _, name = line.partition(" ")
            found[name] = sha
        return found

    def ref(self, name):
        return self.refs(name).get(name)

    def update_refs(self, changes):
        """Move refs in one transaction: [(name, new or None to delete, old or None for "must not exist")].

        StoreError when a ref is not at its expected old value (another om moved it).
        """
        lines = []
        for name, new, old in changes:
            if new is None:
                lines.append(f"delete {name} {old or ''}".rstrip())
            else:
                lines.append(f"update {name} {new} {old or ZERO}")
        self.git(["update-ref", "--stdin"], input=("\n".join(lines) + "\n").encode("utf-8"))

    def force_ref(self, name, new):
        """Set (or with None delete) a tracking ref, whatever it held."""
        if new is None:
            self.run(["update-ref", "-d", name])
        else:
            self.git(["update-ref", name, new])

    # -- objects --------------------------------------------------------------------

    def tree(self, commit):
        """[(mode, type, object, path)] of every entry of `commit`'s tree, recursively; paths as bytes."""
        out = self.git(["ls-tree", "-r", "-z", "--full-tree", commit])
        found = []
        for record in out.split(b"\0"):
            if not record:
                continue
            head, _, path = record.partition(b"\t")
            parts = head.split(b" ")
            if len(parts) != 3:
                continue
            found.append((parts[0].decode("ascii", "replace"), parts[1].decode("ascii", "replace"),
                          parts[2].decode("ascii", "replace"), path))
        return found

    def parents(self, commit):
        out = self.git(["rev-list", "--parents", "-n", "1", commit]).decode("ascii", "replace").split()
        return out[1:]

    def is_ancestor(self, older, newer):
        code, _, _ = self.run(["merge-base", "--is-ancestor", older, newer])
        return code == 0

    def has(self, sha):
        code, _, _ = self.run(["cat-file", "-e", sha + "^{commit}"])
        return code == 0

    def sizes(self, shas):
        """{sha: size} of the blobs among `shas` (anything else is left out)."""
        shas = sorted(set(shas))
        if not shas:
            return {}
        query = ("\n".join(shas) + "\n").encode("ascii")
        found = {}
        for line in self.git(["cat-file", "--batch-check"], input=query).decode("ascii", "replace").splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] == "blob" and parts[2].isdigit():
                found[parts[0]] = int(parts[2])
        return found

    def blobs_in_batches(self, shas, cap, batch=16 * 1024 * 1024):
        """Yield (sha, bytes or None) for every sha, reading about `batch` bytes at a time; None for a blob
        larger than `cap` bytes, or no blob at all."""
        sizes = self.sizes(shas)
        group, size = [], 0
        for sha in sorted(set(shas)):
            if sha not in sizes or sizes[sha] > cap:
                yield sha, None
                continue
            group.append(sha)
            size += sizes[sha]
            if size >= batch:
                yield from self._batch(group)
                group, size = [], 0
        if group:
            yield from self._batch(group)

    def _batch(self, shas):
        return self.blobs(shas, float("inf")).items()

    def blobs(self, shas, cap):
        """{sha: bytes or None} of the blobs `shas`; None for one larger than `cap` bytes or not a blob."""
        shas = sorted(set(shas))
        if not shas:
            return {}
        sizes = self.sizes(shas)
        found = {sha: None for sha in shas}
        wanted = [sha for sha in shas if sha in sizes and sizes[sha] <= cap]
        if not wanted:
            return found
        out = self.git(["cat-file", "--batch"], input=("\n".join(wanted) + "\n").encode("ascii"))
        pos = 0
        for sha in wanted:
            end = out.index(b"\n", pos)
            header = out[pos:end].split()
            size = int(header[2])
            found[sha] = out[end + 1:end + 1 + size]
            pos = end + 1 + size + 1
        return found

    def fast_import(self, stream):
        """Run one fast-import stream (it ends with `get-mark`); the object names it printed."""
        out = self.git(["fast-import", "--quiet", "--done"], input=stream)
        return out.decode("ascii", "replace").split()

    def purge(self):
        """Drop every reflog entry and every object no ref reaches (git's own gc, pruning at once)."""
        self.git(["reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all"])
        self.git(["-c", "gc.reflogExpire=now", "-c", "gc.reflogExpireUnreachable=now", "gc", "--prune=now",
                  "--quiet"])


def last_line(err):
    """git's last message line (for one-line errors), without its `fatal: ` or `error: ` prefix."""
    lines = [line.strip() for line in err.decode("utf-8", "replace").splitlines() if line.strip()]
    if not lines:
        return "no message"
    line = lines[-1]
    for prefix in ("fatal: ", "error: "):
        if line.startswith(prefix):
            line = line[len(prefix):]
    return line[:300]
