"""`om doctor`'s Claude Code checks: plugin installed and enabled, hooks registered, the
MCP server starting, and capture receipts of the Claude Code hooks.

Invariants:
- Read-only, like the rest of doctor: it reads Claude Code's own files and starts the
  plugin's MCP server only to list its tools; it never installs, enables or edits.
- Each finding is {"check", "status", "finding", "fix"} (om.doctor.findings); names
  start with `claude.`. Claude Code is judged only when om is set up in it (the plugin
  or the settings hooks, `presence`) or when this runtime is its plugin copy.
- One cause, one verdict: a check that keeps the hooks from running marks the client
  blocked, and the capture receipts are then not judged.

Claude Code facts it relies on (2.1.332): the configuration folder is
$CLAUDE_CONFIG_DIR, else ~/.claude. `claude plugin install om@observational-memory`
records the plugin in plugins/installed_plugins.json (`{"plugins": {id: [{scope,
installPath, version, projectPath}]}}`) and enables it in the `enabledPlugins` of the
settings file of its scope (user: settings.json here; project: <projectPath>/.claude/
settings.json; local: <projectPath>/.claude/settings.local.json); its
marketplace is in plugins/known_marketplaces.json, and for a `directory` marketplace
the hooks run from the marketplace folder itself (CLAUDE_PLUGIN_ROOT), not from the
cache copy. The plugin's data folder is plugins/data/om-observational-memory, made at
the first session and deleted by `claude plugin uninstall`; the store is beside the
plugin folders (om.location). Plugin hooks come from hooks/hooks.json; settings hooks
from the `hooks` block of settings.json. A plugin's MCP server from its manifest gets
${CLAUDE_PLUGIN_ROOT} and ${CLAUDE_PLUGIN_DATA} substituted and both as variables.
"""

import json
import os

from om.doctor.findings import check as _finding
from om.doctor.findings import install_command, skipped
from om.doctor.findings import quote as _q

PLUGIN = "om"
MARKETPLACE = "observational-memory"
PLUGIN_ID = f"{PLUGIN}@{MARKETPLACE}"
#: Events whose receipts prove capture works (every session has them).
EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop")
#: Events the hooks must be registered for: failed tool calls arrive only as PostToolUseFailure.
REGISTERED = ("SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop")
LAUNCHER = "hooks/om-hook"
SETTINGS_MARK = "hook --client claude"


def presence(home):
    """{"installed", "store", "plugin"}: whether om is set up in this Claude Code configuration (its
    plugin, or the settings hooks), where its hooks write, and whether they are the plugin's."""
    from om.location import client_store

    installed, _ = _load(os.path.join(home, "plugins", "installed_plugins.json"))
    plugins = installed.get("plugins") if isinstance(installed, dict) else None
    plugin = isinstance(plugins, dict) and bool(plugins.get(PLUGIN_ID))
    settings, _ = _load(os.path.join(home, "settings.json"))
    hooks = _settings_hooks(settings) if isinstance(settings, dict) else []
    store = client_store("claude", home)
    if hooks and not plugin:
        store = _store_of(hooks[0][1], os.environ) or store
    return {"installed": plugin or bool(hooks), "store": store, "plugin": plugin}


def checks(scope):
    """Claude Code findings, when Claude Code is judged (om.doctor.scope)."""
    client = scope.client("claude")
    if client is None:
        return []
    config = client.home
    settings_path = os.path.join(config, "settings.json")
    settings, error = _load(settings_path)
    if error:
        client.blocked = "claude.plugin"
        return [_finding("claude.plugin", "fail", f"{settings_path} is not valid JSON: {error}",
                         f"edit {_q(settings_path)} (Claude Code ignores an invalid settings file, hooks included)"),
                skipped("claude.capture", "claude.plugin")]
    settings = settings if isinstance(settings, dict) else {}
    settings_hooks = _settings_hooks(settings)
    found = []
    root = _plugin_checks(config, settings, settings_hooks, found)
    if root is not None:
        found.append(_hooks_check(root, settings_hooks))
        found.append(_mcp_check(root, config, os.environ, scope.store_of(client)))
    elif settings_hooks:
        found.append(_settings_hooks_check(settings_hooks, settings_path))
    failed = [v["check"] for v in found if v["status"] == "fail" and v["check"] != "claude.mcp"]
    if failed:
        client.blocked = client.blocked or failed[0]
    elif root is None and not settings_hooks:  # no hooks at all: nothing can have run
        client.blocked = client.blocked or "claude.plugin"
    from om.doctor import capture

    found += capture.checks(client, scope, EVENTS)
    return found


