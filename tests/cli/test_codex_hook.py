"""The Codex hook, run exactly as the plugin registers it, on real 0.169.0 payload shapes.

Every response is validated against the output schema embedded in Codex 0.169.0.
"""

import hashlib
import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
import zipapp
from pathlib import Path

import jsonschema
import pytest

from conftest import RUNTIME_ARGV, bytecode_env, run_om

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "tests" / "fixtures" / "codex-0.169.0"
SCHEMA_OF = {
    "SessionStart": "session-start", "UserPromptSubmit": "user-prompt-submit",
    "PostToolUse": "post-tool-use", "Stop": "stop", "Interrupt": "interrupt",
}
SESSION = "019a2270-2bd1-7750-a7d3-2fcc10ef7544"
#: Codex reads the hooks file its manifest declares (hooks/hooks.json is Claude Code's).
REGISTERED = json.loads((ROOT / "hooks" / "codex.json").read_text())["hooks"]


def base(event, turn="turn-1"):
    payload = {"session_id": SESSION, "transcript_path": "/home/user/.codex/sessions/rollout.jsonl",
               "cwd": "/home/user/project", "hook_event_name": event, "model": "gpt-5",
               "permission_mode": "bypassPermissions"}
    if event not in ("SessionStart",):
        payload["turn_id"] = turn
    return payload


def prompt(text, turn="turn-1"):
    return dict(base("UserPromptSubmit", turn), prompt=text)


def tool(command, response="ok\n", turn="turn-1", call="call-1", name="Bash"):
    payload = dict(base("PostToolUse", turn), tool_name=name, tool_input={"command": command},
                   tool_response=response)
    if call:
        payload["tool_use_id"] = call
    return payload


def stop(message="Done.", turn="turn-1", active=False):
    return dict(base("Stop", turn), stop_hook_active=active, last_assistant_message=message)


def start(source="startup"):
    return dict(base("SessionStart"), source=source)


