"""The store leaves the plugin's data folder for the client's own: once, whole, under damage.

Earlier versions kept the store in the data folder the client gives the plugin, which
`claude plugin uninstall` deletes. The hooks (run exactly as the plugin registers them)
and the MCP server now keep it in `<client home>/om` and move an old store there; these
tests do the damage a move can meet: hooks and servers racing it, a kill -9 at any
moment, an older writer holding a ledger, a folder made loose by someone else.
"""

import json
import os
import random
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import time

import pytest

from conftest import ROOT, RUNTIME_ARGV, run_om
from inprocess import setup_om
from om.ids import session_hash

REGISTERED = json.loads((ROOT / "hooks" / "codex.json").read_text())["hooks"]


def layout(tmp_path):
    """(client home, the plugin's data folder in it, the client's store)."""
    home = tmp_path / "codex-home"
    return home, home / "plugins" / "data" / "om-observational-memory", home / "om"


def hook_env(data, client="codex"):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OM_", "PLUGIN_", "CLAUDE_", "OBSERVATIONAL", "CODEX_"))}
    env.update(CLAUDE_PLUGIN_ROOT=str(ROOT), CLAUDE_PLUGIN_DATA=str(data))
    if client == "codex":  # Codex sets both spellings, Claude Code only its own
        env.update(PLUGIN_ROOT=str(ROOT), PLUGIN_DATA=str(data))
    return env


def prompt(session, text, turn):
    return {"session_id": session, "turn_id": turn, "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp",
            "hook_event_name": "UserPromptSubmit", "model": "gpt-5", "permission_mode": "bypassPermissions",
            "prompt": text}


def start_hook(data, payload):
    """The Codex hook command as hooks/codex.json registers it, started on one payload."""
    command = REGISTERED["UserPromptSubmit"][0]["hooks"][0]["command"].replace("${PLUGIN_ROOT}", str(ROOT))
    # A process group of its own, so that a kill reaches the runtime the shells start, as a
    # client's own kill of a hook that overran its timeout does.
    proc = subprocess.Popen(["/bin/sh", "-c", command], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=hook_env(data), cwd="/", start_new_session=True)
    proc.stdin.write(json.dumps(payload).encode())
    proc.stdin.close()
    return proc


def run_hook(data, payload):
    proc = start_hook(data, payload)
    out = proc.stdout.read().decode()
    proc.wait(timeout=60)
    assert proc.returncode == 0, proc.stderr.read()
    return json.loads(out) if out.strip() else None


def old_store(data, sessions, template_dir):
    """A store as earlier versions left it in the data folder: `sessions` ledgers of two sources each."""
    template = template_dir / "template-store"
    setup_om("--store", template, "--session", "template", "capture",
             input=json.dumps({"kind": "user", "text": "template prompt", "key": "k1"}))
    setup_om("--store", template, "--session", "template", "capture",
             input=json.dumps({"kind": "tool", "text": "template output", "key": "k2"}))
    (db,) = template.glob("session-*/memory.sqlite3")
    data.mkdir(parents=True, exist_ok=True)
    for session in sessions:
        folder = data / f"session-{session_hash(session)}"
        folder.mkdir(mode=0o700)
        shutil.copy(db, folder / "memory.sqlite3")
        with sqlite3.connect(folder / "memory.sqlite3") as conn:
            conn.execute("UPDATE meta SET value = ? WHERE key = 'session'", (session,))
        conn.close()
    (data / ".om-python").write_text(os.path.realpath(sys.executable) + "\n")
    (data / "hook-errors.log").write_text("2026-12-01T00:00:00Z om: Stop hook failed open: an old failure\n")
    (data / "receipts").mkdir()
    (data / "receipts" / "Stop.json").write_text('{"event": "Stop"}')


