"""`om doctor`: prove that memory capture works, or say exactly what to fix.

Invariants:
- Read-only: doctor opens ledgers with mode=ro and never creates, repairs or
  trusts anything; every finding carries the exact command or edit that fixes it.
- Each check yields {"check", "status" (ok|warn|fail), "finding", "fix"}; the
  report's status is the worst of them, and only "fail" makes the exit status 1.
- Codex facts it relies on (0.169.0): the plugin is `<plugin>@<marketplace>`
  in config.toml `[plugins."…"] enabled`; its cache copy lives at
  plugins/cache/<marketplace>/<plugin>/<version>/ and its data (the store) at
  plugins/data/<plugin>-<marketplace>/; a hook runs only when
  `[hooks.state."<plugin>@<marketplace>:hooks/hooks.json:<event>:<group>:<handler>"]`
  has trusted_hash = sha256 of the hook's canonical identity (recipe below)
  and a trusted_content_hash for the plugin bundle.
"""

import hashlib
import json
import os
import shutil
import stat
import sys
import time

from om import STORE_ENV, __version__

PLUGIN = "om"
MARKETPLACE = "observational-memory"
EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop")
SNAKE = {
    "SessionStart": "session_start",
    "UserPromptSubmit": "user_prompt_submit",
    "PostToolUse": "post_tool_use",
    "Stop": "stop",
    "Interrupt": "interrupt",
    "SessionEnd": "session_end",
    "PreToolUse": "pre_tool_use",
    "PermissionRequest": "permission_request",
    "PreCompact": "pre_compact",
    "PostCompact": "post_compact",
    "SubagentStart": "subagent_start",
    "SubagentStop": "subagent_stop",
}
NO_MATCHER = {"UserPromptSubmit", "Stop", "Interrupt", "SessionEnd"}
CLAMPED_TIMEOUT = {"SessionEnd": 3, "Interrupt": 3}
SHIM_MARKERS = ("/shims/", "/.pyenv/", "/.asdf/", "/mise/", "/.rtx/")
#: p95 hook time above which capture is felt by the user.
HOOK_BUDGET_MS = 250
#: A failure within this window is "recent".
RECENT_FAILURE_S = 24 * 3600


def codex_home():
    return os.path.expanduser(os.environ.get("CODEX_HOME") or "~/.codex")


def plugin_data_dir(home=None):
    return os.path.join(home or codex_home(), "plugins", "data", f"{PLUGIN}-{MARKETPLACE}")


def diagnose(store=None):
    """Run every check; returns {"status", "store", "checks": [...]}."""
    home = codex_home()
    source = "--store"
    if not store:
        store, source = os.environ.get(STORE_ENV), STORE_ENV
    if not store:
        store, source = plugin_data_dir(home), "Codex plugin data"
    store = os.path.realpath(os.path.abspath(os.path.expanduser(store)))
    checks = []
    checks += _runtime_checks(store)
    checks += _store_checks(store, source)
    checks += _codex_checks(home, store)
    checks += _receipt_checks(store)
    from om.claude.doctor import checks as claude_checks

    # Claude Code keeps its own store (its plugin data folder) unless one was named.
    checks += claude_checks(None if source == "Codex plugin data" else store)
    order = {"ok": 0, "warn": 1, "fail": 2}
    worst = max((c["status"] for c in checks), key=order.__getitem__, default="ok")
    return {"status": worst, "version": __version__, "store": store, "store_from": source, "checks": checks}


def render(report):
    lines = [f"om doctor: {report['status']} (store {report['store']}, from {report['store_from']})"]
    width = max(len(c["check"]) for c in report["checks"])
    for c in report["checks"]:
        lines.append(f"{c['status']:<4}  {c['check']:<{width}}  {c['finding']}")
        if c["fix"]:
            lines.append(f"{'':<4}  {'':<{width}}  fix: {c['fix']}")
    return "\n".join(lines) + "\n"


def _check(name, status, finding, fix=""):
    return {"check": name, "status": status, "finding": finding, "fix": fix if status != "ok" else ""}


def _q(path):
    """A path quoted for a POSIX shell."""
    return "'" + str(path).replace("'", "'\\''") + "'"


# -- runtime ----------------------------------------------------------------------


def _runtime_checks(store):
    checks = []
    # The same answers `om self update` acts on: its managed marker and its channel file.
    from om.selfupdate import channel as channels
    from om.selfupdate.ownership import managed_marker

    managed = managed_marker() is not None
    channel = f", update channel {channels.read()}"
    how = "plugin-managed (update the plugin to update it)" if managed else "standalone"
    checks.append(
        _check(
            "runtime.version",
            "ok",
            f"om {__version__} on Python {sys.version.split()[0]} ({sys.executable}), {how}{channel}",
        )
    )
    checks.append(_hook_python_check(store))
    checks.append(_path_check())
    return checks


