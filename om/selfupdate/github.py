"""A small GitHub Releases client on urllib: listing, ETags, rate limits, safe downloads.

Invariants:
- Only https is spoken, except plain http to a loopback address (tests, local mirrors);
  this holds for the API base, every pagination link, every asset URL and every redirect.
- The token (GITHUB_TOKEN / GH_TOKEN) is sent only to the API's own host, and as an
  unredirected header, so urllib never forwards it along a redirect to a download host.
- Every failure becomes one OmError line that names the host and what to do; nothing
  here writes to the install.
"""

import hashlib
import ipaddress
import json
import os
import socket
import time
import urllib.error
import urllib.parse
import urllib.request

from om import __version__
from om.errors import OmError
from om.selfupdate import locations

_CHUNK = 64 * 1024


class HttpStatus(OmError):
    """An HTTP answer other than success; `status` is its code."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def is_loopback(host):
    host = (host or "").strip("[]").lower()
    # Only the name itself: a resolver need not send *.localhost to loopback.
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(url):
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return url
    if parts.scheme == "http" and parts.hostname and is_loopback(parts.hostname):
        return url
    raise OmError(f"om: refusing to fetch {url!r}: only https (or http on a loopback address) is allowed")


class _Redirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        check_url(newurl)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class Settings:
    def __init__(self, environ=None):
        env = os.environ if environ is None else environ
        self.api = (env.get("OM_UPDATE_API_URL") or locations.DEFAULT_API_URL).rstrip("/")
        self.repo = env.get("OM_UPDATE_REPO") or locations.DEFAULT_REPO
        self.token = env.get("GITHUB_TOKEN") or env.get("GH_TOKEN") or None
        try:
            self.timeout = float(env.get("OM_UPDATE_TIMEOUT") or 30)
        except ValueError:
            raise OmError("om: OM_UPDATE_TIMEOUT must be a number of seconds") from None
        if "/" not in self.repo.strip("/") or self.repo.count("/") != 1:
            raise OmError(f"om: OM_UPDATE_REPO must be OWNER/NAME, not {self.repo!r}")
        check_url(self.api)


class Client:
    def __init__(self, settings, cache_path=None):
        self.s = settings
        self.api_host = urllib.parse.urlsplit(settings.api).netloc.lower()
        self.cache_path = cache_path or os.path.join(locations.cache_dir(), "github-etags.json")
        self._opener = urllib.request.build_opener(_Redirects)

    # -- requests ---------------------------------------------------------------

    def _request(self, url, accept="application/vnd.github+json", etag=None):
        check_url(url)
        req = urllib.request.Request(url)
        req.add_header("Accept", accept)
        req.add_header("User-Agent", f"om/{__version__}")
        req.add_header("X-GitHub-Api-Version", "2022-11-28")
        if etag:
            req.add_header("If-None-Match", etag)
        if self.s.token and urllib.parse.urlsplit(url).netloc.lower() == self.api_host:
            # Unredirected: urllib would otherwise copy it to whatever host a 302 names.
            req.add_unredirected_header("Authorization", f"Bearer {self.s.token}")
        return req

    def _open(self, req):
        host = urllib.parse.urlsplit(req.full_url).netloc
        try:
            return self._opener.open(req, timeout=self.s.timeout)
        except urllib.error.HTTPError as e:
            raise self._http_error(e, host) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            if isinstance(reason, (socket.timeout, TimeoutError)) or isinstance(e, (socket.timeout, TimeoutError)):
                raise OmError(f"om: {host} did not answer within {self.s.timeout:g} s") from None
            raise OmError(f"om: cannot reach {host}: {_plain(reason, host)}") from None

    def _http_error(self, e, host):
        if e.code == 304:
            return e
        if e.url:  # after a redirect the error belongs to the host that answered
            host = urllib.parse.urlsplit(e.url).netloc or host
        headers = e.headers or {}
        remaining = headers.get("X-RateLimit-Remaining")
        # 403 with Retry-After is GitHub's secondary (abuse) rate limit.
        if e.code == 429 or (e.code == 403 and (remaining == "0" or headers.get("Retry-After"))):
            when = ""
            reset = headers.get("X-RateLimit-Reset")
            retry = headers.get("Retry-After")
            if reset and reset.isdigit():
                t = int(reset)
                wait = max(0, int(t - time.time()))
                when = f"; it resets at {time.strftime('%H:%M:%S UTC', time.gmtime(t))} (in {wait // 60} min {wait % 60} s)"
            elif retry and retry.isdigit():
                when = f"; retry after {retry} s"
            hint = "" if self.s.token else "; set GITHUB_TOKEN or GH_TOKEN to raise the limit"
            return OmError(f"om: GitHub API rate limit exceeded at {host} (HTTP {e.code}){when}{hint}")
        message = ""
        try:
            body = json.loads(e.read(4096).decode("utf-8", "replace"))
            if isinstance(body, dict) and isinstance(body.get("message"), str):
                message = ": " + body["message"][:200]
        except Exception:
            pass
        return HttpStatus(e.code, f"om: HTTP {e.code} from {host} for {e.url or ''}{message}")

    # -- JSON with ETag cache -----------------------------------------------------

    def _load_cache(self):
        try:
            with open(self.cache_path, encoding="utf-8") as f:
                data = json.load(f)
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def _save_cache(self, cache):
        from om.store import write_atomically

        try:
            os.makedirs(os.path.dirname(self.cache_path), exist_ok=True)
            write_atomically(self.cache_path, json.dumps(cache).encode("utf-8"))
        except OSError:
            pass  # a cache that cannot be written only costs a request next time

    def get_json(self, url, cache):
        """(value, next_url) for an API URL, answering from the cache on 304."""
        entry = cache.get(url)
        req = self._request(url, etag=entry.get("etag") if isinstance(entry, dict) else None)
        try:
            resp = self._open(req)
        except urllib.error.HTTPError as e:  # only 304 comes back here
            if e.code == 304 and isinstance(entry, dict):
                return entry["value"], entry.get("next")
            raise
        with resp:
            raw = resp.read(16 * 1024 * 1024)
            etag = resp.headers.get("ETag")
            link = resp.headers.get("Link")
        try:
            value = json.loads(raw.decode("utf-8"))
        except ValueError:
            raise OmError(f"om: {self.api_host} answered with something that is not JSON") from None
        nxt = _next_link(link)
        if etag:
            cache[url] = {"etag": etag, "value": value, "next": nxt}
        return value, nxt

    # -- releases -----------------------------------------------------------------

    def releases(self):
        """Every release of the repository, following `Link: rel="next"` to the end."""
        cache = self._load_cache()
        url = f"{self.s.api}/repos/{self.s.repo}/releases?per_page=100"
        out, seen = [], set()
        try:
            while url and url not in seen:
                seen.add(url)
                value, url = self.get_json(url, cache)
                if not isinstance(value, list):
                    raise OmError(f"om: unexpected answer listing releases of {self.s.repo}")
                out.extend(r for r in value if isinstance(r, dict))
        except HttpStatus as e:
            if e.status == 404:
                raise OmError(f"om: no releases found for {self.s.repo} at {self.api_host} (HTTP 404); check OM_UPDATE_REPO") from None
            raise
        self._save_cache(cache)
        return out

    def latest(self):
        """The repository's latest stable release, or None when GitHub has none (404)."""
        cache = self._load_cache()
        url = f"{self.s.api}/repos/{self.s.repo}/releases/latest"
        try:
            value, _ = self.get_json(url, cache)
        except HttpStatus as e:
            if e.status == 404:
                return None
            raise
        self._save_cache(cache)
        return value if isinstance(value, dict) else None

    # -- downloads ----------------------------------------------------------------

    def download(self, asset, out, progress=None, limit=None):
        """Stream an asset into the open binary file `out`; return (sha256 hex, size).

        Reads at most `limit` + 1 bytes so an oversized or endless answer stops early.
        """
        url = asset.get("url") or asset.get("browser_download_url")
        if not isinstance(url, str):
            raise OmError(f"om: asset {asset.get('name')!r} has no download URL")
        host = urllib.parse.urlsplit(url).netloc
        req = self._request(url, accept="application/octet-stream")
        h = hashlib.sha256()
        n = 0
        resp = self._open(req)
        try:
            with resp:
                while True:
                    want = _CHUNK if limit is None else min(_CHUNK, limit + 1 - n)
                    if want <= 0:
                        break
                    block = resp.read(want)
                    if not block:
                        remaining = getattr(resp, "length", None)
                        if remaining:
                            raise OmError(
                                f"om: download of {asset.get('name')} from {host} failed: the connection "
                                f"closed after {n} bytes, {remaining} short; nothing changed"
                            )
                        break
                    h.update(block)
                    out.write(block)
                    n += len(block)
                    if progress:
                        progress.advance(len(block))
        except OmError:
            raise
        except (OSError, ValueError) as e:
            kind = "timed out" if isinstance(e, (socket.timeout, TimeoutError)) else f"failed: {e}"
            raise OmError(f"om: download of {asset.get('name')} from {host} {kind}; nothing changed") from None
        except Exception as e:  # http.client.IncompleteRead and friends
            raise OmError(f"om: download of {asset.get('name')} from {host} failed: {type(e).__name__}; nothing changed") from None
        return h.hexdigest(), n

    def fetch_small(self, asset, limit=1 << 20):
        import io

        buf = io.BytesIO()
        self.download(asset, buf, limit=limit)
        if buf.tell() > limit:
            raise OmError(f"om: {asset.get('name')} is larger than {limit} bytes")
        return buf.getvalue()


def _next_link(header):
    if not header:
        return None
    for part in header.split(","):
        section = part.split(";")
        if len(section) < 2:
            continue
        target = section[0].strip()
        if not (target.startswith("<") and target.endswith(">")):
            continue
        for param in section[1:]:
            key, _, value = param.strip().partition("=")
            if key.strip() == "rel" and "next" in value.strip().strip('"').split():
                return target[1:-1]
    return None


def _plain(reason, host):
    """A network failure in words, without the errno prefix `[Errno -2] …` the socket module adds."""
    if isinstance(reason, socket.gaierror):
        return f"{host.rsplit(':', 1)[0]} does not resolve (no network, or no DNS)"
    if isinstance(reason, ConnectionRefusedError):
        return "the connection was refused"
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror[:1].lower() + reason.strerror[1:]
    return str(reason)