def ledgers(folder, unborn=()):
    """{session: [source texts]} of every session directory in `folder`, read as a v1 peer reads them.

    A ledger of a session in `unborn` may also hold no table at all: a hook killed after it made the
    file (0600, before SQLite opens it, as v1 does) and before its schema's transaction committed
    leaves it so, and that session's next event writes the schema. Such a ledger maps to None.
    """
    found = {}
    for db in sorted(folder.glob("session-*/memory.sqlite3")):
        # Read-write, as v1 peers open a ledger: a hook killed mid-transaction leaves a hot journal,
        # which the first connection that can write rolls back (a read-only one cannot read past it).
        conn = sqlite3.connect(str(db))
        try:
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",), db
            if not conn.execute("SELECT 1 FROM sqlite_master").fetchone():
                (session,) = [s for s in unborn if db.parent.name == f"session-{session_hash(s)}"] or [db]
                assert session in unborn, f"{db} holds no table"
                found[session] = None
                continue
            (session,) = conn.execute("SELECT value FROM meta WHERE key = 'session'").fetchone()
            texts = [json.loads(body)["text"] for (body,) in conn.execute("SELECT body FROM sources ORDER BY seq")]
        finally:
            conn.close()
        assert db.parent.name == f"session-{session_hash(session)}"
        found[session] = texts
    return found


def test_the_first_hook_moves_the_old_store_whole_and_leaves_only_the_installations_files(tmp_path):
    home, data, store = layout(tmp_path)
    old = [f"old-{i}" for i in range(5)]
    old_store(data, old, tmp_path)
    before = ledgers(data)

    run_hook(data, prompt("new-session", "first prompt after the update", "t1"))

    after = ledgers(store)
    assert {s: after[s] for s in old} == before
    assert after["new-session"] == ["first prompt after the update"]
    assert sorted(p.name for p in data.iterdir()) == [".om-move.lock", ".om-moved", ".om-python"]
    assert (data / ".om-moved").read_text() == f"{store}\n"
    assert "an old failure" in (store / "hook-errors.log").read_text()
    assert (store / "receipts" / "Stop.json").is_file() and (store / "receipts" / "UserPromptSubmit.json").is_file()
    assert stat.S_IMODE(store.stat().st_mode) == 0o700
    # The old path now names the store's new place instead of starting a second store there.
    result = run_om("--store", data, "--session", "old-1", "status")
    assert result.returncode == 74 and result.stdout == ""
    assert result.stderr == f"om: the store in {data} moved to {store}; pass --store {store}\n"
    assert not list(data.glob("session-*"))


@pytest.mark.slow
def test_hooks_and_a_server_racing_the_move_lose_and_split_nothing(tmp_path):
    home, data, store = layout(tmp_path)
    old = [f"old-{i}" for i in range(40)]
    old_store(data, old, tmp_path)
    racers = [start_hook(data, prompt(old[i], f"prompt {i} during the move", f"t{i}")) for i in range(0, 40, 4)]
    racers += [start_hook(data, prompt(f"new-{i}", f"new prompt {i}", f"n{i}")) for i in range(6)]
    server = subprocess.Popen(
        [*RUNTIME_ARGV, "mcp", "--client", "codex", "--plugin-data", str(data)], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(hook_env(data), PYTHONPATH=str(ROOT)))
    for proc in racers:
        assert proc.wait(timeout=120) == 0, proc.stderr.read()
        assert proc.stdout.read() == b""  # a capture says nothing; a failure would have said why
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "status", "arguments": {"session": "old-0"}}}
    out, err = server.communicate(json.dumps(call).encode() + b"\n", timeout=120)
    status = json.loads(json.loads(out)["result"]["content"][0]["text"])
    assert status["database"].startswith(f"{store}/"), status

    found = ledgers(store)
    assert not list(data.glob("session-*")), "a session stayed behind"
    for i, session in enumerate(old):
        expected = ["template prompt", "template output"] + ([f"prompt {i} during the move"] if i % 4 == 0 else [])
        assert found[session] == expected, session
    for i in range(6):
        assert found[f"new-{i}"] == [f"new prompt {i}"]
    assert len(found) == len(old) + 6


