"""Moving refs between om's repository and a remote: a git URL, or a folder of bundles.

Invariants:
- A git remote is fetched with `+refs/om/v1/w/*:refs/om-remote/<remote>/w/*`
  (pruned: a writer whose ref is gone is gone here too) and pushed one ref,
  this writer's `refs/om/v1/w/<writer>`: a fast-forward, or after a rewrite
  `--force-with-lease` against the value just fetched. A rejected push is
  `Rejected` (another store publishes under this writer id); a remote that
  does not answer, or refuses the namespace, is Unavailable, one line, with
  nothing changed that the next sync would not complete.
- `--remote origin` resolves the URL from the project's own repository with
  `git -C <project> ls-remote --get-url origin` (read-only; it applies the
  user's `insteadOf`): nothing is ever written there.
- A folder remote holds one `<writer>.bundle` per writer, each carrying that
  writer's one ref; this writer's is written to a temporary name in the
  folder and renamed over the old one, so a reader (or a file-sync tool)
  sees the old bundle or the new one. Other files in the folder are ignored.
- URLs in messages have their credentials redacted (om.redact).
"""

import os

from om.errors import InputError, Unavailable
from om.sync.layout import is_writer
from om.sync.repo import last_line, network_seconds

WRITER_REF = "refs/om/v1/w/"


class Rejected(Exception):
    """The remote refused this writer's push as not a fast-forward (or its lease failed)."""


def tracking_prefix(remote):
    return f"refs/om-remote/{remote}/w/"


def shown(url):
    from om.redact import redact

    return redact(url)


def url_of(remote):
    """The git URL of a git remote config (for `origin`, asked of the project's repository each time)."""
    if remote.get("url"):
        return remote["url"]
    from om.project.git import run

    project = remote["origin"]
    try:
        result = run(["-C", project, "ls-remote", "--get-url", "origin"], 30, keep_stderr=True)
    except FileNotFoundError:
        raise Unavailable("om: om sync needs git (2.20 or newer), and none is installed") from None
    url = result[1].decode("utf-8", "replace").strip() if result and result[0] == 0 else ""
    if not url or url == "origin":
        raise Unavailable(f"om: the project {project} has no remote named origin (git -C {project} remote -v)")
    return url


def origin_url(project):
    """InputError unless the project folder's repository has an `origin` remote; its URL otherwise."""
    try:
        return url_of({"origin": project})
    except Unavailable as e:
        raise InputError(str(e)) from None


def tracked(repo, name):
    """{writer: commit} as the remote `name` last showed them."""
    prefix = tracking_prefix(name)
    return {ref[len(prefix):]: sha for ref, sha in repo.refs(prefix).items()}


def fetch(repo, name, remote, state):
    """Fetch every writer's ref (its tracking refs follow the remote); the notices of what could not be read."""
    prefix = tracking_prefix(name)
    notices = []
    if remote["kind"] == "folder":
        notices = _fetch_folder(repo, name, remote, state)
    else:
        url = url_of(remote)
        code, _, err = repo.run(["fetch", "--prune", "--no-tags", "--quiet", url,
                                 f"+{WRITER_REF}*:{prefix}*"], seconds=network_seconds())
        if code != 0:
            raise Unavailable(f"om: cannot fetch from sync remote {name} ({shown(url)}): {last_line(err)};"
                              " nothing was changed, the next om sync completes it")
    return notices


def _fetch_folder(repo, name, remote, state):
    folder = remote["folder"]
    if not os.path.isdir(folder):
        raise Unavailable(f"om: the sync folder {folder} of remote {name} is not there (not mounted, or moved);"
                          " nothing was changed, the next om sync completes it")
    prefix = tracking_prefix(name)
    seen, notices = {}, []
    bundles = state.setdefault("bundles", {})
    for entry in sorted(os.listdir(folder)):
        writer = entry[: -len(".bundle")] if entry.endswith(".bundle") else None
        if not is_writer(writer):
            continue
        path = os.path.join(folder, entry)
        try:
            st = os.stat(path)
        except OSError:
            continue
        stamp = [st.st_ino, st.st_size, st.st_mtime_ns]
        seen[writer] = True
        if bundles.get(writer) == stamp and repo.ref(prefix + writer) is not None:
            continue
        code, _, err = repo.run(["fetch", "--no-tags", "--quiet", path, f"+{WRITER_REF}{writer}:{prefix}{writer}"],
                                seconds=network_seconds())
        if code != 0:
            notices.append(f"om: skipped the bundle {path}: {last_line(err)}")
            continue
        bundles[writer] = stamp
    for ref in repo.refs(prefix):
        writer = ref[len(prefix):]
        if writer not in seen:
            repo.force_ref(ref, None)
            bundles.pop(writer, None)
    return notices


def push(repo, name, remote, writer, commit, remote_value):
    """Publish `commit` as this writer's ref: a fast-forward from `remote_value`, else a lease on it."""
    if remote["kind"] == "folder":
        return _push_folder(repo, remote, writer, commit)
    url = url_of(remote)
    target = WRITER_REF + writer
    args = ["push", "--porcelain"]
    if remote_value is not None and not repo.is_ancestor(remote_value, commit):
        args.append(f"--force-with-lease={target}:{remote_value}")
    code, out, err = repo.run(args + [url, f"{commit}:{target}"], seconds=network_seconds())
    _judge(name, url, code, out, err)


def delete(repo, name, remote, writer):
    """Remove writer `writer`'s ref (or bundle) from the remote (`om sync forget-writer`)."""
    if remote["kind"] == "folder":
        try:
            os.unlink(os.path.join(remote["folder"], writer + ".bundle"))
        except FileNotFoundError:
            pass
        except OSError as e:
            raise Unavailable(f"om: cannot remove {writer}.bundle from {remote['folder']}: {e.strerror or e}") from None
        return
    url = url_of(remote)
    code, out, err = repo.run(["push", "--porcelain", url, f":{WRITER_REF}{writer}"], seconds=network_seconds())
    _judge(name, url, code, out, err)


def _judge(name, url, code, out, err):
    for line in out.decode("utf-8", "replace").splitlines():
        if line.startswith("!"):
            reason = line.split("\t")[-1] if "\t" in line else line
            if "[remote rejected]" in reason:
                raise Unavailable(f"om: sync remote {name} ({shown(url)}) refused the push: {reason[:200]}"
                                  " (does the host accept refs/om/*?)")
            if "[rejected]" in reason:
                raise Rejected(reason)
    if code != 0:
        raise Unavailable(f"om: cannot push to sync remote {name} ({shown(url)}): {last_line(err)};"
                          " nothing was lost, the next om sync completes it")


def _push_folder(repo, remote, writer, commit):
    from om.store import made_atomically

    folder = remote["folder"]
    if not os.path.isdir(folder):
        raise Unavailable(f"om: the sync folder {folder} is not there; nothing was lost, the next om sync completes it")
    ref = WRITER_REF + writer
    repo.force_ref(ref, commit)
    made_atomically(os.path.join(folder, writer + ".bundle"), lambda tmp: repo.git(["bundle", "create", tmp, ref]))
