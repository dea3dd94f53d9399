"""`om sync init`, `om sync`, `om sync forget-writer`: the steps, in order, under the store's sync lock.

`om sync`, for each remote:
1. fetch every writer's ref (a remote that does not answer: one line, exit 69,
   nothing changed);
2. check this writer's own ref there is one this store published (else a copy
   of this store publishes under its id: refuse, naming `--new-identity`);
3. apply the tombstones addressed to this writer to its own ledgers, and
   acknowledge them (om.sync.tombstones);
4. publish this writer's outbox as one commit (om.sync.publish), without
   history when a forget asked for a rewrite;
5. push it (om.sync.transport);
6. rebuild the mirrors whose blob or tombstones changed (om.sync.mirrors);
7. purge om's repository when a history was rewritten here or there, or a
   tombstone was applied: no object of the old history stays.

Invariants:
- Nothing is shared before `om sync init`, which says what becomes readable
  by whom and asks (a terminal) or needs `-y`.
- One sync per store at a time (the lock); every step leaves the store
  readable when killed, and the next sync finishes what a killed one started
  (each ref moves by compare-and-swap, each file is renamed into place, the
  state is written whole after each step that changes it).
- git runs only in om's own repository, never on the hook path; without git
  2.20 or newer sync says so in one line (exit 69).
"""

import os
import time

from om.errors import Conflict, InputError, NotFound, OmError, UsageError
from om.sync import config as configs
from om.sync.layout import is_remote_name, is_writer, repo_path, sync_dir


def _now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _store(store, create=False):
    from om.sessions.catalogue import open_store
    from om.store import resolve_store

    if create:
        return resolve_store(store)
    return open_store(store)


# -- init ----------------------------------------------------------------------------


SHARE_WORDS = {
    "all": "every session's evidence (prompts, tool output, replies) and memory, and the project memory",
    "entries": "observations, reflections and their retirements, and the project memory; evidence only as"
               " stubs (id, kind, time: no text)",
}


def plan_init(store, args):
    """(the question to ask, the config to save) for `om sync init`; nothing is written."""
    from om.sync.repo import git_version
    from om.sync.transport import origin_url, shown

    git_version()
    store = _store(store, create=True)
    given = [x for x in (args.remote, args.folder) if x is not None]
    config = configs.load(store) if os.path.isdir(sync_dir(store)) else None
    if len(given) > 1:
        raise UsageError("om: sync init takes --remote or --folder, not both")
    if not given:
        if args.new_identity:
            if config is None:
                raise NotFound(f"om: sync is not set up in store {store}: there is no identity to replace")
            return None, store, config
        raise UsageError("om: sync init needs --remote URL, --remote origin or --folder DIR")
    if config is not None and not args.new_identity:
        configs.check_place(store, config)
    remote = {"share": args.share, "hold": configs.duration(args.hold or "0"), "project": None}
    project = args.project
    if args.remote == "origin":
        from om.project.memory import identity_of_directory

        identity = identity_of_directory(project or os.getcwd())
        url = origin_url(identity.root)
        remote.update(kind="git", origin=identity.root)
        remote["project"] = {"key": identity.key, "root": identity.root}
        name = args.name or "origin"
        where = (f"the project's own remote {shown(url)} (refs/om/* on it are readable by everyone who can read the"
                 " repository, and by its mirror clones and host backups)")
        remote["share"] = remote["share"] or "entries"
    elif args.remote is not None:
        if not args.remote.strip() or "\n" in args.remote:
            raise InputError("om: --remote needs a git URL or `origin`")
        remote.update(kind="git", url=args.remote)
        name = args.name or "memory"
        where = (f"the git repository {shown(args.remote)} (readable by everyone who can read that repository, and"
                 " by its clones and host backups)")
    else:
        folder = os.path.realpath(os.path.abspath(os.path.expanduser(args.folder)))
        if not os.path.isdir(folder):
            raise InputError(f"om: --folder {args.folder}: not a directory")
        if folder == store or folder.startswith(store.rstrip(os.sep) + os.sep):
            raise InputError("om: --folder must be outside the store")
        remote.update(kind="folder", folder=folder)
        name = args.name or "folder"
        where = (f"git bundles in the folder {folder} (readable by everyone who can read that folder, and on every"
                 " device a sync tool copies it to)")
    if args.project is not None and remote["project"] is None:
        from om.project.memory import identity_of_directory

        identity = identity_of_directory(project)
        remote["project"] = {"key": identity.key, "root": identity.root}
    remote["share"] = remote["share"] or "all"
    if not is_remote_name(name):
        raise InputError(f"om: --name {name[:40]!r}: 1 to 32 lowercase letters, digits, - or _")
    scope = (f"of project {remote['project']['key']} ({remote['project']['root']})" if remote["project"]
             else "of every session of this store and every project memory of this machine")
    label = args.label
    if label is not None and (not label.strip() or len(label) > 64 or not label.isprintable()):
        raise InputError("om: --label must be 1 to 64 printable characters")
    hold = f", holding back what is newer than {args.hold}" if remote["hold"] else ""
    question = (f"om: sync will publish {SHARE_WORDS[remote['share']]} {scope}{hold} to {where}, under writer"
                f" {{writer}} ({label or (config or {}).get('label') or 'no label'}). Publish there?")
    new = dict(config or {"format": configs.FORMAT, "remotes": {}})
    new["remotes"] = dict(new["remotes"], **{name: remote})
    if label is not None:
        new["label"] = label
    new.setdefault("label", "")
    return question, store, new