class Hook:
    """The registered hook command, with the plugin root and data variables Codex provides.

    `data` is the plugin's data folder; the store is `store`, the client's own beside
    the plugin folders (CODEX_HOME/om), or the data folder itself at any other place."""

    def __init__(self, data, store=None):
        self.data = data
        self.store = store or data

    def __call__(self, payload, env=None, event=None, raw=None):
        event = event or payload["hook_event_name"]
        command = REGISTERED.get(event, REGISTERED["Stop"])[0]["hooks"][0]["command"]
        full_env = {k: v for k, v in os.environ.items() if not k.startswith(("OM_", "PLUGIN_", "CLAUDE_PLUGIN_"))}
        full_env.update(PLUGIN_ROOT=str(ROOT), PLUGIN_DATA=str(self.data),
                        CLAUDE_PLUGIN_ROOT=str(ROOT), CLAUDE_PLUGIN_DATA=str(self.data), **(env or {}))
        data = raw if raw is not None else json.dumps(payload).encode()
        proc = subprocess.run(["/bin/sh", "-c", command], input=data, capture_output=True, env=full_env,
                              cwd="/", timeout=60)
        assert proc.returncode == 0, proc
        out = proc.stdout.decode()
        assert out.count("\n") <= 1
        response = json.loads(out) if out.strip() else None
        if response is not None and event in SCHEMA_OF:
            schema = json.loads((SCHEMAS / f"{SCHEMA_OF[event]}.command.output.schema.json").read_text())
            jsonschema.validate(response, schema)
        self.stderr = proc.stderr.decode()
        return response

    def om(self, *args, input=None):
        env = {k: v for k, v in os.environ.items() if k != "OBSERVATIONAL_MEMORY_STORE"}
        env["PYTHONPATH"] = str(ROOT)
        proc = subprocess.run([*RUNTIME_ARGV, "--store", str(self.store), "--session", SESSION, *args],
                              input=input, capture_output=True, text=True, env=env, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    def sources(self):
        return self.om("pending")["sources"]


@pytest.fixture
def hook(tmp_path):
    # tmp_path plays CODEX_HOME.
    return Hook(tmp_path / "plugins" / "data" / "om-observational-memory", tmp_path / "om")


def context_of(response):
    return response["hookSpecificOutput"]["additionalContext"]


def advertised(hook):
    text = context_of(hook(start()))
    line = next(line for line in text.splitlines() if line.startswith("Ledger command"))
    return line.split(": ", 1)[1]


@pytest.mark.parametrize("source", ["startup", "resume", "clear", "compact", "fork"])
def test_session_start_gives_the_exact_ledger_command_and_progress_but_never_the_memory(hook, source):
    hook(prompt("We chose SQLite for the ledger."))
    (s,) = hook.sources()
    hook.om("apply", input=json.dumps({"through": 1, "observations": [
        {"text": "SECRET-MEMORY-BODY: SQLite was chosen.", "source_ids": [s["id"]]}]}))
    hook(prompt("next prompt", turn="turn-2"))
    text = context_of(hook(start(source)))
    command = advertised(hook)
    assert f"{command} prime" in text
    assert "Checkpoint cursor: 1." in text and "Pending sources: 1 " in text
    assert "Last checkpoint: 20" in text
    assert "SECRET-MEMORY-BODY" not in text
    assert ("just compacted" in text) == (source == "compact")


def test_the_advertised_command_runs_as_is_from_any_directory(hook, tmp_path):
    argv = shlex.split(advertised(hook))
    assert os.path.isabs(argv[0]) and os.path.isabs(argv[1])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OM_", "PLUGIN_", "PYTHON", "OBSERVATIONAL"))}
    env.update(bytecode_env())
    proc = subprocess.run([*argv, "status"], cwd=elsewhere, capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["session"] == SESSION


def test_user_prompts_are_captured_with_the_turn_id_as_key(hook):
    assert hook(prompt("Fix the flaky test in tests/test_io.py", turn="turn-7")) is None
    (source,) = hook.sources()
    again = hook.om("capture", input=json.dumps({"kind": "user", "text": "Fix the flaky test in tests/test_io.py",
                                                 "key": "turn-7"}))
    assert again["source_id"] == source["id"] and source["kind"] == "user"


def test_a_pause_prefix_pauses_before_the_prompt_is_captured(hook):
    response = hook(prompt("[om:pause] do not remember this"))
    assert "paused" in context_of(response)
    assert "the resume tool" in context_of(response) and "MCP tools" in context_of(response)
    assert hook.om("status")["paused"] is True
    assert hook(tool("echo private")) is None
    assert hook(stop("private reply"), env={"OM_CHECKPOINT_TURNS": "1"}) is None
    assert hook(prompt("a later prompt without the prefix", turn="turn-2")) is None
    assert hook(stop("later reply", turn="turn-2"), env={"OM_CHECKPOINT_TURNS": "1"}) is None
    assert hook.sources() == []


def test_tool_results_are_captured_as_sorted_canonical_json_keyed_by_tool_use_id(hook):
    payload = dict(tool("ls"), tool_input={"command": "ls", "b": {"z": 1, "a": [{"y": 2, "x": 1}]}},
                   tool_response={"stdout": "é\n", "code": 0})
    hook(payload)
    (source,) = hook.sources()
    expected = json.dumps({"input": payload["tool_input"], "response": payload["tool_response"], "tool": "Bash"},
                          sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert source["text"] == expected
    same = hook.om("capture", input=json.dumps({"kind": "tool", "text": expected, "key": "call-1"}))
    assert same["source_id"] == source["id"]


def test_calls_of_the_plugins_own_mcp_tools_are_not_evidence_but_other_mcp_tools_are(hook):
    own = dict(base("PostToolUse"), tool_name="mcp__om__pending", tool_input={"session": SESSION},
               tool_response={"content": [{"type": "text", "text": '{"through":0,"sources":[]}'}]},
               tool_use_id="call-own")
    assert hook(own) is None
    assert hook.sources() == []
    other = dict(own, tool_name="mcp__docs__search", tool_use_id="call-other")
    hook(other)
    assert [json.loads(s["text"])["tool"] for s in hook.sources()] == ["mcp__docs__search"]


def test_hook_messages_name_the_mcp_tools_first_with_the_session_and_keep_the_shell_command(hook):
    mcp_line = f'Preferred: the om MCP tools (prime, pending, apply, recall, status, view), with session "{SESSION}".'
    text = context_of(hook(start()))
    assert mcp_line in text and "Ledger command (run it exactly, from any directory): " in text
    hook(prompt("do something"))
    reason = hook(stop("done"), env={"OM_CHECKPOINT_TURNS": "1"})["reason"]
    assert mcp_line in reason and "Ledger command: " in reason
    assert not any(ch in reason for ch in "&<>")


def test_a_tool_result_without_tool_use_id_is_keyed_by_the_turn(hook):
    payload = tool("apply the patch", call=None, name="apply_patch", turn="turn-3")
    hook(payload)
    (source,) = hook.sources()
    same = hook.om("capture", input=json.dumps({"kind": "tool", "text": source["text"], "key": "turn-3"}))
    assert same["source_id"] == source["id"]


def self_capture_table(command):
    """(bash command, captured?) rows; LEDGER is the advertised command, STORE/SESSION its scope."""
    store, ledger = shlex.split(command)[3], command
    q = shlex.quote
    scoped = f"om --store {q(store)} --session {q(SESSION)}"
    return [
        (f"{ledger} pending", False),
        (f"{ledger} status; {ledger} view", False),
        (f"{ledger} pending && {ledger} status", False),
        (f"{ledger} apply <<'JSON'\n{{\"through\": 0}}\nJSON", False),
        (f"{ledger} apply <<JSON\n{{\"through\": 0}}\nJSON", False),
        (f"{ledger} apply < /tmp/checkpoint.json", False),
        (f"{scoped} prime", False),
        (f"om --session {q(SESSION)} --store {q(store)} recall s-1", False),
        (" ".join(q(w) for w in shlex.split(ledger)) + " status", False),
        (f"{ledger} pending | tee /tmp/out", True),
        (f"printf '{{}}' | {ledger} apply", True),
        (f"{ledger} pending > /tmp/out", True),
        (f"{ledger} pending 2>&1", True),
        (f"{ledger} pending; rm -rf build", True),
        (f"cd /tmp && {ledger} pending", True),
        (f"{ledger} apply <<JSON\n{{\"through\": $(cat n)}}\nJSON", True),
        (f"{ledger} apply <<'JSON'\n{{\"through\": 0}}\n", True),
        (f"$(echo {ledger}) pending", True),
        (f"X=1 {ledger} pending", True),
        (f"({ledger} pending)", True),
        (f"if true; then {ledger} pending; fi", True),
        (f"for i in 1; do {ledger} pending; done", True),
        (f"f() {{ {ledger} pending; }}; f", True),
        (f"{ledger} pending &", True),
        (f"om --store {q(store)} --session other-session pending", True),
        (f"om --store /somewhere/else --session {q(SESSION)} pending", True),
        (f"scripts/run.sh --store {q(store)} --session {q(SESSION)} pending", True),
        (f"{ledger}", True),
        (" ".join(q(w) for w in shlex.split(ledger)[:2]) + f" --store /elsewhere --session {q(SESSION)} pending", True),
        (f"{ledger} pending `date`", True),
        (f"{ledger} pending $HOME", True),
        ("ls -la", True),
        ("scripts/run.sh", True),
    ]


def test_self_capture_suppression_skips_only_unambiguous_ledger_calls(hook):
    rows = self_capture_table(advertised(hook))
    before = 0
    for i, (command, captured) in enumerate(rows):
        hook(tool(command, call=f"call-{i}"))
        count = len(hook.sources())
        assert (count == before + 1) == captured, (command, captured)
        before = count


def test_a_large_backlog_gets_one_reminder_per_cursor(hook):
    env = {"OM_CHECKPOINT_BYTES": "100"}
    first = hook(tool("cat big", response="x" * 200, call="c1"), env=env)
    assert advertised(hook) + " pending" in context_of(first)
    assert "the pending tool then the apply tool" in context_of(first) and "MCP tools" in context_of(first)
    assert hook(tool("cat big2", response="y" * 200, call="c2"), env=env) is None
    through = hook.om("pending")["through"]
    hook.om("apply", input=json.dumps({"through": through}))
    assert hook(tool("cat big3", response="z" * 200, call="c3"), env=env) is not None


def test_stop_captures_the_reply_and_asks_for_one_checkpoint_after_three_turns_by_default(hook):
    decisions = []
    for turn in ("t1", "t2", "t3"):
        hook(prompt(f"prompt {turn}", turn=turn))
        decisions.append(hook(stop(f"reply {turn}", turn=turn)))
    assert decisions[:2] == [None, None]
    assert decisions[2]["decision"] == "block"
    assert len(hook.sources()) == 6
    # the same turn never asks twice; the reply that ends the continuation is no evidence
    assert hook(stop("checkpoint done", turn="t3", active=True)) is None
    assert hook(stop("another stop", turn="t3")) is None
    assert [s["text"] for s in hook.sources()][-2:] == ["reply t3", "another stop"]


CONTINUED_STOP = json.loads((SCHEMAS / "stop.continued.payload.json").read_text())["payload"]


def test_the_recorded_stop_that_ends_oms_continuation_is_not_captured_and_the_checkpoint_covers_everything(hook):
    session, turn = CONTINUED_STOP["session_id"], CONTINUED_STOP["turn_id"]
    ledger = lambda *args, **kw: run_om("--store", hook.store, "--session", session, *args, **kw)  # noqa: E731
    first = dict(CONTINUED_STOP, stop_hook_active=False, last_assistant_message="First final answer.")
    hook(dict(prompt("Print hello with the shell", turn=turn), session_id=session))
    assert hook(first, env={"OM_CHECKPOINT_TURNS": "1"})["decision"] == "block"
    pending = ledger("pending").json
    assert [s["text"] for s in pending["sources"]] == ["Print hello with the shell", "First final answer."]
    assert ledger("apply", input=json.dumps({"through": pending["through"]})).returncode == 0
    # Codex's real second Stop: stop_hook_active, the same turn, the continuation's own reply.
    assert hook(CONTINUED_STOP, env={"OM_CHECKPOINT_TURNS": "1"}) is None
    assert ledger("status").json["pending_sources"] == 0
    # The next turn's reply is evidence again.
    hook(dict(CONTINUED_STOP, turn_id="next-turn", stop_hook_active=False))
    assert ledger("status").json["pending_sources"] == 1


def test_the_checkpoint_reason_carries_the_ledger_command_and_no_xml_specials(hook):
    response = hook(stop("reply"), env={"OM_CHECKPOINT_TURNS": "1"})
    reason = response["reason"]
    command = advertised(hook)
    assert f"{command} pending" in reason and f"{command} apply" in reason
    assert not set("&<>") & set(reason)


def test_checkpoint_turns_of_one_asks_on_every_turn_that_leaves_evidence(hook):
    env = {"OM_CHECKPOINT_TURNS": "1"}
    assert hook(stop("first", turn="a"), env=env)["decision"] == "block"
    through = hook.om("pending")["through"]
    hook.om("apply", input=json.dumps({"through": through}))
    assert hook(stop("second", turn="b"), env=env)["decision"] == "block"


def test_a_turn_that_leaves_nothing_pending_is_never_asked_for_a_checkpoint(hook):
    env = {"OM_CHECKPOINT_TURNS": "1", "OM_CHECKPOINT_BYTES": "1"}
    assert hook(stop("", turn="a"), env=env) is None
    hook(prompt("capture me", turn="b"))
    hook.om("apply", input=json.dumps({"through": hook.om("pending")["through"]}))
    assert hook(stop("   ", turn="b"), env=env) is None
    assert hook.sources() == []


def test_evidence_waiting_through_quiet_turns_becomes_due_after_the_third_turn_end(hook):
    hook(prompt("the only evidence", turn="t1"))
    assert hook(stop("", turn="t1")) is None
    assert hook(stop("", turn="t1", active=True)) is None  # a continuation's end is not a turn end
    assert hook(stop("", turn="t2")) is None
    assert hook(stop("", turn="t3"))["decision"] == "block"


@pytest.mark.parametrize("value", ["0", "-1", "abc", " "])
def test_a_setting_that_is_not_a_positive_integer_falls_back_to_its_default(hook, value):
    env = {"OM_CHECKPOINT_TURNS": value, "OM_CHECKPOINT_BYTES": value}
    assert hook(stop("first", turn="a"), env=env) is None
    assert hook(stop("second", turn="b"), env=env) is None
    assert hook(stop("third", turn="c"), env=env)["decision"] == "block"


def test_pending_bytes_over_the_threshold_make_a_checkpoint_due_at_once(hook):
    env = {"OM_CHECKPOINT_BYTES": "1000"}
    assert hook(stop("é" * 400, turn="a"), env=env) is None  # 800 bytes
    assert hook(stop("é" * 200, turn="b"), env=env)["decision"] == "block"  # 1200 bytes


def test_stop_never_asks_while_a_continuation_is_running(hook):
    assert hook(stop("reply", active=True), env={"OM_CHECKPOINT_TURNS": "1"}) is None
    assert len(hook.sources()) == 1


def test_interrupt_subagent_and_unknown_events_capture_and_request_nothing(hook):
    env = {"OM_CHECKPOINT_TURNS": "1", "OM_CHECKPOINT_BYTES": "1"}
    hook(prompt("the parent's prompt"))
    before = hook.sources()
    assert hook(base("Interrupt"), env=env) is None
    assert hook(dict(prompt("child task"), agent_id="agent-1", agent_type="default")) is None
    assert hook(dict(tool("ls", call="child-call"), agent_id="agent-1"), env=env) is None
    assert hook(dict(stop("child reply"), agent_id="agent-1"), env=env) is None
    assert hook(dict(start(), agent_id="agent-1")) is None
    assert hook(dict(base("PreCompact"), trigger="auto"), event="Stop") is None
    assert hook(dict(base("SessionEnd"), reason="other"), event="Stop") is None
    assert hook(dict(base("SubagentStop"), last_assistant_message="child done"), event="Stop", env=env) is None
    assert hook.sources() == before and len(before) == 1


@pytest.mark.parametrize("raw", [b"", b"{not json", b"[]", b'{"hook_event_name": "Stop"}', b"\xff\xfe"])
def test_bad_input_fails_open_with_an_advisory_a_stderr_line_and_a_log_line(hook, raw):
    response = hook(None, event="Stop", raw=raw)
    assert "systemMessage" in response and "your task continues" in response["systemMessage"]
    assert len(hook.stderr.strip().splitlines()) == 1
    log = (hook.store / "hook-errors.log").read_text()
    assert len(log.splitlines()) == 1 and "failed open" in log


@pytest.mark.parametrize("args", [["hook", "--client", "gemini"], ["hook"], ["hook", "--client", "codex", "--bogus"],
                                  ["hook", "--client", "codex"]])
def test_only_command_line_errors_make_the_hook_command_exit_nonzero_and_never_with_2(tmp_path, args):
    from conftest import run_om

    store = [] if args == ["hook", "--client", "codex"] else ["--store", tmp_path / "store"]
    result = run_om(*store, *args, input=json.dumps(stop()))
    assert result.returncode == 64, result
    assert result.stdout == "" and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("where", ["store", "data"])
def test_an_unusable_store_or_data_folder_fails_open(hook, where):
    path = getattr(hook, where)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"a file where the {where} folder should be")
    for payload in (start(), prompt("hi"), tool("ls"), stop("bye")):
        response = hook(payload, env={"OM_CHECKPOINT_TURNS": "1"})
        assert set(response) == {"systemMessage"}
    assert path.read_text() == f"a file where the {where} folder should be"


def test_a_missing_or_broken_runtime_fails_open(hook, tmp_path):
    root = _plugin_copy(tmp_path)
    (root / "runtime").mkdir()
    (root / "runtime" / "om-9.9.9.pyz").write_bytes(b"shipped")
    data = tmp_path / "broken-data"
    (data / "runtime").mkdir(parents=True)
    broken = data / "runtime" / "om"
    broken.write_bytes(b"not python\x00")
    (data / "runtime" / "active").write_text(f"{root}\n{broken}\nom-9.9.9.pyz\n")
    assert set(_launch(root, data, stop("bye"))) == {"systemMessage"}
    hook.data.mkdir(parents=True)
    fake = tmp_path / "python-that-cannot-open-the-script"
    fake.write_text("#!/bin/sh\nexit 2\n")
    fake.chmod(0o755)
    (hook.data / ".om-python").write_text(f"{fake}\n")
    assert set(hook(stop("bye"))) == {"systemMessage"}


@pytest.mark.parametrize("shell", ["sh", "bash", "zsh", "fish"])
def test_the_registered_command_runs_the_hook_under_any_login_shell_codex_may_use(tmp_path, shell):
    # Codex runs a hook as `$SHELL -c <command>`, with ${PLUGIN_ROOT} already substituted
    # (hooks/list shows the expanded path): the command must mean the same to zsh and fish.
    data = tmp_path / "data"
    for event, payload in (("SessionStart", start()), ("UserPromptSubmit", prompt("under " + shell))):
        command = REGISTERED[event][0]["hooks"][0]["command"].replace("${PLUGIN_ROOT}", str(ROOT))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OM_", "PLUGIN_", "CLAUDE_PLUGIN_"))}
        # A home of its own: fish writes its configuration and history there on its first start.
        env.update(PLUGIN_ROOT=str(ROOT), PLUGIN_DATA=str(data), CLAUDE_PLUGIN_ROOT=str(ROOT),
                   CLAUDE_PLUGIN_DATA=str(data), SHELL=shutil.which(shell), HOME=str(tmp_path / "home"))
        proc = subprocess.run([shutil.which(shell), "-c", command], input=json.dumps(payload).encode(),
                              capture_output=True, env=env, cwd="/", timeout=60)
        assert proc.returncode == 0 and proc.stderr == b"", proc
        if event == "SessionStart":
            assert "Ledger command" in context_of(json.loads(proc.stdout))
    (db,) = data.glob("session-*/memory.sqlite3")
    conn = sqlite3.connect(db)
    try:
        (body,) = conn.execute("SELECT body FROM sources").fetchone()
    finally:
        conn.close()
    assert json.loads(body)["text"] == "under " + shell


def test_the_registered_command_exits_0_even_when_the_launcher_or_the_runtime_is_missing(tmp_path):
    empty = tmp_path / "empty-plugin"
    empty.mkdir()
    for event, groups in REGISTERED.items():
        command = groups[0]["hooks"][0]["command"]
        proc = subprocess.run(["/bin/sh", "-c", command], input=json.dumps(stop()).encode(), capture_output=True,
                              env=dict(os.environ, PLUGIN_ROOT=str(empty), PLUGIN_DATA=str(tmp_path / "d"),
                                       CLAUDE_PLUGIN_ROOT=str(empty), CLAUDE_PLUGIN_DATA=str(tmp_path / "d")),
                              timeout=60)
        assert proc.returncode == 0 and proc.stdout == b"", (event, proc)
    root = _plugin_copy(tmp_path)
    (root / "bin" / "om").unlink()
    response = _launch(root, tmp_path / "data", stop("bye"))
    assert set(response) == {"systemMessage"} and "runtime is missing" in response["systemMessage"]


def test_a_store_path_with_xml_specials_never_leaks_them_into_the_stop_reason(tmp_path):
    hook = Hook(tmp_path / "a&b <data>")
    assert advertised(hook).endswith(shlex.quote(SESSION))
    reason = hook(stop("reply"), env={"OM_CHECKPOINT_TURNS": "1"})["reason"]
    assert not set("&<>") & set(reason)
    assert "the om ledger command from this session's start context" in reason


def _plugin_copy(tmp_path):
    root = tmp_path / "plugin"
    for part in ("hooks", "bin", "om"):  # om/ carries the pins validator the launcher uses
        shutil.copytree(ROOT / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _pin(root, tmp_path, version="9.1.0", tamper=False):
    """Ship a zipapp of this source as the plugin's pinned release asset."""
    staging = tmp_path / "staging"
    shutil.copytree(ROOT / "om", staging / "om", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "runtime").mkdir()
    asset = root / "runtime" / f"om-{version}.pyz"
    zipapp.create_archive(staging, asset, interpreter="/usr/bin/env python3", main="om.cli:run")
    digest = hashlib.sha256(asset.read_bytes()).hexdigest()
    size = len(asset.read_bytes())
    if tamper:
        asset.write_bytes(asset.read_bytes()[:-8] + b"tampered")
    (root / "plugin-pins.json").write_text(json.dumps({"schema_version": 1, "pin": {
        "version": version, "tag": f"v{version}", "protocol": 1, "asset": asset.name, "sha256": digest,
        "size": size, "repo": "om-memory/om"}}))
    return asset


def _launch(root, data, payload):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OM_", "PLUGIN_"))}
    # As Codex runs plugin hooks: the registered command through sh, both spellings of the variables.
    env.update(PLUGIN_ROOT=str(root), PLUGIN_DATA=str(data), CLAUDE_PLUGIN_ROOT=str(root), CLAUDE_PLUGIN_DATA=str(data),
               OM_CHECKPOINT_TURNS="1")
    command = json.loads((root / "hooks" / "codex.json").read_text())["hooks"]["SessionStart"][0]["hooks"][0]["command"]
    proc = subprocess.run(["/bin/sh", "-c", command], input=json.dumps(payload).encode(),
                          capture_output=True, env=env, timeout=60)
    assert proc.returncode == 0
    return json.loads(proc.stdout) if proc.stdout.strip() else None


def test_a_pinned_runtime_is_verified_installed_beside_the_managed_marker_and_advertised(tmp_path):
    root = _plugin_copy(tmp_path)
    _pin(root, tmp_path)
    data = tmp_path / "data"
    context = context_of(_launch(root, data, start()))
    installed = data / "runtime" / "9.1.0" / "om"
    assert (installed.parent / "om-9.1.0.pyz").read_bytes() == (root / "runtime" / "om-9.1.0.pyz").read_bytes()
    assert installed.is_file() and (installed.parent / ".observational-memory-managed").is_file()
    assert (data / "runtime" / "active").read_text().splitlines() == [str(root), str(installed), "om-9.1.0.pyz"]
    assert f" {installed} --store " in context
    # the advertised command of the pinned runtime runs as-is from another directory
    line = next(line for line in context.splitlines() if line.startswith("Ledger command"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OM_", "PLUGIN_", "PYTHON", "OBSERVATIONAL"))}
    proc = subprocess.run([*shlex.split(line.split(": ", 1)[1]), "status"], cwd=elsewhere, capture_output=True,
                          text=True, env=env, timeout=60)
    assert proc.returncode == 0 and json.loads(proc.stdout)["session"] == SESSION, proc
    # later events run the verified copy: the turn's reply is captured and a checkpoint asked for
    assert f" {installed} --store " in _launch(root, data, stop("bye"))["reason"]
    # the marker makes the installed runtime refuse to replace itself
    refusal = subprocess.run([sys.executable, "-I", "-S", str(installed), "self", "update", "--check"],
                             capture_output=True, text=True, timeout=60)
    assert refusal.returncode == 67 and "managed by the om Codex plugin" in refusal.stderr, refusal


def test_a_pinned_runtime_that_fails_verification_is_never_run(tmp_path):
    root = _plugin_copy(tmp_path)
    _pin(root, tmp_path, tamper=True)
    data = tmp_path / "data"
    context = context_of(_launch(root, data, start()))
    assert not (data / "runtime" / "active").exists()
    assert not (data / "runtime" / "9.1.0" / "om-9.1.0.pyz").exists()
    assert not (data / "runtime" / "9.1.0" / "om").exists()
    assert f" {root}/bin/om --store " in context  # the bundled runtime took over


def receipt(hook, event):
    path = hook.store / "receipts" / f"{event}.json"
    return json.loads(path.read_text()) if path.exists() else None


def test_every_handled_event_leaves_a_receipt_with_its_outcome_and_duration(hook):
    hook(start())
    hook(prompt("list the files"))
    hook(tool("ls"))
    hook(stop())
    for event in ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"):
        r = receipt(hook, event)
        assert r["outcome"] == "ok" and r["runs"] == 1 and r["failures"] == 0, r
        assert 0 < r["duration_ms"] < 60_000 and r["recent_ms"] == [r["duration_ms"]]
    hook(prompt("and again", turn="turn-2"))
    assert receipt(hook, "UserPromptSubmit")["runs"] == 2


def test_a_hook_that_fails_open_records_a_failed_receipt(hook):
    hook(start())
    (session_dir,) = [d for d in hook.store.iterdir() if d.name.startswith("session-")]
    (session_dir / "memory.sqlite3").write_bytes(b"not a database at all" * 100)
    response = hook(prompt("this cannot be stored"))
    assert "failed open" in response["systemMessage"]
    r = receipt(hook, "UserPromptSubmit")
    assert r["outcome"] == "failed" and r["failures"] == 1 and r["last_failure_at"] == r["last_at"]


def _ledger_file(hook):
    (path,) = Path(hook.store).glob("session-*/memory.sqlite3")
    return path


def _reason_counts(response):
    words = response["reason"].split(" pending sources (", 1)
    count = int(words[0].rsplit(" ", 1)[1])
    size = int(words[1].split(" bytes)", 1)[0])
    return count, size


def test_the_checkpoint_request_counts_exactly_the_sources_and_utf8_bytes_after_the_cursor(hook):
    env = {"OM_CHECKPOINT_TURNS": "1"}
    hook(prompt("één"))
    hook(stop("☃" * 10, turn="turn-1"), env={"OM_CHECKPOINT_TURNS": "9"})
    through = hook.om("pending")["through"]
    hook.om("apply", input=json.dumps({"through": through}))
    hook(prompt("later 😀", turn="turn-2"))
    assert _reason_counts(hook(stop("done", turn="turn-2"), env=env)) == (2, len("later 😀".encode()) + 4)


def test_sources_a_v1_peer_writes_and_an_import_that_rewrites_them_are_counted_exactly(hook):
    import sqlite3

    env = {"OM_CHECKPOINT_TURNS": "1"}
    hook(prompt("first prompt"))
    hook(stop("first reply", turn="turn-1"), env={"OM_CHECKPOINT_TURNS": "9"})
    db = sqlite3.connect(_ledger_file(hook))
    with db:  # a peer appends a source of its own
        db.execute("INSERT INTO sources(id, body) VALUES ('s-peer', ?)",
                   (json.dumps({"seq": 0, "id": "s-peer", "kind": "user", "timestamp": "2025-01-01T00:00:00Z",
                                "text": "peer ünïcode", "truncated": False}),))
    texts = ["first prompt", "first reply", "peer ünïcode", "second"]
    response = hook(stop("second", turn="turn-2"), env=env)
    assert _reason_counts(response) == (4, sum(len(t.encode()) for t in texts))
    with db:  # a peer's import: the history takes the low seqs, the former sources move after it
        own = db.execute("SELECT id, body FROM sources ORDER BY seq").fetchall()
        db.execute("DELETE FROM sources")
        db.execute("INSERT INTO sources(seq, id, body) VALUES (1, 's-history', ?)",
                   (json.dumps({"seq": 0, "id": "s-history", "kind": "user", "timestamp": "2025-01-01T00:00:00Z",
                                "text": "x" * 70, "truncated": False}),))
        db.executemany("INSERT INTO sources(id, body) VALUES (?, ?)", own)
    db.close()
    response = hook(stop("third", turn="turn-3"), env=env)
    assert _reason_counts(response) == (6, 70 + sum(len(t.encode()) for t in texts) + 5)


def test_the_hook_leaves_the_v1_tables_schema_as_it_was(hook):
    import sqlite3

    hook(prompt("schema check"))
    db = sqlite3.connect(_ledger_file(hook))
    before = db.execute("SELECT name, sql FROM sqlite_master WHERE name NOT LIKE 'om_%' ORDER BY name").fetchall()
    db.close()
    hook(stop("reply"), env={"OM_CHECKPOINT_TURNS": "1"})
    db = sqlite3.connect(_ledger_file(hook))
    after = db.execute("SELECT name, sql FROM sqlite_master WHERE name NOT LIKE 'om_%' ORDER BY name").fetchall()
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()
    assert before == after
