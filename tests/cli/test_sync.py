"""`om sync` between machines on one box: setting it up, publishing, fetching, mirrors, identity, offline.

Each machine is its own HOME, store and project home (sync_support.Machine); the remote is a bare
repository reached by a file:// URL, or a folder of bundles.
"""

import fcntl
import json
import os
import shutil
import stat
import subprocess

import pytest

from conftest import run_om, run_on_a_terminal, tree_bytes
from sync_support import Machine, bare_remote, git, mirror_texts, mirrors, objects


@pytest.fixture
def a(tmp_path):
    return Machine(tmp_path, "a")


@pytest.fixture
def b(tmp_path):
    return Machine(tmp_path, "b")


@pytest.fixture
def c(tmp_path):
    return Machine(tmp_path, "c")


def test_init_without_yes_and_without_a_terminal_refuses_in_one_line_naming_y_and_sets_nothing_up(a, remote):
    a.capture("s1", "the cache is sqlite")
    r = a.om("sync", "init", "--remote", remote)
    assert r.returncode == 64 and r.stdout == "" and r.stderr.count("\n") == 1 and "-y" in r.stderr, r
    assert not (a.store / "sync" / "config.json").exists()
    r = a.om("sync")
    assert r.returncode == 66 and "sync init" in r.stderr and len(r.stderr.splitlines()) == 1, r


def test_init_says_what_becomes_readable_by_whom_and_asks_on_a_terminal(a, remote):
    a.capture("s1", "the cache is sqlite")
    code, out, err = run_on_a_terminal(["--store", a.store, "sync", "init", "--remote", remote, "--share",
                                        "entries", "--label", "laptop"], "y")
    assert code == 0, err
    assert remote in err and "readable by everyone who can read that repository" in err
    assert "observations, reflections" in err and "no text" in err and "laptop" in err
    assert json.loads(out)["remotes"][0]["share"] == "entries"


def test_init_with_yes_still_says_what_becomes_readable_by_whom(a, remote):
    r = a.om("sync", "init", "--remote", remote, "-y")
    assert r.returncode == 0 and "readable by everyone who can read that repository" in r.stderr, r
    assert r.json["publishes"] in r.stderr


def test_the_sync_folder_is_private_and_the_writer_id_is_128_random_bits(a, b, remote):
    a.capture("s1", "x marks the spot")
    one = a.init("--remote", remote)
    a.sync()
    two = b.init("--remote", remote)
    assert len(one["writer"]) == 32 and int(one["writer"], 16) >= 0 and one["writer"] != two["writer"]
    sync = a.store / "sync"
    assert stat.S_IMODE(sync.stat().st_mode) == 0o700
    for name in ("config.json", "state.json"):
        assert stat.S_IMODE((sync / name).stat().st_mode) == 0o600, name


def test_three_machines_each_see_the_others_sessions_after_one_sync_each(a, b, c, remote):
    a.capture("a1", "laptop decided the cache is sqlite")
    b.capture("b1", "desktop dropped redis")
    c.capture("c1", "cloud box runs the migrations")
    for m, label in ((a, "laptop"), (b, "desktop"), (c, "cloud")):
        m.init("--remote", remote, "--label", label)
    for m in (a, b, c, a, b):
        m.sync()
    for m, own in ((a, "laptop"), (b, "desktop"), (c, "cloud")):
        texts = mirror_texts(m)
        others = {"laptop decided the cache is sqlite", "desktop dropped redis", "cloud box runs the migrations"}
        mine = {"laptop": "laptop decided the cache is sqlite", "desktop": "desktop dropped redis",
                "cloud": "cloud box runs the migrations"}[own]
        assert set(texts) == others - {mine}, (own, texts)
    # A writer's mirrors are laid out as a store, each a v1 ledger of the session it mirrors.
    [folder] = [f for _, f in mirrors(a) if run_om("--store", f.parent, "--session", "b1", "status").json["through"]
                == 0 and (f.parent / f.name).is_dir() and f.name.endswith(_hash("b1"))]
    pending = run_om("--store", folder.parent, "--session", "b1", "pending")
    assert [s["text"] for s in pending.json["sources"]] == ["desktop dropped redis"]
    assert a.om("--session", "b1", "status").json["pending_sources"] == 0  # not one of a's own sessions


