#!/usr/bin/env python3
"""Publish an om release on GitHub: version, build, draft, upload, publish, optionally pin.

Invariants:
- Tags follow om/selfupdate/version.py exactly: stable vX.Y.Z, rc vX.Y.Z-rc.N (N = one
  more than the highest rc of X.Y.Z already released), nightly vX.Y.Z-dev.YYYYMMDDHHMM
  (UTC), where X.Y.Z is the next version named in om/__init__.py.
- A release becomes visible only complete: it is created as a draft, every asset is
  uploaded and its size checked, and only then is it published (drafts are invisible
  to `om self update`).
- plugin-pins.json is written only by the release tooling (--pin here, or
  release/pin_plugin.py), together with the asset at runtime/om-<version>.pyz in the
  plugin tree, from the published asset's bytes downloaded back and verified.

Settings: GITHUB_TOKEN (required by GitHub), --api-url / OM_RELEASE_API_URL (default
https://api.github.com), --repo / GITHUB_REPOSITORY (default the project's repository).

Usage:
    python release/publish.py --tag v1.2.0-rc.1          # CI on a pushed tag
    python release/publish.py --channel nightly          # CI schedule
    python release/publish.py --channel stable --pin     # maintainer, pins the plugin
"""

import argparse
import hashlib
import os
import sys
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from om.selfupdate.locations import DEFAULT_API_URL, DEFAULT_REPO  # noqa: E402
from om.selfupdate.version import in_channel, nightly, parse, rc, try_parse  # noqa: E402

sys.path.insert(0, str(ROOT / "release"))
import pin_plugin  # noqa: E402
from github_api import GitHub, ReleaseError  # noqa: E402


def next_version(channel, base, existing_tags, now=None):
    """The version to release next on `channel` for the next version `base`."""
    base = parse(base).base
    if channel == "stable":
        return parse(base)
    if channel == "rc":
        numbers = [v[4] for v in map(try_parse, existing_tags) if v and v.base == base and v.label == "rc"]
        return rc(base, max(numbers, default=0) + 1)
    if channel == "nightly":
        return nightly(base, now or time.strftime("%Y%m%d%H%M", time.gmtime()))
    raise ReleaseError(f"unknown channel {channel!r}")


def load_builder():
    import importlib.util

    spec = importlib.util.spec_from_file_location("om_build_zipapp", ROOT / "build" / "zipapp.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv=None):
    p = argparse.ArgumentParser(description="Build and publish an om release on GitHub.")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--tag", help="release exactly this tag (CI on tag push)")
    g.add_argument("--channel", choices=["stable", "rc", "nightly"], help="compute the next tag of a channel")
    p.add_argument("--version", help="next version X.Y.Z (default: om/__init__.py)")
    p.add_argument("--now", help="nightly timestamp YYYYMMDDHHMM (default: now, UTC)")
    p.add_argument("--target", default=os.environ.get("GITHUB_SHA", "main"), help="commit or branch to tag")
    p.add_argument("--api-url", default=os.environ.get("OM_RELEASE_API_URL", DEFAULT_API_URL))
    p.add_argument("--repo", default=os.environ.get("GITHUB_REPOSITORY", DEFAULT_REPO))
    p.add_argument("--out-dir", help="default: dist/ in this checkout's development cache (scripts/dev-cache --checkout)")
    p.add_argument("--pin", action="store_true",
                   help="pin the plugin to the published release: plugin-pins.json and runtime/om-<version>.pyz")
    p.add_argument("--plugin-root", default=str(ROOT), help="the plugin tree to pin (default: this repository, whose root is the plugin)")
    p.add_argument("--pins-file", help="default: PLUGIN_ROOT/plugin-pins.json")
    p.add_argument("--dry-run", action="store_true", help="print the tag and build, publish nothing")
    args = p.parse_args(argv)
    try:
        return publish(args)
    except (ReleaseError, ValueError, requests.RequestException) as e:
        print(f"release/publish.py: {e}", file=sys.stderr)
        return 1


def publish(args):
    gh = GitHub(args.api_url, args.repo, os.environ.get("GITHUB_TOKEN") or os.environ.get("GH_TOKEN"))
    builder = load_builder()
    out_dir = Path(args.out_dir) if args.out_dir else builder.default_out_dir()
    base = args.version or parse(builder.source_version(ROOT).split("+")[0]).base
    existing = [r.get("tag_name") for r in gh.releases()]
    if args.tag:
        version = parse(args.tag)
        if not args.tag.startswith("v"):
            raise ReleaseError(f"tags start with v: {args.tag!r}")
    else:
        version = next_version(args.channel, base, existing, args.now)
        if not in_channel(version, args.channel):
            raise ReleaseError(f"{version} is not a {args.channel} version")
    if version.tag in existing:
        raise ReleaseError(f"{version.tag} is already released")
    pyz = builder.build(root=ROOT, out_dir=out_dir, version=str(version))
    data = pyz.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    sums = f"{digest}  {pyz.name}\n".encode()
    (out_dir / "SHA256SUMS").write_bytes(sums)
    print(f"{version.tag}: built {pyz.name} sha256 {digest}")
    if args.dry_run:
        return 0
    draft = gh.create_draft(version, args.target)
    gh.upload(draft, pyz.name, data)
    gh.upload(draft, "SHA256SUMS", sums)
    published = gh.publish(draft, version)
    print(f"{version.tag}: published {published.get('html_url') or published.get('url')}")
    if args.pin:
        try:
            pinned, name, asset = pin_plugin.verified_asset(published, gh.timeout, expected_sha256=digest)
        except pin_plugin.PinError as e:
            raise ReleaseError(f"published, but not pinned: {e}") from None
        pins_file = args.pins_file or str(Path(args.plugin_root) / "plugin-pins.json")
        target = pin_plugin.write_pin(args.plugin_root, pins_file, pinned, name, asset, args.repo)
        print(f"{version.tag}: pinned in {pins_file}, runtime {target} (commit both)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
