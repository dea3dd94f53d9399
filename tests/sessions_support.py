"""Building stores of several sessions for the tests, through the real interfaces.

Sessions are driven by the Codex hook command (`om --store S hook --client codex`)
with real event shapes, and checkpointed with `om apply`; a few helpers then
age a ledger the way an older writer would have left it (direct SQL on the
documented v1 schema), because time only moves in whole seconds. `hook`, `start` and
`om_json` run `om` as a subprocess (tests assert on them); the builders
(`session_with_memory`, `database`) arrange state, so they call the same entry point in
process (`setup=True`).
"""

import json
import sqlite3
from pathlib import Path

from conftest import run_om
from inprocess import run_om_in_process


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


def v1_tables(path):
    """The three v1 tables' rows, to prove a command left them as they were."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall() for t in ("meta", "sources", "entries")}
    finally:
        conn.close()
