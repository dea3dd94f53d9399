"""Start a plugin's MCP server the way Codex does and ask it for its tools.

Invariants:
- The launch follows the plugin's own declaration (`mcpServers` in
  `.codex-plugin/plugin.json`, else `.mcp.json`), with Codex's rules: a
  relative `cwd` is resolved against the plugin root, the command is not
  rewritten, and the environment is only HOME and PATH plus the entry's
  literal `env` and the variables its `env_vars` names.
- The server gets initialize, notifications/initialized and tools/list, then
  end of input; it is killed if it has not exited within the timeout. Nothing
  is called, so probing never writes to a store.
- The result is data ({"status", "finding", "fix", ...}); nothing is printed.
"""

import json
import os
import shutil
import subprocess
import time

SERVER = "om"
#: The ledger operations the server must offer (search is optional in a runtime).
REQUIRED_TOOLS = ("prime", "view", "view_all", "recall", "status", "pending", "apply", "pause", "resume")
OPTIONAL_TOOLS = ("search",)
TIMEOUT_S = 5.0
PROTOCOL = "2025-06-18"


def declaration(root):
    """(server name, entry) of the plugin's MCP server, or raise ValueError saying why not."""
    manifest = os.path.join(root, ".codex-plugin", "plugin.json")
    servers, where = None, os.path.join(root, ".mcp.json")
    try:
        with open(manifest, encoding="utf-8") as f:
            declared = json.load(f).get("mcpServers")
    except (OSError, ValueError, AttributeError):
        declared = None
    if isinstance(declared, dict):
        servers, where = declared, manifest
    elif isinstance(declared, str):
        where = os.path.normpath(os.path.join(root, declared))
    if servers is None:
        try:
            with open(where, encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            raise ValueError(f"the plugin declares no MCP server ({where} is missing)") from None
        except (OSError, ValueError) as e:
            raise ValueError(f"cannot read {where}: {e}") from None
        servers = data.get("mcpServers", data) if isinstance(data, dict) else None
    if not isinstance(servers, dict) or not servers:
        raise ValueError(f"{where} lists no MCP server")
    name = SERVER if SERVER in servers else next(iter(servers))
    entry = servers[name]
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        raise ValueError(f"MCP server {name!r} in {where} has no command")
    return name, entry


def launch_spec(root, entry, environ=None):
    """(argv, cwd, env) exactly as Codex would start the entry."""
    environ = os.environ if environ is None else environ
    # Codex passes HOME and PATH. PYTHONPYCACHEPREFIX too here: it moves bytecode, never what runs,
    # and whoever set it (the test suite does) keeps bytecode out of the plugin tree.
    env = {k: environ[k] for k in ("HOME", "PATH", "PYTHONPYCACHEPREFIX") if k in environ}
    env.update({str(k): str(v) for k, v in (entry.get("env") or {}).items()})
    for name in entry.get("env_vars") or []:
        if name in environ:
            env[name] = environ[name]
    cwd = entry.get("cwd")
    cwd = os.path.normpath(os.path.join(root, cwd)) if isinstance(cwd, str) else os.getcwd()
    command = entry["command"]
    if os.sep not in command:
        found = shutil.which(command, path=env.get("PATH", ""))
        if found is None:
            raise FileNotFoundError(f"{command} is not on PATH")
        command = found
    return [command] + [str(a) for a in entry.get("args") or []], cwd, env


def probe(root, environ=None, timeout=TIMEOUT_S):
    """Start, list, stop. Returns {"status", "finding", "fix", "tools", "ms", "command", "cwd"}."""
    manual = f"cd '{root}' && printf '' | " + "{cmd}"
    reinstall = "codex plugin add om@observational-memory"
    try:
        name, entry = declaration(root)
    except ValueError as e:
        return _result("warn", f"{e}: the agent can only reach the ledger through its shell", reinstall)
    try:
        argv, cwd, env = launch_spec(root, entry, environ)
    except FileNotFoundError as e:
        return _result("fail", f"MCP server {name!r} cannot start: {e}",
                       "install Python 3.9 or newer as python3 on the PATH Codex runs with")
    shown = " ".join([entry["command"]] + [str(a) for a in entry.get("args") or []])
    return exchange(name, argv, cwd, env, shown, manual.format(cmd=shown), reinstall, timeout)


def exchange(name, argv, cwd, env, shown, manual, reinstall, timeout=TIMEOUT_S):
    """Start `argv` as MCP server `name`, list its tools, stop it; the result of `probe`.

    Shared by every client's check: only how the server is launched differs.
    """
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": PROTOCOL, "capabilities": {},
                    "clientInfo": {"name": "om-doctor", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    payload = "".join(json.dumps(r) + "\n" for r in requests).encode("utf-8")
    started = time.monotonic()
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
    except OSError as e:
        return _result("fail", f"MCP server {name!r} ({shown}) cannot start: {e}", reinstall, shown, cwd)
    try:
        out, err = proc.communicate(payload, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return _result("fail", f"MCP server {name!r} ({shown}) did not answer tools/list within {timeout:g} s",
                       manual, shown, cwd)
    ms = round((time.monotonic() - started) * 1000)
    responses = {}
    for line in out.splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            return _result("fail", f"MCP server {name!r} wrote something other than JSON-RPC to stdout:"
                           f" {line[:80]!r}", manual, shown, cwd)
        if isinstance(message, dict) and message.get("id") in (1, 2):
            responses[message["id"]] = message
    tools = (responses.get(2, {}).get("result") or {}).get("tools")
    if not isinstance(tools, list):
        why = _last_line(err) or f"exit status {proc.returncode}"
        failed = "initialize" if "result" not in responses.get(1, {}) else "tools/list"
        return _result("fail", f"MCP server {name!r} ({shown}) did not answer {failed}: {why}",
                       manual, shown, cwd)
    names = [t["name"] for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)]
    missing = [t for t in REQUIRED_TOOLS if t not in names]
    if missing:
        return _result("fail", f"MCP server {name!r} lacks tools: {', '.join(missing)} (lists {', '.join(names)})",
                       reinstall, shown, cwd, names, ms)
    extra = "" if all(t in names for t in OPTIONAL_TOOLS) else " (without search)"
    return _result("ok", f"MCP server {name!r} ({shown}) starts and lists {len(names)} tools{extra} in {ms} ms",
                   "", shown, cwd, names, ms)


def _result(status, finding, fix, command="", cwd="", tools=(), ms=None):
    return {"status": status, "finding": finding, "fix": fix, "command": command, "cwd": cwd,
            "tools": list(tools), "ms": ms}


def _last_line(data):
    lines = [x for x in data.decode("utf-8", "replace").splitlines() if x.strip()]
    return lines[-1].strip()[:200] if lines else ""
