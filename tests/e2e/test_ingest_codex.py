"""`om ingest` of the rollouts the real Codex CLI (every pinned version) writes, against what its hooks stored.

Each scenario runs real `codex exec` turns with the plugin installed as a user installs it, then
ingests `$CODEX_HOME/sessions` into a fresh store: it must hold exactly the sources the hooks stored.
"""

import json

import pytest

from agent_moves import json_in, marker_checkpoint
from codex_harness import codex, codex_bin, marketplace, thread_id  # noqa: F401 (fixtures)
from ingest_support import assert_resumed_without_a_duplicate, stored, stored_ids
from ingest_support import ingest as ingest_into
from mock_model import say, shell, tool_call
from test_codex_plugin import CHECKPOINT_ENV, ledger_command_in

pytestmark = pytest.mark.e2e


def _text(item):
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "".join(c.get("text", "") for c in content or [] if isinstance(c, dict))


def turn_of(request):
    """(this turn's prompt, the items after it): the last user message that is not a harness tag."""
    items = request.items
    marks = [i for i, item in enumerate(items) if item.get("role") == "user" and not _text(item).startswith("<")]
    return (_text(items[marks[-1]]), items[marks[-1] + 1:]) if marks else ("", items)


def outputs_in(items):
    return [item.get("output") if isinstance(item.get("output"), str) else json.dumps(item.get("output"))
            for item in items if item.get("type") == "function_call_output"]


def working_model(work):
    """Each prompt runs its command of `work` ({prompt start: (command, reply)}) and replies; a checkpoint
    request (om's Stop continuation) is answered with pending and apply through the advertised ledger command."""

    def script(request):
        if request.is_compaction:
            return say("Summary: commands were run.")
        prompt, after = turn_of(request)
        asked = [i for i, item in enumerate(after) if item.get("role") == "user" and "<hook_prompt" in _text(item)]
        if asked:
            command = ledger_command_in(_text(after[asked[-1]]))
            outputs = outputs_in(after[asked[-1] + 1:])
            if not outputs:
                return shell(f"{command} pending")
            if len(outputs) == 1:
                checkpoint = marker_checkpoint(json_in(outputs[0]), "A marker was printed.")
                return shell(f"{command} apply <<'JSON'\n{json.dumps(checkpoint)}\nJSON")
            return say("Checkpoint done.")
        command, reply = next(v for k, v in work.items() if prompt.startswith(k))
        return shell(command) if not outputs_in(after) else say(reply)

    return script


def ingest(store, home, *args):
    return ingest_into(store, "codex", *args, env={"CODEX_HOME": str(home.home)})


def test_a_session_with_continuations_own_calls_a_pause_and_a_fork_ingests_to_exactly_the_hooks_ids(codex):
    home = codex(working_model({
        "Print": ("echo marker-1", "Printed the marker."),
        "[om:pause]": ("echo marker-kept-out", "Paused reply."),
        "[om:resume]": ("echo marker-3", "Resumed reply."),
        "In the fork": ("echo marker-fork", "Forked reply."),
    }))
    home.setup()
    rc, events, err = home.exec("Print the marker with the shell", env=CHECKPOINT_ENV)
    assert rc == 0, err[-2000:]
    session = thread_id(events)
    for prompt in ("[om:pause] keep this out of memory", "[om:resume] back on"):
        rc, _, err = home.exec(prompt, resume=session, env=CHECKPOINT_ENV)
        assert rc == 0, err[-2000:]
    rc, events, err = home.exec("In the fork, print again", fork=session)
    assert rc == 0, err[-2000:]
    fork = thread_id(events)
    hooks = stored_ids(home.store)
    assert sorted(hooks) == sorted([session, fork])
    texts = [text for _, _, _, text in stored(home.store)[session]]
    assert any("marker-1" in t for t in texts) and not any("kept-out" in t or "keep this out" in t for t in texts)
    assert "Checkpoint done." not in texts and not any(" apply" in t and "--session" in t for t in texts)

    fresh = home.base / "fresh-store"
    report = ingest(fresh, home)
    assert stored_ids(fresh) == hooks
    assert {e["format"] for e in report["sessions"]} == {"paginated"}
    (entry,) = [e for e in report["sessions"] if e["session"] == session]
    assert entry["skipped"]["own ledger call"] >= 2 and entry["skipped"]["while paused"] >= 2
    into_hooks = ingest(home.store, home)
    assert (into_hooks["captured"], into_hooks["present"]) == (0, sum(len(ids) for ids in hooks.values()))