def _load(path):
    """(parsed JSON or None when absent, error text or None)."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f), None
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as e:
        return None, str(e)


# -- plugin ---------------------------------------------------------------------------


def _plugin_checks(config, settings, settings_hooks, found):
    """Append the claude.plugin finding; return the plugin root hooks run from, or None."""
    installed, _ = _load(os.path.join(config, "plugins", "installed_plugins.json"))
    entries = ((installed or {}).get("plugins") or {}).get(PLUGIN_ID) if isinstance(installed, dict) else None
    entries = [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
    if not entries:
        if not settings_hooks:
            found.append(_finding("claude.plugin", "warn",
                                  f"Claude Code plugin {PLUGIN_ID} not installed in {config}: nothing captures "
                                  "automatically in Claude Code", install_command("claude")))
        else:
            found.append(_finding("claude.plugin", "ok",
                                  f"Claude Code plugin {PLUGIN_ID} not installed; hooks come from settings.json"))
        return None
    enabled = [e for e in entries if _enabled_in(e, settings) is True]
    if not enabled:
        entry = entries[0]
        scope = entry.get("scope", "user")
        where = "" if scope == "user" else f" (scope {scope}, project {entry.get('projectPath')})"
        found.append(_finding("claude.plugin", "fail",
                              f"Claude Code plugin {PLUGIN_ID} is installed but not enabled{where}",
                              f"claude plugin enable {PLUGIN_ID}" + ("" if scope == "user" else f" --scope {scope}")))
        return None
    entry = enabled[0]
    root = _run_root(config, entry)
    if root is None or not os.path.isdir(root):
        found.append(_finding("claude.plugin", "fail",
                              f"Claude Code plugin {PLUGIN_ID} is enabled but its folder {root} is missing",
                              f"claude plugin install {PLUGIN_ID}"))
        return None
    found.append(_finding("claude.plugin", "ok",
                          f"Claude Code plugin {PLUGIN_ID} {entry.get('version', '?')} installed and enabled "
                          f"(scope {entry.get('scope', '?')}, hooks run from {root})"))
    return root


def _enabled_in(entry, settings):
    """`enabledPlugins` of the settings file the entry's scope writes: user, project or local."""
    scope = entry.get("scope", "user")
    if scope != "user":
        project = entry.get("projectPath")
        if not isinstance(project, str):
            return None
        name = "settings.json" if scope == "project" else "settings.local.json"
        settings, _ = _load(os.path.join(project, ".claude", name))
    enabled = settings.get("enabledPlugins") if isinstance(settings, dict) else None
    return enabled.get(PLUGIN_ID) if isinstance(enabled, dict) else None


def _run_root(config, entry):
    """Where the hooks run from: a directory marketplace's own folder, else the installed copy."""
    known, _ = _load(os.path.join(config, "plugins", "known_marketplaces.json"))
    market = known.get(MARKETPLACE) if isinstance(known, dict) else None
    source = market.get("source") if isinstance(market, dict) else None
    if isinstance(market, dict) and isinstance(source, dict) and source.get("source") == "directory":
        location = str(market.get("installLocation") or source.get("path"))
        manifest, _ = _load(os.path.join(location, ".claude-plugin", "marketplace.json"))
        listed = manifest.get("plugins") if isinstance(manifest, dict) else None
        for plugin in listed if isinstance(listed, list) else []:
            if isinstance(plugin, dict) and plugin.get("name") == PLUGIN and isinstance(plugin.get("source"), str):
                return os.path.normpath(os.path.join(location, plugin["source"]))
    path = entry.get("installPath")
    return path if isinstance(path, str) else None


# -- hooks ------------------------------------------------------------------------------


def _settings_hooks(settings):
    """[(event, command)] of settings.json hooks that run `om ... hook --client claude`."""
    out = []
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return out
    for event, groups in hooks.items():
        for group in groups if isinstance(groups, list) else []:
            for handler in (group.get("hooks") or []) if isinstance(group, dict) else []:
                command = handler.get("command") if isinstance(handler, dict) else None
                if isinstance(command, str) and SETTINGS_MARK in command:
                    out.append((event, command))
    return out