def _hook_python_check(store):
    recorded = os.path.join(store, ".om-python")
    fix_cmd = (
        f"python3 -c 'import sys; print(sys.executable)' > {_q(recorded)}"
    )
    try:
        with open(recorded, encoding="utf-8") as f:
            python = f.readline().strip()
    except OSError:
        python = ""
    if python:
        if not os.access(python, os.X_OK):
            return _check("runtime.hook_python", "warn", f"hooks' recorded interpreter {python} is gone", fix_cmd)
        if _is_shim(python):
            return _check(
                "runtime.hook_python",
                "warn",
                f"hooks run Python through a version-manager shim ({python}), tens of ms per event",
                fix_cmd,
            )
        return _check("runtime.hook_python", "ok", f"hooks run {python}")
    found = shutil.which("python3")
    if found is None:
        return _check("runtime.hook_python", "fail", "no python3 on PATH: hooks cannot run", "install Python 3.9 or newer")
    if _is_shim(found):
        return _check(
            "runtime.hook_python",
            "warn",
            f"python3 on PATH is a version-manager shim ({found}); hooks pay its start-up until they record the real one",
            fix_cmd,
        )
    return _check("runtime.hook_python", "ok", f"hooks will run {found} (not recorded yet)")


def _is_shim(path):
    return any(m in path for m in SHIM_MARKERS) and "/versions/" not in path


def _path_check():
    first = shutil.which("om")
    if first is None:
        return _check("runtime.path", "ok", "no om on PATH; hooks call the runtime by absolute path")
    if _is_this_runtime(first):
        return _check("runtime.path", "ok", f"om on PATH is this runtime ({first})")
    return _check(
        "runtime.path",
        "warn",
        f"another om earlier on PATH ({first}) shadows this runtime (the observational-memory PyPI package installs one)",
        f"pip uninstall observational-memory  # or remove {_q(first)}, or put this runtime's directory first on PATH",
    )


