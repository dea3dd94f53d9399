"""The one hook launcher, run through each client's registered command as that client runs it.

Claude Code 2.1.332 reads hooks/hooks.json, sets only CLAUDE_PLUGIN_ROOT and
CLAUDE_PLUGIN_DATA for plugin hooks and runs the command with /bin/sh; Codex 0.169.0
reads the file its manifest declares, hooks/codex.json, sets those and
PLUGIN_ROOT/PLUGIN_DATA, and runs the command with the user's $SHELL. Commands are taken
verbatim from those files and run on recorded payloads.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from dist_support import pin_a_runtime

PLUGIN = ROOT
REGISTERED = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
CODEX_REGISTERED = json.loads((PLUGIN / "hooks" / "codex.json").read_text())["hooks"]
CLAUDE = json.loads((ROOT / "tests" / "fixtures" / "claude-2.1.332" / "event_payloads.json").read_text())
CODEX_START = json.loads((ROOT / "tests" / "fixtures" / "codex-0.169.0" / "session-start.plugin.payload.json")
                         .read_text())["payload"]


def claude_payload(event, variant=None):
    return next(p["payload"] for p in CLAUDE if p["event"] == event and p["thread"] == "main"
                and (variant is None or p["variant"] == variant))


def plugin_copy(tmp_path):
    root = tmp_path / "plugin"
    for part in ("hooks", "bin", "om"):
        shutil.copytree(PLUGIN / part, root / part, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def launch(root, payload, claude_data=None, codex_data=None, event="SessionStart"):
    """Run the registered command with the variables a client sets; return (response, stderr)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OM_", "PLUGIN_", "CLAUDE_"))}
    env["PATH"] = os.path.dirname(os.path.realpath(sys.executable)) + os.pathsep + env.get("PATH", "")
    env["CLAUDE_PLUGIN_ROOT"] = str(root)
    if claude_data is not None:
        env["CLAUDE_PLUGIN_DATA"] = str(claude_data)
    if codex_data is not None:
        env.update(PLUGIN_ROOT=str(root), PLUGIN_DATA=str(codex_data))
    # Each client runs the command of its own hooks file.
    command = (CODEX_REGISTERED if codex_data is not None else REGISTERED)[event][0]["hooks"][0]["command"]
    proc = subprocess.run(["/bin/sh", "-c", command], input=json.dumps(payload).encode(), capture_output=True,
                          env=env, cwd="/", timeout=60)
    assert proc.returncode == 0, proc
    return (json.loads(proc.stdout) if proc.stdout.strip() else None), proc.stderr.decode()


def test_with_claude_codes_variables_the_launcher_runs_the_claude_adapter(tmp_path):
    root, data = plugin_copy(tmp_path), tmp_path / "claude-data"
    payload = claude_payload("SessionStart", "startup")
    response, _ = launch(root, payload, claude_data=data)
    output = response["hookSpecificOutput"]
    assert output["hookEventName"] == "SessionStart" and payload["session_id"] in output["additionalContext"]
    assert (data / "receipts" / "claude" / "SessionStart.json").is_file()
    assert not (data / "receipts" / "SessionStart.json").exists()
    prompt = claude_payload("UserPromptSubmit")
    assert launch(root, prompt, claude_data=data, event="UserPromptSubmit")[0] is None


def test_with_codexs_variables_the_launcher_runs_the_codex_adapter_whatever_else_is_set(tmp_path):
    root, data = plugin_copy(tmp_path), tmp_path / "codex-data"
    # Codex sets CLAUDE_PLUGIN_DATA too; PLUGIN_DATA decides.
    response, _ = launch(root, CODEX_START, claude_data=data, codex_data=data)
    assert CODEX_START["session_id"] in response["hookSpecificOutput"]["additionalContext"]
    assert (data / "receipts" / "SessionStart.json").is_file()
    assert not (data / "receipts" / "claude").exists()


@pytest.mark.parametrize("breakage", ["no data variable", "data path is a regular file"])
def test_the_launcher_fails_open_with_one_advisory_and_exit_0(tmp_path, breakage):
    root = plugin_copy(tmp_path)
    data = tmp_path / "claude-data"
    if breakage == "data path is a regular file":
        data.write_text("not a directory")
    for event in ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"):
        response, stderr = launch(root, claude_payload(event), event=event,
                                  claude_data=None if breakage == "no data variable" else data)
        assert set(response) == {"systemMessage"} and response["systemMessage"].startswith("om: "), event
        assert stderr.startswith("om: ")
    if data.exists():
        assert data.read_text() == "not a directory"


