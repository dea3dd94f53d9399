"""The hooks and the launcher never write bytecode into the plugin tree, whoever runs them.

The repository root is the plugin of both clients: each copies it on install, and Claude Code
runs a clone added as a marketplace in place. Bytecode written into it (38 `.pyc` in a clone
whose hooks Claude Code ran) showed up in the clone and in every later copy of it. Here each
way the plugin's Python runs is driven as its caller drives it, with an environment that says
nothing about bytecode (no PYTHONPYCACHEPREFIX, no PYTHONDONTWRITEBYTECODE): the registered hook
commands of both clients, both MCP servers, the pinned runtime's installer and `bin/om` by
hand. The hooks keep their bytecode in the plugin's data folder instead, so every event after
the first still loads compiled modules.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from dist_support import pin_a_runtime

PLUGIN_PARTS = ("bin", "hooks", "om", ".mcp.json", ".claude-plugin", ".codex-plugin", "plugin-pins.json")
CLAUDE = json.loads((ROOT / "tests" / "fixtures" / "claude-2.1.332" / "event_payloads.json").read_text())
CODEX_START = json.loads((ROOT / "tests" / "fixtures" / "codex-0.169.0" / "session-start.plugin.payload.json")
                         .read_text())["payload"]
MCP_INPUT = "".join(json.dumps(m) + "\n" for m in (
    {"jsonrpc": "2.0", "id": 1, "method": "initialize",
     "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "status", "arguments": {"session": "s1"}}}))


def claude_payload(event, variant=None):
    return next(p["payload"] for p in CLAUDE if p["event"] == event and p["thread"] == "main"
                and (variant is None or p["variant"] == variant))


def answered(stdout):
    """The ids of the JSON-RPC requests an MCP server answered without an error."""
    responses = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    return [r["id"] for r in responses if "result" in r and not r["result"].get("isError")]


def bytecode_in(tree):
    return sorted(str(p.relative_to(tree)) for p in tree.rglob("*") if p.name == "__pycache__" or p.suffix == ".pyc")


@pytest.fixture
def plugin(tmp_path):
    """A copy of the plugin where Codex installs it (a clone Claude Code runs in place is the same tree)."""
    return copy_of_the_plugin(tmp_path / "home" / ".codex" / "plugins" / "cache" / "observational-memory" / "om"
                              / "0.1.0")


def copy_of_the_plugin(root):
    root.mkdir(parents=True)
    for part in PLUGIN_PARTS:
        source = ROOT / part
        if source.is_dir():
            shutil.copytree(source, root / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, root / part)
    assert bytecode_in(root) == []
    return root


def quiet_env(**extra):
    """The environment of a client that says nothing about bytecode."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OM_", "PLUGIN_", "CLAUDE_", "CODEX_", "OBSERVATIONAL_MEMORY"))
           and k not in ("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE")}
    env["PATH"] = os.path.dirname(os.path.realpath(sys.executable)) + os.pathsep + env.get("PATH", "")
    env.update(extra)
    return env


def hook(plugin, data, client, event, payload):
    """One event through the command the client's hooks file registers, run as that client runs it."""
    registered = json.loads((plugin / "hooks" / ("codex.json" if client == "codex" else "hooks.json")).read_text())
    command = registered["hooks"][event][0]["hooks"][0]["command"]
    if client == "codex":
        env = quiet_env(PLUGIN_ROOT=str(plugin), PLUGIN_DATA=str(data), CLAUDE_PLUGIN_ROOT=str(plugin),
                        CLAUDE_PLUGIN_DATA=str(data))
    else:
        env = quiet_env(CLAUDE_PLUGIN_ROOT=str(plugin), CLAUDE_PLUGIN_DATA=str(data))
    done = subprocess.run(["/bin/sh", "-c", command], input=json.dumps(payload).encode(), capture_output=True,
                          env=env, cwd="/", timeout=60)
    assert done.returncode == 0 and b"om:" not in done.stderr, done
    return done.stdout


