"""The Claude Code hook, run as `python3 -I -S bin/om --store S hook --client claude`, on the
payloads Claude Code 2.1.332 really sent.

Every response is checked against the output Claude Code accepts for its event
(tests/fixtures/claude-2.1.332/output-shapes.json); events om does not handle must print
nothing at all (PreCompact's stdout would steer the compaction summary).
"""

import json
import shlex
import shutil
import tempfile
from pathlib import Path

import jsonschema
import pytest

from hook_drivers import CLAUDE_PAYLOADS, CLAUDE_SHAPES, ClaudeDriver, recorded

TURN_EVERY = {"OM_CHECKPOINT_TURNS": "1"}


@pytest.fixture
def hook(tmp_path):
    return ClaudeDriver(tmp_path / "plugins" / "data" / "om-observational-memory")


def test_every_recorded_payload_gets_only_output_claude_code_accepts_for_its_event(hook):
    answered = set()
    for example in CLAUDE_PAYLOADS:
        response = hook(example["payload"], env=TURN_EVERY)
        if response is not None:
            answered.add(example["event"])
    # The handled events answered at least once (context, continuation); nothing else ever did.
    assert answered == {"SessionStart", "Stop"}


def test_the_output_shapes_reject_what_claude_code_rejects():
    with pytest.raises(jsonschema.ValidationError):  # observed: "Hook JSON output validation failed"
        jsonschema.validate({"hookSpecificOutput": {"hookEventName": "PostCompact", "additionalContext": "x"}},
                            CLAUDE_SHAPES["PostCompact"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": "x"}},
                            CLAUDE_SHAPES["SessionStart"])
    jsonschema.validate({"systemMessage": "x"}, CLAUDE_SHAPES["PostCompact"])


def test_a_prompt_a_tool_result_and_the_reply_are_captured_keyed_by_the_payloads_own_ids(hook):
    prompt = recorded("UserPromptSubmit")
    tool = recorded("PostToolUse", "Bash")
    stop = recorded("Stop")
    assert hook(prompt) is None and hook(tool) is None and hook(stop) is None
    user, result, reply = hook.sources()
    assert (user["kind"], user["text"]) == ("user", "PROMPT-PLUGIN")
    assert (reply["kind"], reply["text"]) == ("assistant", "PLUGIN-DONE")
    assert json.loads(result["text"]) == {"input": tool["tool_input"], "response": tool["tool_response"],
                                          "tool": "Bash"}
    # The same capture made by hand with the payload's ids is the same source (idempotent keys).
    for source, key in ((user, prompt["prompt_id"]), (result, tool["tool_use_id"]), (reply, prompt["prompt_id"])):
        again = hook.om("capture", input=json.dumps({"kind": source["kind"], "text": source["text"], "key": key}))
        assert again["source_id"] == source["id"]
    assert hook(prompt) is None and hook(tool) is None and hook(stop) is None
    assert len(hook.sources()) == 3


def test_a_failed_tool_call_is_evidence_with_its_error_text_keyed_by_tool_use_id(hook):
    for example in CLAUDE_PAYLOADS:
        if example["event"] == "PostToolUseFailure":
            assert hook(dict(example["payload"], session_id=hook.session)) is None
    bash, read = hook.sources()
    assert json.loads(bash["text"]) == {
        "input": {"command": "echo out-before; echo err-text >&2; exit 3", "description": "run command"},
        "response": {"error": "Exit code 3\nout-before\nerr-text", "is_interrupt": False}, "tool": "Bash"}
    assert json.loads(read["text"])["tool"] == "Read"
    same = hook.om("capture", input=json.dumps({"kind": "tool", "text": bash["text"],
                                                "key": recorded("PostToolUseFailure", "Bash", "tool_failure")["tool_use_id"]}))
    assert same["source_id"] == bash["id"]


def test_a_failed_ledger_call_of_the_agent_is_not_evidence_and_a_large_backlog_is_reminded(hook):
    command = hook.advertised()
    assert hook(hook.failure(f"{command} apply < /tmp/checkpoint.json", "Exit code 67\nom: stale cursor")) is None
    assert hook.sources() == []
    response = hook(hook.failure("make test", "Exit code 2\n" + "E" * 300, call="toolu_f2"),
                    env={"OM_CHECKPOINT_BYTES": "100"})
    assert response["hookSpecificOutput"]["hookEventName"] == "PostToolUseFailure"
    assert f"{command} pending" in hook.context(response)


def test_a_tool_result_without_tool_use_id_is_keyed_by_the_prompt_id(hook):
    hook(hook.tool("make test", call=None, turn="p-9"))
    (source,) = hook.sources()
    same = hook.om("capture", input=json.dumps({"kind": "tool", "text": source["text"], "key": "p-9"}))
    assert same["source_id"] == source["id"]


@pytest.mark.parametrize("source", ["startup", "resume", "clear", "compact"])
def test_session_start_gives_the_ledger_command_and_progress_but_never_the_memory(hook, source):
    hook(hook.prompt("We chose SQLite for the ledger."))
    (s,) = hook.sources()
    hook.om("apply", input=json.dumps({"through": 1, "observations": [
        {"text": "SECRET-MEMORY-BODY: SQLite was chosen.", "source_ids": [s["id"]]}]}))
    hook(hook.prompt("next prompt", turn="p-2"))
    scenario = {"compact": "compact_auto", "clear": "clear"}.get(source)
    payload = recorded("SessionStart", source, scenario=scenario) if scenario else hook.start(source)
    text = hook.context(hook(dict(payload, session_id=hook.session)))
    command = hook.advertised()
    assert f"{command} prime" in text
    assert "Checkpoint cursor: 1." in text and "Pending sources: 1 " in text and "Last checkpoint: 20" in text
    assert "SECRET-MEMORY-BODY" not in text
    assert ("just compacted" in text) == (source == "compact")
    assert '"' + hook.session + '"' in text and "Claude Code's sandbox" in text


def test_after_clear_the_new_session_claude_code_starts_is_pointed_at_the_one_it_cleared(tmp_path):
    # Claude Code 2.1.332 answers `/clear` by ending the session (SessionEnd reason "clear")
    # and starting one with a new session_id and source "clear" (the recorded payload).
    # A store path as short as Claude Code's own (~/.claude/plugins/data/...), so that the
    # pointer's 1,200 bytes have room to name the session beside its exact commands.
    short = Path(tempfile.mkdtemp(prefix="om-"))
    try:
        _clear_is_pointed_at_the_cleared_session(ClaudeDriver(short / "data"), tmp_path)
    finally:
        shutil.rmtree(short)


def _clear_is_pointed_at_the_cleared_session(hook, tmp_path):
    cleared = recorded("SessionStart", "clear", scenario="clear")
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    assert cleared["session_id"] != hook.session
    hook(dict(hook.start(), cwd=str(project)))
    hook(dict(hook.prompt("We chose SQLite for the ledger."), cwd=str(project)))
    (s,) = hook.sources()
    hook.om("apply", input=json.dumps({"through": 1, "observations": [
        {"text": "SECRET-MEMORY-BODY: SQLite was chosen.", "source_ids": [s["id"]]}]}))
    text = hook.context(hook(dict(cleared, cwd=str(project))))
    assert '"' + cleared["session_id"] + '"' in text  # the new session's own ledger command
    note = text[text.index("om: earlier sessions of this project hold memory"):]
    assert f'- "{hook.session}": last checkpoint 20' in note and "1 observation, 0 reflections" in note
    assert "SECRET-MEMORY-BODY" not in text


def test_the_advertised_command_runs_as_is_from_any_directory(hook, tmp_path):
    import os
    import subprocess

    from hook_drivers import clean_env

    argv = shlex.split(hook.advertised())
    assert os.path.isabs(argv[0]) and os.path.isabs(argv[1])
    proc = subprocess.run([*argv, "status"], cwd=tmp_path, capture_output=True, text=True,
                          env=clean_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["session"] == hook.session


def test_the_recorded_mcp_tool_is_evidence_but_oms_own_mcp_tools_are_not(hook):
    probe = recorded("PostToolUse", "mcp__plugin_hookprobe_probe__probe_write")
    hook(probe)
    for name in ("mcp__plugin_om_om__pending", "mcp__plugin_om_om__apply", "mcp__om__prime"):
        own = dict(probe, tool_name=name, tool_use_id=f"toolu_{name}", tool_input={"session": hook.session},
                   mcp_server={"name": "plugin:om:om", "source": "plugin"})
        assert hook(own) is None
    assert [json.loads(t)["tool"] for t in hook.texts()] == ["mcp__plugin_hookprobe_probe__probe_write"]


def test_the_agents_own_ledger_calls_in_bash_are_not_evidence(hook):
    command = hook.advertised()
    hook(hook.tool(f"{command} pending", call="toolu_a"))
    hook(hook.tool(f"{command} apply <<'JSON'\n{{\"through\": 0}}\nJSON", call="toolu_b"))
    assert hook.sources() == []
    hook(hook.tool(f"{command} pending | tee /tmp/out", call="toolu_c"))
    hook(hook.tool("ls -la", call="toolu_d"))
    assert len(hook.sources()) == 2


def test_stop_continues_the_turn_once_through_additional_context_never_a_block(hook):
    hook(hook.prompt("first prompt", turn="p-1"))
    response = hook(hook.stop("first reply", turn="p-1"), env=TURN_EVERY)
    text = hook.continuation_text(response)
    command = hook.advertised()
    assert f"{command} pending" in text and f"{command} apply" in text
    assert "decision" not in response
    # The continuation's Stop (stop_hook_active) and any later Stop of that turn never ask again;
    # the reply that ends the continuation is no evidence.
    assert hook(hook.stop("checkpoint done", turn="p-1", active=True), env=TURN_EVERY) is None
    assert hook(hook.stop("another stop", turn="p-1"), env=TURN_EVERY) is None
    assert hook.texts()[-2:] == ["first reply", "another stop"]
    # The next prompt is a new turn.
    hook(hook.prompt("second prompt", turn="p-2"))
    assert hook.continuation_text(hook(hook.stop("second reply", turn="p-2"), env=TURN_EVERY))


def test_a_checkpoint_is_asked_for_after_three_turns_by_default_and_not_before(hook):
    decisions = []
    for turn in ("p-1", "p-2", "p-3"):
        hook(hook.prompt(f"prompt {turn}", turn=turn))
        decisions.append(hook(hook.stop(f"reply {turn}", turn=turn)))
    assert decisions[:2] == [None, None]
    assert hook.continuation_text(decisions[2])


def test_pending_bytes_over_the_threshold_make_a_checkpoint_due_at_once(hook):
    env = {"OM_CHECKPOINT_BYTES": "1000"}
    assert hook(hook.stop("é" * 400, turn="p-1"), env=env) is None
    assert hook.continuation_text(hook(hook.stop("é" * 200, turn="p-2"), env=env))


def test_a_large_backlog_gets_one_reminder_per_cursor_after_a_tool_result(hook):
    env = {"OM_CHECKPOINT_BYTES": "100"}
    first = hook(hook.tool("cat big", response={"stdout": "x" * 200}, call="toolu_1"), env=env)
    assert first["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
    assert hook.advertised() + " pending" in hook.context(first)
    assert hook(hook.tool("cat big2", response={"stdout": "y" * 200}, call="toolu_2"), env=env) is None


def test_sub_agent_events_and_the_compaction_summariser_are_ignored(hook):
    hook(hook.prompt("the parent's prompt"))
    for example in CLAUDE_PAYLOADS:
        if example["scenario"] in ("subagent", "compact_auto"):
            hook(dict(example["payload"], session_id=hook.session), env={**TURN_EVERY, "OM_CHECKPOINT_BYTES": "1"})
    texts = " ".join(hook.texts())
    assert "sub-echo-out" not in texts  # the sub-agent's own Bash call
    assert "MOCK-SUMMARY" not in texts  # the summariser's SubagentStop and PostCompact
    # The sub-agent's answer as the main thread received it (PostToolUse of Agent) is evidence.
    assert [json.loads(t)["tool"] for t in hook.texts()[1:]] == ["Agent"]
    receipts = {p.name for p in (hook.store / "receipts" / "claude").iterdir()}
    assert "SubagentStop.json" not in receipts and "PreCompact.json" not in receipts


def test_a_store_that_is_a_regular_file_fails_open_on_every_event(hook):
    hook.store.parent.mkdir(parents=True)
    hook.store.write_text("a file where the store should be")
    for example in CLAUDE_PAYLOADS:
        response = hook(example["payload"], env=TURN_EVERY)
        if example["event"] in ClaudeDriver.handled and example["thread"] == "main":
            assert set(response) == {"systemMessage"}, example
            assert "your task continues" in response["systemMessage"]
            assert len(hook.stderr.strip().splitlines()) == 1
        else:
            assert response is None and hook.stderr == ""


@pytest.mark.parametrize("raw", [b"", b"{not json", b"[]", b'{"hook_event_name": "Stop"}', b"\xff\xfe"])
def test_bad_input_fails_open_with_an_advisory_a_stderr_line_and_a_log_line(hook, raw):
    hook.store.mkdir(parents=True)  # Claude Code creates the plugin data folder before SessionStart
    response = hook(None, event="Stop", raw=raw)
    assert set(response) == {"systemMessage"} and "your task continues" in response["systemMessage"]
    assert len(hook.stderr.strip().splitlines()) == 1
    log = (hook.store / "hook-errors.log").read_text()
    assert len(log.splitlines()) == 1 and "failed open" in log


def test_receipts_of_claude_events_are_kept_apart_from_codex_receipts(hook):
    for payload in (hook.start(), hook.prompt("hi"), hook.tool("ls"), hook.failure("false", "Exit code 1"),
                    hook.stop("bye")):
        hook(payload)
    for event in ClaudeDriver.handled:
        receipt = json.loads((hook.store / "receipts" / "claude" / f"{event}.json").read_text())
        assert receipt["client"] == "claude" and receipt["outcome"] == "ok" and receipt["runs"] == 1
        assert not (hook.store / "receipts" / f"{event}.json").exists()


@pytest.mark.parametrize("args", [["hook", "--client", "claude", "--bogus"], ["hook", "--client", "claude"]])
def test_only_command_line_errors_make_the_claude_hook_exit_nonzero_and_never_with_2(tmp_path, args):
    from conftest import run_om

    store = [] if args == ["hook", "--client", "claude"] else ["--store", tmp_path / "store"]
    result = run_om(*store, *args, input=json.dumps(recorded("Stop")))
    assert result.returncode == 64, result
    assert result.stdout == "" and len(result.stderr.strip().splitlines()) == 1