def init(store, args, confirm):
    """`om sync init`: set up (or change) a remote, or take a new identity; the receipt."""
    from om.store import make_private_dir
    from om.sync.status import describe_remotes

    question, store, config = plan_init(store, args)
    old = config.get("writer")
    fresh = args.new_identity or not old
    writer = configs.new_writer() if fresh else old
    if question is not None:
        confirm(question.replace("{writer}", writer))
    make_private_dir(sync_dir(store), parents=True)
    os.chmod(sync_dir(store), 0o700)
    with configs.lock(store, configs.SYNC_WAIT, "another om sync is running in this store"):
        config["writer"] = writer
        config["place"] = configs.place(store)
        configs.save(store, config)
        if fresh and old:
            state = configs.load_state(store)
            state["acks"] = []
            for name in state["remotes"]:
                state["remotes"][name] = {}
            configs.save_state(store, state)
    receipt = {"store": store, "writer": writer, "label": config.get("label") or "",
               "remotes": describe_remotes(config), "next": "om --store " + store + " sync"}
    if question is not None:
        receipt["publishes"] = question.replace("{writer}", writer).removeprefix("om: ").removesuffix(
            " Publish there?")
    if fresh and old:
        receipt["replaced_writer"] = old
    return receipt


# -- sync ------------------------------------------------------------------------------


def _prepare(store):
    from om.sync.repo import Repo, git_version

    git_version()
    store = _store(store)
    config = configs.require(store)
    configs.check_place(store, config)
    repo = Repo(repo_path(store))
    return store, config, repo


def sync(store, only=None):
    """`om sync [--remote NAME]`: (receipt, notices, the errors of the remotes that failed).

    A remote that fails leaves the others to sync; its error is one line.
    """
    store, config, repo = _prepare(store)
    receipts, notices, errors = [], [], []
    with configs.lock(store, configs.SYNC_WAIT, "another om sync is running in this store"):
        repo.ensure()
        from om.sync import publish

        publish.sweep(repo)
        for name in configs.remote_names(config, only):
            try:
                receipt, more = _sync_remote(store, config, repo, name)
            except OmError as e:
                errors.append(e)
                continue
            receipts.append(receipt)
            notices += more
    return {"store": store, "writer": config["writer"], "remotes": receipts}, notices, errors


def _cloned(store, writer):
    return Conflict(f"om: another store publishes under this store's writer id {writer} (a copied store or machine"
                    f" image); nothing was pushed. Run om --store {store} sync init --new-identity")


def _sync_remote(store, config, repo, name):
    """The steps of `om sync` for one remote (the module docstring); (receipt, notices)."""
    run = _Run(store, config, repo, name)
    run.fetch()
    run.read_others()
    run.apply_tombstones()
    run.publish()
    run.push()
    run.mirror()
    run.purge()
    return run.finish()


