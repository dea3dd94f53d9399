"""The plugin's manifests for both clients describe one plugin, with one launcher behind both hooks files."""

import json

from conftest import ROOT

PLUGIN = ROOT


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
    # Both serve their client's store (om.location): Claude Code substitutes the data folder,
    # Codex substitutes nothing and the server finds it from the plugin copy it runs in.
    assert claude["om"]["args"][2:] == ["${CLAUDE_PLUGIN_ROOT}/bin/om", "mcp", "--client", "claude",
                                        "--plugin-data", "${CLAUDE_PLUGIN_DATA}"]
    assert codex["om"]["args"] == ["-I", "-S", "bin/om", "mcp", "--client", "codex"]
    assert (PLUGIN / "bin" / "om").is_file()
    assert "hooks" not in load(PLUGIN / ".claude-plugin" / "plugin.json")  # hooks/hooks.json is read anyway


def test_each_client_registers_the_one_launcher_in_a_hooks_file_of_its_own_and_fails_open():
    # Claude Code always reads hooks/hooks.json and runs hooks with /bin/sh: its shell reads
    # the launcher (`command .`), no second shell per event. Codex reads the file its
    # manifest declares (then no hooks/hooks.json) and runs hooks with the user's $SHELL
    # (zsh, fish...), so its command starts sh itself.
    assert load(PLUGIN / ".codex-plugin" / "plugin.json")["hooks"] == "./hooks/codex.json"
    claude = load(PLUGIN / "hooks" / "hooks.json")["hooks"]
    codex = load(PLUGIN / "hooks" / "codex.json")["hooks"]
    assert set(claude) == {"SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop"}
    assert set(codex) == {"SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "Interrupt"}
    for spec, command in ((claude, 'command . "${CLAUDE_PLUGIN_ROOT}/hooks/om-hook" || true'),
                          (codex, 'sh "${PLUGIN_ROOT}/hooks/om-hook" || true')):
        for event, groups in spec.items():
            (group,) = groups
            (handler,) = group["hooks"]
            # No absolute path or secret: Claude Code may show the command to the model.
            assert handler["command"] == command, event
            assert handler["timeout"] == (3 if event == "Interrupt" else 30), event
