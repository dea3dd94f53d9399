"""The project memory: one repository's promoted entries, shared by its sessions in Codex and Claude Code alike.

Driven through the registered hook commands (the real payload shapes of both clients) and the CLI.
"""

import json
import os
import sqlite3
import subprocess

import pytest

from conftest import run_om, tree_bytes
from project_support import ClaudeAt, CodexAt, git, repository


@pytest.fixture
def home(project_home):
    """A project home of this test's own (the hooks and the CLI inherit OM_PROJECT_HOME)."""
    return project_home


@pytest.fixture
def clones(tmp_path):
    """One repository with one commit, and a second clone of it in another folder, behind another remote name."""
    origin = repository(tmp_path / "origin")
    first = tmp_path / "work" / "shop"
    second = tmp_path / "elsewhere" / "shop-copy"
    first.parent.mkdir()
    second.parent.mkdir()
    subprocess.run(["git", "clone", "-q", str(origin), str(first)], check=True, capture_output=True)
    subprocess.run(["git", "clone", "-q", "-o", "upstream", "file://" + str(origin), str(second)], check=True,
                   capture_output=True)
    (first / "src").mkdir()
    return first, second


def om_json(*args, cwd=None):
    result = run_om(*args, cwd=cwd)
    assert result.returncode == 0, result
    return result.json


def captured_session(driver, prompt):
    """A session started by its hooks with one captured prompt; the prompt's source id."""
    driver(driver.start())
    driver(driver.prompt(prompt))
    pending = om_json("--store", driver.store, "--session", driver.session, "pending")
    return pending["through"], pending["sources"][-1]["id"]


def apply(store, session, checkpoint):
    return run_om("--store", store, "--session", session, "apply", input=json.dumps(checkpoint))


def context(response):
    return response["hookSpecificOutput"]["additionalContext"]


def project_db(home):
    [found] = [p for p in home.glob("session-*/memory.sqlite3")]
    return found


def test_two_clones_in_different_folders_and_remotes_are_one_project_and_a_folder_outside_git_is_its_folder(
        clones, tmp_path, home):
    first, second = clones
    one = om_json("project", "--json", cwd=first / "src")
    two = om_json("project", "--json", "--project", str(second))
    assert one["identity"] == two["identity"] == "git"
    assert one["project"] == two["project"] and one["roots"] == two["roots"]
    assert one["root"] == str(first) and two["root"] == str(second)
    plain = tmp_path / "notes"
    plain.mkdir()
    three = om_json("project", "--json", "--project", str(plain))
    assert three["identity"] == "folder" and three["root"] == str(plain) and three["project"] != one["project"]
    empty = tmp_path / "empty"
    empty.mkdir()
    git("init", "-q", cwd=empty)
    four = om_json("project", "--json", "--project", str(empty))
    assert four["identity"] == "folder" and four["root"] == str(empty)
    text = run_om("project", "--project", str(second))
    assert text.returncode == 0 and one["project"] in text.stdout and "root commit" in text.stdout


def test_a_fact_promoted_in_a_codex_checkpoint_is_in_the_next_claude_code_prime_of_another_clone_with_provenance(
        clones, tmp_path, home):
    first, second = clones
    before = {clone: tree_bytes(clone) for clone in clones}
    codex = CodexAt(tmp_path / "codex-store", first / "src", "codex-1")
    through, source = captured_session(codex, "Use SQLite for the cache; Redis was dropped for good.")
    receipt = apply(codex.store, codex.session, {"through": through, "observations": [
        {"text": "The cache is SQLite; Redis was dropped.", "importance": "high", "source_ids": [source],
         "promote": True},
        {"text": "The user was tired today.", "importance": "low", "source_ids": [source]}]})
    assert receipt.returncode == 0, receipt
    promoted = receipt.json["promoted"]
    assert [p["id"] for p in promoted] == [receipt.json["observations"][0]]

    claude = ClaudeAt(tmp_path / "claude-store", second, "claude-1")
    start = context(claude(claude.start()))
    assert "Project memory: 1 entry" in start and "prime" in start
    assert "Redis" not in start  # the start context counts the project memory; prime quotes it
    prime = run_om("--store", claude.store, "--session", claude.session, "prime").stdout
    line = next(x for x in prime.splitlines() if promoted[0]["id"] in x)
    assert "importance=high" in line and "by Codex" in line and "confirmed today" in line
    assert '"The cache is SQLite; Redis was dropped."' in line
    assert "tired" not in prime
    recall = om_json("--store", claude.store, "--session", claude.session, "recall", promoted[0]["id"])
    assert recall["project"] and [s["id"] for s in recall["sources"]] == [source]
    assert "Redis was dropped for good" in recall["sources"][0]["text"]
    assert {clone: tree_bytes(clone) for clone in clones} == before, "om wrote into a repository"


