"""Forget reaches every machine that syncs: tombstones for other writers' records, a rewrite without history for
one's own, and om's repository purged, down to the raw bytes of every store."""

import json
import subprocess

import pytest

from sync_support import Machine, mirror_texts, objects, raw_holds

SECRET = "hunter2-orchid-7731"


@pytest.fixture
def trio(tmp_path, remote):
    found = []
    for name in ("a", "b", "c"):
        m = Machine(tmp_path, name)
        m.init("--remote", remote, "--label", name)
        found.append(m)
    return found


def visible(machine, text):
    """Where `text` still shows on a machine: its own ledgers' rows and its mirrors' rows."""
    shown = [t for t in mirror_texts(machine) if text in t]
    doc = json.loads(machine.setup("export", "--all-sessions", "--format", "json").stdout)
    for s in doc["sessions"]:
        shown += [x["text"] for x in s["sources"] + s["entries"] if text in x["text"]]
    return shown


def spread(trio):
    """b, the writer of every test's record, syncs first: one round and every machine holds it."""
    a, b, c = trio
    for m in (b, a, c):
        m.sync()


def clean(machine, text):
    holding, in_repo = raw_holds(machine, text)
    return holding == [] and not in_repo


def test_a_forget_of_text_in_another_machines_record_hides_it_everywhere_then_leaves_no_byte_anywhere(
        trio, tmp_path):
    a, b, c = trio
    source = b.capture("b1", f"the staging password is {SECRET}, keep it out of logs", kind="tool")
    b.observe("b1", f"Staging logs in with {SECRET}.", [source])
    spread(trio)
    assert visible(a, SECRET) and visible(c, SECRET)
    forgot = a.om("forget", "--all-sessions", "--text", SECRET, "-y")
    assert forgot.returncode == 0 and forgot.json["sync"]["tombstones"] == 2, forgot
    assert "sync publishes this forget" in forgot.stderr
    assert visible(a, SECRET) == [] and clean(a, SECRET) is False  # om's repository still has b's old blobs
    tombstones = (a.store / "sync" / "tombstones.jsonl").read_text()
    assert SECRET not in tombstones and "[FORGOTTEN]" in tombstones
    unacked = a.om("sync", "status", "--json").json["tombstones"]["unacknowledged"]
    assert len(unacked) == 2
    # One sync each: hidden everywhere.
    for m in trio:
        m.sync()
    for m in trio:
        assert visible(m, SECRET) == [], m.name
    assert "the staging password is [FORGOTTEN], keep it out of logs" in mirror_texts(c)
    # A second round: no byte of it anywhere, om's repositories included.
    for m in trio:
        m.sync()
    for m in trio:
        assert clean(m, SECRET), (m.name, raw_holds(m, SECRET))
    assert a.om("sync", "status", "--json").json["tombstones"]["unacknowledged"] == []
    # The remote keeps the old objects until its own gc, which a self-hosted bare repository can run.
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "--git-dir", str(bare), "reflog", "expire", "--expire=now", "--all"], check=True)
    subprocess.run(["git", "--git-dir", str(bare), "gc", "--prune=now", "--quiet"], check=True)
    assert SECRET.encode() not in objects(bare)


def test_a_forget_of_a_machines_own_text_republishes_without_history_and_every_reader_purges(trio, tmp_path):
    a, b, c = trio
    b.capture("b1", f"token {SECRET} pasted by mistake")
    b.capture("b1", "an innocent later line")
    spread(trio)
    first = b.sync()["remotes"][0]["published"]
    assert b.om("forget", "--session", "b1", "--text", SECRET, "-y").returncode == 0
    assert b.om("sync", "status", "--json").json["remotes"][0]["pending_rewrite"] is True
    receipt = b.sync()["remotes"][0]
    assert receipt["rewritten"] and receipt["purged"] and receipt["pushed"] != first
    parents = subprocess.run(["git", "--git-dir", str(tmp_path / "remote.git"), "rev-list", "--parents", "-n", "1",
                              receipt["pushed"]], capture_output=True, text=True, check=True).stdout.split()
    assert parents == [receipt["pushed"]]  # a commit without history
    for m in (a, c):
        m.sync()
        assert clean(m, SECRET) and "token [FORGOTTEN] pasted by mistake" in mirror_texts(m), m.name
    assert clean(b, SECRET)


