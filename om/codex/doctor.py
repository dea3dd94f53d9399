"""Doctor's facts about the Codex installation: plugin, hook trust, sandbox, MCP server, capture.

Invariants:
- Read-only, like all of doctor: config.toml and the plugin's cache copy are read,
  `codex app-server` is asked (`om.codex.trust.ask_codex`), nothing is written.
- Codex facts relied on (0.169.0 and 0.171.0): the plugin is `om@observational-memory`
  in config.toml `[plugins."…"] enabled`; its cache copy lives at
  plugins/cache/<marketplace>/<plugin>/<version>/, rewritten by every
  `codex plugin add` (so its files' modification time is the install time).
- One cause, one verdict: when Codex answers `hooks/list`, its answer (`codex.trust`)
  is the one verdict on trust and `codex.hooks` only says what is registered; a check
  that keeps the hooks from running marks the client blocked, and what depends on
  running hooks (the MCP server's use, the capture receipts) is then not judged.
"""

import json
import os

from om.codex import config as codex_config
from om.codex.trust import HOOKS_FILE, ask_codex, identity_hash, state_key
from om.doctor.findings import check, install_command, quote, skipped

PLUGIN = "om"
MARKETPLACE = "observational-memory"
PLUGIN_ID = f"{PLUGIN}@{MARKETPLACE}"
#: Every hook the plugin registers; Interrupt runs only when a turn is interrupted.
EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "Interrupt")
TRUST_FIX = ("run codex and trust the om hooks when it asks at start-up (or in /hooks); without the TUI,"
             " see docs/codex.md#trust-without-the-tui")


def cache_dir(home):
    return os.path.join(home, "plugins", "cache", MARKETPLACE, PLUGIN)


def presence(home):
    """{"installed", "store", "plugin"}: whether the om plugin is in this CODEX_HOME, and where its hooks write."""
    from om.location import client_store

    listed = False
    try:
        with open(os.path.join(home, "config.toml"), encoding="utf-8", errors="replace") as f:
            listed = PLUGIN_ID in f.read()
    except OSError:
        pass
    return {"installed": listed or bool(_listdir(cache_dir(home))), "store": client_store("codex", home),
            "plugin": True}


def installed_at(root):
    """When `codex plugin add` last wrote the plugin copy (it rewrites every file), or None."""
    times = []
    for rel in ("", os.path.join(".codex-plugin", "plugin.json"), HOOKS_FILE):
        try:
            times.append(os.stat(os.path.join(root, rel)).st_mtime)
        except OSError:
            pass
    return max(times) if times else None


def checks(scope):
    """The codex.* findings, the MCP server's and the capture receipts', when Codex is judged."""
    client = scope.client("codex")
    if client is None:
        return []
    from om.doctor import capture
    from om.doctor.mcp import mcp_check

    found, root, config = _plugin_checks(client)
    when = installed_at(root) if root else None
    if root is not None and config is not None:
        answer, trust = codex_trust_check(client.home)
        found.append(hooks_check(config, root, answered=answer is not None))
        found.append(trust)
        for verdict in found[-2:]:
            if verdict["status"] == "fail":
                client.blocked = client.blocked or verdict["check"]
        found.append(sandbox_check(config, root, scope.store_of(client), os.path.join(client.home, "config.toml")))
    if root is None:
        found.append(skipped("codex.mcp", client.blocked or "codex.plugin"))
    else:
        found.append(mcp_check(root))
    found += capture.checks(client, scope, EVENTS, when)
    return found


def _plugin_checks(client):
    """([codex.plugin finding], the installed copy or None, config or None); marks the client blocked."""
    home = client.home
    config_path = os.path.join(home, "config.toml")
    config, error = codex_config.load(config_path)
    if error:
        client.blocked = "codex.plugin"
        return [check("codex.plugin", "fail", f"{config_path}: {error}", f"edit {quote(config_path)}")], None, None
    config = config or {}
    entry = (config.get("plugins") or {}).get(PLUGIN_ID)
    cache = cache_dir(home)
    versions = sorted(_listdir(cache))
    if entry is None or not versions:
        client.blocked = "codex.plugin"
        what = "not installed" if entry is None else f"listed in config but missing from {cache}"
        return [check("codex.plugin", "warn", f"Codex plugin {PLUGIN_ID} {what} in {home}: nothing captures automatically",
                      install_command("codex"))], None, config
    root = os.path.join(cache, versions[-1])
    if entry.get("enabled") is False:
        client.blocked = "codex.plugin"
        return [check("codex.plugin", "fail", f"Codex plugin {PLUGIN_ID} is installed but disabled",
                      f'set enabled = true under [plugins."{PLUGIN_ID}"] in {quote(config_path)}')], None, config
    when = installed_at(root)
    stamp = f" {_utc(when)}" if when else ""
    return [check("codex.plugin", "ok",
                  f"Codex plugin {PLUGIN_ID} {versions[-1]} installed{stamp} and enabled ({root})")], root, config


