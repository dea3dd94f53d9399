"""Whether Codex will run the plugin's hooks: its trust recipe, and Codex's own answer.

Codex (0.169.0 and 0.171.0 alike) runs a plugin hook only while
`[hooks.state."<plugin>@<marketplace>:hooks/codex.json:<event>:<group>:<handler>"]`
in config.toml holds `trusted_hash` = the hook's identity hash (recipe in
`identity_hash`) and `trusted_content_hash` = the fingerprint of the installed
plugin bundle, which covers every file of the plugin's cache copy. The identity
can be checked offline; the bundle fingerprint only Codex computes, so
`ask_codex` puts the question to `codex app-server` (JSON-RPC `hooks/list`).

Invariants:
- Read-only: nothing here writes config or trusts anything.
- `ask_codex` is bounded: the app-server gets `timeout` seconds in all, then is
  killed; every failure comes back as a reason, never as an exception.
"""

import hashlib
import json
import os
import shutil
import subprocess
import time

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
#: Events whose matcher Codex ignores (it is left out of the identity).
NO_MATCHER = {"UserPromptSubmit", "Stop", "Interrupt", "SessionEnd"}
#: Codex clamps these hooks' timeouts (seconds), before hashing.
CLAMPED_TIMEOUT = {"SessionEnd": 3, "Interrupt": 3}
#: The plugin's Codex hooks file, as .codex-plugin/plugin.json declares it (`"hooks"`);
#: Codex then reads no hooks/hooks.json, which is Claude Code's.
HOOKS_FILE = "hooks/codex.json"
#: An app-server answers hooks/list in about 0.3 s; this bounds a stuck one.
TIMEOUT_S = 8.0


def state_key(plugin_id, event, group_index, handler_index):
    return f"{plugin_id}:{HOOKS_FILE}:{SNAKE.get(event, event)}:{group_index}:{handler_index}"


def identity_hash(event, group, handler):
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


def ask_codex(home, plugin_id, timeout=TIMEOUT_S, cwd=None):
    """({"codex", "version", "hooks": [hooks/list entries of plugin_id]}, None) or (None, reason)."""
    codex = shutil.which("codex")
    if codex is None:
        return None, "no codex on PATH"
    env = dict(os.environ)
    env["CODEX_HOME"] = home
    if cwd is None or not os.path.isdir(cwd):
        cwd = os.path.expanduser("~")
        if not os.path.isdir(cwd):  # a HOME that does not exist: the question does not depend on it
            cwd = "/"
    try:
        proc = subprocess.Popen([codex, "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    except OSError as e:
        return None, f"cannot start {codex} app-server: {e}"
    deadline = time.monotonic() + timeout
    if proc.stdout is None:  # pragma: no cover - stdout=PIPE always gives one
        _stop(proc)
        return None, f"{codex} app-server: no output pipe"
    try:
        reader = _Lines(proc.stdout.fileno())
        _send(proc, {"id": 1, "method": "initialize",
                     "params": {"clientInfo": {"name": "om-doctor", "title": "om doctor", "version": "1"}}})
        hello = _await(reader, 1, deadline)
        _send(proc, {"method": "initialized"})
        _send(proc, {"id": 2, "method": "hooks/list", "params": {"cwds": [cwd]}})
        listed = _await(reader, 2, deadline)
    except _NoAnswer as e:
        return None, f"{codex} app-server {e}"
    except BrokenPipeError:  # it exited before reading the request
        return None, f"{codex} app-server exited without answering"
    except OSError as e:
        return None, f"{codex} app-server: {e}"
    finally:
        _stop(proc)
    hooks = [h for entry in (listed.get("data") or []) if isinstance(entry, dict)
             for h in (entry.get("hooks") or []) if isinstance(h, dict) and h.get("pluginId") == plugin_id]
    return {"codex": codex, "version": _version(hello), "hooks": hooks}, None


class _NoAnswer(Exception):
    pass


class _Lines:
    """Newline-delimited messages from a pipe, read against a deadline (select, no threads)."""

    def __init__(self, fd):
        self.fd, self.buffer = fd, b""

    def next(self, deadline):
        import select

        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _NoAnswer(f"did not answer within {TIMEOUT_S:g} s")
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.fd, 65536)
            if not chunk:
                raise _NoAnswer("exited without answering")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line


def _send(proc, message):
    proc.stdin.write((json.dumps(message) + "\n").encode("utf-8"))
    proc.stdin.flush()


def _await(reader, want, deadline):
    while True:
        try:
            message = json.loads(reader.next(deadline).decode("utf-8", "replace"))
        except ValueError:
            continue  # not JSON-RPC; keep reading until the answer or the deadline
        if isinstance(message, dict) and message.get("id") == want:
            if "error" in message:
                raise _NoAnswer(f"refused request {want}: {message['error']}")
            result = message.get("result")
            return result if isinstance(result, dict) else {}


def _stop(proc):
    try:
        proc.stdin.close()
    except OSError:
        pass
    proc.terminate()
    try:
        proc.wait(timeout=2)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def _version(hello):
    # initialize answers {"userAgent": "<client>/<version> (...)"}; the version is optional.
    agent = str(hello.get("userAgent") or "")
    head = agent.split(" ", 1)[0]
    return head.rsplit("/", 1)[-1] if "/" in head else ""
