"""Durability: a result `om` has printed survives kill -9 of every process touching the ledger.

A killed writer can leave the database file half-modified next to a hot
rollback journal; the next opener must restore it. These tests kill `om`
right after it printed, and kill a second writer in the middle of its
transaction (its dirty pages already spilled into the database file), then
check with plain sqlite3 and with `om` itself that every printed result is
there and the file is sound.
"""

import json
import os
import random
import signal
import subprocess
import sys

import sqlite_probe
from conftest import ROOT, RUNTIME_ARGV

HERE = os.path.dirname(os.path.abspath(__file__))
CLI_LOOP = os.path.join(os.path.dirname(HERE), "cli_loop.py")

# A writer that wrecks the ledger inside a transaction, forces those pages into
# the database file (tiny cache), says "ready" and waits to be killed.
HOSTILE_WRITER = r"""
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
conn.execute("PRAGMA cache_size=1")
conn.execute("BEGIN IMMEDIATE")
conn.execute("DELETE FROM sources")
conn.execute("DELETE FROM entries")
conn.execute("DELETE FROM meta WHERE key = 'cursor'")
conn.execute("CREATE TABLE IF NOT EXISTS filler(x)")
conn.executemany("INSERT INTO filler VALUES (?)", [("x" * 2000,) for _ in range(400)])
print("ready", flush=True)
time.sleep(120)
"""


def _env():
    env = {k: v for k, v in os.environ.items() if k != "OBSERVATIONAL_MEMORY_STORE"}
    env["PYTHONPATH"] = str(ROOT)
    return env


def _om(store, *args):
    return [*RUNTIME_ARGV, "--store", str(store), "--session", "s1", *args]


def _kill(proc):
    try:
        proc.send_signal(signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


def _kill_hostile_writer_mid_transaction(db):
    writer = subprocess.Popen(
        [sys.executable, "-c", HOSTILE_WRITER, db], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert writer.stdout.readline() == b"ready\n", writer.stderr.read()
        # The wreckage is in the file; only the journal can undo it.
        assert os.path.exists(db + "-journal")
    finally:
        _kill(writer)
    assert os.path.exists(db + "-journal"), "the killed writer should leave a hot journal"


def _capture_payload(i):
    return json.dumps({"kind": "tool", "text": f"durable source {i}\n" + "x" * (i % 500), "key": f"k{i}"})


def test_captures_printed_before_a_kill_9_survive_it_and_a_writer_killed_mid_transaction(tmp_path):
    store = tmp_path / "store"
    db = sqlite_probe.database(store, "s1")
    printed = []
    rng = random.Random(20260906)
    for round_ in range(5):
        # One looping capture process and one big concurrent `apply`, both killed mid-flight.
        payloads = tmp_path / f"payloads-{round_}.jsonl"
        payloads.write_text("".join(json.dumps(_capture_payload(round_ * 1000 + i)) + "\n" for i in range(400)))
        with open(payloads, "rb") as stdin:
            looper = subprocess.Popen(
                [sys.executable, CLI_LOOP, "--store", str(store), "--session", "s1", "capture"],
                stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(),
            )
        if printed:
            checkpoint = {
                "through": len(printed),
                "observations": [{"text": f"note {round_} {j}", "source_ids": [printed[j % len(printed)]]}
                                 for j in range(800)],
            }
            applier = subprocess.Popen(
                _om(store, "apply"), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=_env(),
            )
            applier.stdin.write(json.dumps(checkpoint).encode())
            applier.stdin.close()
        else:
            applier = None
        wanted = rng.randint(5, 60)
        seen = 0
        while seen < wanted:
            line = looper.stdout.readline()
            assert line, looper.stderr.read()
            result = json.loads(line)
            assert result["rc"] == 0, result
            printed.append(json.loads(result["out"])["source_id"])
            seen += 1
        _kill(looper)
        if applier is not None:
            _kill(applier)
        # Whatever the kills left, the next writer may be killed mid-transaction too.
        _kill_hostile_writer_mid_transaction(db)

        assert sqlite_probe.integrity(db) == ["ok"]
        stored = set(sqlite_probe.source_ids(db))
        assert [sid for sid in printed if sid not in stored] == []

    recalled = subprocess.run(_om(store, "recall", printed[0]), capture_output=True, env=_env())
    assert recalled.returncode == 0, recalled.stderr
    assert json.loads(recalled.stdout)["sources"][0]["id"] == printed[0]


def test_an_applied_checkpoint_survives_kill_9_of_its_writer_and_a_writer_killed_mid_transaction(om, store):
    sources = []
    for i in range(30):
        r = om("capture", input=_capture_payload(i))
        assert r.returncode == 0, r
        sources.append(r.json["source_id"])
    db = sqlite_probe.database(store, "s1")
    checkpoint = {
        "through": 30,
        "observations": [{"text": f"observation {i}", "importance": "high", "source_ids": [sources[i]]}
                         for i in range(30)],
    }
    applier = subprocess.Popen(
        _om(store, "apply"), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env()
    )
    applier.stdin.write(json.dumps(checkpoint).encode())
    applier.stdin.close()
    receipt = json.loads(applier.stdout.readline())
    _kill(applier)
    _kill_hostile_writer_mid_transaction(db)

    assert sqlite_probe.integrity(db) == ["ok"]
    status = om("status")
    assert status.returncode == 0, status
    assert status.json["through"] == 30
    assert status.json["active"] == {"observations": 30, "reflections": 0}
    kept = {e["id"] for e in om("view", "--all").json}
    assert set(receipt["observations"]) == kept and len(kept) == 30


def test_om_keeps_the_ledger_in_rollback_journal_mode_as_v1_peers_expect(om, store):
    r = om("capture", input=_capture_payload(1))
    assert r.returncode == 0, r
    assert om("apply", input=json.dumps({"through": 1})).returncode == 0
    assert om("status").returncode == 0
    db = sqlite_probe.database(store, "s1")
    assert sqlite_probe.journal_mode(db) == "delete"
    with open(db, "rb") as f:
        header = f.read(20)
    # File format write/read versions: 1 = legacy (rollback journal), 2 = WAL.
    assert header[18:20] == b"\x01\x01"
    assert not os.path.exists(db + "-wal")


def test_the_connection_om_writes_with_syncs_fully_before_commit_returns(store):
    from om.ledger import Ledger

    with Ledger.open(str(store), "s1") as ledger:
        # 2 = FULL: journal and database are fsynced at each commit (power-loss durability).
        assert ledger.conn.execute("PRAGMA synchronous").fetchone()[0] == 2
        assert ledger.conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"

