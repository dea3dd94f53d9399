"""Atomicity: `apply`, `fork` and `import` killed with SIGKILL at random moments.

Each run restores the same starting store at the same path, starts the real
command, kills it after a random delay spread over its whole running time
(measured by one complete reference run), then judges the files with plain
sqlite3: the database is sound, and its three tables are exactly the state
before the command or exactly the state a complete run leaves.
"""

import json
import os
import random
import shutil
import signal
import subprocess
import time

import pytest

import sqlite_probe
from conftest import ROOT, RUNTIME_ARGV

RUNS = 30
SOURCES = 10_000
# Values a complete run sets from the clock; compared by presence only.
VOLATILE = ("last_checkpoint_at",)


def _env():
    env = {k: v for k, v in os.environ.items() if k != "OBSERVATIONAL_MEMORY_STORE"}
    env["PYTHONPATH"] = str(ROOT)
    return env


def _om_argv(store, session, *args):
    return [*RUNTIME_ARGV, "--store", str(store), "--session", session, *args]


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A store with session s1: many sources, 200 low observations, cursor 1000; and a big checkpoint."""
    from om.ledger import Ledger

    base = tmp_path_factory.mktemp("atomicity")
    store = base / "template"
    with Ledger.open(str(store), "s1") as ledger:
        with ledger.transaction():
            ids = [
                ledger.capture("tool", f"source {i}: " + "output line of a long command\n" * 15, f"k{i % 7}")
                for i in range(SOURCES)
            ]
        ledger.apply({
            "through": 1000,
            "observations": [
                {"text": f"early observation {i}", "importance": "low", "source_ids": ids[i:i + 3]}
                for i in range(200)
            ],
        })
        old = [e["id"] for e in ledger.entries()]
    checkpoint = {
        "through": SOURCES - 500,
        "observations": [
            {"text": f"later observation {i} " + "detail " * 20, "importance": "high", "source_ids": ids[i:i + 10]}
            for i in range(2500)
        ],
    }
    checkpoint_path = base / "checkpoint.json"
    checkpoint_path.write_text(json.dumps(checkpoint))
    return {"store": store, "checkpoint": checkpoint_path, "old": old, "base": base}


def _restore(template_store, store):
    if os.path.exists(store):
        shutil.rmtree(store)
    shutil.copytree(template_store, store)


def _run(argv, stdin_path=None):
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    try:
        started = time.monotonic()
        proc = subprocess.run(argv, stdin=stdin, capture_output=True, env=_env(), timeout=120)
        return proc, time.monotonic() - started
    finally:
        if stdin_path:
            stdin.close()


def _killed_run(argv, delay, stdin_path=None):
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    try:
        proc = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        return proc.returncode
    finally:
        if stdin_path:
            stdin.close()


def _kill_delays(rng, duration, outcomes, wanted):
    """Kill delays spread over the command's running time, RUNS at a time.

    A loaded machine stretches the killed runs beyond the reference run, so
    that every kill may land before the commit. Then up to two more rounds
    follow, each spread twice as wide, until every `wanted` outcome was seen.
    """
    spread = 1.1
    for _ in range(3):
        for _ in range(RUNS):
            yield rng.uniform(0, duration * spread)
        if all(outcomes[k] for k in wanted):
            return
        spread *= 2


def _judge(db, before, after, outcomes):
    hot = os.path.exists(db + "-journal")
    assert sqlite_probe.integrity(db) == ["ok"]
    state = sqlite_probe.dump(db, VOLATILE)
    if state == before:
        outcomes["before"] += 1
    elif state == after:
        outcomes["after"] += 1
    else:
        pytest.fail("the ledger is neither the state before nor the state after the command")
    outcomes["hot journal"] += hot


@pytest.mark.slow
def test_apply_killed_at_random_moments_leaves_exactly_the_before_or_the_after_ledger(template, tmp_path):
    store = tmp_path / "store"
    db = sqlite_probe.database(store, "s1")
    argv = _om_argv(store, "s1", "apply")
    _restore(template["store"], store)
    before = sqlite_probe.dump(db, VOLATILE)
    done, duration = _run(argv, template["checkpoint"])
    assert done.returncode == 0, done.stderr
    after = sqlite_probe.dump(db, VOLATILE)
    assert after != before

    rng = random.Random(1)
    outcomes = {"before": 0, "after": 0, "hot journal": 0}
    for delay in _kill_delays(rng, duration, outcomes, ("before", "after", "hot journal")):
        _restore(template["store"], store)
        _killed_run(argv, delay, template["checkpoint"])
        _judge(db, before, after, outcomes)
    # The kills really landed on both sides of the commit, some inside the transaction.
    assert outcomes["before"] and outcomes["after"] and outcomes["hot journal"], outcomes


@pytest.mark.slow
def test_fork_killed_at_random_moments_leaves_no_destination_or_a_complete_one(template, tmp_path):
    store = tmp_path / "store"
    source_db = sqlite_probe.database(store, "s1")
    destination = sqlite_probe.session_dir(store, "fork-target")
    dest_db = sqlite_probe.database(store, "fork-target")
    argv = _om_argv(store, "s1", "fork", "--to-session", "fork-target")
    _restore(template["store"], store)
    source_before = sqlite_probe.dump(source_db)
    done, duration = _run(argv)
    assert done.returncode == 0, done.stderr
    forked = sqlite_probe.dump(dest_db)
    assert dict(forked["meta"])["session"] == "fork-target"

    rng = random.Random(2)
    outcomes = {"absent": 0, "complete": 0}
    for delay in _kill_delays(rng, duration, outcomes, ("absent", "complete")):
        _restore(template["store"], store)
        _killed_run(argv, delay)
        sessions = sorted(n for n in os.listdir(store) if n.startswith("session-"))
        assert sqlite_probe.dump(source_db) == source_before
        if os.path.exists(destination):
            outcomes["complete"] += 1
            assert len(sessions) == 2
            assert sqlite_probe.integrity(dest_db) == ["ok"]
            assert sqlite_probe.dump(dest_db) == forked
        else:
            outcomes["absent"] += 1
            assert sessions == [os.path.basename(os.path.dirname(source_db))]
            leftovers = [n for n in os.listdir(store) if not n.startswith("session-")]
            assert all(n.startswith(".om-tmp-") for n in leftovers), leftovers
            # A killed fork never blocks the next one, which also removes its staging folder.
            retry, _ = _run(argv)
            assert retry.returncode == 0, retry.stderr
            assert sqlite_probe.dump(dest_db) == forked
            assert [n for n in os.listdir(store) if n.startswith(".om-tmp-")] == []
    assert outcomes["absent"] and outcomes["complete"], outcomes


@pytest.mark.slow
def test_import_killed_at_random_moments_leaves_exactly_the_before_or_the_after_ledger(template, tmp_path):
    source_store = tmp_path / "source-store"
    store = tmp_path / "store"
    _restore(template["store"], source_store)
    source_db = sqlite_probe.database(source_store, "s1")
    source_before = sqlite_probe.dump(source_db)

    # The destination: an uncheckpointed session with a few sources of its own.
    seed = tmp_path / "seed"
    for i in range(5):
        payload = tmp_path / "payload.json"
        payload.write_text(json.dumps({"kind": "user", "text": f"own source {i}", "key": ""}))
        r, _ = _run(_om_argv(seed, "dest", "capture"), payload)
        assert r.returncode == 0, r.stderr
    db = sqlite_probe.database(store, "dest")
    argv = _om_argv(store, "dest", "import", "--from-store", source_store, "--from-session", "s1")
    _restore(seed, store)
    before = sqlite_probe.dump(db, VOLATILE)
    done, duration = _run(argv)
    assert done.returncode == 0, done.stderr
    after = sqlite_probe.dump(db, VOLATILE)
    assert len(after["sources"]) == SOURCES + 5

    rng = random.Random(3)
    outcomes = {"before": 0, "after": 0, "hot journal": 0}
    for delay in _kill_delays(rng, duration, outcomes, ("before", "after")):
        _restore(seed, store)
        _killed_run(argv, delay)
        _judge(db, before, after, outcomes)
        assert sqlite_probe.dump(source_db) == source_before
    assert outcomes["before"] and outcomes["after"], outcomes