@pytest.mark.parametrize("client", ["claude", "codex"])
@pytest.mark.parametrize("status", [1, 2, 3])
def test_a_runtime_that_exits_nonzero_gives_the_runtime_failed_advisory_and_exit_0(tmp_path, client, status):
    # The remembered interpreter stands in for a runtime that fails: Python's own exit 2
    # (script unreadable) would read as "block" to both clients if it passed through.
    root, data = plugin_copy(tmp_path), tmp_path / "data"
    data.mkdir()
    failing = tmp_path / "python-that-fails"
    failing.write_text(f"#!/bin/sh\ncat >/dev/null\nexit {status}\n")
    failing.chmod(0o755)
    (data / ".om-python").write_text(f"{failing}\n")
    payload = claude_payload("Stop") if client == "claude" else {**CODEX_START, "hook_event_name": "Stop"}
    response, stderr = launch(root, payload, event="Stop",
                              **({"claude_data": data} if client == "claude" else {"codex_data": data}))
    assert response == {"systemMessage": "om: the hook runtime failed; memory capture skipped, your task continues."}
    assert stderr == f"om: the hook runtime failed: exit status {status}\n"


def test_a_pinned_runtime_installed_by_a_claude_code_hook_names_the_claude_plugin_as_its_owner(tmp_path):
    root, data = plugin_copy(tmp_path), tmp_path / "claude-data"
    pin_a_runtime(root, tmp_path / "staging", "9.2.0")
    response, _ = launch(root, claude_payload("SessionStart", "startup"), claude_data=data)
    installed = data / "runtime" / "9.2.0" / "om"
    assert f" {installed} --store " in response["hookSpecificOutput"]["additionalContext"]
    refusal = subprocess.run([sys.executable, "-I", "-S", str(installed), "self", "update", "--check"],
                             capture_output=True, text=True, timeout=60)
    assert refusal.returncode == 67 and "managed by the om Claude Code plugin" in refusal.stderr, refusal


def _registered(event="Stop"):
    return REGISTERED[event][0]["hooks"][0]["command"]


@pytest.mark.parametrize("shell", ["/bin/sh", "bash --posix", "bash"])
@pytest.mark.parametrize("breakage", ["the plugin root is gone", "the launcher is a directory",
                                      "the launcher does not parse", "CLAUDE_PLUGIN_ROOT is unset"])
def test_the_registered_command_exits_0_even_when_the_shell_cannot_read_the_launcher(tmp_path, shell, breakage):
    # The client's own shell reads the launcher (`command .`): a missing or broken file
    # must not end that shell with its own status (dash exits 2 for an unreadable script).
    root = plugin_copy(tmp_path)
    if breakage == "the plugin root is gone":
        shutil.rmtree(root)
    elif breakage == "the launcher is a directory":
        (root / "hooks" / "om-hook").unlink()
        (root / "hooks" / "om-hook").mkdir()
    elif breakage == "the launcher does not parse":
        (root / "hooks" / "om-hook").write_text("if then fi (\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OM_", "PLUGIN_", "CLAUDE_"))}
    if breakage != "CLAUDE_PLUGIN_ROOT is unset":
        env["CLAUDE_PLUGIN_ROOT"] = str(root)
    env["CLAUDE_PLUGIN_DATA"] = str(tmp_path / "data")
    proc = subprocess.run([*shell.split(), "-c", _registered()], input=json.dumps(claude_payload("Stop")).encode(),
                          capture_output=True, env=env, cwd="/", timeout=60)
    assert proc.returncode == 0, proc
    assert proc.stdout == b""  # nothing a client could misread as a decision


@pytest.mark.parametrize("shell", ["/bin/sh", "bash --posix"])
def test_read_by_the_clients_shell_the_launcher_ignores_the_environments_own_names(tmp_path, shell):
    # The launcher's variables live in the client's shell, beside the environment's.
    root, data = plugin_copy(tmp_path), tmp_path / "claude-data"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OM_", "PLUGIN_", "CLAUDE_"))}
    env.update(CLAUDE_PLUGIN_ROOT=str(root), CLAUDE_PLUGIN_DATA=str(data), root="/nonexistent", py="/bin/false",
               runtime="/bin/false", data="/nonexistent", om_py="/bin/false", om_runtime="/bin/false",
               om_root="/nonexistent", om_data="/nonexistent")
    payload = claude_payload("SessionStart", "startup")
    proc = subprocess.run([*shell.split(), "-c", _registered("SessionStart")], input=json.dumps(payload).encode(),
                          capture_output=True, env=env, cwd="/", timeout=60)
    assert proc.returncode == 0, proc
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert payload["session_id"] in context and str(data) in context
    assert (data / "receipts" / "claude" / "SessionStart.json").is_file()


def test_run_as_a_script_of_its_own_the_launcher_works_as_well(tmp_path):
    # `sh .../hooks/om-hook` (settings files, older registrations) finds the root from its own path.
    root, data = plugin_copy(tmp_path), tmp_path / "claude-data"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OM_", "PLUGIN_", "CLAUDE_"))}
    env["CLAUDE_PLUGIN_DATA"] = str(data)
    payload = claude_payload("SessionStart", "startup")
    proc = subprocess.run(["/bin/sh", str(root / "hooks" / "om-hook")], input=json.dumps(payload).encode(),
                          capture_output=True, env=env, cwd="/", timeout=60)
    assert proc.returncode == 0, proc
    assert payload["session_id"] in json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