def hooks_check(config, root, answered=False):
    """The Codex hooks file registers every event; when Codex could not be asked, config.toml trusts each
    handler's current definition (when it could, its answer is the verdict: codex.trust)."""
    hooks_file = os.path.join(root, HOOKS_FILE)
    reinstall = f"codex plugin add {PLUGIN_ID}"
    try:
        with open(hooks_file, encoding="utf-8") as f:
            spec = json.load(f).get("hooks", {})
    except (OSError, ValueError, AttributeError) as e:
        return check("codex.hooks", "fail", f"cannot read {hooks_file}: {e}", reinstall)
    state = (config.get("hooks") or {}).get("state") or {}
    missing = [e for e in EVENTS if not spec.get(e)]
    if missing:
        return check("codex.hooks", "fail", f"hooks not registered for {', '.join(missing)}", reinstall)
    if answered:
        return check("codex.hooks", "ok", f"{HOOKS_FILE} registers {', '.join(EVENTS)} (whether Codex trusts them:"
                                          " codex.trust)")
    untrusted, changed, disabled = [], [], []
    for event in EVENTS:
        for gi, group in enumerate(spec.get(event) or []):
            for hi, handler in enumerate(group.get("hooks") or []):
                entry = state.get(state_key(PLUGIN_ID, event, gi, hi))
                if not isinstance(entry, dict) or not entry.get("trusted_hash"):
                    untrusted.append(event)
                elif entry.get("enabled") is False:
                    disabled.append(event)
                elif entry["trusted_hash"] != identity_hash(event, group, handler) or not entry.get("trusted_content_hash"):
                    changed.append(event)
    if untrusted or changed or disabled:
        parts = []
        if untrusted:
            parts.append("untrusted: " + ", ".join(untrusted))
        if changed:
            parts.append("changed since trusted: " + ", ".join(changed))
        if disabled:
            parts.append("disabled: " + ", ".join(disabled))
        return check("codex.hooks", "fail", "hooks will not run (" + "; ".join(parts) + ")", TRUST_FIX)
    return check(
        "codex.hooks",
        "ok",
        f"hooks registered for {', '.join(EVENTS)}; config.toml trusts each one's current definition"
        " (Codex alone can tell whether the installed files still match: codex.trust)",
    )


def codex_trust_check(home):
    """(answer or None, check): Codex's own verdict, which alone covers the plugin bundle fingerprint."""
    answer, reason = ask_codex(home, PLUGIN_ID)
    if answer is None:
        return None, check(
            "codex.trust",
            "warn",
            f"could not ask Codex whether it runs the om hooks ({reason}); only Codex can tell whether the"
            " installed plugin files still match the ones you trusted",
            "put codex on PATH and run doctor again, or look at /hooks in codex",
        )
    by_status = {}
    for hook in answer["hooks"]:
        status = "disabled" if hook.get("enabled") is False else str(hook.get("trustStatus") or "unknown")
        by_status.setdefault(status, []).append(_event_name(hook.get("eventName")))
    who = f"Codex {answer['version']}".strip() if answer["version"] else "Codex"
    if not answer["hooks"]:
        return answer, check("codex.trust", "fail", f"{who} lists no om hooks (codex app-server hooks/list)",
                             f"codex plugin add {PLUGIN_ID}")
    bad = {s: events for s, events in by_status.items() if s not in ("trusted", "managed")}
    if not bad:
        return answer, check("codex.trust", "ok",
                             f"{who} reports all {len(answer['hooks'])} om hooks trusted and enabled (hooks/list)")
    parts = [f"{s}: {', '.join(sorted(events))}" for s, events in sorted(bad.items())]
    why = ""
    if "modified" in bad:
        why = ("; modified means the installed plugin files differ from the ones you trusted"
               " (a `codex plugin add` that brought changed files)")
    return answer, check("codex.trust", "fail",
                         f"{who} will not run these om hooks ({'; '.join(parts)}){why}: nothing is captured", TRUST_FIX)


def sandbox_check(config, root, store, config_path):
    mode = config.get("sandbox_mode", "workspace-write")
    if mode == "danger-full-access":
        return check("codex.sandbox", "ok", "sandbox_mode danger-full-access: the agent's shell can write the store")
    if bundles_mcp(root):
        return check("codex.sandbox", "ok", "the plugin's MCP server writes the store outside the sandbox")
    roots = (config.get("sandbox_workspace_write") or {}).get("writable_roots") or []
    for r in roots:
        real = os.path.realpath(os.path.expanduser(str(r)))
        if store == real or store.startswith(real.rstrip(os.sep) + os.sep):
            return check("codex.sandbox", "ok", f"writable_roots covers the store ({r})")
    return check(
        "codex.sandbox",
        "warn",
        f"sandbox_mode {mode}: the agent's shell cannot write the store, so its checkpoints (apply) fail",
        f'add "{store}" to writable_roots under [sandbox_workspace_write] in {quote(config_path)}'
        f" (or run codex --add-dir {quote(store)})",
    )


def bundles_mcp(root):
    if os.path.exists(os.path.join(root, ".mcp.json")):
        return True
    try:
        with open(os.path.join(root, ".codex-plugin", "plugin.json"), encoding="utf-8") as f:
            return bool(json.load(f).get("mcpServers"))
    except (OSError, ValueError, AttributeError):
        return False


def _event_name(name):
    # hooks/list names events in camelCase (postToolUse); the hooks file in PascalCase.
    name = str(name or "?")
    return name[:1].upper() + name[1:]


def _utc(t):
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _listdir(path):
    try:
        return os.listdir(path)
    except OSError:
        return []
