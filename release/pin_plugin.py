#!/usr/bin/env python3
"""Pin the Codex plugin to a published release: plugin-pins.json plus the asset itself.

Codex installs a plugin from its marketplace's git tree and its hooks never download,
so the pinned runtime has to be in that tree: the pin commit carries both
plugin-pins.json and runtime/om-<version>.pyz.

Invariants:
- The asset placed in the plugin is the one users download: its bytes are fetched from
  the published release (without the token: download hosts never see it) and must match
  the release's size, the API `digest` and SHA256SUMS (each one that exists, at least one),
  and the sha256 the caller expects when it has one (publish.py passes its build's).
- The asset is written before the pins that name it, each by an atomic rename; other
  runtime/om-*.pyz files are removed last, so the plugin ships exactly one runtime.

Usage:
    python release/pin_plugin.py --tag v1.3.0       # pin an already published release
    python release/publish.py --channel stable --pin  # publish and pin in one go
"""

import argparse
import hashlib
import os
import sys
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from om import PROTOCOL_VERSION  # noqa: E402
from om.selfupdate import pins  # noqa: E402
from om.selfupdate.locations import DEFAULT_API_URL, DEFAULT_REPO  # noqa: E402
from om.selfupdate.version import parse  # noqa: E402

sys.path.insert(0, str(ROOT / "release"))
from github_api import GitHub, ReleaseError  # noqa: E402

SUMS_NAME = "SHA256SUMS"


class PinError(Exception):
    pass


def _asset(release, name):
    return next((a for a in release.get("assets") or [] if a.get("name") == name), None)


def _download(asset, timeout):
    # A bare request: the Authorization header of the API session must not reach the download host.
    resp = requests.get(asset["browser_download_url"], timeout=timeout,
                        headers={"Accept": "application/octet-stream", "User-Agent": "om-release"})
    if resp.status_code >= 400:
        raise PinError(f"downloading {asset.get('name')}: HTTP {resp.status_code}")
    return resp.content


def verified_asset(release, timeout=60, expected_sha256=None):
    """(version, asset name, bytes) of a published release's pyz, checked every way it can be."""
    if release.get("draft"):
        raise PinError(f"{release.get('tag_name')} is a draft; publish it before pinning")
    version = parse(release.get("tag_name") or "")
    name = f"om-{version}.pyz"
    asset = _asset(release, name)
    if asset is None:
        raise PinError(f"{version.tag} has no asset {name}")
    data = _download(asset, timeout)
    digest = hashlib.sha256(data).hexdigest()
    if len(data) != asset.get("size"):
        raise PinError(f"{name}: downloaded {len(data)} bytes, the release says {asset.get('size')}")
    checks = 0
    if asset.get("digest"):
        if asset["digest"] != "sha256:" + digest:
            raise PinError(f"{name}: sha256 {digest} does not match the release digest {asset['digest']}")
        checks += 1
    sums = _asset(release, SUMS_NAME)
    if sums is not None:
        listed = {}
        for line in _download(sums, timeout).decode("utf-8", "replace").splitlines():
            parts = line.split()
            if len(parts) == 2:
                listed[parts[1].lstrip("*")] = parts[0].lower()
        if listed.get(name) != digest:
            raise PinError(f"{name}: sha256 {digest} does not match {SUMS_NAME} ({listed.get(name)})")
        checks += 1
    if checks == 0:
        raise PinError(f"{name}: the release publishes no digest and no {SUMS_NAME}; refusing to pin it")
    if expected_sha256 and digest != expected_sha256:
        raise PinError(f"{name}: the published bytes ({digest}) are not the ones built ({expected_sha256})")
    return version, name, data


def _write_atomically(path, data):
    path = Path(path)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    with open(partial, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(partial, path)


def write_pin(plugin_root, pins_file, version, name, data, repo):
    """Place the asset at runtime/<name> in the plugin tree, then write the pins naming it."""
    runtime = Path(plugin_root) / "runtime"
    runtime.mkdir(exist_ok=True)
    target = runtime / name
    _write_atomically(target, data)
    pin = {"version": str(version), "tag": version.tag, "protocol": PROTOCOL_VERSION, "asset": name,
           "sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "repo": repo}
    _write_atomically(pins_file, pins.dumps(pin).encode("utf-8"))
    for old in runtime.glob("om-*.pyz"):
        if old.name != name:
            old.unlink()
    return target


def release_by_tag(gh, tag):
    for release in gh.releases():
        if release.get("tag_name") == tag:
            return release
    raise PinError(f"no release {tag} in {gh.repo}")


def main(argv=None):
    p = argparse.ArgumentParser(description="Pin the Codex plugin to a published om release.")
    p.add_argument("--tag", required=True, help="the published release to pin, e.g. v1.3.0")
    p.add_argument("--api-url", default=os.environ.get("OM_RELEASE_API_URL", DEFAULT_API_URL))
    p.add_argument("--repo", default=os.environ.get("GITHUB_REPOSITORY", DEFAULT_REPO))
    p.add_argument("--plugin-root", default=str(ROOT), help="the plugin tree (default: this repository, whose root is the plugin)")
    p.add_argument("--pins-file", help="default: PLUGIN_ROOT/plugin-pins.json")
    args = p.parse_args(argv)
    try:
        gh = GitHub(args.api_url, args.repo, os.environ.get("GITHUB_TOKEN") or os.environ.get("GH_TOKEN"))
        version, name, data = verified_asset(release_by_tag(gh, args.tag))
        pins_file = args.pins_file or str(Path(args.plugin_root) / "plugin-pins.json")
        target = write_pin(args.plugin_root, pins_file, version, name, data, args.repo)
    except (PinError, ReleaseError, ValueError, OSError, requests.RequestException) as e:
        print(f"release/pin_plugin.py: {e}", file=sys.stderr)
        return 1
    print(f"{version.tag}: pinned in {pins_file}, runtime {target}")
    print("commit both files: the plugin ships the runtime it pins")
    return 0


if __name__ == "__main__":
    sys.exit(main())