def test_a_fact_promoted_with_the_claude_code_promote_command_reaches_the_next_codex_start(clones, tmp_path, home):
    first, second = clones
    claude = ClaudeAt(tmp_path / "claude-store", second, "claude-1")
    through, source = captured_session(claude, "Never run the migrations on Fridays.")
    applied = apply(claude.store, claude.session, {"through": through, "observations": [
        {"text": "Migrations never run on Fridays.", "importance": "critical", "source_ids": [source]}]})
    entry = applied.json["observations"][0]
    promoted = om_json("--store", claude.store, "--session", claude.session, "promote", entry,
                       "--reason", "a team rule")
    assert promoted["promoted"][0]["id"] == entry
    codex = CodexAt(tmp_path / "codex-store", first, "codex-2")
    assert "Project memory: 1 entry" in context(codex(codex.start()))
    prime = run_om("--store", codex.store, "--session", codex.session, "prime").stdout
    assert entry in prime and "by Claude Code" in prime and "importance=critical" in prime
    everything = om_json("project", "view", "--all", cwd=first)
    [record] = everything
    assert record["provenance"]["promoted"]["client"] == "claude"
    assert record["provenance"]["promoted"]["session"] == "claude-1"
    assert record["provenance"]["reason"] == "a team rule"


def test_promoting_the_same_entry_again_from_another_session_is_one_entry_confirmed_twice(clones, tmp_path, home):
    first, second = clones
    entries = []
    for n, (where, driver) in enumerate(((first, CodexAt), (second, ClaudeAt))):
        session = driver(tmp_path / f"store-{n}", where, f"s-{n}")
        session(session.start())
        # The same evidence (same kind, key and text) is the same source, so the same observation.
        run_om("--store", session.store, "--session", session.session, "capture",
               input=json.dumps({"kind": "user", "text": "Ports: 8080 for the API.", "key": "k"}))
        pending = om_json("--store", session.store, "--session", session.session, "pending")
        receipt = apply(session.store, session.session, {"through": pending["through"], "observations": [
            {"text": "The API listens on 8080.", "source_ids": [pending["sources"][0]["id"]], "promote": True}]})
        assert receipt.returncode == 0, receipt
        entries.append(receipt.json["promoted"][0]["id"])
    assert entries[0] == entries[1]
    [record] = om_json("project", "view", "--all", cwd=first)
    assert record["provenance"]["times"] == 2
    assert record["provenance"]["promoted"]["session"] == "s-0"
    assert record["provenance"]["confirmed"]["session"] == "s-1"
    with sqlite3.connect(project_db(home)) as conn:
        assert conn.execute("SELECT count(*) FROM entries").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM sources").fetchone()[0] == 1