def _hooks_check(root, settings_hooks):
    hooks_file = os.path.join(root, "hooks", "hooks.json")
    spec, error = _load(hooks_file)
    if error or not isinstance(spec, dict) or not isinstance(spec.get("hooks"), dict):
        return _finding("claude.hooks", "fail", f"cannot read {hooks_file}: {error or 'no hooks object'}",
                        f"claude plugin install {PLUGIN_ID}")
    spec = spec["hooks"]
    missing = [e for e in REGISTERED if not any(LAUNCHER in c for c in _commands(spec.get(e)))]
    if missing:
        return _finding("claude.hooks", "fail", f"hooks not registered for {', '.join(missing)} in {hooks_file}",
                        f"claude plugin install {PLUGIN_ID}")
    if not os.path.isfile(os.path.join(root, LAUNCHER)):
        return _finding("claude.hooks", "fail", f"the hook launcher {os.path.join(root, LAUNCHER)} is missing",
                        f"claude plugin install {PLUGIN_ID}")
    if settings_hooks:
        return _finding("claude.hooks", "warn",
                        "om hooks are registered twice, by the plugin and in settings.json: each event is "
                        "handled twice", "remove the om entries from the hooks block of settings.json")
    return _finding("claude.hooks", "ok", f"plugin hooks registered for {', '.join(REGISTERED)} (no trust step in "
                                          "Claude Code: they run in every session)")


def _commands(groups):
    for group in groups if isinstance(groups, list) else []:
        for handler in (group.get("hooks") or []) if isinstance(group, dict) else []:
            if isinstance(handler, dict) and isinstance(handler.get("command"), str):
                yield handler["command"]


def _settings_hooks_check(settings_hooks, settings_path):
    events = sorted({e for e, _ in settings_hooks})
    missing = [e for e in REGISTERED if e not in events]
    if missing:
        return _finding("claude.hooks", "fail", f"settings.json hooks miss {', '.join(missing)}",
                        f"add the om hooks block of docs/claude.md to {_q(settings_path)}")
    return _finding("claude.hooks", "ok", f"settings.json hooks registered for {', '.join(REGISTERED)}")


def _store_of(command, environ):
    """The --store a settings hook command names (variables and ~ expanded), or None."""
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if "--store" in words[:-1]:
        value = words[words.index("--store") + 1]
        home = environ.get("HOME") or os.path.expanduser("~")
        return os.path.expanduser(value.replace("${HOME}", home).replace("$HOME", home))
    return environ.get("OBSERVATIONAL_MEMORY_STORE")


# -- MCP --------------------------------------------------------------------------------


def _mcp_check(root, config, environ, serves):
    """Start the plugin's MCP server as Claude Code would, and list its tools; `serves` is the store it will serve."""
    from om.mcp.probe import exchange

    manifest = os.path.join(root, ".claude-plugin", "plugin.json")
    data, error = _load(manifest)
    servers = (data or {}).get("mcpServers") if isinstance(data, dict) else None
    entry = servers.get(PLUGIN) if isinstance(servers, dict) else None
    if error or not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return _finding("claude.mcp", "warn", f"{manifest} declares no om MCP server: the agent can only reach the "
                                              "ledger through its shell", f"claude plugin install {PLUGIN_ID}")
    from om.location import plugin_data_dir

    data = plugin_data_dir("claude", config)

    def expand(value):
        return str(value).replace("${CLAUDE_PLUGIN_ROOT}", root).replace("${CLAUDE_PLUGIN_DATA}", data)

    import shutil

    command = expand(entry["command"])
    if os.sep not in command:
        found = shutil.which(command, path=environ.get("PATH", ""))
        if found is None:
            return _finding("claude.mcp", "fail", f"MCP server {PLUGIN!r} cannot start: {command} is not on PATH",
                            "install Python 3.9 or newer as python3 on the PATH Claude Code runs with")
        command = found
    args = [expand(a) for a in entry.get("args") or []]
    env = {k: v for k, v in environ.items() if not k.startswith("CLAUDE_PLUGIN_")}
    env.update({str(k): expand(v) for k, v in (entry.get("env") or {}).items()})
    env.update(CLAUDE_PLUGIN_ROOT=root, CLAUDE_PLUGIN_DATA=data)
    shown = " ".join([entry["command"]] + [str(a) for a in entry.get("args") or []])
    try:
        cwd = os.getcwd()
    except OSError:
        cwd = root
    result = exchange(PLUGIN, [command] + args, cwd, env, shown, " ".join([command] + args) + " < /dev/null",
                      f"claude plugin install {PLUGIN_ID}")
    finding = result["finding"] + (f"; it serves {serves}" if result["status"] == "ok" else "")
    return _finding("claude.mcp", result["status"], finding, result["fix"])
