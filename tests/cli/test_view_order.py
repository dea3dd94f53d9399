"""The derived view order: additive, caught up after v1 peers, optional when read-only."""

import json
import sqlite3

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import run_read_only
from inprocess import run_om_in_process
from om.render import render_view


def ledger_with_memory(om, items):
    sid = om("capture", input=json.dumps({"kind": "user", "text": "evidence", "key": ""})).json["source_id"]
    receipt = om("apply", input=json.dumps({
        "through": 1,
        "observations": [{"text": t, "importance": i, "source_ids": [sid]} for t, i in items],
    })).json
    return sid, receipt["observations"]


def expected_view(om):
    active = [e for e in om("view", "--all").json if e["active"]]
    return render_view(active)


def test_view_matches_the_in_memory_ranking_after_retirements(om):
    items = [(f"fact {i} " + "w" * (300 * (i % 7)), ["low", "medium", "high", "critical"][i % 4]) for i in range(80)]
    sid, oids = ledger_with_memory(om, items)
    newer = om("apply", input=json.dumps({"through": 1, "observations": [{"text": "newest", "source_ids": [sid]}]})).json
    om("apply", input=json.dumps({"through": 1, "retire": [
        {"id": oids[3], "reason": "old", "replacement_ids": newer["observations"]},
        {"id": oids[7], "reason": "old", "replacement_ids": newer["observations"]},
    ]}))
    assert om("view").stdout == expected_view(om)


def test_entries_written_by_a_v1_peer_appear_in_the_view(om):
    sid, oids = ledger_with_memory(om, [("om wrote this", "low")])
    assert "om wrote this" in om("view").stdout
    db = om("status").json["database"]
    body = {"seq": 0, "id": "o-" + "a" * 24, "kind": "observation", "timestamp": "2026-09-06T06:40:53Z",
            "importance": "critical", "text": "a peer wrote this", "support": [sid], "active": True,
            "retirement": None}
    with sqlite3.connect(db) as conn:  # what a v1 implementation does: it knows no derived table
        conn.execute("INSERT INTO entries(id, body) VALUES (?, ?)",
                     (body["id"], json.dumps(body, ensure_ascii=False, separators=(",", ":"))))
    out = om("view").stdout
    assert "a peer wrote this" in out and "om wrote this" in out
    assert out == expected_view(om)


def test_a_read_only_ledger_still_gives_the_same_view(om, tmp_path):
    sid, oids = ledger_with_memory(om, [(f"fact {i}", "high") for i in range(5)])
    db = om("status").json["database"]
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TABLE om_view_order_v1")
    expected = expected_view(om)
    r = run_read_only(om.store, "view")
    assert r.returncode == 0, r
    assert r.stdout == expected
    with sqlite3.connect(db) as conn:
        assert not conn.execute("SELECT name FROM sqlite_master WHERE name = 'om_view_order_v1'").fetchone()


# Generated memories run om.cli.main in process: the order is a property of the ledger, not of the process.
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.text(min_size=1, max_size=1500).filter(str.strip),
                          st.sampled_from(["low", "medium", "high", "critical"])), min_size=1, max_size=30))
def test_the_stored_order_always_agrees_with_the_in_memory_ranking(tmp_path_factory, items):
    store = tmp_path_factory.mktemp("order")
    om = lambda *a, **kw: run_om_in_process("--store", store, "--session", "p", *a, **kw)
    ledger_with_memory(om, items)
    assert om("view").stdout == expected_view(om)