def test_concurrent_forgets_in_one_record_converge_on_forgetting_the_whole_record(trio):
    a, b, c = trio
    b.capture("b1", "alpha-9917 and beta-4402 share one line", kind="tool")
    spread(trio)
    # Before anyone sees the other's forget: a forgets one literal in b's record, b the other in its own.
    assert a.om("forget", "--all-sessions", "--text", "alpha-9917", "-y").returncode == 0
    assert b.om("forget", "--session", "b1", "--text", "beta-4402", "-y").returncode == 0
    for _ in range(2):
        for m in (c, a, b):
            m.sync()
    for m in trio:
        shown = visible(m, "share one line") + visible(m, "alpha") + visible(m, "beta")
        assert shown == [], (m.name, shown)
    # a's tombstone held the rest of the line (beta-4402 too): once b acknowledged it, a dropped that text
    # and republished without history; one more round and every repository has let go of it.
    assert "beta-4402" not in (a.store / "sync" / "tombstones.jsonl").read_text()
    for m in (c, a, b):
        m.sync()
    for m in trio:
        assert clean(m, "alpha-9917") and clean(m, "beta-4402"), (m.name, raw_holds(m, "beta-4402"))
    assert mirror_texts(a) == ["[FORGOTTEN]"] and mirror_texts(c) == ["[FORGOTTEN]"]
    own = b.om("--session", "b1", "pending").json["sources"]
    assert [s["text"] for s in own] == ["[FORGOTTEN]"]


def test_two_machines_forgetting_the_same_literal_agree_on_the_same_rewrite(trio):
    a, b, c = trio
    b.capture("b1", f"one line holding {SECRET} in the middle", kind="tool")
    spread(trio)
    for m in (a, c):
        assert m.om("forget", "--all-sessions", "--text", SECRET, "-y").returncode == 0
    for _ in range(2):
        for m in trio:
            m.sync()
    for m in (a, c):
        assert mirror_texts(m) == ["one line holding [FORGOTTEN] in the middle"]
    assert [s["text"] for s in b.om("--session", "b1", "pending").json["sources"]] == [
        "one line holding [FORGOTTEN] in the middle"]


def test_a_forget_in_a_project_memory_two_stores_publish_makes_both_republish_without_history(tmp_path, remote):
    # The Codex and the Claude Code store of one machine share its project home: two writers of one memory.
    codex, reader = Machine(tmp_path, "codex"), Machine(tmp_path, "reader")
    claude = Machine(tmp_path, "claude")
    claude.env["OM_PROJECT_HOME"] = codex.env["OM_PROJECT_HOME"]
    claude.projects = codex.projects
    work = tmp_path / "work"
    work.mkdir()
    source = codex.capture("s1", f"the deploy key is {SECRET}")
    entry = codex.observe("s1", f"Deploys use the key {SECRET}.", [source])
    codex.setup("--session", "s1", "promote", entry, "--project", str(work))
    claude.capture("t1", "nothing secret here")
    for m in (codex, claude, reader):
        m.init("--remote", remote, "--label", m.name)
    for m in (codex, claude, reader):
        m.sync()
    assert len([t for t in mirror_texts(reader) if SECRET in t]) == 6  # s1, and the project memory twice
    assert codex.om("forget", "--all-sessions", "--text", SECRET, "-y").returncode == 0
    codex.sync()
    rewritten = claude.sync()["remotes"][0]
    assert rewritten["rewritten"] and rewritten["purged"], rewritten
    reader.sync()
    for m in (codex, claude, reader):
        m.sync()
    for m in (codex, claude, reader):
        assert clean(m, SECRET), (m.name, raw_holds(m, SECRET))


def test_a_tombstone_for_a_session_its_owner_removed_since_still_takes_the_text_out_of_the_owners_history(
        trio, tmp_path):
    a, b, c = trio
    b.capture("b1", f"a line holding {SECRET}", kind="tool")
    b.capture("b2", "another session")
    spread(trio)
    assert a.om("forget", "--all-sessions", "--text", SECRET, "-y").returncode == 0
    assert b.om("sessions", "--remove", "b1", "-y").returncode == 0
    for _ in range(2):
        for m in trio:
            m.sync()
    for m in trio:
        assert clean(m, SECRET), (m.name, raw_holds(m, SECRET))
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "--git-dir", str(bare), "reflog", "expire", "--expire=now", "--all"], check=True)
    subprocess.run(["git", "--git-dir", str(bare), "gc", "--prune=now", "--quiet"], check=True)
    assert SECRET.encode() not in objects(bare)
