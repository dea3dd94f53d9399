"""`om doctor`'s Claude Code checks, each driven to ok, warn and fail with a throwaway CLAUDE_CONFIG_DIR.

The files are laid out as Claude Code 2.1.332's `claude plugin marketplace add` and
`claude plugin install` write them (tests/e2e/test_claude_plugin.py checks doctor
against a real installation); the marketplace is this repository itself.
"""

import json
import os
import time

import pytest

from conftest import ROOT, run_om
from om import receipts

PLUGIN_ID = "om@observational-memory"
EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop")
REGISTERED = EVENTS + ("PostToolUseFailure",)
SETTINGS_COMMAND = 'om --store "$HOME/.claude/om" hook --client claude || true'


def make_config(tmp_path, installed=True, enabled=True, settings_hooks=False, marketplace=ROOT):
    config = tmp_path / "claude-config"
    (config / "plugins").mkdir(parents=True)
    settings = {}
    if installed:
        (config / "plugins" / "installed_plugins.json").write_text(json.dumps({"version": 2, "plugins": {PLUGIN_ID: [
            {"scope": "user", "installPath": str(config / "plugins" / "cache" / "observational-memory" / "om" / "0.1.0"),
             "version": "0.1.0"}]}}))
        (config / "plugins" / "known_marketplaces.json").write_text(json.dumps({"observational-memory": {
            "source": {"source": "directory", "path": str(marketplace)}, "installLocation": str(marketplace)}}))
        settings["enabledPlugins"] = {PLUGIN_ID: enabled}
    if settings_hooks:
        settings["hooks"] = {e: [{"hooks": [{"type": "command", "command": SETTINGS_COMMAND, "timeout": 30}]}]
                             for e in REGISTERED}
    (config / "settings.json").write_text(json.dumps(settings))
    return config


def report(tmp_path, config, store=None):
    env = {"CLAUDE_CONFIG_DIR": str(config), "CODEX_HOME": str(tmp_path / "no-codex"), "HOME": str(tmp_path / "home"),
           "PATH": os.environ.get("PATH", "")}
    r = run_om("doctor", "--json", *(["--store", store] if store else []), env=env)
    assert r.returncode in (0, 1), r
    return r.json


def doctor(tmp_path, config, store=None):
    return {c["check"]: c for c in report(tmp_path, config, store)["checks"] if c["check"].startswith("claude.")}


def record_all(store, outcome="ok"):
    store.mkdir(mode=0o700, parents=True, exist_ok=True)  # the hook launcher makes it first
    for event in EVENTS:
        assert receipts.record(str(store), event, outcome, 12.5, client="claude")


def test_without_om_in_any_client_there_is_one_line_about_it_and_nothing_else(tmp_path):
    found = report(tmp_path, tmp_path / "absent")
    assert found["clients"] == [] and found["stores"] == []
    # The project memory is the machine's, not a client's: its lines stay (this run's project home exists).
    assert [c["check"] for c in found["checks"]] == ["runtime.version", "runtime.path", "clients", "project.memory",
                                                     "project.permissions"]
    (line,) = [c for c in found["checks"] if c["status"] != "ok"]
    assert line["status"] == "warn" and "nothing is captured automatically" in line["finding"]
    assert "claude plugin install om@observational-memory" in line["fix"]


def test_an_installed_enabled_plugin_with_its_hooks_running_is_all_ok(tmp_path):
    config = make_config(tmp_path)
    store = config / "om"
    record_all(store)
    found = doctor(tmp_path, config)
    assert {name: c["status"] for name, c in found.items()} == dict(
        {"claude.plugin": "ok", "claude.hooks": "ok", "claude.mcp": "ok"},
        **{f"claude.capture.{e}": "ok" for e in EVENTS})
    assert f"hooks run from {ROOT}" in found["claude.plugin"]["finding"]
    assert "starts and lists" in found["claude.mcp"]["finding"] and str(store) in found["claude.mcp"]["finding"]
    assert all(c["fix"] == "" for c in found.values())
    # Listing the tools wrote nothing: the store holds only the receipts.
    assert sorted(os.listdir(store)) == ["receipts"]


def test_without_the_plugin_claude_code_is_not_judged_and_a_disabled_one_fails_with_the_command_that_fixes_it(
        tmp_path):
    assert doctor(tmp_path, make_config(tmp_path, installed=False)) == {}
    disabled = doctor(tmp_path / "b", make_config(tmp_path / "b", enabled=False))
    assert disabled["claude.plugin"]["status"] == "fail"
    assert disabled["claude.plugin"]["fix"] == f"claude plugin enable {PLUGIN_ID}"