class _Run:
    """One remote's sync: what the steps share, and each step (state.json is saved after each that changes it)."""

    def __init__(self, store, config, repo, name):
        self.store, self.config, self.repo, self.name = store, config, repo, name
        self.remote = config["remotes"][name]
        self.me = config["writer"]
        self.state = configs.load_state(store)
        self.rstate = configs.remote_state(self.state, name)
        self.notices = []
        self.acked, self.withheld = [], []
        self.pushed = None

    def save(self):
        configs.save_state(self.store, self.state)

    def owe_rewrite(self):
        """Every remote republishes without history at its next publication (this one's now)."""
        for other in self.config["remotes"]:
            configs.remote_state(self.state, other)["pending_rewrite"] = True

    def fetch(self):
        from om.sync import publish, transport

        repo, rstate = self.repo, self.rstate
        self.before = repo.ref(publish.local_ref(self.name))
        # What the remote showed before this fetch, kept until it is judged: a sync killed after the
        # fetch still finds a rewritten (or removed) writer's history in its next run, and purges it.
        if rstate.get("fetched_from") is None:
            rstate["fetched_from"] = transport.tracked(repo, self.name)
            self.save()
        self.notices += transport.fetch(repo, self.name, self.remote, rstate)
        self.tracked = transport.tracked(repo, self.name)
        old = rstate["fetched_from"]
        self.changed = {w: (old.get(w), self.tracked.get(w)) for w in set(old) | set(self.tracked)
                        if old.get(w) != self.tracked.get(w)}
        if any(was is not None and (now is None or not repo.is_ancestor(was, now))
               for writer, (was, now) in self.changed.items() if writer != self.me):
            self.state["purge_pending"] = True
        rstate["fetched_from"] = None
        self.save()
        self.mine = self.tracked.get(self.me)
        if self.mine is not None and self.mine not in (rstate["last_pushed"], self.before):
            raise _cloned(self.store, self.me)

    def read_others(self):
        """What the others publish: their tombstones and acknowledgements, read before anything is written."""
        from om.sync import mirrors, tombstones

        self.writers = mirrors.read_writers(self.repo, {w: c for w, c in self.tracked.items() if w != self.me})
        for w in self.writers.values():
            self.notices += [f"om: writer {w.writer[:40]} on {self.name}: {problem}" for problem in w.problems]
        index = self.index = tombstones.Index()
        self.own = tombstones.own(self.store)
        index.add(self.own)
        index.add([], self.me, self.state["acks"])
        for w in self.writers.values():
            if w.usable:
                index.add(w.tombstones, w.writer, w.acks)
        if tombstones.settle(self.store, self.own, index):
            self.own = tombstones.own(self.store)
            self.owe_rewrite()
            self.save()
        if self.me in index.forgotten_writers():
            raise Conflict(f"om: this store's writer id {self.me} was forgotten on {self.name} (om sync"
                           f" forget-writer); run om --store {self.store} sync init --new-identity")

    def apply_tombstones(self):
        from om.sync import tombstones

        self.acked, touched, _ = tombstones.apply_owned(self.store, self.me, self.index, set(self.state["acks"]))
        if self.acked:
            _unindex(self.store, touched)
            self.state["acks"] = sorted(set(self.state["acks"]) | set(self.acked))
            self.index.add([], self.me, self.acked)
            # A tombstone names a text this writer published, so its history holds it: whether or not the
            # ledger changed now (another store of the machine rewrote a shared project memory first, the
            # session was removed since), that history goes.
            self.owe_rewrite()
            self.save()

    def publish(self):
        from itertools import chain

        from om.sync import outbox, publish, tombstones

        repo, rstate = self.repo, self.rstate
        self.rewrite = bool(rstate["pending_rewrite"])
        if self.rewrite:
            # Recorded before anything moves: a sync killed before its purge leaves it to the next.
            self.state["purge_pending"] = True
            self.save()
        tree = publish.published_tree(repo, self.before)
        outgoing = outbox.collect(self.store, self.remote, rstate["published"], set(tree.values()))
        files = [_item("writer.json", publish.writer_file(self.config))]
        if self.own:
            files.append(_item("tombstones.jsonl", tombstones.file_bytes(self.own)))
        if self.state["acks"]:
            files.append(_item("acks.jsonl", tombstones.acks_bytes(self.state["acks"])))
        commit, _ = publish.publish(repo, self.name, chain(files, outgoing), self.rewrite, self.before, tree)
        fresh = outgoing.fresh
        if outgoing.rewritten and not self.rewrite:
            # A ledger published before was forgotten in since (here, or by another store sharing the
            # project home): its old text is in this history, so it goes again without one.
            self.owe_rewrite()
            rstate["published"] = fresh
            self.state["purge_pending"] = True
            self.save()
            self.rewrite = True
            again = outbox.collect(self.store, self.remote, fresh, set(publish.published_tree(repo, commit).values()))
            commit, _ = publish.publish(repo, self.name, chain(files, again), True, commit, {})
            fresh = again.fresh
        self.commit = commit
        self.withheld = outgoing.withheld
        self.notices += [f"om: not published (unreadable): {s['directory']}: {s['error']}" for s in outgoing.skipped]
        self.notices += [f"om: withheld {w['id']} of session {w['session']}: om's redaction finds a secret in it"
                         for w in self.withheld]
        rstate["published"] = fresh
        self.save()

    def push(self):
        from om.sync import transport

        if self.mine != self.commit:
            try:
                transport.push(self.repo, self.name, self.remote, self.me, self.commit, self.mine)
            except transport.Rejected:
                raise _cloned(self.store, self.me) from None
            self.pushed = self.commit
        self.repo.force_ref(transport.tracking_prefix(self.name) + self.me, self.commit)
        self.rstate["last_pushed"] = self.commit
        if self.rewrite:
            self.rstate["pending_rewrite"] = False
        self.save()

    def mirror(self):
        from om.sync import mirrors

        self.report = mirrors.refresh(self.store, self.repo, self.name, self.me, self.writers, self.index)
        self.notices += self.report["skipped"]

    def purge(self):
        self.purged = bool(self.state.get("purge_pending"))
        if self.purged:
            self.repo.purge()
            self.state["purge_pending"] = False
            self.save()

    def finish(self):
        """Record the writers seen and when; the receipt and the notices."""
        now = _now()
        seen = self.rstate["writers"]
        mine = {t["tid"] for t in self.own}
        for writer, w in self.writers.items():
            if not is_writer(writer):
                continue
            record = seen.setdefault(writer, {})
            if record.get("commit") != w.commit:
                record["seen"] = now
            record.update(commit=w.commit, label=w.label, acks=sorted(w.acks & mine))
        for writer in list(seen):
            if writer not in self.writers:
                seen.pop(writer)
        self.rstate["last_sync"] = now
        self.save()
        receipt = {"remote": self.name, "pushed": self.pushed, "published": self.commit,
                   "fetched_writers": sum(1 for w in self.changed if w != self.me),
                   "writers": sum(1 for w in self.writers.values() if w.usable),
                   "mirrors_rebuilt": self.report["rebuilt"], "mirrors_removed": self.report["removed"],
                   "tombstones_applied": len(self.acked), "rewritten": self.rewrite, "purged": self.purged,
                   "withheld": self.withheld, "skipped": self.report["skipped"]}
        return receipt, self.notices