def test_an_unknown_id_to_promote_fails_the_whole_checkpoint_and_nothing_is_applied_anywhere(
        clones, tmp_path, home):
    first, _ = clones
    codex = CodexAt(tmp_path / "store", first, "codex-1")
    through, source = captured_session(codex, "Deploys go through the staging branch.")
    before = om_json("--store", codex.store, "--session", codex.session, "status")
    failed = apply(codex.store, codex.session, {"through": through, "observations": [
        {"text": "Deploys go through staging.", "source_ids": [source], "promote": True}],
        "promote": ["o-000000000000000000000000"]})
    assert failed.returncode == 66 and "o-000000000000000000000000" in failed.stderr
    assert failed.stderr.count("\n") == 1 and "Traceback" not in failed.stderr
    assert om_json("--store", codex.store, "--session", codex.session, "status") == before
    assert om_json("project", "view", "--all", cwd=first) == []


def test_a_retired_project_entry_is_replaced_in_one_call_and_the_next_start_no_longer_shows_it(
        clones, tmp_path, home):
    first, second = clones
    codex = CodexAt(tmp_path / "codex-store", first, "codex-1")
    through, source = captured_session(codex, "The build uses make.")
    old = apply(codex.store, codex.session, {"through": through, "observations": [
        {"text": "The build uses make.", "source_ids": [source], "promote": True}]}).json["observations"][0]

    claude = ClaudeAt(tmp_path / "claude-store", second, "claude-1")
    through, source = captured_session(claude, "We moved the build from make to just.")
    new = apply(claude.store, claude.session, {"through": through, "observations": [
        {"text": "The build uses just, not make.", "source_ids": [source]}]}).json["observations"][0]
    retired = om_json("--store", claude.store, "--session", claude.session, "project", "retire", old,
                      "--reason", "the build moved to just", "--replacement", new)
    assert retired["retired"] == [old] and [p["id"] for p in retired["promoted"]] == [new]

    later = CodexAt(tmp_path / "codex-store", first, "codex-2")
    assert "Project memory: 1 entry" in context(later(later.start()))
    prime = run_om("--store", later.store, "--session", later.session, "prime").stdout
    assert new in prime and old not in prime
    everything = {e["id"]: e for e in om_json("project", "view", "--all", cwd=first)}
    assert not everything[old]["active"] and everything[old]["retirement"]["replacement_ids"] == [new]
    assert everything[new]["active"]
    unknown = run_om("project", "--project", str(first), "retire", "o-nothing", "--reason", "x")
    assert unknown.returncode == 66 and unknown.stderr.count("\n") == 1


def test_private_spans_and_secrets_an_entry_repeats_are_taken_out_before_hashing_in_the_session_and_the_project(
        clones, tmp_path, home):
    first, _ = clones
    codex = CodexAt(tmp_path / "store", first, "codex-1")
    through, source = captured_session(codex, "The key is <private>hunter2</private>, keep it.")
    receipt = apply(codex.store, codex.session, {"through": through, "observations": [
        {"text": "The staging key is <private>hunter2</private> and token ghp_" + "a" * 36 + ".",
         "source_ids": [source], "promote": True}]})
    assert receipt.returncode == 0, receipt
    for db in [*tmp_path.glob("store/session-*/memory.sqlite3"), project_db(home)]:
        data = db.read_bytes()
        assert b"hunter2" not in data and b"ghp_aaaa" not in data
    found = om_json("--store", codex.store, "--session", codex.session, "search", "staging", "key")
    assert "[PRIVATE]" in json.dumps(found) and "hunter2" not in json.dumps(found)


def test_the_project_block_stays_within_its_budget_says_what_it_left_out_and_can_be_turned_off(
        clones, tmp_path, home, monkeypatch):
    first, _ = clones
    codex = CodexAt(tmp_path / "store", first, "codex-1")
    through, source = captured_session(codex, "Many conventions.")
    observations = [{"text": f"Convention {n}: " + "x" * 200, "source_ids": [source], "promote": True}
                    for n in range(20)]
    assert apply(codex.store, codex.session, {"through": through, "observations": observations}).returncode == 0
    fresh = CodexAt(tmp_path / "store", first, "codex-2")
    fresh(fresh.start())
    prime = run_om("--store", fresh.store, "--session", fresh.session, "prime").stdout
    block = prime[prime.index("# om project memory"):]
    assert len(block.encode()) <= 2400
    assert "more entries left out to fit; all of them:" in block and "project --project" in block
    monkeypatch.setenv("OM_PROJECT_CONTEXT_BYTES", "0")
    assert "# om project memory" not in run_om("--store", fresh.store, "--session", fresh.session, "prime").stdout
    monkeypatch.setenv("OM_PROJECT_CONTEXT_BYTES", "900")
    prime = run_om("--store", fresh.store, "--session", fresh.session, "prime").stdout
    assert len(prime[prime.index("# om project memory"):].encode()) <= 900