@pytest.mark.parametrize("client", ["claude", "codex"])
def test_the_hooks_write_no_bytecode_into_the_plugin_and_keep_it_in_the_data_folder(plugin, tmp_path, client):
    data = tmp_path / f"{client}-data"
    if client == "claude":
        events = [("SessionStart", claude_payload("SessionStart", "startup")),
                  ("UserPromptSubmit", claude_payload("UserPromptSubmit")),
                  ("PostToolUse", claude_payload("PostToolUse")), ("Stop", claude_payload("Stop"))]
    else:
        turn = {k: CODEX_START[k] for k in ("session_id", "transcript_path", "cwd", "model", "permission_mode")}
        events = [("SessionStart", CODEX_START),
                  ("UserPromptSubmit", dict(turn, hook_event_name="UserPromptSubmit", turn_id="t1", prompt="hi")),
                  ("PostToolUse", dict(turn, hook_event_name="PostToolUse", turn_id="t1", tool_name="Bash",
                                       tool_input={"command": "ls"}, tool_response="a\n", tool_use_id="c1")),
                  ("Stop", dict(turn, hook_event_name="Stop", turn_id="t1", stop_hook_active=False,
                                last_assistant_message="done"))]
    for event, payload in events:
        hook(plugin, data, client, event, payload)
    assert bytecode_in(plugin) == []
    cached = list((data / "pycache").rglob("*.pyc"))
    assert any(p.name.startswith("cli.") for p in cached), sorted(p.name for p in cached)


def test_the_mcp_servers_write_no_bytecode_into_the_plugin(plugin, tmp_path):
    # Codex: .mcp.json, run from the installed copy with only HOME and PATH; the data folder
    # Codex keeps for that copy (it hands it to the hooks) holds the bytecode.
    codex_data = tmp_path / "home" / ".codex" / "plugins" / "data" / "om-observational-memory"
    codex_data.mkdir(parents=True)
    server = json.loads((plugin / ".mcp.json").read_text())["mcpServers"]["om"]
    done = subprocess.run([server["command"], *server["args"]], input=MCP_INPUT, capture_output=True, text=True,
                          cwd=plugin / server["cwd"], timeout=60, env=quiet_env(HOME=str(tmp_path / "home")))
    assert done.returncode == 0 and answered(done.stdout) == [1, 2, 3], done
    assert bytecode_in(plugin) == [] and list((codex_data / "pycache").rglob("server.*.pyc"))
    # Claude Code: the manifest's server, its variables substituted.
    data = tmp_path / "claude-data"
    server = json.loads((plugin / ".claude-plugin" / "plugin.json").read_text())["mcpServers"]["om"]
    args = [a.replace("${CLAUDE_PLUGIN_ROOT}", str(plugin)).replace("${CLAUDE_PLUGIN_DATA}", str(data))
            for a in server["args"]]
    done = subprocess.run([server["command"], *args], input=MCP_INPUT, capture_output=True, text=True,
                          cwd=tmp_path, timeout=60, env=quiet_env(HOME=str(tmp_path / "home")))
    assert done.returncode == 0 and answered(done.stdout) == [1, 2, 3], done
    assert bytecode_in(plugin) == []


@pytest.mark.parametrize("args", [["--version"], ["capabilities"], ["--store", "{store}", "--session", "s1", "status"]],
                         ids=" ".join)
def test_the_launcher_run_by_hand_writes_no_bytecode_into_the_plugin(tmp_path, args):
    clone = copy_of_the_plugin(tmp_path / "clone")  # no data folder anywhere: no bytecode at all
    args = [a.format(store=tmp_path / "store") for a in args]
    for argv in ([sys.executable, str(clone / "bin" / "om"), *args],
                 [sys.executable, "-I", "-S", str(clone / "bin" / "om"), *args]):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=tmp_path, env=quiet_env())
        assert done.returncode == 0, done
    assert bytecode_in(tmp_path) == []


def test_installing_the_pinned_runtime_writes_no_bytecode_into_the_plugin(plugin, tmp_path):
    pin_a_runtime(plugin, tmp_path / "staging", "9.2.0")
    data = tmp_path / "claude-data"
    context = json.loads(hook(plugin, data, "claude", "SessionStart", claude_payload("SessionStart", "startup")))
    assert str(data / "runtime" / "9.2.0" / "om") in context["hookSpecificOutput"]["additionalContext"]
    assert bytecode_in(plugin) == []
