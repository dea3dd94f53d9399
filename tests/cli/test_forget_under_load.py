"""`om forget` under load: hooks capturing while it runs, SIGKILL at random moments, a failure.

The ledgers are judged with plain sqlite3 (tests/sqlite_probe.py), as the atomicity
tests of apply, fork and import judge theirs: sound, and exactly the state before the
forget or exactly the state a complete forget leaves.
"""

import json
import random
import subprocess
import threading

import pytest

import sqlite_probe
from conftest import run_om, run_read_only
from raw_bytes import files_holding
from test_atomicity import VOLATILE, _env, _judge, _kill_delays, _killed_run, _om_argv, _restore, _run

SECRET = "Quokka-4411-Vellum"
MARKER = "[FORGOTTEN]"
SOURCES = 6_000


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """Session s1: SOURCES tool results, every third holding SECRET, and observations citing them."""
    from om.ledger import Ledger

    store = tmp_path_factory.mktemp("forget") / "template"
    with Ledger.open(str(store), "s1") as ledger:
        with ledger.transaction():
            ids = [ledger.capture("tool", f"run {i}: " + ("token " + SECRET + " " if i % 3 == 0 else "")
                                  + "ordinary output line\n" * 20, f"k{i}") for i in range(SOURCES)]
        ledger.apply({"through": SOURCES, "observations": [
            {"text": f"observation {i} about {SECRET}", "source_ids": ids[i:i + 2]} for i in range(0, 600, 2)]})
    return store


def _texts(db):
    state = sqlite_probe.dump(db)
    return [(seq, json.loads(body)["text"]) for seq, _, body in state["sources"]]


@pytest.mark.slow
def test_a_hook_capturing_while_forget_runs_lands_wholly_before_it_and_is_forgotten_or_after_it_and_kept(
        template, tmp_path):
    store = tmp_path / "store"
    _restore(template, store)
    db = sqlite_probe.database(store, "s1")
    results = []

    def prompts():
        for i in range(12):
            event = {"session_id": "s1", "turn_id": f"turn-{i}", "hook_event_name": "UserPromptSubmit",
                     "cwd": "/tmp", "prompt": f"prompt {i} with {SECRET}"}
            results.append(run_om("--store", store, "hook", "--client", "codex", input=json.dumps(event)))

    hooks = threading.Thread(target=prompts)
    forget = subprocess.Popen(_om_argv(store, "s1", "forget", "--text", SECRET, "-y"), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=_env())
    hooks.start()
    out, err = forget.communicate(timeout=300)
    hooks.join(timeout=300)
    assert forget.returncode == 0, err
    assert all(r.returncode == 0 and r.stdout == "" for r in results), results
    texts = [(seq, text) for seq, text in _texts(db) if text.startswith("prompt ")]
    assert len(texts) == 12
    forgotten = [seq for seq, text in texts if MARKER in text]
    kept = [seq for seq, text in texts if SECRET in text]
    assert len(forgotten) + len(kept) == 12
    # One boundary: everything captured before the forget's transaction was rewritten, nothing after it.
    assert not forgotten or not kept or max(forgotten) < min(kept)
    assert all(SECRET not in text for seq, text in _texts(db) if not text.startswith("prompt "))
    assert sqlite_probe.integrity(str(db)) == ["ok"]


@pytest.mark.slow
def test_forget_killed_at_random_moments_leaves_exactly_the_before_or_the_after_ledger_and_a_rerun_finishes(
        template, tmp_path):
    store = tmp_path / "store"
    db = sqlite_probe.database(store, "s1")
    argv = _om_argv(store, "s1", "forget", "--text", SECRET, "-y")
    _restore(template, store)
    before = sqlite_probe.dump(db, VOLATILE)
    done, duration = _run(argv)
    assert done.returncode == 0, done.stderr
    after = sqlite_probe.dump(db, VOLATILE)
    assert after != before and files_holding(store, SECRET) == []

    rng = random.Random(7)
    outcomes = {"before": 0, "after": 0, "hot journal": 0}
    judged = tmp_path / "judged"
    for delay in _kill_delays(rng, duration, outcomes, ("before", "after", "hot journal")):
        _restore(template, store)
        _killed_run(argv, delay)
        # Judged on a copy (hot journal included, which the probe rolls back), so that om
        # itself meets what the kill left.
        _restore(store, judged)
        _judge(sqlite_probe.database(judged, "s1"), before, after, outcomes)
        # Whatever a kill left, running the same forget again finishes it: no byte of the text. When
        # the killed run had already taken out every byte, the rerun finds nothing to match (68).
        left = files_holding(store, SECRET)
        rerun = run_om("--store", store, "--session", "s1", "forget", "--text", SECRET, "-y")
        assert rerun.returncode == (0 if left else 68), (left, rerun)
        assert sqlite_probe.dump(db, VOLATILE) == after and files_holding(store, SECRET) == []
    assert outcomes["before"] and outcomes["after"] and outcomes["hot journal"], outcomes


def test_a_forget_that_cannot_write_fails_on_one_line_and_changes_nothing(tmp_path):
    store = tmp_path / "store"
    run_om("--store", store, "--session", "s1", "capture",
           input=json.dumps({"kind": "user", "text": f"pw {SECRET}", "key": "k"}))
    db = sqlite_probe.database(store, "s1")
    before = sqlite_probe.dump(db)
    r = run_read_only(store, "forget", "--text", SECRET, "-y")
    assert r.returncode == 74 and r.stdout == "" and len(r.stderr.splitlines()) == 1, r
    assert sqlite_probe.dump(db) == before
    # The store is writable again: the same forget now succeeds.
    assert run_om("--store", store, "--session", "s1", "forget", "--text", SECRET, "-y").returncode == 0
