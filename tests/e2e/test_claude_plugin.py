"""The om plugin inside the real Claude Code CLI 2.1.332, against a scripted mock Messages API.

Each scenario installs the plugin with `claude plugin marketplace add` and
`claude plugin install`, runs `claude -p`, and asserts on the ledger (through the
real `om` CLI) and on what the model received.
"""

import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from agent_moves import json_in, marker_checkpoint
from broken_stores import BREAKAGES, assert_left_as_broken, break_store
from claude_harness import (  # noqa: F401 (fixtures)
    MCP_PREFIX,
    STOP_CONTEXT,
    claude,
    claude_bin,
    claude_marketplace,
    ledger,
    ledger_command_in,
    session_in,
)
from claude_mock import say, shell, tool_call
from raw_bytes import files_holding

pytestmark = pytest.mark.e2e

CHECKPOINT_ENV = {"OM_CHECKPOINT_TURNS": "1"}
CHECKPOINT_MARK = "Observational memory checkpoint (one pass"
START_MARK = "SessionStart hook additional context: "


def start_context(request):
    """The om SessionStart context the model was shown in this request ('' when none)."""
    texts = [t for t in request.texts() if START_MARK in t and "Ledger command" in t]
    return texts[-1].split(START_MARK, 1)[1] if texts else ""