def test_forget_on_either_store_takes_the_text_out_of_the_project_memory_to_the_raw_bytes(clones, tmp_path, home):
    first, second = clones
    codex = CodexAt(tmp_path / "codex-store", first, "codex-1")
    through, source = captured_session(codex, "The vendor code is zebra-4471.")
    apply(codex.store, codex.session, {"through": through, "observations": [
        {"text": "Vendor code zebra-4471 opens the staging API.", "source_ids": [source], "promote": True}]})
    claude = ClaudeAt(tmp_path / "claude-store", second, "claude-1")
    claude(claude.start())
    forgot = run_om("--store", claude.store, "forget", "--all-sessions", "--text", "zebra-4471", "-y")
    assert forgot.returncode == 0, forgot
    assert [s["session"] for s in forgot.json["sessions"]][0].startswith("project-")
    for path in home.rglob("*"):
        if path.is_file():
            assert b"zebra-4471" not in path.read_bytes(), path
    prime = run_om("--store", claude.store, "--session", claude.session, "prime").stdout
    assert "[FORGOTTEN]" in prime and "zebra" not in prime


def test_a_session_recorded_before_identities_gets_one_on_its_next_hook(clones, tmp_path, home):
    first, _ = clones
    codex = CodexAt(tmp_path / "store", first, "codex-1")
    codex(codex.start())
    db = next((tmp_path / "store").glob("session-*/memory.sqlite3"))
    with sqlite3.connect(db) as conn:
        key = conn.execute("SELECT value FROM meta WHERE key = 'om_project_id'").fetchone()[0]
        conn.execute("DELETE FROM meta WHERE key = 'om_project_id'")
    codex(codex.prompt("next"))
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'om_project_id'").fetchone()[0] == key
    assert key == om_json("project", "--json", cwd=first)["project"]


def test_the_project_home_is_private_and_outside_both_client_stores(clones, tmp_path, home):
    first, _ = clones
    codex = CodexAt(tmp_path / "store", first, "codex-1")
    through, source = captured_session(codex, "A fact.")
    apply(codex.store, codex.session, {"through": through, "observations": [
        {"text": "A fact.", "source_ids": [source], "promote": True}]})
    assert os.stat(home).st_mode & 0o777 == 0o700
    assert os.stat(project_db(home)).st_mode & 0o777 == 0o600
    named = om_json("project", "--json", cwd=first)
    assert named["memory"]["store"] == str(home) and named["memory"]["active_entries"] == 1


def test_a_promoting_checkpoint_of_a_session_without_a_project_says_how_to_promote_and_applies_nothing(
        tmp_path, home):
    store = tmp_path / "store"
    captured = run_om("--store", store, "--session", "bare", "capture",
                      input=json.dumps({"kind": "user", "text": "we release with make release", "key": "k1"}))
    source = captured.json["source_id"]
    checkpoint = {"through": 1, "observations": [{"text": "Releases: make release.", "source_ids": [source],
                                                   "promote": True}]}
    refused = run_om("--store", store, "--session", "bare", "apply", input=json.dumps(checkpoint))
    assert refused.returncode == 65
    assert 'apply the checkpoint without "promote", then run `om promote ID... --project DIR`' in refused.stderr
    assert run_om("--store", store, "--session", "bare", "status").json["active"]["observations"] == 0