def _is_this_runtime(path):
    real = os.path.realpath(path)
    if sys.argv and os.path.realpath(sys.argv[0]) == real:
        return True
    try:
        with open(real, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    if head.startswith(b"PK"):  # a zipapp: this project ships one
        return True
    return b"om.cli" in head and b"observational_memory" not in head


# -- store --------------------------------------------------------------------------


def _store_checks(store, source):
    name = "store.exists"
    if not os.path.exists(store):
        return [
            _check(
                name,
                "warn",
                f"store {store} ({source}) does not exist yet: nothing has been captured",
                f"mkdir -m 700 -p {_q(store)}  # or start a Codex session with the plugin enabled",
            )
        ]
    if not os.path.isdir(store):
        return [_check(name, "fail", f"store {store} is not a directory", f"mv {_q(store)} {_q(store + '.bak')}")]
    sessions = sorted(d for d in _listdir(store) if d.startswith("session-"))
    checks = [_check(name, "ok", f"store {store} ({source}) holds {len(sessions)} session(s)")]
    checks.append(_permissions_check(store, sessions))
    checks.append(_integrity_check(store, sessions))
    checks.append(_staging_check(store))
    return checks


def _staging_check(store):
    from om.store import sweep_staging

    removed, kept = sweep_staging(store)
    if kept:
        return _check(
            "store.temp",
            "warn",
            f"{len(kept)} temporary snapshot folder(s) of a fork or import still running or just interrupted"
            + (f"; removed {len(removed)} abandoned one(s)" if removed else ""),
            "rm -rf " + " ".join(_q(p) for p in kept) + "  # once no om fork or import is running",
        )
    if removed:
        return _check("store.temp", "ok", f"removed {len(removed)} temporary folder(s) left by interrupted forks or imports")
    return _check("store.temp", "ok", "no leftover temporary folders")


def _listdir(path):
    try:
        return os.listdir(path)
    except OSError:
        return []


def _permissions_check(store, sessions):
    loose = []
    for path, _want in [(store, 0o700)] + [(os.path.join(store, s), 0o700) for s in sessions]:
        if _mode(path) & 0o077:
            loose.append(path)
        if path != store:
            for f in _listdir(path):
                if f.startswith("memory.sqlite3") and _mode(os.path.join(path, f)) & 0o077:
                    loose.append(os.path.join(path, f))
    if loose:
        return _check(
            "store.permissions",
            "warn",
            f"{len(loose)} path(s) readable by other users, e.g. {loose[0]}",
            f"chmod -R go-rwx {_q(store)}",
        )
    return _check("store.permissions", "ok", "store folders 0700, databases 0600")


def _mode(path):
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return 0


def _integrity_check(store, sessions):
    from om.ledger import integrity_problem

    bad = []
    for s in sessions:
        db = os.path.join(store, s, "memory.sqlite3")
        if not os.path.exists(db):
            continue
        problem = integrity_problem(db)
        if problem:
            bad.append((db, problem))
    if bad:
        db, problem = bad[0]
        return _check(
            "store.integrity",
            "fail",
            f"{len(bad)} session database(s) unusable, e.g. {db}: {problem}",
            f"mv {_q(db)} {_q(db + '.damaged')}  # keeps it for recovery (sqlite3 FILE .recover); the session starts afresh",
        )
    return _check("store.integrity", "ok", f"{len(sessions)} session database(s) pass integrity_check, schema version 1")


# -- Codex ------------------------------------------------------------------------------


def _load_toml(path):
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError:
        return None, None
    from om.tomlio import TomlError, loads

    try:
        return loads(raw.decode("utf-8", "replace")), None
    except TomlError as e:
        return None, str(e)


def trust_hash(event, group, handler):
    """Codex's hook identity hash: sha256 of canonical JSON, before ${PLUGIN_ROOT} substitution."""
    timeout = max(1, int(handler.get("timeout", handler.get("timeoutSec", 600)) or 600))
    if event in CLAMPED_TIMEOUT:
        timeout = min(timeout, CLAMPED_TIMEOUT[event])
    norm = {"type": "command", "command": handler.get("command", ""), "timeout": timeout,
            "async": bool(handler.get("async", False))}
    if handler.get("statusMessage") is not None:
        norm["statusMessage"] = handler["statusMessage"]
    identity = {"event_name": SNAKE.get(event, event), "hooks": [norm]}
    if event not in NO_MATCHER and group.get("matcher") is not None:
        identity["matcher"] = group["matcher"]
    blob = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _codex_checks(home, store):
    checks, root = _plugin_checks(home, store)
    checks.append(_mcp_check(root))
    return checks


def _plugin_checks(home, store):
    """The plugin, hooks and sandbox checks, and the installed plugin root (None when unusable)."""
    plugin_id = f"{PLUGIN}@{MARKETPLACE}"
    config_path = os.path.join(home, "config.toml")
    install = f"codex plugin marketplace add <om checkout> && codex plugin add {plugin_id}"
    config, error = _load_toml(config_path)
    if error:
        return [_check("codex.plugin", "fail", f"{config_path}: {error}", f"edit {_q(config_path)}")], None
    config = config or {}
    entry = (config.get("plugins") or {}).get(plugin_id)
    cache = os.path.join(home, "plugins", "cache", MARKETPLACE, PLUGIN)
    versions = sorted(_listdir(cache))
    if entry is None or not versions:
        what = "not installed" if entry is None else f"listed in config but missing from {cache}"
        return [_check("codex.plugin", "warn", f"Codex plugin {plugin_id} {what} in {home}: nothing captures automatically", install)], None
    root = os.path.join(cache, versions[-1])
    if entry.get("enabled") is False:
        return [
            _check(
                "codex.plugin",
                "fail",
                f"Codex plugin {plugin_id} is installed but disabled",
                f'set enabled = true under [plugins."{plugin_id}"] in {_q(config_path)}',
            )
        ], root
    checks = [_check("codex.plugin", "ok", f"Codex plugin {plugin_id} {versions[-1]} installed and enabled")]
    checks.append(_hooks_check(config, root, plugin_id))
    checks.append(_sandbox_check(config, root, store, config_path))
    return checks, root


def _mcp_check(root):
    """Start the plugin's MCP server as Codex would (installed copy first, else this runtime's tree)."""
    where = "installed plugin"
    if root is None:
        own = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        if not os.path.isfile(os.path.join(own, ".codex-plugin", "plugin.json")):
            return _check(
                "codex.mcp",
                "warn",
                "no plugin copy to start the MCP server from (not installed, and this runtime is not a plugin tree)",
                f"codex plugin marketplace add <om checkout> && codex plugin add {PLUGIN}@{MARKETPLACE}",
            )
        root, where = own, "this runtime's plugin tree"
    from om.mcp.location import plugin_data_dir
    from om.mcp.probe import probe

    result = probe(root)
    finding = f"{result['finding']} ({where} {root})"
    if result["status"] == "ok":
        serves = plugin_data_dir(result["cwd"]) if result["cwd"] else None
        finding += f"; it serves {serves}" if serves else "; it finds no plugin data folder (pass --store)"
    return _check("codex.mcp", result["status"], finding, result["fix"])


def _hooks_check(config, root, plugin_id):
    hooks_file = os.path.join(root, "hooks", "hooks.json")
    try:
        with open(hooks_file, encoding="utf-8") as f:
            spec = json.load(f).get("hooks", {})
    except (OSError, ValueError, AttributeError) as e:
        return _check("codex.hooks", "fail", f"cannot read {hooks_file}: {e}", f"codex plugin add {plugin_id}")
    state = (config.get("hooks") or {}).get("state") or {}
    missing = [e for e in EVENTS if not spec.get(e)]
    if missing:
        return _check(
            "codex.hooks", "fail", f"hooks not registered for {', '.join(missing)}", f"codex plugin add {plugin_id}"
        )
    untrusted, modified, disabled = [], [], []
    for event in EVENTS:
        for gi, group in enumerate(spec.get(event) or []):
            for hi, handler in enumerate(group.get("hooks") or []):
                key = f"{plugin_id}:hooks/hooks.json:{SNAKE[event]}:{gi}:{hi}"
                entry = state.get(key)
                if not isinstance(entry, dict) or not entry.get("trusted_hash"):
                    untrusted.append(event)
                elif entry.get("enabled") is False:
                    disabled.append(event)
                elif entry["trusted_hash"] != trust_hash(event, group, handler) or not entry.get(
                    "trusted_content_hash"
                ):
                    modified.append(event)
    fix = "codex, then /hooks: review and trust the om hooks (Codex skips untrusted or changed hooks silently)"
    if untrusted or modified or disabled:
        parts = []
        if untrusted:
            parts.append("untrusted: " + ", ".join(untrusted))
        if modified:
            parts.append("changed since trusted: " + ", ".join(modified))
        if disabled:
            parts.append("disabled: " + ", ".join(disabled))
        return _check("codex.hooks", "fail", "hooks will not run (" + "; ".join(parts) + ")", fix)
    return _check(
        "codex.hooks",
        "ok",
        f"hooks registered and trusted for {', '.join(EVENTS)} (plugin bundle fingerprint not re-verified offline)",
    )


def _sandbox_check(config, root, store, config_path):
    mode = config.get("sandbox_mode", "workspace-write")
    if mode == "danger-full-access":
        return _check("codex.sandbox", "ok", "sandbox_mode danger-full-access: the agent's shell can write the store")
    if _bundles_mcp(root):
        return _check("codex.sandbox", "ok", "the plugin's MCP server writes the store outside the sandbox")
    roots = (config.get("sandbox_workspace_write") or {}).get("writable_roots") or []
    for r in roots:
        real = os.path.realpath(os.path.expanduser(str(r)))
        if store == real or store.startswith(real.rstrip(os.sep) + os.sep):
            return _check("codex.sandbox", "ok", f"writable_roots covers the store ({r})")
    return _check(
        "codex.sandbox",
        "warn",
        f"sandbox_mode {mode}: the agent's shell cannot write the store, so its checkpoints (apply) fail",
        f'add "{store}" to writable_roots under [sandbox_workspace_write] in {_q(config_path)}'
        f" (or run codex --add-dir {_q(store)})",
    )


def _bundles_mcp(root):
    if os.path.exists(os.path.join(root, ".mcp.json")):
        return True
    try:
        with open(os.path.join(root, ".codex-plugin", "plugin.json"), encoding="utf-8") as f:
            return bool(json.load(f).get("mcpServers"))
    except (OSError, ValueError, AttributeError):
        return False


# -- capture receipts ----------------------------------------------------------------------


def _receipt_checks(store):
    from om.receipts import read_all

    receipts = read_all(store)
    checks = []
    now = time.time()
    for event in EVENTS:
        name = f"capture.{event}"
        r = receipts.get(event)
        if r is None:
            checks.append(
                _check(name, "warn", f"{event} hook never ran", "start a Codex session in a trusted workspace, then rerun om doctor")
            )
            continue
        last = r.get("last_at") or 0
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(last))
        recent = sorted(x for x in r.get("recent_ms", []) if isinstance(x, (int, float)))
        p95 = recent[min(len(recent) - 1, int(0.95 * len(recent)))] if recent else 0.0
        summary = f"last {when} {r.get('outcome')} in {r.get('duration_ms')} ms; {r.get('runs')} run(s), p95 {p95} ms"
        stderr_hint = "rerun the failing step by hand: om --store " + _q(store) + " hook --client codex < event.json"
        if r.get("outcome") == "failed":
            checks.append(_check(name, "fail", f"last run failed ({summary})", stderr_hint))
        elif r.get("last_failure_at") and now - r["last_failure_at"] < RECENT_FAILURE_S:
            checks.append(_check(name, "warn", f"failed within the last day ({summary})", stderr_hint))
        elif p95 > HOOK_BUDGET_MS:
            checks.append(
                _check(name, "warn", f"p95 {p95} ms is over the {HOOK_BUDGET_MS} ms budget ({summary})",
                       "om doctor: check runtime.hook_python (a shim) and the store's disk")
            )
        else:
            checks.append(_check(name, "ok", summary))
    return checks
