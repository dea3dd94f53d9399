"""The plugin's manifests for both clients describe one plugin, and the hooks file serves both."""

import json

from conftest import ROOT

PLUGIN = ROOT / "plugin"


def load(path):
    return json.loads(path.read_text())


def test_both_clients_install_the_same_plugin_at_the_same_version():
    codex = load(PLUGIN / ".codex-plugin" / "plugin.json")
    claude = load(PLUGIN / ".claude-plugin" / "plugin.json")
    (listed,) = load(ROOT / ".claude-plugin" / "marketplace.json")["plugins"]
    (codex_listed,) = load(ROOT / ".agents" / "plugins" / "marketplace.json")["plugins"]
    assert codex["name"] == claude["name"] == listed["name"] == codex_listed["name"] == "om"
    assert codex["version"] == claude["version"] == listed["version"]
    assert (ROOT / listed["source"]).resolve() == (ROOT / codex_listed["source"]["path"]).resolve() == PLUGIN
    assert load(ROOT / ".claude-plugin" / "marketplace.json")["name"] == "observational-memory"


def test_the_claude_manifest_declares_the_mcp_server_under_the_name_that_replaces_the_codex_one():
    # Claude Code reads .mcp.json too; a manifest server of the same name takes its place.
    claude = load(PLUGIN / ".claude-plugin" / "plugin.json")["mcpServers"]
    codex = load(PLUGIN / ".mcp.json")["mcpServers"]
    assert set(claude) == set(codex) == {"om"}
    assert claude["om"]["args"][2:] == ["${CLAUDE_PLUGIN_ROOT}/bin/om", "mcp", "--store", "${CLAUDE_PLUGIN_DATA}"]
    assert (PLUGIN / "bin" / "om").is_file()
    assert "hooks" not in load(PLUGIN / ".claude-plugin" / "plugin.json")  # hooks/hooks.json is read anyway


def test_every_registered_hook_runs_the_launcher_through_a_variable_both_clients_set_and_fails_open():
    hooks = load(PLUGIN / "hooks" / "hooks.json")["hooks"]
    # PostToolUseFailure is Claude Code's alone (failed tool calls); Codex drops names it does not know.
    assert {"SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop"} <= set(hooks)
    for event, groups in hooks.items():
        for group in groups:
            for handler in group["hooks"]:
                # No absolute path or secret: Claude Code may show the command to the model.
                # The client's own `sh -c` reads the launcher (`.`): no second shell per event.
                assert handler["command"] == 'command . "${CLAUDE_PLUGIN_ROOT}/hooks/om-hook" || true', event
