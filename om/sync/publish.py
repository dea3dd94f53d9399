"""This writer's publication: the outbox as one commit of om's repository, made by one `git fast-import`.

The tree of a writer's commit:

    writer.json                     {"format": 1, "writer": "<id>", "label": "…", "om": "<version>"}
    p/<project key>/<session hash>.jsonl   one per shared session (om.sync.projection)
    tombstones.jsonl                this writer's tombstones (om.sync.tombstones), when it has any
    acks.jsonl                      the tombstones it applied to its own ledgers, when any

Invariants:
- One fast-import stream writes the new blobs and the commit; only files
  whose blob changed are sent (unchanged blobs are named by their id), and a
  tree equal to the last published one makes no commit at all.
- Normally the commit's parent is the last one published for this remote; a
  rewrite (after a forget of this writer's own text) makes a commit with no
  parent, so no object of the old history stays reachable.
- The commit is written under a scratch ref, then `refs/om/local/<remote>`
  moves to it by compare-and-swap against the parent it was built on, in the
  same transaction that drops the scratch ref: a kill at any moment leaves the
  old publication or the new one (scratch refs of a killed run are dropped by
  the next, `sweep`).
- Nothing of the machine in the commit: the committer is `om`, with no host.
"""

from om import __version__

LOCAL_PREFIX = "refs/om/local/"
SCRATCH_PREFIX = "refs/om/tmp/"
MODE = "100644"


def local_ref(remote):
    return LOCAL_PREFIX + remote


def writer_file(config):
    from om.jsonio import dumps

    record = {"format": 1, "writer": config["writer"], "label": config.get("label") or "", "om": __version__}
    return (dumps(record, sort_keys=True) + "\n").encode("utf-8")


def sweep(repo):
    """Drop the scratch refs a killed run left (the caller holds the sync lock: none is in use)."""
    stale = repo.refs(SCRATCH_PREFIX)
    if stale:
        repo.update_refs([(name, None, None) for name in stale])


def published_tree(repo, commit):
    """{path: blob} of a publication's tree ({} for none)."""
    if commit is None:
        return {}
    return {path.decode("utf-8", "replace"): sha for _, _, sha, path in repo.tree(commit)}


def publish(repo, remote, files, rewrite, parent, tree):
    """Commit `files` (an iterable of om.sync.outbox.Item, data None for blobs already stored) as
    `remote`'s publication, reading them one at a time as fast-import takes them.

    `parent` is the current publication and `tree` its `published_tree`.
    Returns (commit, made): the new commit, or `parent` with made False when
    the tree is unchanged and no rewrite is asked for (then no git runs).
    """
    from itertools import chain

    files = iter(files)
    seen = []
    if not rewrite and parent is not None:
        for item in files:
            seen.append(item)
            if tree.get(item.path) != item.blob:
                break
        else:
            if set(tree) == {item.path for item in seen}:
                return parent, False
    scratch = _scratch()
    printed = repo.fast_import(_stream(chain(seen, files), rewrite, parent, tree, scratch))
    commit = printed[-1]
    repo.update_refs([(local_ref(remote), commit, parent), (scratch, None, None)])
    return commit, True


def _scratch():
    from om.fastpath import posix

    return f"{SCRATCH_PREFIX}{posix.getpid()}-{posix.urandom(4).hex()}"


def _stream(files, rewrite, parent, tree, scratch):
    """The fast-import stream, a piece at a time: each new blob as its file comes, then the commit."""
    import time

    wanted, marks = {}, {}
    for item in files:
        wanted[item.path] = item.blob
        if item.data is not None and (rewrite or tree.get(item.path) != item.blob):
            marks[item.path] = len(marks) + 1
            yield b"blob\nmark :%d\ndata %d\n" % (marks[item.path], len(item.data)) + item.data + b"\n"
    commit_mark = len(marks) + 1
    message = b"om sync\n"
    head = [f"commit {scratch}", f"mark :{commit_mark}", f"committer om <> {int(time.time())} +0000",
            f"data {len(message)}"]
    lines = []
    if parent is not None and not rewrite:
        lines.append(f"from {parent}")
    for path in sorted(wanted):
        if path in marks:
            lines.append(f"M {MODE} :{marks[path]} {path}")
        elif rewrite or parent is None or tree.get(path) != wanted[path]:
            lines.append(f"M {MODE} {wanted[path]} {path}")
    if not rewrite and parent is not None:
        lines += [f"D {path}" for path in sorted(tree) if path not in wanted]
    lines += ["", f"get-mark :{commit_mark}", "done", ""]
    yield ("\n".join(head) + "\n").encode("utf-8") + message + "\n".join(lines).encode("utf-8")
