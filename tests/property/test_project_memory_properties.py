"""The project memory's properties: its block within budget whatever it holds; promotion idempotent and
atomic with its checkpoint; a kill during a promotion leaves each entry whole or absent."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT, make_entry, run_om
from inprocess import run_om_in_process
from om.project import block

texts = st.text(min_size=1, max_size=2000).filter(lambda t: t.strip())
stamps = st.one_of(
    st.integers(0, 4 * 10**9).map(lambda s: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(s))),
    st.text(max_size=30), st.none())
clients = st.one_of(st.sampled_from(["codex", "claude", "cli"]), st.text(max_size=40), st.none())


@st.composite
def promoted_entries(draw):
    items = []
    for seq in draw(st.lists(st.integers(1, 10**9), unique=True, max_size=40)):
        entry = make_entry(seq, draw(texts), draw(st.sampled_from(["low", "medium", "high", "critical"])),
                           draw(st.sampled_from(["observation", "reflection"])))
        entry["active"] = draw(st.booleans())
        mark = {"client": draw(clients), "session": draw(st.text(max_size=50)), "at": draw(stamps)}
        entry["provenance"] = draw(st.one_of(st.none(), st.just({"promoted": mark, "confirmed": mark, "times": 1})))
        items.append(entry)
    return items


@settings(max_examples=150, deadline=None)
@given(promoted_entries(), st.integers(0, 6000), st.text(max_size=300), st.integers(0, 5 * 10**9))
def test_the_project_block_never_exceeds_its_budget_whatever_the_entries(items, limit, command, now):
    out = block.render(items, "0123456789abcdef", now, limit, command)
    assert len(out.encode("utf-8")) <= limit
    shown = [line for line in out.splitlines() if line.startswith("- ")]
    listed = [e for e in items if e["active"] and e["provenance"] is not None]
    if out:
        assert out.endswith("\n") and len(shown) <= len(listed)
        assert all(len(line.split("\n")) == 1 for line in shown)
        left = len(listed) - len(shown)
        assert (f"# {left} more entr" in out) == bool(left)
    else:
        reserve = block.header("0123456789abcdef", len(listed)) + block._footer(len(listed), command)
        assert not listed or limit < len(reserve.encode("utf-8"))


@given(st.integers(0, 4 * 10**9))
def test_a_ledger_timestamp_reads_back_as_the_second_it_names(second):
    assert block.seconds_of(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second))) == second


def _git_repo(path):
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "r"],
                   cwd=path, check=True)


def _meta_record(store, session, cwd):
    """A session whose hooks recorded its project, as a start does (through the real hook command)."""
    payload = {"session_id": session, "hook_event_name": "SessionStart", "source": "startup", "cwd": str(cwd),
               "transcript_path": "/nowhere", "model": "m", "permission_mode": "default"}
    return run_om_in_process("--store", store, "hook", "--client", "codex", input=json.dumps(payload))


def _project_state(home):
    found = list(home.glob("session-*/memory.sqlite3"))
    if not found:
        return set(), set()
    with sqlite3.connect(found[0]) as conn:
        return ({r[0] for r in conn.execute("SELECT id FROM entries")},
                {r[0] for r in conn.execute("SELECT id FROM sources")})


steps = st.lists(st.tuples(st.lists(st.booleans(), min_size=0, max_size=3), st.booleans(), st.booleans()),
                 min_size=1, max_size=6)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps)
def test_promotion_is_idempotent_and_atomic_with_its_checkpoint(tmp_path_factory, plan):
    base = tmp_path_factory.mktemp("p")
    home, store, repo = base / "projects", base / "store", base / "repo"
    _git_repo(repo)
    saved = os.environ.get("OM_PROJECT_HOME")
    os.environ["OM_PROJECT_HOME"] = str(home)
    try:
        assert _meta_record(store, "s", repo).returncode == 0
        expected = set()
        applied = []
        source_of = {}
        for n, (flags, bad_id, again) in enumerate(plan):
            run_om_in_process("--store", store, "--session", "s", "capture",
                              input=json.dumps({"kind": "user", "text": f"fact {n}", "key": str(n)}))
            pending = json.loads(run_om_in_process("--store", store, "--session", "s", "pending").stdout)
            source = pending["sources"][-1]["id"]
            checkpoint = {"through": pending["through"], "observations": [
                {"text": f"Fact {n}.{k}", "source_ids": [source], "promote": flag} for k, flag in enumerate(flags)]}
            names = ["o-000000000000000000000000"] if bad_id else []
            if again and applied:
                names.append(applied[-1])
            if names:
                checkpoint["promote"] = names
            before_status = run_om_in_process("--store", store, "--session", "s", "status").stdout
            before_project = _project_state(home)
            result = run_om_in_process("--store", store, "--session", "s", "apply", input=json.dumps(checkpoint))
            if bad_id:
                assert result.returncode == 66, result
                assert run_om_in_process("--store", store, "--session", "s", "status").stdout == before_status
                assert _project_state(home) == before_project
                continue
            assert result.returncode == 0, result
            receipt = json.loads(result.stdout)
            applied += receipt["observations"]
            source_of.update((oid, source) for oid in receipt["observations"])
            chosen = {oid for oid, flag in zip(receipt["observations"], flags) if flag}
            chosen |= set(names)
            assert {p["id"] for p in receipt.get("promoted", [])} == chosen
            expected |= chosen
            entries, sources = _project_state(home)
            assert entries == expected
            assert sources == {source_of[oid] for oid in expected}
    finally:
        if saved is None:
            os.environ.pop("OM_PROJECT_HOME", None)
        else:
            os.environ["OM_PROJECT_HOME"] = saved


KILLER = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
from om.cli import main
store, session = sys.argv[2], sys.argv[3]
for n in range(10**6):
    sys.stdin = open(os.devnull)
    main(["--store", store, "--session", session, "promote", *sys.argv[4:]])
"""