def test_a_session_the_hooks_did_not_run_for_is_ingested_then_resumed_with_hooks_without_a_duplicate(codex):
    home = codex(working_model({"First": ("echo marker-a", "First reply."),
                                "Second": ("echo marker-b", "Second reply.")}))
    home.setup()
    trust = home.untrust_hooks()
    rc, events, err = home.exec("First turn, hooks not trusted yet")
    assert rc == 0, err[-2000:]
    session = thread_id(events)
    assert stored_ids(home.store) == {}  # Codex skipped the untrusted hooks, silently

    report = ingest(home.store, home)
    assert report["captured"] == 3
    home.trust_again(trust)
    rc, _, err = home.exec("Second turn, hooks trusted", resume=session)
    assert rc == 0, err[-2000:]
    assert_resumed_without_a_duplicate(home.store, session, home.base / "fresh-store",
                                       lambda store: ingest(store, home))


def test_a_sub_agents_rollout_is_not_ingested_and_the_parents_is_exactly_the_hooks(codex):
    def script(request):
        metadata = request.headers.get("x-codex-turn-metadata", "")
        outputs = outputs_in(request.items)
        if '"thread_source":"subagent"' in metadata.replace(" ", ""):
            return shell("echo child-marker") if not outputs else say("Child done.")
        if not outputs:
            return tool_call("multi_agent_v1", "spawn_agent", {"message": "Print the child marker"})
        return say("Parent done.", delay_s=1)

    home = codex(script)
    home.setup()
    rc, events, err = home.exec("Delegate to a sub-agent", timeout=180)
    assert rc == 0, err[-2000:]
    session = thread_id(events)
    rollouts = list((home.home / "sessions").rglob("rollout-*.jsonl"))
    assert len(rollouts) == 2
    fresh = home.base / "fresh-store"
    report = ingest(fresh, home)
    assert sorted((e["outcome"], e.get("reason")) for e in report["sessions"]) == [
        ("read", None), ("skipped", "sub-agent transcript")]
    assert stored_ids(fresh) == stored_ids(home.store)
    assert list(stored_ids(fresh)) == [session]
    assert "echo child-marker" not in json.dumps(stored(fresh))


def test_the_agents_own_pause_and_resume_calls_are_followed_as_the_hooks_follow_them(codex):
    def script(request):
        if request.is_compaction:
            return say("Summary.")
        prompt, after = turn_of(request)
        starts = [m for m in request.messages("developer") if "Ledger command" in m]
        command = ledger_command_in(starts[-1])
        moves = {"Stop recording": [f"{command} pause", "echo while-paused"],
                 "Record again": [f"{command} resume", "echo after-resume"]}
        done = outputs_in(after)
        steps = next(v for k, v in moves.items() if prompt.startswith(k))
        return shell(steps[len(done)]) if len(done) < len(steps) else say(f"Done: {prompt[:12]}")

    home = codex(script)
    home.setup()
    rc, events, err = home.exec("Stop recording, then print")
    assert rc == 0, err[-2000:]
    session = thread_id(events)
    rc, _, err = home.exec("Record again, then print", resume=session)
    assert rc == 0, err[-2000:]
    texts = [text for _, _, _, text in stored(home.store)[session]]
    assert texts[0] == "Stop recording, then print" and "Done: Record again" in texts
    assert not any("while-paused" in t or "Done: Stop rec" in t or t.startswith("Record again") for t in texts)
    fresh = home.base / "fresh-store"
    report = ingest(fresh, home)
    assert stored_ids(fresh) == stored_ids(home.store)
    assert report["sessions"][0]["skipped"]["own ledger call"] == 2