def after_continuation(request):
    """(continuation text, tool results after it) when this request continues a checkpoint request."""
    messages = request.messages
    marks = [i for i, m in enumerate(messages) if CHECKPOINT_MARK in json.dumps(m)]
    if not marks:
        return None, []
    text = json.dumps(messages[marks[-1]])
    results = []
    for message in messages[marks[-1] + 1:]:
        if message.get("role") == "user" and isinstance(message.get("content"), list):
            results += [b for b in message["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
    from claude_mock import text_of

    reason = next(t for t in (text_of(m.get("content")) for m in messages[marks[-1]:marks[-1] + 1]) if t) or text
    return reason, [text_of(r.get("content")) for r in results]


def checkpointing_model(marker_command, observation, via="shell", final="Printed the marker.", apply_usage=None,
                        mcp_prefix=MCP_PREFIX, checkpoint=marker_checkpoint):
    """A model that runs one command, then answers the checkpoint request with pending + apply
    (the checkpoint `checkpoint(pending, observation)` makes)."""

    def script(request):
        if request.is_compaction:
            return say("<summary>The user asked to print a marker; it was printed.</summary>")
        reason, outputs = after_continuation(request)
        if reason is None:
            if not request.tool_results():
                return shell(marker_command)
            return say(final)
        if via == "shell":
            command = ledger_command_in(reason)
            if not outputs:
                return shell(f"{command} pending")
            if len(outputs) == 1:
                made = checkpoint(json_in(outputs[0]), observation)
                return shell(f"{command} apply <<'JSON'\n{json.dumps(made)}\nJSON", usage=apply_usage)
        else:
            session = session_in(reason)
            if not outputs:
                return tool_call(mcp_prefix + "pending", {"session": session})
            if len(outputs) == 1:
                made = checkpoint(json_in(outputs[0]), observation)
                return tool_call(mcp_prefix + "apply", {"session": session, "checkpoint": made},
                                 usage=apply_usage)
        return say("Checkpoint done.")

    return script


def sources(home, session, store=None):
    """Every captured source, read from the ledger file (its v1 format is part of the contract)."""
    database = ledger(store or home.store, session, "status")["database"]
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as conn:
        return [json.loads(body) for (body,) in conn.execute("SELECT body FROM sources ORDER BY seq")]


@pytest.mark.parametrize("login_shell", ["zsh", "fish"])
def test_hooks_capture_whatever_the_users_login_shell(claude, login_shell):
    # Claude Code runs hook commands with /bin/sh, not $SHELL: the registered command reads
    # the launcher with `command .`, which zsh and fish would not run. Were that to change,
    # nothing would be captured here.
    def script(request):
        if not request.tool_results():
            return shell("echo shell-7c1d")
        return say("Done under " + login_shell)

    home = claude(script).setup()
    run = home.run("Print the marker", env={"SHELL": shutil.which(login_shell)})
    assert run.returncode == 0, run
    assert [s["kind"] for s in sources(home, run.session_id)] == ["user", "tool", "assistant"]


def test_the_installed_plugin_captures_the_prompt_the_tool_result_and_the_reply(claude):
    def script(request):
        if not request.tool_results():
            return shell("echo captured-4b2e")
        return say("The marker was printed.")

    home = claude(script)
    entry = home.setup().installed()
    assert entry and entry["enabled"] is True and entry["scope"] == "user", entry
    run = home.run("Print the marker with the shell")
    assert run.returncode == 0, run
    session = run.session_id
    assert run.assistant_texts()[-1] == "The marker was printed."
    # Exactly one om MCP server, the one the Claude manifest declares, and it started.
    servers = [s for s in run.init.get("mcp_servers", []) if s["name"].startswith("plugin:om:")]
    assert servers == [{"name": "plugin:om:om", "status": "connected", "source": "plugin"}], servers

    captured = sources(home, session)
    assert [s["kind"] for s in captured] == ["user", "tool", "assistant"]
    assert captured[0]["text"] == "Print the marker with the shell"
    assert "captured-4b2e" in captured[1]["text"]
    assert captured[2]["text"] == "The marker was printed."
    # The SessionStart context reached the model with the exact ledger command for this session.
    context = start_context(home.mock.requests[0])
    assert ledger_command_in(context).endswith(session)
    # One model request for the tool call and one for the reply: no checkpoint was due yet.
    assert len(home.mock.requests) == 2
    # The one hooks file ran once per event, as the Claude Code client (Codex keeps its receipts apart).
    receipts = home.store / "receipts"
    assert not (receipts / "claude" / "PostToolUseFailure.json").exists()  # no tool failed
    for event in ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"):
        assert json.loads((receipts / "claude" / f"{event}.json").read_text())["runs"] == 1, event
    assert not list(receipts.glob("*.json"))


@pytest.mark.parametrize("via", ["shell", "mcp"])
def test_one_checkpoint_continuation_per_turn_writes_a_cited_observation(claude, via):
    observation = f"Printing the marker works ({via}): echo printed marker-7f3a."
    home = claude(checkpointing_model("echo marker-7f3a", observation, via=via))
    home.setup()
    run = home.run("Print the marker with the shell", env=CHECKPOINT_ENV)
    assert run.returncode == 0, run
    session = run.session_id
    assert run.assistant_texts()[-1] == "Checkpoint done."

    entries = ledger(home.store, session, "view", "--all")
    assert [e["text"] for e in entries] == [observation]
    assert entries[0]["importance"] == "high"
    (cited,) = ledger(home.store, session, "recall", entries[0]["id"])["sources"]
    assert cited["kind"] == "tool" and "marker-7f3a" in cited["text"]

    requests = home.mock.requests
    # marker, reply, then the continuation: pending, apply, done. No second continuation.
    assert len(requests) == 5, [r.last_user_text()[:80] for r in requests]
    last = requests[-1]
    continuations = [t for t in last.texts() if CHECKPOINT_MARK in t]
    assert len(continuations) == 1 and STOP_CONTEXT in continuations[0]
    # Sent once, with no hook command line (a Stop block would quote it).
    assert "hook blocking error from command" not in last.raw and "om-hook" not in last.raw

    # The agent's own ledger calls (shell or MCP) are not evidence; the user's prompt and the reply are.
    captured = sources(home, session)
    texts = [s["text"] for s in captured]
    assert texts[0] == "Print the marker with the shell"
    assert "Printed the marker." in texts and "Checkpoint done." not in texts
    assert not any('"pending"' in t or " pending" in t or "apply" in t for t in texts[1:] if "marker-7f3a" not in t)
    assert len([s for s in captured if s["kind"] == "tool"]) == 1
    status = ledger(home.store, session, "status")
    assert status["pending_sources"] == 0  # the reply that ends the checkpoint pass is no evidence


def test_after_auto_compaction_the_session_start_pointer_and_prime_restore_the_memory(claude):
    observation = "The marker command printed marker-c0de; keep using echo for markers."
    # The apply round reports a nearly full context: Claude Code compacts before the next request.
    checkpointing = checkpointing_model("echo marker-c0de", observation, apply_usage={"input_tokens": 150000})

    def script(request):
        context = start_context(request)
        if request.is_compaction or "just compacted" not in context:
            return checkpointing(request)
        if not [out for _, out in request.tool_results() if "# om prime" in out]:
            return shell(f"{ledger_command_in(context)} prime")
        return say("Memory recovered after compaction.")

    home = claude(script)
    home.setup()
    run = home.run("Print the marker with the shell", env=dict(CHECKPOINT_ENV, CLAUDE_AUTOCOMPACT_PCT_OVERRIDE="10"))
    assert run.returncode == 0, run
    session = run.session_id
    assert ledger(home.store, session, "view", "--all")[0]["text"] == observation

    requests = home.mock.requests
    compaction = next(i for i, r in enumerate(requests) if r.is_compaction)
    first_after = requests[compaction + 1]
    context = start_context(first_after)
    assert "just compacted" in context and " prime" in context
    assert "Print the marker with the shell" not in first_after.raw  # Claude Code dropped the prompt
    assert ledger_command_in(context).split()[-1] == session
    prime_output = [out for _, out in requests[-1].tool_results() if "# om prime" in out][-1]
    assert observation in prime_output
    assert run.assistant_texts()[-1] == "Memory recovered after compaction."


def test_a_pause_prompt_stops_capture_but_explicit_capture_still_works(claude):
    def script(request):
        if not request.tool_results():
            return shell("echo secret-9d1e")
        return say("Done quietly.")

    home = claude(script)
    home.setup()
    run = home.run("[om:pause] print the secret with the shell", env=CHECKPOINT_ENV)
    assert run.returncode == 0, run
    session = run.session_id
    assert any("paused" in t for t in home.mock.requests[0].texts() if "UserPromptSubmit hook" in t)

    run = home.run("and print it once more", env=CHECKPOINT_ENV, resume=session)
    assert run.returncode == 0, run
    status = ledger(home.store, session, "status")
    assert status["paused"] is True and status["pending_sources"] == 0 and status["through"] == 0
    assert not any(CHECKPOINT_MARK in r.raw for r in home.mock.requests)

    note = json.dumps({"kind": "user", "text": "Remember: explicit note while paused.", "key": "manual"})
    source_id = ledger(home.store, session, "capture", input=note)["source_id"]
    assert [s["id"] for s in ledger(home.store, session, "pending")["sources"]] == [source_id]


@pytest.mark.parametrize("how", list(BREAKAGES))
def test_a_broken_store_never_breaks_the_claude_turn(claude, how):
    def script(request):
        if not request.tool_results():
            return shell("echo still-working")
        return say("Finished despite the memory store.")

    home = claude(script)
    home.setup()
    break_store(home, how)
    run = home.run("Print still-working with the shell", env=CHECKPOINT_ENV)
    assert run.returncode == 0, run
    assert run.assistant_texts() == ["Finished despite the memory store."]
    requests = home.mock.requests
    # The prompt was not blocked (an exit 2 from UserPromptSubmit would drop it) and the tool ran.
    assert len(requests) == 2
    assert "Print still-working with the shell" in requests[0].raw
    assert "still-working" in json.dumps(requests[1].tool_results())
    assert not any(CHECKPOINT_MARK in r.raw for r in requests)
    assert_left_as_broken(home, how)


def test_after_one_real_claude_turn_doctor_reports_plugin_hooks_mcp_and_capture_ok(claude):
    def script(request):
        if not request.tool_results():
            return shell("echo doctor-sample")
        return say("Printed it.")

    home = claude(script)
    home.setup()
    run = home.run("Print doctor-sample with the shell")
    assert run.returncode == 0, run
    env = {k: v for k, v in home.env().items() if not k.startswith(("PYTHON", "CODEX_"))}
    env["CODEX_HOME"] = str(home.base / "no-codex")
    launcher = [sys.executable, str(home.marketplace_dir / "bin" / "om"), "doctor", "--json"]
    proc = subprocess.run(launcher, env=env, capture_output=True, text=True, timeout=60)
    report = json.loads(proc.stdout)
    status = {c["check"]: c for c in report["checks"]}
    for name in ("claude.plugin", "claude.hooks", "claude.mcp", "claude.capture.SessionStart",
                 "claude.capture.UserPromptSubmit", "claude.capture.PostToolUse", "claude.capture.Stop"):
        assert status[name]["status"] == "ok", status[name]
    assert "installed and enabled" in status["claude.plugin"]["finding"]
    assert "starts and lists" in status["claude.mcp"]["finding"] and str(home.store) in status["claude.mcp"]["finding"]
    assert " ok in " in status["claude.capture.Stop"]["finding"]
    # Doctor only listed the tools: the one session in the store is the one the turn made.
    assert len(home.sessions()) == 1


DOCS = Path(__file__).resolve().parents[2] / "docs" / "claude.md"


def documented_settings():
    """The settings.json hooks block and the `claude mcp add` command docs/claude.md gives."""
    text = DOCS.read_text()
    section = text.split("## Install without plugins", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```json\n(.*?)```", section, re.S)
    (mcp,) = [line for line in re.findall(r"```sh\n(.*?)```", section, re.S)[0].splitlines()
              if line.startswith("claude mcp add")]
    return json.loads(block), mcp


def test_the_documented_settings_block_and_mcp_command_work_without_the_plugin(claude):
    observation = "Printing the marker works without the plugin: echo printed marker-5e77."
    home = claude(checkpointing_model("echo marker-5e77", observation, via="mcp", mcp_prefix="mcp__om__"))
    settings, mcp_add = documented_settings()
    # A standalone `om` on PATH, as `om self install` leaves it.
    bindir = home.base / "bin"
    bindir.mkdir()
    (bindir / "om").write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -I -S "
                               f"{shlex.quote(str(home.marketplace_dir / 'bin' / 'om'))} \"$@\"\n")
    (bindir / "om").chmod(0o755)
    path = {"PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}
    (home.config / "settings.json").write_text(json.dumps(settings))
    argv = [word.replace("~/", f"{home.home}/", 1) if word.startswith("~/") else word
            for word in shlex.split(mcp_add)]
    assert argv[:3] == ["claude", "mcp", "add"]
    added = subprocess.run([home.claude, *argv[1:]], env=home.env(path), cwd=home.work, capture_output=True,
                           text=True, timeout=60)
    assert added.returncode == 0, added.stderr
    store = home.home / ".claude" / "om"

    run = home.run("Print the marker with the shell", env=dict(CHECKPOINT_ENV, **path))
    assert run.returncode == 0, run
    session = run.session_id
    assert [s for s in run.init.get("mcp_servers", []) if s["name"] == "om"][0]["status"] == "connected"
    assert not home.data_dir.exists()  # no plugin is involved
    entries = ledger(store, session, "view", "--all")
    assert [e["text"] for e in entries] == [observation]
    captured = sources(home, session, store)
    assert [s["kind"] for s in captured][:3] == ["user", "tool", "assistant"]
    assert len([s for s in captured if s["kind"] == "tool"]) == 1  # the MCP ledger calls are not evidence

    env = {k: v for k, v in home.env(path).items() if not k.startswith(("PYTHON", "CODEX_"))}
    env["CODEX_HOME"] = str(home.base / "no-codex")
    proc = subprocess.run([str(bindir / "om"), "doctor", "--json"], env=env, capture_output=True, text=True,
                          timeout=60)
    status = {c["check"]: c for c in json.loads(proc.stdout)["checks"]}
    assert status["claude.plugin"]["status"] == "ok" and "settings.json" in status["claude.plugin"]["finding"]
    assert status["claude.hooks"]["status"] == "ok", status["claude.hooks"]
    for event in ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"):
        check = status[f"claude.capture.{event}"]
        assert check["status"] == "ok", check  # read from the store the settings block names


def test_with_the_sandbox_enabled_the_mcp_tools_apply_where_the_shell_cannot(claude):
    """Claude Code's sandbox confines the agent's Bash to the working directory when bubblewrap
    and socat are installed; without them it says so and runs unsandboxed. Either way the
    MCP tools write the store, and the shell reads it."""

    def script(request):
        context = start_context(request)
        command, session = ledger_command_in(context), session_in(context)
        results = [out for _, out in request.tool_results()]
        if not results:
            return shell(f"{command} pending")
        through = json_in(results[0])["through"]
        if len(results) == 1:
            return shell(f"{command} apply <<'JSON'\n{json.dumps({'through': through})}\nJSON")
        if len(results) == 2:
            return tool_call(MCP_PREFIX + "apply", {"session": session, "checkpoint": {"through": through}})
        return say("Applied.")

    home = claude(script)
    home.setup()
    sandbox = home.base / "sandbox-settings.json"
    sandbox.write_text(json.dumps({"sandbox": {"enabled": True}}))
    run = home.run("Checkpoint what is pending", "--settings", str(sandbox))
    assert run.returncode == 0, run
    pending, shell_apply, mcp_apply = [out for _, out in home.mock.requests[-1].tool_results()]
    assert json_in(pending)["sources"]  # the shell can read the store
    assert json_in(mcp_apply)["through"] == json_in(pending)["through"]
    if "Sandbox disabled" in run.stderr:  # no bubblewrap/socat on this host: nothing is confined
        assert json_in(shell_apply)["through"] == json_in(pending)["through"]
    else:
        assert "readonly database" in shell_apply and '"through"' not in shell_apply
    assert ledger(home.store, run.session_id, "status")["last_checkpoint_at"]


def test_claude_plugin_validate_accepts_the_marketplace_and_the_plugin(claude):
    home = claude(lambda request: say("unused"))
    # The repository root is both the marketplace and its one plugin.
    out = home.cli("plugin", "validate", str(home.marketplace_dir))
    assert "Validation passed" in out, out
    # Claude Code's hooks file registers only Claude Code's events (Codex's Interrupt is in hooks/codex.json).
    assert "unknown hook event" not in out, out


def test_a_resumed_session_is_pointed_at_the_memory_it_checkpointed(claude):
    observation = "The marker command printed marker-2a9b."
    checkpointing = checkpointing_model("echo marker-2a9b", observation)

    def script(request):
        if "Continue where we stopped" not in request.raw:
            return checkpointing(request)
        context = start_context(request)
        if not [out for _, out in request.tool_results() if "# om prime" in out]:
            return shell(f"{ledger_command_in(context)} prime")
        return say("Resumed with memory.")

    home = claude(script)
    home.setup()
    first = home.run("Print the marker with the shell", env=CHECKPOINT_ENV)
    assert first.returncode == 0, first
    session = first.session_id
    resumed = home.run("Continue where we stopped", resume=session)
    assert resumed.returncode == 0, resumed
    assert resumed.session_id == session
    request = next(r for r in home.mock.requests if "Continue where we stopped" in r.raw)
    context = start_context(request)
    assert ledger_command_in(context).split()[-1] == session and " prime" in context
    prime_output = [out for _, out in home.mock.requests[-1].tool_results() if "# om prime" in out][-1]
    assert observation in prime_output
    assert resumed.assistant_texts()[-1] == "Resumed with memory."


def test_a_failed_tool_call_is_captured_as_evidence(claude):
    def script(request):
        if not request.tool_results():
            return shell("echo failing-77; echo broken-pipe-88 >&2; exit 3")
        return say("The command failed with status 3.")

    home = claude(script)
    home.setup()
    run = home.run("Run the failing command with the shell")
    assert run.returncode == 0, run
    captured = sources(home, run.session_id)
    assert [s["kind"] for s in captured] == ["user", "tool", "assistant"]
    tool = captured[1]["text"]
    assert "failing-77" in tool and "broken-pipe-88" in tool and "3" in tool
    receipt = json.loads((home.store / "receipts" / "claude" / "PostToolUseFailure.json").read_text())
    assert receipt["outcome"] == "ok" and receipt["runs"] == 1


def test_a_private_span_never_reaches_the_ledger_and_forgotten_tool_output_leaves_no_byte(claude):
    def script(request):
        if not request.tool_results():
            return shell("echo token-Kestrel-2207")
        return say("Printed the token.")

    home = claude(script)
    home.setup()
    run = home.run("Print the token with the shell <private>my pin is Heron-8812</private> and say so")
    assert run.returncode == 0, run
    session = run.session_id
    captured = sources(home, session)
    assert captured[0]["text"] == "Print the token with the shell [PRIVATE] and say so"
    assert any("token-Kestrel-2207" in s["text"] for s in captured if s["kind"] == "tool")
    assert files_holding(home.store, "Heron-8812") == []

    report = ledger(home.store, session, "forget", "--text", "token-Kestrel-2207", "-y")
    assert report["sessions"][0]["occurrences"] >= 1 and report["remaining"] == []
    assert files_holding(home.store, "token-Kestrel-2207") == []