def test_a_kill_during_promotion_leaves_every_project_entry_whole_or_absent(tmp_path, monkeypatch):
    home, store, repo = tmp_path / "projects", tmp_path / "store", tmp_path / "repo"
    _git_repo(repo)
    monkeypatch.setenv("OM_PROJECT_HOME", str(home))
    assert _meta_record(store, "s", repo).returncode == 0
    for n in range(30):
        run_om("--store", store, "--session", "s", "capture",
               input=json.dumps({"kind": "tool", "text": f"evidence {n} " + "y" * 3000, "key": str(n)}))
    pending = json.loads(run_om("--store", store, "--session", "s", "pending").stdout)
    observations = [{"text": f"Entry {n}", "source_ids": [s["id"]]} for n, s in enumerate(pending["sources"])]
    ids = json.loads(run_om("--store", store, "--session", "s", "apply",
                            input=json.dumps({"through": pending["through"], "observations": observations})).stdout
                     )["observations"]
    for delay in (0.05, 0.1, 0.15, 0.2, 0.3):
        if home.exists():
            subprocess.run(["rm", "-rf", str(home)], check=True)
        proc = subprocess.Popen([sys.executable, "-c", KILLER, str(ROOT), str(store), "s", *ids],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ))
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        found = list(home.glob("session-*/memory.sqlite3"))
        if not found:
            continue
        listed = run_om("project", "view", "--all", "--project", str(repo))
        assert listed.returncode == 0, listed
        for entry in json.loads(listed.stdout):
            recalled = run_om("--store", home, "--session", _session_of(found[0]), "recall", entry["id"])
            assert recalled.returncode == 0 and len(recalled.json["sources"]) == 1, recalled
        with sqlite3.connect(found[0]) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            promoted = {r[0] for r in conn.execute("SELECT id FROM entries")}
            assert promoted in (set(), set(ids)), "one promote call is one transaction: all its entries or none"


def _session_of(db):
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT value FROM meta WHERE key = 'session'").fetchone()[0]

