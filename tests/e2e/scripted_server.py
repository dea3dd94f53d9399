"""The HTTP scaffolding both model mocks share (mock_model for Codex, claude_mock for Claude Code).

Invariant: one threaded server on 127.0.0.1 and an ephemeral port; every POST is read
whole and its JSON body parsed (an unparsable one reads as `{}`) before the subclass's
`respond` sees it; a script that raises is recorded in `errors` and answered with a
text saying so, so the client's turn ends instead of hanging; GET and HEAD are 404.
"""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class RecordedRequest:
    """One POST as the client sent it: its parsed JSON body, headers and the body re-encoded."""

    def __init__(self, body, headers):
        self.body = body if isinstance(body, dict) else {}
        self.headers = headers
        self.raw = json.dumps(self.body, ensure_ascii=False)


class ScriptedServer:
    """Serve `script(request) -> reply`; subclasses give `respond(path, raw, body, headers)`."""

    #: (status, body) of a path the mock does not serve.
    NOT_FOUND = (404, '{"error":{"message":"not served by the mock"}}')
    #: Extra response headers (e.g. a request id the client expects).
    HEADERS = ()

    def __init__(self, script):
        self.script = script
        self.requests = []
        self.errors = []
        self._lock = threading.Lock()
        self._server = None
        self._thread = None

    def respond(self, path, raw, body, headers):
        """(status, data, content type) for one POST."""
        raise NotImplementedError

    def record(self, request):
        with self._lock:
            self.requests.append(request)

    def run_script(self, request, failed):
        """The script's reply to `request`; `failed(text)` builds the reply when the script raises."""
        try:
            reply = self.script(request)
        except Exception as e:  # surfaced by the test through `errors`
            self.errors.append(f"{type(e).__name__}: {e}")
            reply = failed(f"mock script failed: {e}")
        if reply.get("delay_s"):
            time.sleep(reply["delay_s"])
        return reply

    @property
    def port(self):
        return self._server.server_address[1]

    def start(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status, data, ctype):
                data = data.encode("utf-8")
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in server.HEADERS:
                        self.send_header(name, value() if callable(value) else value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client went away (an interrupted turn)

            def do_GET(self):
                self._send(*server.NOT_FOUND, "application/json")

            do_HEAD = do_GET

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw.decode("utf-8")) if raw else {}
                except ValueError:
                    body = {}
                headers = {k.lower(): v for k, v in self.headers.items()}
                self._send(*server.respond(self.path.split("?")[0], raw, body, headers))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def turn_requests(self):
        return [r for r in self.requests if not r.is_compaction]
