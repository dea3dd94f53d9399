"""Concurrency: many writers on one session ledger lose, duplicate and reorder nothing.

Eight processes capture into one session while a ninth checkpoints whatever is
pending, over and over. Every call is the real `om.cli.main` (see
tests/cli_loop.py), each process holding its own SQLite connection per call,
exactly like separate `om` commands.
"""

import json
import os
import subprocess
import sys
import time

import pytest

import sqlite_probe
from conftest import ROOT, RUNTIME_ARGV

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI_LOOP = os.path.join(TESTS, "cli_loop.py")
WORKERS = 8
PER_WORKER = 250
SHARED = 10

# Checkpoints whatever is pending until the stop file exists and nothing is left.
# Every other checkpoint also records an observation citing pending sources.
CHECKPOINTER = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
from cli_loop import run_once
store, stop = sys.argv[2], sys.argv[3]
base = ["--store", store, "--session", "s1"]
n = 0
while True:
    stopping = os.path.exists(stop)
    pending = run_once(base + ["pending"], "")
    record = {"pending": pending}
    if pending["rc"] == 0:
        body = json.loads(pending["out"])
        if not body["sources"]:
            if stopping:
                break
            time.sleep(0.005)
            continue
        n += 1
        checkpoint = {"through": body["through"]}
        if n % 2 == 0:
            checkpoint["observations"] = [
                {"text": f"checkpoint {n} saw {len(body['sources'])} sources",
                 "source_ids": [s["id"] for s in body["sources"][:5]]}
            ]
        record["apply"] = run_once(base + ["apply"], json.dumps(checkpoint))
    print(json.dumps(record), flush=True)
"""


def _env():
    env = {k: v for k, v in os.environ.items() if k != "OBSERVATIONAL_MEMORY_STORE"}
    env["PYTHONPATH"] = str(ROOT)
    return env


def _payloads(worker):
    own = [
        {"kind": ("user", "assistant", "tool")[i % 3], "text": f"worker {worker} source {i}", "key": f"w{worker}"}
        for i in range(PER_WORKER)
    ]
    shared = [{"kind": "tool", "text": f"the same output {j}", "key": "shared"} for j in range(SHARED)]
    # Shared sources spread through the run, so identical captures race each other.
    step = PER_WORKER // SHARED
    for j, payload in enumerate(shared):
        own.insert(j * (step + 1) + worker % step, payload)
    return own


@pytest.mark.slow
def test_eight_capturers_and_a_checkpointer_lose_and_duplicate_nothing(tmp_path):
    store = tmp_path / "store"
    store.mkdir(mode=0o700)  # the writers meet an existing store (creating one is announced on stderr)
    stop = tmp_path / "stop"
    env = _env()
    checkpointer = subprocess.Popen(
        [sys.executable, "-c", CHECKPOINTER, TESTS, str(store), str(stop)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )
    workers = []
    for w in range(WORKERS):
        path = tmp_path / f"worker-{w}.jsonl"
        path.write_text("".join(json.dumps(json.dumps(p)) + "\n" for p in _payloads(w)))
        with open(path, "rb") as stdin:
            workers.append(
                subprocess.Popen(
                    [sys.executable, CLI_LOOP, "--store", str(store), "--session", "s1", "capture"],
                    stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                )
            )
    outputs = [w.communicate(timeout=300) for w in workers]
    stop.write_text("")
    cp_out, cp_err = checkpointer.communicate(timeout=300)

    assert [w.returncode for w in workers] == [0] * WORKERS, [e for _, e in outputs]
    assert checkpointer.returncode == 0, cp_err
    results = [[json.loads(line) for line in out.splitlines()] for out, _ in outputs]
    failures = [r for rs in results for r in rs if r["rc"] != 0 or r["err"]]
    assert failures == []
    assert [len(rs) for rs in results] == [PER_WORKER + SHARED] * WORKERS

    own_ids, shared_ids = set(), None
    for w, rs in enumerate(results):
        ids = [json.loads(r["out"])["source_id"] for r in rs]
        by_payload = dict(zip((json.dumps(p) for p in _payloads(w)), ids))
        mine = [sid for p, sid in by_payload.items() if '"shared"' not in p]
        theirs = {sid for p, sid in by_payload.items() if '"shared"' in p}
        assert len(set(mine)) == PER_WORKER
        assert not own_ids & set(mine)
        own_ids |= set(mine)
        shared_ids = theirs if shared_ids is None else shared_ids
        assert theirs == shared_ids and len(theirs) == SHARED
    printed = own_ids | shared_ids
    assert len(printed) == WORKERS * PER_WORKER + SHARED

    db = sqlite_probe.database(store, "s1")
    assert sqlite_probe.integrity(db) == ["ok"]
    stored = sqlite_probe.source_ids(db)
    assert len(stored) == len(set(stored)) == len(printed)
    assert set(stored) == printed

    # The checkpointer's view: every source pending exactly once, cursor only moving forward.
    records = [json.loads(line) for line in cp_out.splitlines()]
    assert [r for r in records if r["pending"]["rc"] != 0 or r["apply"]["rc"] != 0] == []
    seen, cursor = [], 0
    for r in records:
        pending = json.loads(r["pending"]["out"])
        receipt = json.loads(r["apply"]["out"])
        assert pending["sources"][0]["seq"] > cursor
        assert receipt["through"] == pending["through"] > cursor
        cursor = receipt["through"]
        seen.extend(s["id"] for s in pending["sources"])
    assert len(seen) == len(set(seen)) == len(printed)
    assert set(seen) == printed
    assert len(records) > 10  # checkpoints really interleaved with the captures

    status = subprocess.run(
        [*RUNTIME_ARGV, "--store", str(store), "--session", "s1", "status"],
        capture_output=True, env=env,
    )
    assert status.returncode == 0, status.stderr
    body = json.loads(status.stdout)
    # Repeated captures are true no-ops: they burn no sequence number.
    assert body["through"] == cursor == sqlite_probe.max_seq(db) == len(printed)
    assert body["pending_sources"] == 0
    assert body["active"]["observations"] == sum(1 for r in records if json.loads(r["apply"]["out"])["observations"])


def test_a_capture_waits_for_a_slow_writer_instead_of_failing(om, store):
    first = om("capture", input=json.dumps({"kind": "user", "text": "first", "key": ""}))
    assert first.returncode == 0, first
    db = sqlite_probe.database(store, "s1")
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sqlite3,sys,time\n"
         "c=sqlite3.connect(sys.argv[1],isolation_level=None)\n"
         "c.execute('BEGIN IMMEDIATE')\nprint('locked',flush=True)\ntime.sleep(1.5)\nc.execute('COMMIT')\n",
         db],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout.readline() == b"locked\n"
        started = time.monotonic()
        r = om("capture", input=json.dumps({"kind": "user", "text": "second", "key": ""}))
        waited = time.monotonic() - started
    finally:
        holder.wait(timeout=30)
    assert r.returncode == 0, r
    assert waited >= 1.0  # it queued behind the lock rather than failing or racing past it
    assert r.json["source_id"] in sqlite_probe.source_ids(db)
