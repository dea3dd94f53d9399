"""The project memory where sessions are listed: `status`, `sessions`, `--project DIR` by identity, the start pointer.

Sessions are started by the registered Codex hook command (its real payload shape) in two clones of one
git repository; everything is read back through the CLI.
"""

import json
import os
import shutil
import sqlite3
import subprocess
import sys

import pytest

from conftest import ROOT, bytecode_env, run_om
from project_support import CodexAt, repository

MARK = "om: earlier sessions of this project hold memory"


@pytest.fixture
def home(project_home):
    """A project home of this test's own (the hooks and the CLI inherit OM_PROJECT_HOME)."""
    return project_home


@pytest.fixture
def clones(tmp_path):
    """A repository with one commit (git init, commit) and a `git clone` of it in another folder."""
    first = repository(tmp_path / "work" / "shop")
    second = tmp_path / "elsewhere" / "shop-copy"
    second.parent.mkdir()
    subprocess.run(["git", "clone", "-q", str(first), str(second)], check=True, capture_output=True)
    return first, second


@pytest.fixture
def no_git(tmp_path, monkeypatch):
    """A `git` first on PATH that leaves a mark, then runs git: a command that runs git is caught doing it
    (remove the mark before it)."""
    bindir = tmp_path / "marking-git"
    bindir.mkdir()
    mark = tmp_path / "git-ran"
    (bindir / "git").write_text(f"#!/bin/sh\necho \"$@\" >> '{mark}'\nexec '{shutil.which('git')}' \"$@\"\n")
    (bindir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return mark


def om_json(*args, cwd=None):
    result = run_om(*args, cwd=cwd)
    assert result.returncode == 0, result
    return result.json


def remembering(store, cwd, session, fact, promote=False):
    """A session started by its hooks in `cwd` that checkpointed one observation of its prompt; its id."""
    driver = CodexAt(store, cwd, session)
    driver(driver.start())
    driver(driver.prompt(fact))
    pending = om_json("--store", store, "--session", session, "pending")
    receipt = run_om("--store", store, "--session", session, "apply", input=json.dumps({
        "through": pending["through"],
        "observations": [{"text": fact, "source_ids": [pending["sources"][-1]["id"]], "promote": promote}]}))
    assert receipt.returncode == 0, receipt
    return receipt.json["observations"][0]


def start(store, cwd, session):
    driver = CodexAt(store, cwd, session)
    return driver(driver.start())["hookSpecificOutput"]["additionalContext"]


def pointer(context):
    at = context.find("\n" + MARK)
    return context[at:] if at >= 0 else ""


def named(note):
    return [json.loads(line[2:line.index(": last checkpoint")]) for line in note.splitlines() if line.startswith("- ")]


def key_of(folder):
    return om_json("project", "--json", "--project", str(folder))["project"]


def test_status_shows_the_project_key_and_its_memory_s_active_and_retired_counts_without_running_git(
        clones, tmp_path, home, no_git):
    first, _ = clones
    store = tmp_path / "store"
    key = key_of(first)
    kept = remembering(store, first, "s1", "The cache is SQLite.", promote=True)
    dropped = remembering(store, first, "s2", "The build uses make.", promote=True)
    retired = om_json("project", "--project", str(first), "retire", dropped, "--reason", "the build moved to just")
    assert retired["retired"] == [dropped]
    plain = tmp_path / "notes"
    plain.mkdir()
    remembering(store, plain, "s3", "Notes are plain text.")
    plain_key = key_of(plain)
    assert no_git.exists()  # the marking git sees the runs that name a repository
    no_git.unlink()

    status = om_json("--store", store, "--session", "s1", "status")
    assert status["project_id"] == key and status["project_memory"] == {"active": 1, "retired": 1}
    assert status["active"] == {"observations": 1, "reflections": 0}  # the session's own counts stay as v1's
    other = om_json("--store", store, "--session", "s3", "status")
    assert other["project_id"] == plain_key != key and other["project_memory"] == {"active": 0, "retired": 0}
    absent = run_om("--store", store, "--session", "nobody", "status")
    assert absent.returncode == 0 and absent.json["project_id"] is None and absent.json["project_memory"] is None
    assert not no_git.exists(), no_git.read_text()
    assert kept in run_om("--store", store, "--session", "s2", "prime").stdout  # the project memory, as before


def test_sessions_counts_each_listed_project_s_memory_afresh_in_json_and_under_the_table_without_running_git(
        clones, tmp_path, home, no_git):
    first, second = clones
    store = tmp_path / "store"
    key = key_of(first)
    remembering(store, first, "s1", "The cache is SQLite.", promote=True)
    remembering(store, second, "s2", "Deploys go through staging.")
    plain = tmp_path / "notes"
    plain.mkdir()
    remembering(store, plain, "s3", "Notes are plain text.")
    plain_key = key_of(plain)
    no_git.unlink(missing_ok=True)

    listing = om_json("--store", store, "sessions", "--json")
    rows = {r["session"]: r for r in listing["sessions"]}
    assert rows["s1"]["project_id"] == rows["s2"]["project_id"] == key
    assert rows["s1"]["project"] == str(first) and rows["s2"]["project"] == str(second)
    projects = {p["project_id"]: p for p in listing["projects"]}
    assert projects[key] == {"project_id": key, "roots": sorted([str(first), str(second)]), "sessions": 2,
                             "project_memory": {"active": 1, "retired": 0}}
    assert projects[plain_key]["project_memory"] == {"active": 0, "retired": 0}
    table = run_om("--store", store, "sessions").stdout
    footer = table[table.index("PROJECT MEMORY"):].splitlines()
    assert footer[0].split() == ["PROJECT", "MEMORY", "ACTIVE", "RETIRED", "SESSIONS", "ROOTS"]
    assert footer[1].split()[:4] == [key, "1", "0", "2"] and len(footer) == 2  # a project without memory: no line

    # A promotion from another store changes no ledger of this one: the counts are read afresh all the same.
    remembering(tmp_path / "other-store", second, "elsewhere", "Migrations never run on Fridays.", promote=True)
    no_git.unlink(missing_ok=True)
    again = om_json("--store", store, "sessions", "--json")
    assert {p["project_id"]: p for p in again["projects"]}[key]["project_memory"]["active"] == 2
    assert run_om("--store", store, "sessions").stdout.splitlines()[-1].split()[:2] == [key, "2"]
    assert not no_git.exists(), no_git.read_text()


@pytest.mark.parametrize("index", [True, False], ids=["store index", "no store index"])
def test_sessions_and_search_with_project_of_one_clone_select_the_sessions_of_both_clones(
        clones, tmp_path, home, index):
    first, second = clones
    store = tmp_path / "store"
    remembering(store, first, "in-first", "Checkout cache: redis was dropped.")
    remembering(store, second, "in-second", "The redis timeouts broke checkout.")
    (second / "sub").mkdir()
    remembering(store, second / "sub", "legacy", "Legacy redis notes.")
    # Recorded before identities existed: no om_project_id, only the root folder.
    db = next(p for p in store.glob("session-*/memory.sqlite3")
              if sqlite3.connect(p).execute("SELECT value FROM meta WHERE key = 'session'").fetchone()[0] == "legacy")
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM meta WHERE key = 'om_project_id'")
    plain = tmp_path / "notes"
    plain.mkdir()
    remembering(store, plain, "elsewhere", "Notes on redis elsewhere.")
    if index:
        assert run_om("--store", store, "sessions").returncode == 0  # builds the store index
    else:
        shutil.rmtree(store / "index", ignore_errors=True)

    listing = om_json("--store", store, "sessions", "--json", "--project", str(second))
    assert sorted(r["session"] for r in listing["sessions"]) == ["in-first", "in-second", "legacy"]
    assert listing["project"] == str(second) and listing["project_id"] == key_of(first)
    from_first = om_json("--store", store, "sessions", "--json", "--project", str(first / "."))
    # From the first clone the legacy session (second clone's folder, no identity) is not of the project.
    assert sorted(r["session"] for r in from_first["sessions"]) == ["in-first", "in-second"]
    table = run_om("--store", store, "sessions", "--project", str(second)).stdout
    assert sorted(line.split()[0] for line in table.splitlines()[1:] if line) == ["in-first", "in-second", "legacy"]

    found = om_json("--store", store, "search", "redis", "--all-sessions", "--project", str(second))
    assert sorted(r["session"] for r in found["results"]) == ["in-first", "in-second", "legacy"]
    assert found["sessions"] == 3 and found["project_id"] == key_of(first)


def test_a_fresh_start_in_one_clone_points_at_the_earlier_session_of_the_other_clone(clones, tmp_path, home):
    first, second = clones
    store = tmp_path / "store"
    remembering(store, first, "earlier", "Checkout cache: redis was dropped.")
    note = pointer(start(store, second, "fresh"))
    assert named(note) == ["earlier"]
    search = next(line for line in note.splitlines() if line.startswith("Search them all: "))
    assert f"--project {second}" in search  # which selects both clones (above)


def test_the_start_pointer_leaves_out_sessions_whose_memory_the_project_memory_holds_and_says_how_many(
        clones, tmp_path, home, no_git):
    first, second = clones
    store = tmp_path / "store"
    promoted = remembering(store, first, "promoted", "The cache is SQLite.", promote=True)
    remembering(store, second, "plain", "Deploys go through staging.")
    no_git.unlink(missing_ok=True)

    note = pointer(start(store, second, "fresh-1"))
    assert named(note) == ["plain"]
    assert "Not named here: 1 earlier session whose promoted memory the project memory holds" in note
    assert not no_git.exists(), no_git.read_text()  # the identity cache answered: no git on the start

    # Once every earlier session's memory is promoted, the pointer names none and says so in one line.
    run_om("--store", store, "--session", "plain", "promote",
           om_json("--store", store, "--session", "plain", "view", "--all")[0]["id"])
    note = pointer(start(store, first, "fresh-2"))
    assert named(note) == [] and "Not named here: 2 earlier sessions" in note
    assert len(note.strip().splitlines()) <= 3 and len(note.encode()) <= 1200

    # A session whose promoted entries are all retired is named again.
    om_json("project", "--project", str(first), "retire", promoted, "--reason", "wrong")
    assert named(pointer(start(store, first, "fresh-3"))) == ["promoted"]


def test_a_start_that_reads_the_project_memory_for_its_pointer_imports_no_pattern_machinery(
        clones, tmp_path, home):
    first, second = clones
    store = tmp_path / "store"
    remembering(store, first, "promoted", "The cache is SQLite.", promote=True)
    remembering(store, second, "plain", "Deploys go through staging.")
    assert run_om("--store", store, "sessions").returncode == 0
    payload = {"session_id": "fresh", "hook_event_name": "SessionStart", "source": "startup", "cwd": str(second),
               "transcript_path": "/tmp/rollout.jsonl", "model": "gpt-5", "permission_mode": "bypassPermissions"}
    r = subprocess.run([sys.executable, "-I", "-S", "-X", "importtime", str(ROOT / "bin" / "om"), "--store", str(store),
                        "hook", "--client", "codex"], input=json.dumps(payload), capture_output=True, text=True,
                       env={"PATH": os.environ["PATH"], "OM_PROJECT_HOME": str(home), **bytecode_env()}, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    context = json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
    assert named(pointer(context)) == ["plain"] and "Not named here: 1 earlier session" in context
    assert "Project memory: 1 entry" in context
    imported = {line.split("|")[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")}
    assert "om.project.counts" in imported
    assert not imported & {"re", "functools", "collections", "enum", "subprocess"}, sorted(imported)
