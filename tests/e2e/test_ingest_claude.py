"""`om ingest` of the transcripts the real Claude Code CLI 2.1.332 writes, against what its hooks stored.

Each scenario runs real `claude -p` turns with the plugin installed as a user installs it (or not
at all), then ingests `$CLAUDE_CONFIG_DIR/projects` into a fresh store: it must hold exactly the
sources the hooks stored.
"""

import json

import pytest

from agent_moves import json_in, marker_checkpoint
from claude_harness import (  # noqa: F401 (fixtures)
    MCP_PREFIX,
    claude,
    claude_bin,
    claude_marketplace,
    ledger_command_in,
    session_in,
)
from claude_mock import say, shell, text_of, tool_call
from conftest import run_om
from ingest_support import assert_resumed_without_a_duplicate, stored, stored_ids
from ingest_support import ingest as ingest_into

pytestmark = pytest.mark.e2e

CHECKPOINT_ENV = {"OM_CHECKPOINT_TURNS": "1"}
CHECKPOINT_MARK = "Observational memory checkpoint (one pass"


def _is_prompt(message, keys):
    content = message.get("content")
    if message.get("role") != "user":
        return False
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return False
    return any(key in text_of(content) for key in keys)


def _results(messages):
    return [text_of(b.get("content")) for m in messages if m.get("role") == "user" and isinstance(m.get("content"), list)
            for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]


def working_model(work, via=None):
    """Each prompt (by a key of `work`) runs its moves and then replies: work[key] = ([moves], reply), a move
    being a shell command or a ready reply; a checkpoint request is answered with pending and apply, through
    the ledger command or (key in `via`) om's MCP tools."""
    via = via or {}

    def script(request):
        if request.is_compaction:
            return say("<summary>Commands were run.</summary>")
        messages = request.messages
        at = max(i for i, m in enumerate(messages) if _is_prompt(m, work))
        key = next(k for k in work if k in text_of(messages[at].get("content")))
        after = messages[at + 1:]
        marks = [i for i, m in enumerate(after) if CHECKPOINT_MARK in text_of(m.get("content"))]
        if marks:
            reason = text_of(after[marks[-1]].get("content"))
            done = _results(after[marks[-1] + 1:])
            if len(done) == 2:
                return say("Checkpoint done.")
            if via.get(key) == "mcp":
                session = session_in(reason)
                if not done:
                    return tool_call(MCP_PREFIX + "pending", {"session": session})
                checkpoint = marker_checkpoint(json_in(done[0]), "A marker was printed.")
                return tool_call(MCP_PREFIX + "apply", {"session": session, "checkpoint": checkpoint})
            command = ledger_command_in(reason)
            if not done:
                return shell(f"{command} pending")
            checkpoint = marker_checkpoint(json_in(done[0]), "A marker was printed.")
            return shell(f"{command} apply <<'JSON'\n{json.dumps(checkpoint)}\nJSON")
        moves, reply = work[key]
        done = _results(after)
        if len(done) < len(moves):
            move = moves[len(done)]
            return shell(move) if isinstance(move, str) else move
        return say(reply)

    return script


def ingest(store, home, *args):
    return ingest_into(store, "claude", *args, env={"CLAUDE_CONFIG_DIR": str(home.config)})


def test_a_session_with_failures_continuations_own_calls_a_pause_and_a_fork_ingests_to_exactly_the_hooks_ids(claude):
    home = claude(working_model({
        "Alpha:": (["echo marker-1", "echo marker-2; ls /nonexistent-7; exit 3"], "Alpha done."),
        "[om:pause]": (["echo marker-kept-out"], "Paused reply."),
        "[om:resume]": (["echo marker-3"], "Resumed reply."),
        "Forking:": ([], "Forked reply."),
    }, via={"[om:resume]": "mcp"}))
    home.setup()
    first = home.run("Alpha: print two markers", env=CHECKPOINT_ENV)
    assert first.returncode == 0, first
    session = first.session_id
    for prompt in ("[om:pause] keep this out of memory", "[om:resume] back on"):
        run = home.run(prompt, resume=session, env=CHECKPOINT_ENV)
        assert run.returncode == 0, run
    forked = home.run("Forking: carry on elsewhere", "--fork-session", resume=session)
    assert forked.returncode == 0, forked
    fork = forked.session_id
    hooks = stored_ids(home.store)
    assert sorted(hooks) == sorted([session, fork])
    rows = stored(home.store)[session]
    texts = [text for _, _, _, text in rows]
    assert any('"error":"Exit code 3' in t for t in texts) and "Checkpoint done." not in texts
    assert not any("kept-out" in t or "keep this out" in t for t in texts)
    assert not any(MCP_PREFIX in t or (" apply" in t and "--session" in t) for t in texts)

    fresh = home.base / "fresh-store"
    report = ingest(fresh, home)
    assert stored_ids(fresh) == hooks
    (entry,) = [e for e in report["sessions"] if e["session"] == session]
    assert entry["skipped"]["own ledger call"] >= 4 and entry["skipped"]["while paused"] >= 2
    (copy,) = [e for e in report["sessions"] if e["session"] == fork]
    assert copy["skipped"]["row copied from the forked session"] >= 4
    into_hooks = ingest(home.store, home)
    assert (into_hooks["captured"], into_hooks["present"]) == (0, sum(len(ids) for ids in hooks.values()))


def test_a_session_run_without_the_plugin_is_ingested_then_resumed_with_hooks_without_a_duplicate(claude):
    home = claude(working_model({"First:": (["echo marker-a"], "First reply."),
                                 "Second:": (["echo marker-b"], "Second reply.")}))
    run = home.run("First: no hooks yet")
    assert run.returncode == 0, run
    session = run.session_id
    assert not home.store.exists()

    report = ingest(home.store, home)
    assert report["captured"] == 3
    home.setup()
    run = home.run("Second: now with the plugin", resume=session)
    assert run.returncode == 0, run
    assert_resumed_without_a_duplicate(home.store, session, home.base / "fresh-store",
                                       lambda store: ingest(store, home))
    listed = run_om("--store", home.store, "sessions", "--json").json["sessions"]
    assert [(r["session"], r["cwd"]) for r in listed] == [(session, str(home.work))]


def test_a_sub_agents_rows_are_not_ingested_and_the_sessions_are_exactly_the_hooks(claude):
    agent = tool_call("Agent", {"description": "run a child task", "prompt": "Child task: print the child marker",
                                "subagent_type": "general-purpose", "run_in_background": False})
    home = claude(working_model({"Delegate:": ([agent], "Parent done."),
                                 "Child task:": (["echo child-marker"], "Child done.")}))
    home.setup()
    run = home.run("Delegate: hand this to a sub-agent")
    assert run.returncode == 0, run
    assert list(home.config.glob("projects/*/*/subagents/*.jsonl"))
    fresh = home.base / "fresh-store"
    report = ingest(fresh, home)
    assert [e["session"] for e in report["sessions"]] == [run.session_id]
    assert stored_ids(fresh) == stored_ids(home.store)
    assert "echo child-marker" not in json.dumps(stored(fresh))
