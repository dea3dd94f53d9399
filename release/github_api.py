"""The GitHub releases API as the release tooling uses it (publish.py and pin_plugin.py).

Invariant: this module knows HTTP and GitHub's release endpoints only; it imports
neither release script, so publish.py -> pin_plugin.py -> github_api.py has no cycle.
"""

import hashlib

import requests


class ReleaseError(Exception):
    pass


class GitHub:
    def __init__(self, api, repo, token, timeout=60):
        self.api = api.rstrip("/")
        self.repo = repo
        self.http = requests.Session()
        self.http.headers.update({
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "om-release",
        })
        if token:
            self.http.headers["Authorization"] = f"Bearer {token}"
        self.timeout = timeout

    def _check(self, resp, what):
        if resp.status_code >= 400:
            raise ReleaseError(f"{what}: HTTP {resp.status_code}: {resp.text[:300]}")
        return resp

    def releases(self):
        url = f"{self.api}/repos/{self.repo}/releases?per_page=100"
        out = []
        while url:
            resp = self._check(self.http.get(url, timeout=self.timeout), "listing releases")
            out.extend(resp.json())
            url = resp.links.get("next", {}).get("url")
        return out

    def create_draft(self, version, target):
        body = {
            "tag_name": version.tag, "target_commitish": target, "name": f"om {version}",
            "body": f"om {version} ({version.channel} channel).",
            "draft": True, "prerelease": version.is_prerelease,
            "make_latest": "false" if version.is_prerelease else "true",
        }
        url = f"{self.api}/repos/{self.repo}/releases"
        return self._check(self.http.post(url, json=body, timeout=self.timeout), "creating the draft").json()

    def upload(self, release, name, data):
        url = release["upload_url"].split("{", 1)[0]
        resp = self.http.post(url, params={"name": name}, data=data, timeout=self.timeout,
                              headers={"Content-Type": "application/octet-stream"})
        asset = self._check(resp, f"uploading {name}").json()
        if asset.get("size") != len(data):
            raise ReleaseError(f"uploading {name}: GitHub stored {asset.get('size')} bytes of {len(data)}")
        digest = asset.get("digest")
        if digest and digest != "sha256:" + hashlib.sha256(data).hexdigest():
            raise ReleaseError(f"uploading {name}: GitHub's digest {digest} does not match")
        return asset

    def publish(self, release, version):
        body = {"draft": False, "make_latest": "false" if version.is_prerelease else "true"}
        return self._check(self.http.patch(release["url"], json=body, timeout=self.timeout), "publishing").json()