@pytest.mark.slow
def test_a_move_killed_at_any_moment_leaves_every_session_whole_in_one_place_and_the_next_hook_finishes_it(tmp_path):
    rng = random.Random(23)
    sessions = [f"old-{i}" for i in range(150)]
    # How long a move takes here, from the store's creation (its first step) to the hook's
    # end: the kills land anywhere within it.
    home, data, store = layout(tmp_path / "calibration")
    old_store(data, sessions, tmp_path / "calibration")
    proc = start_hook(data, prompt("first", "calibrating", "c1"))
    began = when_it_exists(store)
    assert proc.wait(timeout=60) == 0
    span = time.monotonic() - began
    cut, round_ = 0, -1
    # At least 12 rounds, and more (up to 40) until 3 kills landed mid-move: on a loaded machine one
    # calibration says little, so the window follows where the kills land.
    while round_ < 11 or cut < 3 and round_ < 39:
        round_ += 1
        base = tmp_path / f"round-{round_}"
        home, data, store = layout(base)
        old_store(data, sessions, base)
        proc = start_hook(data, prompt("killed", "never mind", "k1"))
        when_it_exists(store)
        time.sleep(rng.uniform(0.0, 0.9) * span)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        # The killed hook's own session: its ledger whole, absent, or not begun (its next event begins it).
        moved, left = ledgers(store, ["killed"]) if store.is_dir() else {}, ledgers(data, ["killed"])
        assert (moved.get("killed") or left.get("killed") or ["never mind"]) == ["never mind"], round_
        cut += bool(moved) and bool(left)
        if moved and not left:
            span *= 0.7  # the move had finished: kill sooner
        elif left and not moved:
            span *= 1.3  # it had not begun moving sessions: kill later
        assert not set(moved) & set(left), f"round {round_}: a session in both places"
        assert set(sessions) <= set(moved) | set(left), f"round {round_}: a session lost"
        for session in sessions:
            assert (moved.get(session) or left.get(session)) == ["template prompt", "template output"]

        run_hook(data, prompt("after", "the next prompt", "a1"))
        found = ledgers(store, ["killed"])
        assert not list(data.glob("session-*")), f"round {round_}"
        assert all(found[s] == ["template prompt", "template output"] for s in sessions)
        assert found["after"] == ["the next prompt"]
    assert cut >= 3, f"only {cut} of {round_ + 1} kills landed in the middle of a move: the test proved little"


def when_it_exists(path, timeout=60):
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.0005)
    return time.monotonic()


WRITER = r"""
import json, sqlite3, sys, time
db, hold = sys.argv[1], float(sys.argv[2])
conn = sqlite3.connect(db, isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
body = {"seq": 0, "id": "s-" + "a" * 24, "kind": "user", "timestamp": "2026-12-01T00:00:00Z",
        "text": "written by an older om while the store moved", "truncated": False}
conn.execute("INSERT INTO sources(id, body) VALUES (?, ?)", (body["id"], json.dumps(body)))
print("locked", flush=True)
time.sleep(hold)
conn.execute("COMMIT")
conn.close()
"""


@pytest.mark.parametrize("hold", [0.5, 4.0])
def test_a_ledger_an_older_writer_holds_moves_with_its_write_now_or_on_a_later_event(tmp_path, hold):
    home, data, store = layout(tmp_path)
    old_store(data, ["busy", "idle"], tmp_path)
    (db,) = (data / f"session-{session_hash('busy')}").glob("memory.sqlite3")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(db), str(hold)], stdout=subprocess.PIPE)
    assert writer.stdout.readline() == b"locked\n"
    run_hook(data, prompt("new", "a prompt while the writer holds its ledger", "t1"))
    assert writer.wait(timeout=60) == 0
    if hold > 2:  # past the move's wait: that one session waits in the old place for the next event
        assert set(ledgers(data)) == {"busy"} and set(ledgers(store)) == {"idle", "new"}
        run_hook(data, prompt("new", "the next prompt", "t2"))
    found = ledgers(store)
    assert not list(data.glob("session-*"))
    assert found["busy"] == ["template prompt", "template output", "written by an older om while the store moved"]
    assert not list(store.glob("session-*/*-journal"))


def test_a_store_made_loose_by_someone_else_is_made_private_again_by_the_next_hook(tmp_path):
    home, data, store = layout(tmp_path)
    store.mkdir(parents=True, mode=0o755)
    os.chmod(store, 0o755)  # e.g. `mkdir ~/.claude/om` under umask 022, for the settings hooks
    run_hook(data, prompt("s1", "hello", "t1"))
    assert stat.S_IMODE(store.stat().st_mode) == 0o700
    assert ledgers(store) == {"s1": ["hello"]}
