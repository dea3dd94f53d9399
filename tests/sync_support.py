"""Several machines on one box for `om sync` tests: each a (HOME, store, project home) of its own.

A remote is a bare repository reached by a `file://` URL (the real pack protocol), or a folder
of bundles. Arranging steps (captures, checkpoints) run in process (`setup_om`); what a test
proves runs `om` as a subprocess (`run_om`) unless it says otherwise.
"""

import json
import os
import subprocess
import zlib

from conftest import run_om
from inprocess import run_om_in_process, setup_om

GIT = ["git", "-c", "user.email=dev@example.com", "-c", "user.name=dev", "-c", "init.defaultBranch=main"]


def git(*args, cwd=None, check=True):
    return subprocess.run([*GIT, *args], cwd=cwd, check=check, capture_output=True)


def bare_remote(path):
    git("init", "-q", "--bare", str(path))
    return "file://" + str(path)


class Machine:
    """One machine: its own HOME, store and project home; `om(...)` runs this tree's om there."""

    def __init__(self, root, name):
        self.name = name
        self.root = root / name
        self.home = self.root / "home"
        self.store = self.root / "store"
        self.projects = self.root / "projects"
        self.home.mkdir(parents=True)
        self.env = {"HOME": str(self.home), "OM_PROJECT_HOME": str(self.projects),
                    "XDG_DATA_HOME": str(self.home / ".local" / "share"), "XDG_CONFIG_HOME": str(self.home / ".config")}

    def om(self, *args, input=None, cwd=None, env=None):
        """`om --store STORE ARGS` as a subprocess."""
        return run_om("--store", self.store, *args, input=input, cwd=cwd, env=dict(self.env, **(env or {})))

    def inproc(self, *args, input=None, cwd=None):
        return run_om_in_process("--store", self.store, *args, input=input, cwd=cwd, env=self.env)

    def setup(self, *args, input=None, cwd=None):
        return setup_om("--store", self.store, *args, input=input, cwd=cwd, env=self.env)

    def capture(self, session, text, kind="user", key=None):
        r = self.setup("--session", session, "capture", input=json.dumps({"kind": kind, "text": text,
                                                                            "key": key or text}))
        return r.json["source_id"]

    def observe(self, session, text, sources, importance="high"):
        """Apply one observation citing `sources` (all pending ones covered); its id."""
        through = self.setup("--session", session, "pending").json["through"]
        checkpoint = {"through": through,
                      "observations": [{"text": text, "importance": importance, "source_ids": list(sources)}]}
        r = self.setup("--session", session, "apply", input=json.dumps(checkpoint))
        return r.json["observations"][0]

    def init(self, *args):
        r = self.setup("sync", "init", *args, "-y")
        return r.json

    def sync(self, *args, inprocess=True):
        r = (self.inproc if inprocess else self.om)("sync", *args)
        assert r.returncode == 0, r
        return r.json

    def files(self):
        """Every regular file under the store and the project home: {path: bytes}."""
        found = {}
        for top in (self.store, self.projects):
            for folder, _, names in os.walk(top):
                for name in names:
                    path = os.path.join(folder, name)
                    if os.path.isfile(path) and not os.path.islink(path):
                        with open(path, "rb") as f:
                            found[path] = f.read()
        return found

    def repo(self):
        return self.store / "sync" / "repo.git"


def objects(git_dir):
    """Every object of a repository, decompressed: the bytes of `git cat-file --batch-all-objects --batch`."""
    r = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "--batch-all-objects", "--batch"],
                       capture_output=True, check=True)
    return r.stdout


def raw_holds(machine, needle):
    """The files of a machine (store, project home) whose raw bytes hold `needle`, and whether om's repository
    holds it in any object, decompressed."""
    data = needle.encode("utf-8")
    holding = [p for p, b in machine.files().items() if data in b]
    in_repo = machine.repo().is_dir() and data in objects(machine.repo())
    return holding, in_repo


def loose_and_packed_bytes(git_dir):
    """Every object file's inflated bytes (loose objects) plus pack files raw: what a scan of the folder sees."""
    out = b""
    for folder, _, names in os.walk(git_dir):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                data = f.read()
            try:
                out += zlib.decompress(data)
            except zlib.error:
                out += data
    return out


def mirrors(machine):
    """[(writer, session folder)] of the machine's mirrors."""
    root = machine.store / "sync" / "mirrors"
    found = []
    if root.is_dir():
        for remote in sorted(root.iterdir()):
            for writer in sorted(remote.iterdir()):
                if writer.is_dir():
                    found += [(writer.name, s) for s in sorted(writer.iterdir()) if s.name.startswith("session-")]
    return found


def mirror_texts(machine):
    """Every source and entry text of every mirror of the machine, read straight from the ledgers."""
    import sqlite3

    texts = []
    for _, folder in mirrors(machine):
        con = sqlite3.connect(f"file:{folder / 'memory.sqlite3'}?mode=ro", uri=True)
        try:
            for (body,) in con.execute("SELECT body FROM sources UNION ALL SELECT body FROM entries"):
                texts.append(json.loads(body)["text"])
        finally:
            con.close()
    return texts