def _hash(session):
    from om.ids import session_hash

    return session_hash(session)


def test_publishing_the_same_state_again_pushes_nothing_and_the_bytes_are_deterministic(a, remote, tmp_path):
    a.capture("s1", "one fact")
    a.init("--remote", remote)
    first = a.sync()["remotes"][0]
    assert first["pushed"] and first["published"] == first["pushed"]
    again = a.sync()["remotes"][0]
    assert again["pushed"] is None and again["published"] == first["published"]
    tree = git("--git-dir", str(tmp_path / "remote.git"), "ls-tree", "-r", first["published"]).stdout.decode()
    blob = [line.split()[2] for line in tree.splitlines() if line.endswith(".jsonl")][0]
    data = git("--git-dir", str(tmp_path / "remote.git"), "cat-file", "blob", blob).stdout
    lines = [json.loads(line) for line in data.decode().splitlines()]
    assert lines[0]["type"] == "session" and lines[0]["session"] == "s1" and lines[1]["text"] == "one fact"
    assert data == b"".join(json.dumps(v, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
                            for v in lines)


def test_share_entries_publishes_no_source_text_and_citations_resolve_to_withheld(a, b, remote, tmp_path):
    source = a.capture("s1", "the deploy token lives in vault path secret/shop")
    entry = a.observe("s1", "Deploys read their token from vault.", [source])
    a.init("--remote", remote, "--share", "entries")
    a.sync()
    pushed = objects(tmp_path / "remote.git")
    assert b"vault path secret/shop" not in pushed and b"Deploys read their token from vault." in pushed
    b.init("--remote", remote)
    b.sync()
    [(writer, folder)] = mirrors(b)
    got = run_om("--store", folder.parent, "--session", "s1", "recall", entry).json
    assert got["entry"]["text"] == "Deploys read their token from vault."
    assert got["sources"][0]["id"] == source and got["sources"][0]["text"] == "[WITHHELD BY ITS WRITER]"


def test_hold_publishes_only_records_older_than_the_window(a, remote, tmp_path):
    a.capture("s1", "said a moment ago")
    a.init("--remote", remote, "--hold", "1h")
    a.sync()
    pushed = objects(tmp_path / "remote.git")
    assert b"said a moment ago" not in pushed and b'"session":"s1"' in pushed


def test_a_text_the_redaction_rules_catch_today_is_withheld_and_reported(a, remote, tmp_path):
    import sqlite3

    a.capture("s1", "an ordinary line")
    db = next(a.store.glob("session-*/memory.sqlite3"))
    con = sqlite3.connect(db)
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4"
    body = {"seq": 0, "id": "s-" + "1" * 24, "kind": "tool", "timestamp": "2026-01-01T00:00:00Z",
            "text": f"token {secret}", "truncated": False}
    con.execute("INSERT INTO sources(id, body) VALUES (?, ?)", (body["id"], json.dumps(body)))
    con.commit()
    con.close()
    a.init("--remote", remote)
    r = a.om("sync")
    assert r.returncode == 0, r
    assert secret.encode() not in objects(tmp_path / "remote.git")
    assert "withheld s-111111111111111111111111" in r.stderr and r.json["remotes"][0]["withheld"]


def test_no_path_home_or_host_name_is_published(a, remote, tmp_path):
    import socket

    a.capture("s1", "plain words")
    a.init("--remote", remote, "--label", "laptop")
    a.sync()
    pushed = objects(tmp_path / "remote.git")
    for leak in (str(tmp_path), str(a.home), str(a.store), os.path.expanduser("~")):
        assert leak.encode() not in pushed, leak
    host = socket.gethostname()
    if len(host) > 3:
        assert host.encode() not in pushed


def test_an_unreachable_remote_fails_in_one_line_loses_nothing_and_the_next_sync_completes(a, b, tmp_path):
    url = "file://" + str(tmp_path / "later.git")
    a.capture("s1", "written while offline")
    a.init("--remote", url)
    r = a.om("sync")
    assert r.returncode == 69 and r.stdout == "" and len(r.stderr.splitlines()) == 1, r
    assert "next om sync" in r.stderr
    bare_remote(tmp_path / "later.git")
    assert a.sync()["remotes"][0]["pushed"]
    b.init("--remote", url)
    b.sync()
    assert mirror_texts(b) == ["written while offline"]


def test_a_copied_store_is_refused_until_it_takes_a_new_identity(a, b, remote, tmp_path):
    a.capture("s1", "original")
    first = a.init("--remote", remote)
    a.sync()
    copy = Machine(tmp_path, "copy")
    shutil.copytree(a.store, copy.store, symlinks=True)
    r = copy.om("sync")
    assert r.returncode == 67 and "--new-identity" in r.stderr and len(r.stderr.splitlines()) == 1, r
    fresh = copy.setup("sync", "init", "--new-identity").json
    assert fresh["writer"] != first["writer"] and fresh["replaced_writer"] == first["writer"]
    copy.sync()
    b.init("--remote", remote)
    b.sync()
    assert sorted(w for w, _ in mirrors(b)) == sorted([first["writer"], fresh["writer"]])


def test_a_store_copied_with_its_place_intact_is_caught_by_the_push_it_cannot_fast_forward(a, remote, tmp_path):
    # A disk image keeps inodes and the machine id: only the remote tells the two apart.
    a.capture("s1", "original")
    a.init("--remote", remote)
    a.sync()
    copy = Machine(tmp_path, "copy")
    shutil.copytree(a.store, copy.store, symlinks=True)
    config = json.loads((copy.store / "sync" / "config.json").read_text())
    st = os.stat(copy.store / "sync")
    config["place"].update(device=st.st_dev, inode=st.st_ino)
    (copy.store / "sync" / "config.json").write_text(json.dumps(config))
    a.capture("s1", "the original moves on")
    a.sync()
    copy.capture("s1", "the copy writes too")
    r = copy.om("sync")
    assert r.returncode == 67 and "--new-identity" in r.stderr, r
    assert b"the copy writes too" not in objects(tmp_path / "remote.git")


def test_one_sync_per_store_at_a_time(a, remote):
    a.capture("s1", "x")
    a.init("--remote", remote)
    fd = os.open(a.store / "sync" / "lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        r = a.om("sync")
    finally:
        os.close(fd)
    assert r.returncode == 67 and "another om sync is running" in r.stderr, r


def test_without_git_sync_says_so_in_one_line(a, remote, tmp_path):
    a.capture("s1", "x")
    a.init("--remote", remote)
    empty = tmp_path / "no-git-here"
    empty.mkdir()
    r = a.om("sync", env={"PATH": str(empty)})
    assert r.returncode == 69 and "needs git" in r.stderr and len(r.stderr.splitlines()) == 1, r


def test_a_folder_of_bundles_carries_memory_between_machines(a, b, tmp_path):
    folder = tmp_path / "Dropbox" / "om"
    folder.mkdir(parents=True)
    a.capture("a1", "from the laptop")
    b.capture("b1", "from the desktop")
    one = a.init("--folder", folder)
    two = b.init("--folder", folder)
    a.sync()
    b.sync()
    a.sync()
    assert sorted(p.name for p in folder.iterdir()) == sorted([one["writer"] + ".bundle", two["writer"] + ".bundle"])
    assert mirror_texts(a) == ["from the desktop"] and mirror_texts(b) == ["from the laptop"]


def test_sync_status_lists_the_remotes_the_writers_seen_and_what_waits(a, b, remote):
    a.capture("s1", "x")
    a.init("--remote", remote, "--label", "laptop")
    b.init("--remote", remote, "--label", "desktop")
    b.capture("b1", "y")
    b.sync()
    a.sync()
    a.capture("s2", "not yet published")
    doc = a.om("sync", "status", "--json").json
    [r] = doc["remotes"]
    assert r["name"] == "memory" and r["last_sync"] and r["changed_ledgers"] == 1
    assert [w["label"] for w in r["writers"]] == ["desktop"]
    text = a.om("sync", "status")
    assert text.returncode == 0 and "desktop" in text.stdout and "last sync" in text.stdout


def test_the_mcp_server_offers_sync_status_and_no_way_to_sync(a, remote):
    from mcp_client import McpServer

    a.capture("s1", "x")
    a.init("--remote", remote, "--label", "laptop")
    with McpServer(store=a.store, env=a.env) as srv:
        srv.initialize()
        names = [t["name"] for t in srv.request("tools/list")["result"]["tools"]]
        assert "sync_status" in names and not [n for n in names if n.startswith("sync") and n != "sync_status"]
        doc = json.loads(srv.ok("sync_status", session="s1"))
        assert doc["label"] == "laptop" and doc["remotes"][0]["name"] == "memory"


def test_a_riding_remote_writes_nothing_into_the_project_repository(a, b, tmp_path):
    origin = tmp_path / "origin.git"
    git("init", "-q", "--bare", str(origin))
    work = tmp_path / "shop"
    git("clone", "-q", str(origin), str(work))
    (work / "README").write_text("shop\n")
    git("add", "README", cwd=work)
    git("commit", "-q", "-m", "first", cwd=work)
    git("push", "-q", "origin", "main", cwd=work)
    before = tree_bytes(work / ".git", mtimes=True)
    a.capture("a1", "in the shop")
    a.init("--remote", "origin", "--project", str(work))
    a.sync()
    assert tree_bytes(work / ".git", mtimes=True) == before
    refs = git("--git-dir", str(origin), "for-each-ref", "--format=%(refname)").stdout.decode().split()
    assert "refs/heads/main" in refs and any(r.startswith("refs/om/v1/w/") for r in refs)


def test_forget_writer_hides_a_lost_machines_memory_everywhere(a, b, c, remote):
    for m, text in ((a, "from a"), (b, "from the lost laptop"), (c, "from c")):
        m.capture("s-" + m.name, text)
        m.init("--remote", remote)
    for m in (a, b, c):
        m.sync()
    lost = b.setup("sync", "status", "--json").json["writer"]
    r = a.om("sync", "forget-writer", lost)
    assert r.returncode == 0 and r.json["removed_from"] == ["memory"], r
    assert "from the lost laptop" not in mirror_texts(a)
    a.sync()
    c.sync()
    assert "from the lost laptop" not in mirror_texts(c) and "from a" in mirror_texts(c)


def test_the_hook_path_never_imports_sync(tmp_path):
    from conftest import ROOT, isolated

    probe = (f"import sys, io; sys.path.insert(0, {str(ROOT)!r}); from om.cli import main; "
             "code = main(sys.argv[1:]); "
             "sys.stderr.write('LOADED ' + repr(sorted(m for m in sys.modules if m.startswith('om.sync'))) + '\\n')")
    payload = json.dumps({"hook_event_name": "SessionStart", "session_id": "s1", "cwd": str(tmp_path),
                          "source": "startup", "transcript_path": None})
    p = subprocess.run([*isolated(), "-S", "-c", probe, "hook", "--client", "codex", "--store",
                        str(tmp_path / "store")], input=payload, capture_output=True, text=True,
                       env={"PATH": os.environ["PATH"], "OM_PROJECT_HOME": os.environ["OM_PROJECT_HOME"],
                            "HOME": str(tmp_path)}, timeout=60)
    assert p.returncode == 0 and "additionalContext" in p.stdout, p
    assert "LOADED []" in p.stderr, p.stderr


def test_doctor_checks_git_and_the_last_sync_of_a_store_that_syncs(a, remote, tmp_path):
    a.capture("s1", "x")
    plain = a.om("doctor", "--json").json
    assert not [c for c in plain["checks"] if c["check"].startswith("sync.")]
    a.init("--remote", remote)
    checks = {c["check"]: c for c in a.om("doctor", "--json").json["checks"]}
    assert checks["sync.git"]["status"] == "ok"
    assert checks["sync.status"]["status"] == "warn" and "never synced" in checks["sync.status"]["finding"]
    assert "sync" in checks["sync.status"]["fix"]
    a.sync()
    checks = {c["check"]: c for c in a.om("doctor", "--json").json["checks"]}
    assert checks["sync.status"]["status"] == "ok"
    empty = tmp_path / "no-git-here"
    empty.mkdir()
    import sys

    (empty / "python3").symlink_to(sys.executable)
    checks = {c["check"]: c for c in a.om("doctor", "--json", env={"PATH": str(empty)}).json["checks"]}
    assert checks["sync.git"]["status"] == "fail" and "needs git" in checks["sync.git"]["finding"]
