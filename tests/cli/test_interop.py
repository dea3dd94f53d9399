"""Stores written by the earlier v1 implementations open in `om`, and vice versa.

The legacy fixture is built from the documented schema and rows only (no `om`
code), exactly as the Rust and Go versions wrote them.
"""

import hashlib
import json
import sqlite3

import pytest

from conftest import run_om

LEGACY_SESSION = "019a-legacy <>&\u2028 \U0001F600"
TS1, TS2 = "2026-09-06T06:40:53Z", "2026-09-06T06:41:10Z"


def canonical(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def legacy_id(prefix, value):
    return prefix + hashlib.sha256(canonical(value).encode("utf-8")).hexdigest()[:24]


def legacy_store(root):
    """A legacy session: one source, one retired observation, one reflection, cursor 1."""
    session_dir = root / ("session-" + hashlib.sha256(canonical(LEGACY_SESSION).encode()).hexdigest()[:24])
    session_dir.mkdir(parents=True, mode=0o700)
    conn = sqlite3.connect(session_dir / "memory.sqlite3", isolation_level=None)
    conn.executescript(
        """
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS sources (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL, body TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS entries (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL, body TEXT NOT NULL, active INTEGER NOT NULL DEFAULT 1, retirement TEXT);
        """
    )
    text = "User: never push to main <directly> & always open a PR \u2028 \U0001F680"
    sid = legacy_id("s-", ["user", "turn-1", text])
    conn.execute(
        "INSERT INTO sources(id, body) VALUES (?, ?)",
        (sid, canonical({"seq": 0, "id": sid, "kind": "user", "timestamp": TS1, "text": text, "truncated": False})),
    )
    obs_text, support = "Never push to main; open a PR.", [sid]
    oid = legacy_id("o-", [obs_text, support, "critical"])
    conn.execute(
        "INSERT INTO entries(id, body) VALUES (?, ?)",
        (oid, canonical({"seq": 0, "id": oid, "kind": "observation", "timestamp": TS1, "importance": "critical",
                         "text": obs_text, "support": support, "active": True, "retirement": None})),
    )
    ref_text = "The user enforces a PR-only workflow."
    rid = legacy_id("r-", [ref_text, [oid], "medium"])
    conn.execute(
        "INSERT INTO entries(id, body) VALUES (?, ?)",
        (rid, canonical({"seq": 0, "id": rid, "kind": "reflection", "timestamp": TS1, "importance": "medium",
                         "text": ref_text, "support": [oid], "active": True, "retirement": None})),
    )
    conn.execute(
        "UPDATE entries SET active = 0, retirement = ? WHERE id = ?",
        (canonical({"id": oid, "reason": "Folded into the reflection.", "replacement_ids": [rid]}), oid),
    )
    conn.executemany(
        "INSERT INTO meta(key, value) VALUES (?, ?)",
        [("session", LEGACY_SESSION), ("version", "1"), ("cursor", "1"), ("paused", "0"),
         ("last_checkpoint_at", TS2), ("prompt_id", "turn-1"), ("notified_cursor", "1")],
    )
    conn.close()
    return {"dir": session_dir, "sid": sid, "oid": oid, "rid": rid, "text": text}


@pytest.fixture
def legacy(tmp_path):
    store = tmp_path / "legacy"
    info = legacy_store(store)
    info["store"] = store
    info["om"] = lambda *a, **kw: run_om("--store", store, "--session", LEGACY_SESSION, *a, **kw)
    return info


def test_a_legacy_ledger_reports_its_status(legacy):
    status = legacy["om"]("status").json
    assert status["session"] == LEGACY_SESSION
    assert status["database"] == str(legacy["dir"].resolve() / "memory.sqlite3")
    assert status["through"] == 1 and status["pending_sources"] == 0
    assert status["last_checkpoint_at"] == TS2
    assert status["active"] == {"observations": 0, "reflections": 1}


def test_a_legacy_ledger_lists_recalls_and_views_its_entries(legacy):
    om = legacy["om"]
    entries = om("view", "--all").json
    assert [(e["id"], e["seq"], e["active"]) for e in entries] == [(legacy["oid"], 1, False), (legacy["rid"], 2, True)]
    assert entries[0]["retirement"]["replacement_ids"] == [legacy["rid"]]
    recalled = om("recall", legacy["rid"]).json
    assert [o["id"] for o in recalled["observations"]] == [legacy["oid"]]
    assert recalled["sources"][0]["text"] == legacy["text"]
    view = om("view").stdout
    assert "PR-only workflow" in view and "Never push to main" not in view


def test_a_legacy_ledger_accepts_new_captures_and_checkpoints_with_the_same_ids(legacy):
    om = legacy["om"]
    same = om("capture", input=canonical({"kind": "user", "text": legacy["text"], "key": "turn-1"})).json
    assert same["source_id"] == legacy["sid"]  # the recipe matches: no duplicate
    new = om("capture", input=canonical({"kind": "tool", "text": "gh pr create ok", "key": "call-2"})).json["source_id"]
    assert om("pending").json["sources"][0]["seq"] == 2
    receipt = om("apply", input=canonical({
        "through": 2,
        "observations": [{"text": "A PR was opened.", "importance": "high", "source_ids": [new]}],
    })).json
    assert receipt["observations"] == [legacy_id("o-", ["A PR was opened.", [new], "high"])]


def test_a_legacy_ledger_forks_and_imports(legacy, tmp_path):
    om = legacy["om"]
    child = om("fork", "--to-session", "child").json
    assert child["through"] == 1 and child["active"] == {"observations": 0, "reflections": 1}
    other = tmp_path / "other"
    r = run_om("--store", other, "--session", "fresh", "import", "--from-store", legacy["store"],
               "--from-session", LEGACY_SESSION)
    assert r.returncode == 0, r
    assert r.json["imported_from"]["session"] == LEGACY_SESSION


def test_a_ledger_written_by_om_has_exactly_the_v1_format(tmp_path):
    store = tmp_path / "s"
    om = lambda *a, **kw: run_om("--store", store, "--session", "x", *a, **kw)
    sid = om("capture", input=canonical({"kind": "tool", "text": "out <>&", "key": "c"})).json["source_id"]
    oid = om("apply", input=canonical({"through": 1, "observations": [{"text": "fact", "source_ids": [sid]}]})).json["observations"][0]
    db = om("status").json["database"]
    conn = sqlite3.connect(db)
    columns = {t: [(c[1], c[2], c[3], c[5]) for c in conn.execute(f"PRAGMA table_info({t})")] for t in ("meta", "sources", "entries")}
    assert columns == {
        "meta": [("key", "TEXT", 0, 1), ("value", "TEXT", 1, 0)],
        "sources": [("seq", "INTEGER", 0, 1), ("id", "TEXT", 1, 0), ("body", "TEXT", 1, 0)],
        "entries": [("seq", "INTEGER", 0, 1), ("id", "TEXT", 1, 0), ("body", "TEXT", 1, 0),
                    ("active", "INTEGER", 1, 0), ("retirement", "TEXT", 0, 0)],
    }
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'sqlite_sequence'").fetchone()
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    (source_body,) = conn.execute("SELECT body FROM sources").fetchone()
    assert list(json.loads(source_body)) == ["seq", "id", "kind", "timestamp", "text", "truncated"]
    assert json.loads(source_body)["seq"] == 0 and "<>&" in source_body
    (entry_body,) = conn.execute("SELECT body FROM entries").fetchone()
    assert list(json.loads(entry_body)) == ["seq", "id", "kind", "timestamp", "importance", "text", "support", "active", "retirement"]
    meta = dict(conn.execute("SELECT key, value FROM meta"))
    assert meta["session"] == "x" and meta["version"] == "1" and meta["cursor"] == "1"
    assert len(meta["last_checkpoint_at"]) == 20 and meta["last_checkpoint_at"].endswith("Z")
    assert oid == legacy_id("o-", ["fact", [sid], "medium"])


def test_a_ledger_of_another_schema_version_is_refused(legacy):
    conn = sqlite3.connect(legacy["dir"] / "memory.sqlite3")
    with conn:
        conn.execute("UPDATE meta SET value = '2' WHERE key = 'version'")
    r = legacy["om"]("status")
    assert r.returncode != 0 and "version" in r.stderr and r.stdout == ""
