"""A project's identity: its repository's root commits, the same in every clone on every machine.

Invariants:
- A folder's project is the nearest ancestor holding `.git` (om.project.project_root)
  and its identity is that repository's root commit ids (`git rev-list
  --max-parents=0 HEAD`, sorted): two clones in different folders, behind an SSH
  and an HTTPS remote, or after a remote was renamed, are one project. The key
  is the first 16 hex digits of SHA-256 over those ids, one per line.
- A folder outside git, or a repository with no commit yet, or one git cannot
  read, is its root folder, as before identities existed: its key is the same
  digest over `folder:` and the resolved path.
- Computed once per folder: the answer is cached in the project home
  (`folders/<digest of the path>.json`, written atomically). Root commits do not
  change, so a repository's answer is kept for good; a folder answer is kept
  only while `.git` is unchanged (a first commit changes it), so no git runs
  again on a folder that has nothing new to say.
- Bounded in time: git runs with a deadline (HOOK_SECONDS on the hook path,
  SECONDS elsewhere). When it is not done by then the folder stands in, nothing
  is cached, and a later call without the hook's bound (`om project`, `promote`,
  `prime`) computes it. PostToolUse never gets here.
- `git` is the only program run, read-only (`rev-list`), never writing into the
  repository; without git a repository is its folder.
- Import-light until git must run: a cache hit costs one stat and one small read.
"""

from om.fastpath import dirname, join, lexists, posix, sha256
from om.project.home import FOLDERS, project_home
from om.project.root import project_root

#: The deadline of the one git call on the hook path (SessionStart, a prompt in a new folder).
HOOK_SECONDS = 1.0
#: The deadline elsewhere: `git rev-list` walks the whole history, seconds on a long one.
SECONDS = 60.0
KEY_HEX = 16


class Identity:
    """`key` (16 hex), `root` (the resolved root folder), `kind` ("git" or "folder"), `roots` (commit ids)."""

    __slots__ = ("key", "root", "kind", "roots", "known")

    def __init__(self, root, roots, known=True, key=None):
        self.root = root
        self.roots = tuple(sorted(roots))
        self.kind = "git" if self.roots else "folder"
        #: `key` given: a project known by the key a session recorded (its roots are not asked again).
        self.key = key or (key_of(self.roots) if self.roots else folder_key(root))
        #: False when git did not answer in time: the folder stands in until it does.
        self.known = known

    def as_json(self):
        return {"project": self.key, "identity": self.kind, "root": self.root, "roots": list(self.roots),
                "known": self.known}


def key_of(roots):
    return sha256("".join(r + "\n" for r in sorted(roots)).encode("utf-8")).hexdigest()[:KEY_HEX]


def folder_key(root):
    return sha256(("folder:" + root).encode("utf-8", "surrogateescape")).hexdigest()[:KEY_HEX]


def identify(directory, seconds=SECONDS, home=None):
    """The Identity of the project holding `directory` (an absolute path).

    `seconds=0` asks the cache alone: no git runs, and a repository not cached
    yet comes back as its folder with `known` False.
    """
    root = project_root(directory)
    dot_git = join(root, ".git")
    if not lexists(dot_git):
        return Identity(root, ())
    stamp = _stamp(dot_git)
    cache = _cache_path(home or project_home(), root)
    cached = _read_cache(cache, root)
    if cached is not None:
        roots, seen = cached
        if roots or seen == stamp:
            return Identity(root, roots)
    roots = _git_roots(root, seconds) if seconds else None
    if roots is None:
        return Identity(root, (), known=False)
    _write_cache(cache, root, roots, stamp)
    return Identity(root, roots)


def _stamp(path):
    try:
        st = posix.stat(path)
    except OSError:
        return None
    return [st.st_ino, st.st_mtime_ns]


def _cache_path(home, root):
    digest = sha256(root.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return join(home, FOLDERS, digest + ".json")


def _read_cache(path, root):
    from om.errors import InputError
    from om.jsonio import loads

    try:
        with open(path, "rb") as f:
            value = loads(f.read(65536).decode("utf-8"))
    except (OSError, UnicodeDecodeError, InputError):
        return None
    if not isinstance(value, dict) or value.get("root") != root:
        return None  # a digest collision or a hand edit: ask git again
    roots = value.get("roots")
    if not isinstance(roots, list) or not all(isinstance(r, str) and _is_commit(r) for r in roots):
        return None
    return roots, value.get("git")


def _write_cache(path, root, roots, stamp):
    """Best effort: a read-only home (a sandboxed shell) only means git runs again next time."""
    from om.jsonio import dumps
    from om.store import make_private_dir, write_atomically

    record = {"root": root, "roots": sorted(roots)}
    if not roots:
        record["git"] = stamp
    try:
        make_private_dir(dirname(path), parents=True)
        write_atomically(path, (dumps(record) + "\n").encode("utf-8"), mode=0o600)
    except Exception:
        pass


def _is_commit(text):
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)


def _git_roots(root, seconds):
    """The root commits of the repository at `root`; () when it has none or git cannot read it; None on timeout."""
    from om.project.git import run_git

    try:
        result = run_git(["-C", root, "rev-list", "--max-parents=0", "HEAD"], seconds)
    except FileNotFoundError:
        return ()  # no git: a repository is its folder, as before
    if result is None:
        return None
    code, out = result
    if code != 0:
        return ()
    roots = [line.strip() for line in out.splitlines() if line.strip()]
    return tuple(sorted(r for r in roots if _is_commit(r)))
