"""Sessions of a project for the tests of where the project memory shows (search, export, the browser).

A session is started by its client's real SessionStart hook in a folder of the test's choosing (a
folder outside git is its own project: no git runs), so its ledger records the project as the hooks
do; its evidence and checkpoints are arranged in process, and the promotions go through the CLI.
"""

import json
import subprocess

from conftest import run_om
from export_sample import HOSTILE
from hook_drivers import ClaudeDriver, CodexDriver
from inprocess import setup_om


class CodexAt(CodexDriver):
    """A Codex session working in `cwd`."""

    def __init__(self, store, cwd, session):
        super().__init__(store)
        self.cwd, self.session = str(cwd), session

    def _base(self, event, turn):
        return dict(super()._base(event, turn), cwd=self.cwd)


class ClaudeAt(ClaudeDriver):
    """A Claude Code session working in `cwd`."""

    def __init__(self, store, cwd, session):
        super().__init__(store)
        self.cwd, self.session = str(cwd), session

    def __call__(self, payload, **kw):
        return super().__call__(dict(payload, cwd=self.cwd, session_id=self.session), **kw)


#: git with an identity and a branch name of its own, whatever the machine's configuration.
GIT = ["git", "-c", "user.email=dev@example.com", "-c", "user.name=dev", "-c", "init.defaultBranch=main"]


def git(*args, cwd):
    subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True)


def repository(path):
    """A git repository at `path` (made) with one commit: a project with an identity."""
    path.mkdir(parents=True)
    git("init", "-q", cwd=path)
    (path / "README").write_text("shop\n")
    git("add", "README", cwd=path)
    git("commit", "-q", "-m", "first", cwd=path)
    return path


def om_json(*args, input=None, cwd=None):
    result = run_om(*args, input=input, cwd=cwd)
    assert result.returncode == 0, result
    return result.json


def project_key(folder):
    return om_json("project", "--json", "--project", str(folder))["project"]


def started(driver):
    """The session, started by its hook (which records its project)."""
    driver(driver.start())
    return driver


def remember(driver, *facts, promote=False, importance="medium"):
    """Capture one prompt per fact and apply one observation citing it; the observation ids.

    `promote` asks the checkpoint to promote them into the project memory as well.
    """
    base = ("--store", str(driver.store), "--session", driver.session)
    sources = []
    for fact in facts:
        captured = setup_om(*base, "capture", input=json.dumps({"kind": "user", "text": fact, "key": fact}))
        sources.append(captured.json["source_id"])
    through = setup_om(*base, "pending").json["through"]
    checkpoint = {"through": through, "observations": [
        dict({"text": fact, "importance": importance, "source_ids": [sid]}, **({"promote": True} if promote else {}))
        for fact, sid in zip(facts, sources)]}
    applied = run_om(*base, "apply", input=json.dumps(checkpoint))
    assert applied.returncode == 0, applied
    return applied.json["observations"]


def build_project(tmp_path):
    """Folder `shop` and its project memory: a hostile text and a fact promoted by Codex session codex-1
    (the fact promoted again by Claude Code session claude-1), and an entry claude-1 promoted that the
    project then retired. Returns the ids, the key and the stores."""
    folder = tmp_path / "shop"
    folder.mkdir()
    codex = started(CodexAt(tmp_path / "store", folder, "codex-1"))
    hostile, cache = remember(codex, HOSTILE, "The cache is SQLite.", promote=True, importance="high")
    claude = started(ClaudeAt(tmp_path / "claude-store", folder, "claude-1"))
    again, deploys = remember(claude, "The cache is SQLite.", "Deploys go through staging.", promote=True,
                              importance="high")
    assert again == cache
    om_json("project", "--project", str(folder), "retire", deploys, "--reason", "Deploys moved to CI </div>")
    return {"folder": folder, "key": project_key(folder), "store": str(codex.store),
            "claude_store": str(claude.store), "hostile": hostile, "cache": cache, "deploys": deploys}
