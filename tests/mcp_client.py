"""A minimal MCP client for the tests: `om mcp` as a subprocess spoken to over pipes.

Invariant: every byte the server writes to stdout is kept and checked by
`close()`: each line must be one JSON-RPC 2.0 response object, so a test
fails if the server ever writes anything but protocol. Once the server has
exited, `stderr` is all it wrote (its reader thread is joined first).
"""

import importlib.util
import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LATEST = "2025-06-18"


def _root_conftest():
    # Loaded by path: with tests/e2e/conftest.py present, `import conftest` may
    # resolve to that one, depending on collection order.
    spec = importlib.util.spec_from_file_location("om_tests_root_conftest", ROOT / "tests" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


run_om = _root_conftest().run_om


class McpServer:
    def __init__(self, *args, store=None, env=None, cwd=None, python=sys.executable, command=None):
        """`command` replaces `python -S bin/om mcp` (from this checkout) and then `env` is the
        whole environment, as when Codex starts the server from `.mcp.json`."""
        if command is None:
            full_env = {k: v for k, v in os.environ.items() if k != "OBSERVATIONAL_MEMORY_STORE"}
            full_env["PYTHONPATH"] = str(ROOT)
            full_env.update(env or {})
            argv = [python, "-S", str(ROOT / "bin" / "om"), "mcp"]
        else:
            full_env, argv = dict(env or {}), list(command)
        if store is not None:
            argv += ["--store", str(store)]
        self.proc = subprocess.Popen(
            argv + [str(a) for a in args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env=full_env, cwd=cwd or ROOT,
        )
        self.lines = []
        self._queue = queue.Queue()
        self._next_id = 0
        threading.Thread(target=self._pump, daemon=True).start()
        self._stderr = []
        self._stderr_reader = threading.Thread(target=lambda: self._stderr.append(self.proc.stderr.read()),
                                               daemon=True)
        self._stderr_reader.start()

    def _pump(self):
        for line in iter(self.proc.stdout.readline, b""):
            self.lines.append(line)
            self._queue.put(line)
        self._queue.put(None)

    # -- raw traffic -------------------------------------------------------

    def send_raw(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message):
        self.send_raw(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")

    def receive(self, timeout=30):
        line = self._queue.get(timeout=timeout)
        if line is None:
            raise EOFError("the server closed stdout")
        return json.loads(line)

    def no_response(self, timeout=0.3):
        """True when nothing arrives within `timeout` seconds."""
        try:
            line = self._queue.get(timeout=timeout)
        except queue.Empty:
            return True
        self._queue.put(line)
        return False

    # -- requests ----------------------------------------------------------

    def request(self, method, params=None, id=None):
        if id is None:
            self._next_id += 1
            id = self._next_id
        message = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        response = self.receive()
        assert response.get("id") == id, response
        return response

    def notify(self, method, params=None):
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def initialize(self, version=LATEST):
        response = self.request(
            "initialize",
            {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "om-tests", "version": "1"}},
        )
        self.notify("notifications/initialized")
        return response["result"]

    def call(self, name, **arguments):
        """tools/call -> (text, is_error); asserts the result has the MCP tool-result shape."""
        response = self.request("tools/call", {"name": name, "arguments": arguments})
        assert "result" in response, response
        result = response["result"]
        assert [c["type"] for c in result["content"]] == ["text"], result
        return result["content"][0]["text"], result["isError"]

    def ok(self, name, **arguments):
        text, is_error = self.call(name, **arguments)
        assert not is_error, text
        return text

    def fail(self, name, **arguments):
        text, is_error = self.call(name, **arguments)
        assert is_error, text
        return text

    # -- shutdown ----------------------------------------------------------

    def close(self, timeout=30):
        """Close stdin (EOF); return the exit status after checking every stdout line."""
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        code = self.proc.wait(timeout=timeout)
        while self._queue.get(timeout=timeout) is not None:
            pass
        # The process has exited, but its stderr is read by another thread that may not
        # have run yet (a loaded machine): wait for it, or `stderr` would read as empty.
        self._stderr_reader.join(timeout)
        for line in self.lines:
            assert line.endswith(b"\n"), line[:200]
            message = json.loads(line.decode("utf-8"))
            assert isinstance(message, (dict, list)), line[:200]
            for m in message if isinstance(message, list) else [message]:
                assert m["jsonrpc"] == "2.0" and "id" in m, m
                assert ("result" in m) != ("error" in m), m
        return code

    @property
    def stderr(self):
        """All the server wrote to stderr; complete only once it has exited (see close())."""
        if self.proc.poll() is not None:
            self._stderr_reader.join(30)
        return b"".join(self._stderr).decode("utf-8", "replace")

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None and self.proc.poll() is None:
                assert self.close(timeout=10) == 0
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
