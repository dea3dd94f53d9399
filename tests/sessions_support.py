"""Building stores of several sessions for the tests, through the real interfaces.

Sessions are driven by the Codex hook command (`om --store S hook --client codex`)
with real event shapes, and checkpointed with `om apply`; a few helpers then
age a ledger the way an older writer would have left it (direct SQL on the
documented v1 schema), because time only moves in whole seconds. `hook`, `start` and
`om_json` run `om` as a subprocess (tests assert on them); the builders
(`session_with_memory`, `database`) arrange state, so they call the same entry point in
process (`setup=True`).
"""

import contextlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from conftest import run_om
from inprocess import run_om_in_process
from om.ids import observation_id, source_id


def _om(*args, input=None, setup=False):
    return (run_om_in_process if setup else run_om)(*args, input=input)


def hook(store, event, session, cwd, setup=False, **fields):
    payload = {"session_id": session, "transcript_path": "/tmp/rollout.jsonl", "cwd": str(cwd),
               "hook_event_name": event, "model": "gpt-5", "permission_mode": "bypassPermissions", **fields}
    if event != "SessionStart":
        payload.setdefault("turn_id", "turn-1")
    r = _om("--store", store, "hook", "--client", "codex", input=json.dumps(payload), setup=setup)
    assert r.returncode == 0, r
    return json.loads(r.stdout) if r.stdout.strip() else None


def start(store, session, cwd, source="startup", setup=False):
    response = hook(store, "SessionStart", session, cwd, source=source, setup=setup)
    return response["hookSpecificOutput"]["additionalContext"]


def om_json(store, session, *args, input=None, setup=False):
    r = _om("--store", store, "--session", session, *args, input=input, setup=setup)
    assert r.returncode == 0, r
    return json.loads(r.stdout)


def session_with_memory(store, session, cwd, fact, turn="turn-1"):
    """A session that started in `cwd`, got one prompt and checkpointed one observation of it."""
    start(store, session, cwd, setup=True)
    hook(store, "UserPromptSubmit", session, cwd, turn_id=turn, prompt=fact, setup=True)
    pending = om_json(store, session, "pending", setup=True)
    (source,) = [s for s in pending["sources"] if s["text"] == fact]
    receipt = om_json(store, session, "apply", setup=True, input=json.dumps({
        "through": pending["through"], "observations": [{"text": fact, "source_ids": [source["id"]]}]}))
    return receipt["observations"][0]


def database(store, session):
    listing = om_json(store, "any", "sessions", "--json", setup=True)
    (row,) = [r for r in listing["sessions"] if r["session"] == session]
    return Path(row["database"])


def ledger_path(store, session):
    """Where a session's ledger lies, computed as a peer would (reads nothing, so no store index is made)."""
    from om.ids import session_hash  # the documented directory naming

    return Path(store) / ("session-" + session_hash(session)) / "memory.sqlite3"


def age(store, session, stamp):
    """Make every timestamp of a session's ledger `stamp` (as a writer at that time left it)."""
    conn = sqlite3.connect(ledger_path(store, session), isolation_level=None)
    try:
        for table in ("sources", "entries"):
            for seq, body in conn.execute(f"SELECT seq, body FROM {table}").fetchall():
                b = json.loads(body)
                b["timestamp"] = stamp
                conn.execute(f"UPDATE {table} SET body = ? WHERE seq = ?",
                             (json.dumps(b, ensure_ascii=False, separators=(",", ":")), seq))
        for key in ("last_checkpoint_at", "om_created_at"):
            conn.execute("UPDATE meta SET value = ? WHERE key = ?", (stamp, key))
    finally:
        conn.close()


# -- ledgers as a v1 peer writes them (plain SQL on the documented schema) ----------------

V1_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS sources (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL, body TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS entries (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL, body TEXT NOT NULL,"
    " active INTEGER NOT NULL DEFAULT 1, retirement TEXT)",
)


def _body(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def peer_source(conn, session, n, text):
    """One user source as a v1 peer captures it (a repeated one is a no-op); its id."""
    sid = source_id("user", f"{session}-{n}", text)
    conn.execute("INSERT OR IGNORE INTO sources(id, body) VALUES (?, ?)", (sid, _body(
        {"seq": 0, "id": sid, "kind": "user", "timestamp": f"2026-01-0{n % 9 + 1}T00:00:00Z", "text": text,
         "truncated": False})))
    return sid


def v1_session(store, session, texts, memory):
    """A ledger as a v1 peer writes it: `texts` as sources and, with `memory`, one observation of the first."""
    ledger_path(store, session).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    conn = sqlite3.connect(ledger_path(store, session), isolation_level=None)
    with conn:
        for statement in V1_SCHEMA:
            conn.execute(statement)
        conn.execute("INSERT OR IGNORE INTO meta VALUES ('session', ?), ('version', '1')", (session,))
        ids = [peer_source(conn, session, i, text) for i, text in enumerate(texts)]
        if memory and ids:
            text = "learned " + texts[0]
            oid = observation_id(text, ids[:1], "medium")
            conn.execute("INSERT OR IGNORE INTO entries(id, body) VALUES (?, ?)", (oid, _body(
                {"seq": 0, "id": oid, "kind": "observation", "timestamp": "2026-01-05T00:00:00Z",
                 "importance": "medium", "text": text, "support": ids[:1], "active": True, "retirement": None})))
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('cursor', ?), ('last_checkpoint_at', ?)",
                         (str(len(ids)), "2026-01-05T00:00:00Z"))
    conn.close()


def v1_tables(path):
    """The three v1 tables' rows, to prove a command left them as they were."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall() for t in ("meta", "sources", "entries")}
    finally:
        conn.close()


@contextlib.contextmanager
def holding_the_lock(path):
    """Another process holding a write lock on the ledger at `path` (as a hook in mid-write does)."""
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sqlite3, sys, time\n"
         f"c = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
         "c.execute('BEGIN IMMEDIATE')\nprint('locked', flush=True)\ntime.sleep(60)\n"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield
    finally:
        holder.kill()
        holder.wait()