def test_settings_hooks_without_the_plugin_are_ok_and_their_store_holds_the_receipts(tmp_path):
    config = make_config(tmp_path, installed=False, settings_hooks=True)
    record_all(tmp_path / "home" / ".claude" / "om")
    found = doctor(tmp_path, config)
    assert found["claude.plugin"]["status"] == "ok" and "settings.json" in found["claude.plugin"]["finding"]
    assert found["claude.hooks"]["status"] == "ok"
    assert all(found[f"claude.capture.{e}"]["status"] == "ok" for e in EVENTS)


def test_hooks_registered_by_both_the_plugin_and_settings_warn(tmp_path):
    found = doctor(tmp_path, make_config(tmp_path, settings_hooks=True))
    assert found["claude.hooks"]["status"] == "warn" and "each event is handled twice" in found["claude.hooks"]["finding"]


def test_a_settings_file_that_is_not_json_fails(tmp_path):
    config = make_config(tmp_path)
    (config / "settings.json").write_text('{"enabledPlugins": ')
    found = doctor(tmp_path, config)
    assert found["claude.plugin"]["status"] == "fail" and "not valid JSON" in found["claude.plugin"]["finding"]


def test_a_plugin_whose_hooks_miss_an_event_fails(tmp_path):
    marketplace = tmp_path / "marketplace"
    (marketplace / ".claude-plugin").mkdir(parents=True)
    (marketplace / ".claude-plugin" / "marketplace.json").write_text(
        (ROOT / ".claude-plugin" / "marketplace.json").read_text())
    (marketplace / "hooks").mkdir(parents=True)
    hooks = json.loads((ROOT / "hooks" / "hooks.json").read_text())
    del hooks["hooks"]["PostToolUseFailure"]
    (marketplace / "hooks" / "hooks.json").write_text(json.dumps(hooks))
    found = doctor(tmp_path, make_config(tmp_path, marketplace=marketplace))
    assert found["claude.hooks"]["status"] == "fail" and "PostToolUseFailure" in found["claude.hooks"]["finding"]
    assert found["claude.mcp"]["status"] == "warn"  # this copy declares no MCP server


@pytest.mark.parametrize("outcome, status", [("failed", "fail"), (None, "warn")])
def test_receipts_flag_a_failed_last_run_and_hooks_that_never_ran(tmp_path, outcome, status):
    config = make_config(tmp_path)
    store = config / "om"
    if outcome:
        record_all(store, outcome)
    found = doctor(tmp_path, config)
    assert all(found[f"claude.capture.{e}"]["status"] == status for e in EVENTS), found
    # Codex receipts in the same store are another client's: they never count for Claude Code.
    store.mkdir(mode=0o700, parents=True, exist_ok=True)
    for event in EVENTS:
        assert receipts.record(str(store), event, "ok", 1.0, now=time.time())
    assert doctor(tmp_path, config)["claude.capture.Stop"]["status"] == status


@pytest.mark.parametrize("scope, settings_name", [("project", "settings.json"), ("local", "settings.local.json")])
def test_a_project_or_local_install_is_enabled_in_that_projects_settings(tmp_path, scope, settings_name):
    config = make_config(tmp_path, enabled=False)
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    installed = json.loads((config / "plugins" / "installed_plugins.json").read_text())
    installed["plugins"][PLUGIN_ID][0].update(scope=scope, projectPath=str(project))
    (config / "plugins" / "installed_plugins.json").write_text(json.dumps(installed))
    (config / "settings.json").write_text("{}")
    found = doctor(tmp_path, config)
    assert found["claude.plugin"]["status"] == "fail"
    assert found["claude.plugin"]["fix"] == f"claude plugin enable {PLUGIN_ID} --scope {scope}"
    (project / ".claude" / settings_name).write_text(json.dumps({"enabledPlugins": {PLUGIN_ID: True}}))
    found = doctor(tmp_path, config)
    assert found["claude.plugin"]["status"] == "ok" and f"scope {scope}" in found["claude.plugin"]["finding"]


def test_doctor_given_the_claude_code_store_judges_claude_code_and_takes_no_home_for_codex(tmp_path):
    config = make_config(tmp_path)
    store = config / "om"
    record_all(store)
    found = report(tmp_path, config, store=store)
    assert found["clients"] == ["claude"] and found["stores"] == [str(store)]
    assert not [c for c in found["checks"] if c["check"].startswith(("codex.", "capture"))]
    assert found["status"] == "ok", [c for c in found["checks"] if c["status"] != "ok"]
