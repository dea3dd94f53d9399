"""A fake GitHub for update tests: an API host and a separate download host on loopback.

The API is served on 127.0.0.1 and downloads on `localhost` (another host name and
port), so a redirect from one to the other crosses hosts as on github.com -> CDN.
Every request is logged with its headers so tests can assert what was (not) sent.
"""

import hashlib
import http.server
import json
import threading
import urllib.parse


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class FakeGitHub:
    def __init__(self, repo="om-memory/om"):
        self.repo = repo
        self.releases = []  # newest first, like GitHub
        self.blobs = {}
        self.requests = []
        self.page_size = 100
        self.latest_404 = False
        self.rate_limit = None  # 403 or 429
        self.secondary_rate_limit = False  # 403 with Retry-After and requests to spare
        self.download_failure = None  # "500", "truncate", "timeout"
        self.download_redirect = None  # where asset downloads redirect instead of the CDN
        self.stop = threading.Event()
        self._next_id = 1
        self._lock = threading.Lock()
        self.api = _Server(("127.0.0.1", 0), self._handler("api"))
        self.cdn = _Server(("127.0.0.1", 0), self._handler("cdn"))
        self.api_url = f"http://127.0.0.1:{self.api.server_address[1]}"
        self.cdn_url = f"http://localhost:{self.cdn.server_address[1]}"
        for s in (self.api, self.cdn):
            # A short poll: shutdown() waits for the loop to notice, once per test.
            threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def close(self):
        self.stop.set()
        for s in (self.api, self.cdn):
            s.shutdown()
            s.server_close()

    # -- fixtures -------------------------------------------------------------------

    def _id(self):
        with self._lock:
            self._next_id += 1
            return self._next_id

    def add_release(self, tag, pyz=None, *, draft=False, prerelease=None, digest=True,
                    sums=True, sums_text=None, size=None, extra_assets=(), asset_name=None):
        """Add a release (newest first). `pyz` is the asset's bytes; digest True/None/"sha256:..."."""
        version = tag[1:] if tag.startswith("v") else tag
        if prerelease is None:
            prerelease = "-" in version
        rid = self._id()
        assets = []
        name = asset_name or f"om-{version}.pyz"
        if pyz is not None:
            assets.append(self._asset(name, pyz, digest, size))
            if sums:
                text = sums_text if sums_text is not None else f"{hashlib.sha256(pyz).hexdigest()}  {name}\n"
                assets.append(self._asset("SHA256SUMS", text.encode(), True, None))
        for extra_name, data in extra_assets:
            assets.append(self._asset(extra_name, data, True, None))
        release = {
            "url": f"{self.api_url}/repos/{self.repo}/releases/{rid}",
            "id": rid,
            "tag_name": tag,
            "name": tag,
            "draft": draft,
            "prerelease": prerelease,
            "created_at": "2026-01-01T00:00:00Z",
            "published_at": None if draft else "2026-01-01T00:00:00Z",
            "assets": assets,
        }
        self.releases.insert(0, release)
        return release

    def _asset(self, name, data, digest, size):
        aid = self._id()
        self.blobs[aid] = data
        if digest is True:
            digest = "sha256:" + hashlib.sha256(data).hexdigest()
        return {
            "url": f"{self.api_url}/repos/{self.repo}/releases/assets/{aid}",
            "browser_download_url": f"{self.cdn_url}/download/{aid}/{name}",
            "id": aid,
            "name": name,
            "label": None,
            "state": "uploaded",
            "content_type": "application/octet-stream",
            "size": len(data) if size is None else size,
            "digest": digest,
        }

    def clear_releases(self):
        self.releases = []

    def api_requests(self):
        return [r for r in self.requests if r["server"] == "api"]

    # -- HTTP -----------------------------------------------------------------------

    def _handler(self, server):
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _log(self, method):
                fake.requests.append({
                    "server": server, "method": method, "path": self.path,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                })

            def do_GET(self):
                self._log("GET")
                try:
                    if server == "api":
                        fake._api(self)
                    else:
                        fake._cdn(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_POST(self):
                self._log("POST")
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                fake._write(self, "POST", server, body)

            def do_PATCH(self):
                self._log("PATCH")
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                fake._write(self, "PATCH", server, body)

        return Handler

    def _send(self, h, code, body=b"", headers=()):
        h.send_response(code)
        for k, v in headers:
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    def _json(self, h, value, headers=()):
        body = json.dumps(value).encode()
        etag = '"%s"' % hashlib.sha256(body).hexdigest()[:16]
        if h.headers.get("If-None-Match") == etag:
            return self._send(h, 304, b"", [("ETag", etag)])
        self._send(h, 200, body, [("Content-Type", "application/json"), ("ETag", etag), *headers])

    def _api(self, h):
        url = urllib.parse.urlsplit(h.path)
        query = urllib.parse.parse_qs(url.query)
        base = f"/repos/{self.repo}"
        if self.secondary_rate_limit:
            return self._send(h, 403, b'{"message":"You have exceeded a secondary rate limit."}', [
                ("X-RateLimit-Remaining", "4999"), ("Retry-After", "60"), ("Content-Type", "application/json"),
            ])
        if self.rate_limit:
            return self._send(h, self.rate_limit, b'{"message":"API rate limit exceeded"}', [
                ("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "1767225600"),
                ("Content-Type", "application/json"),
            ])
        if url.path == f"{base}/releases":
            page = int(query.get("page", ["1"])[0])
            visible = self.releases
            chunk = visible[(page - 1) * self.page_size: page * self.page_size]
            headers = []
            if page * self.page_size < len(visible):
                nxt = f"{self.api_url}{base}/releases?per_page={self.page_size}&page={page + 1}"
                headers.append(("Link", f'<{nxt}>; rel="next", <{nxt}>; rel="last"'))
            return self._json(h, chunk, headers)
        if url.path == f"{base}/releases/latest":
            for r in self.releases:
                if not r["draft"] and not r["prerelease"] and not self.latest_404:
                    return self._json(h, r)
            return self._send(h, 404, b'{"message":"Not Found"}')
        if url.path.startswith(f"{base}/releases/assets/"):
            aid = int(url.path.rsplit("/", 1)[1])
            if aid not in self.blobs:
                return self._send(h, 404, b'{"message":"Not Found"}')
            target = self.download_redirect or f"{self.cdn_url}/blob/{aid}?sig=1"
            return self._send(h, 302, b"", [("Location", target)])
        return self._send(h, 404, b'{"message":"Not Found"}')

    # -- the release tooling's side: create a draft, upload to the uploads host, publish

    def _write(self, h, method, server, body):
        url = urllib.parse.urlsplit(h.path)
        base = f"/repos/{self.repo}/releases"
        if h.headers.get("Authorization") != "Bearer RELEASE-TOKEN":
            return self._send(h, 401, b'{"message":"Bad credentials"}')
        if server == "api" and method == "POST" and url.path == base:
            req = json.loads(body)
            tag = req["tag_name"]
            release = self.add_release(tag, None, draft=req["draft"], prerelease=req["prerelease"])
            release["target_commitish"] = req.get("target_commitish")
            release["upload_url"] = f"{self.cdn_url}/uploads{base}/{release['id']}/assets{{?name,label}}"
            return self._send(h, 201, json.dumps(release).encode())
        if server == "api" and method == "PATCH" and url.path.startswith(base + "/"):
            rid = int(url.path.rsplit("/", 1)[1])
            release = next(r for r in self.releases if r["id"] == rid)
            release.update({k: v for k, v in json.loads(body).items() if k in ("draft", "prerelease")})
            return self._send(h, 200, json.dumps(release).encode())
        if server == "cdn" and method == "POST" and url.path.startswith(f"/uploads{base}/"):
            rid = int(url.path.split("/")[-2])
            name = urllib.parse.parse_qs(url.query)["name"][0]
            release = next(r for r in self.releases if r["id"] == rid)
            asset = self._asset(name, body, True, None)
            release["assets"].append(asset)
            return self._send(h, 201, json.dumps(asset).encode())
        return self._send(h, 404, b'{"message":"Not Found"}')

    def _cdn(self, h):
        url = urllib.parse.urlsplit(h.path)
        parts = url.path.strip("/").split("/")
        try:
            aid = int(parts[1])
            data = self.blobs[aid]
        except (IndexError, ValueError, KeyError):
            return self._send(h, 404, b"not found")
        failure = self.download_failure
        if failure and not self._is_sums(aid):
            if failure == "500":
                return self._send(h, 500, b"internal error")
            h.send_response(200)
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data[: len(data) // 2])
            h.wfile.flush()
            if failure == "timeout":
                self.stop.wait(10)
            h.close_connection = True
            return
        self._send(h, 200, data, [("Content-Type", "application/octet-stream")])

    def _is_sums(self, aid):
        for r in self.releases:
            for a in r["assets"]:
                if a["id"] == aid:
                    return a["name"] == "SHA256SUMS"
        return False