def _item(path, data):
    from om.sync.outbox import Item, blob_id

    return Item(path, blob_id(data), data)


def _unindex(store, rewritten):
    from om.sessions.index import forget as unindex

    by_home = {}
    for home, session in rewritten:
        by_home.setdefault(home, []).append(session)
    for home, sessions in by_home.items():
        unindex(home, sessions)


# -- forget-writer -------------------------------------------------------------------------


def forget_writer(store, writer):
    """`om sync forget-writer ID`: hide a writer's memory on every machine that syncs, remove its ref; a receipt."""
    from om.sync import tombstones, transport

    if not is_writer(writer):
        raise InputError("om: forget-writer takes a writer id (32 hex digits, as om sync status lists them)")
    store, config, repo = _prepare(store)
    if writer == config["writer"]:
        raise InputError("om: that is this store's own writer id; om sync init --new-identity replaces it")
    notices, removed = [], []
    with configs.lock(store, configs.SYNC_WAIT, "another om sync is running in this store"):
        if writer not in {t["owner"] for t in tombstones.own(store) if t.get("whole")}:
            tombstones.append(store, [tombstones.for_writer(writer)])
        repo.ensure()
        for name in sorted(config["remotes"]):
            from om.sync.layout import writer_dir

            folder = writer_dir(store, name, writer)
            if os.path.isdir(folder):
                import shutil

                shutil.rmtree(folder, ignore_errors=True)
            try:
                transport.delete(repo, name, config["remotes"][name], writer)
                removed.append(name)
            except OmError as e:
                notices.append(f"{e} (rerun om sync forget-writer {writer} when it answers)")
            repo.force_ref(transport.tracking_prefix(name) + writer, None)
    notices.append(f"om: the next om sync publishes that writer {writer} is forgotten; every machine that syncs"
                   " then hides its memory")
    return {"store": store, "forgotten_writer": writer, "removed_from": removed}, notices
