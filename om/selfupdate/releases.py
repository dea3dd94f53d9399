"""Choosing a release for a channel and checking its asset against published checksums.

Invariants:
- Drafts, tags outside the version grammar, and releases whose GitHub `prerelease`
  flag disagrees with their tag are never candidates.
- An asset is accepted only when its size matches and its sha256 matches every
  published checksum (the API `digest`, the SHA256SUMS line), and at least one exists:
  with neither, verification fails closed.
"""

import re

from om.errors import OmError
from om.selfupdate.version import in_channel, try_parse

SUMS_NAME = "SHA256SUMS"
_HEX64 = re.compile(r"[0-9a-f]{64}")


def asset_name(version):
    return f"om-{version}.pyz"


def best(releases, channel):
    """(Version, release) of the highest acceptable release in `channel`, or None."""
    found = None
    for r in releases:
        if not isinstance(r, dict) or r.get("draft") is not False:
            continue
        v = try_parse(r.get("tag_name"))
        if v is None or bool(r.get("prerelease")) != v.is_prerelease or not in_channel(v, channel):
            continue
        if found is None or v > found[0]:
            found = (v, r)
    return found


def find_asset(release, name):
    for a in release.get("assets") or ():
        if isinstance(a, dict) and a.get("name") == name:
            return a
    return None


def parse_sums(text):
    """{name: sha256} from sha256sum output (`<hex>  name` or `<hex> *name`)."""
    sums = {}
    for line in text.splitlines():
        line = line.rstrip("\r")
        if not line.strip():
            continue
        hexd, sep, name = line.partition(" ")
        if not sep or not _HEX64.fullmatch(hexd.lower()):
            raise OmError(f"om: {SUMS_NAME} has a malformed line: {line[:80]!r}")
        name = name[1:] if name[:1] in (" ", "*") else name
        sums[name] = hexd.lower()
    return sums


def api_digest(asset):
    """The asset's sha256 from the API, None when GitHub has none (older uploads)."""
    digest = asset.get("digest")
    if digest is None:
        return None
    if not isinstance(digest, str):
        raise OmError("om: the release asset's digest is not a string")
    algo, _, hexd = digest.partition(":")
    if algo.lower() != "sha256":
        return None
    if not _HEX64.fullmatch(hexd.lower()):
        raise OmError(f"om: the release asset's digest is malformed: {digest!r}")
    return hexd.lower()


def verify(asset, got_sha256, got_size, sums_text):
    """Raise OmError unless the downloaded bytes match everything published about them."""
    name = asset.get("name")
    size = asset.get("size")
    if not isinstance(size, int) or got_size != size:
        raise OmError(f"om: {name}: downloaded {got_size} bytes, the release says {size}; nothing changed")
    expected = []
    digest = api_digest(asset)
    if digest is not None:
        expected.append(("the release digest", digest))
    if sums_text is not None:
        sums = parse_sums(sums_text)
        if name not in sums:
            raise OmError(f"om: {SUMS_NAME} has no line for {name}; nothing changed")
        expected.append((SUMS_NAME, sums[name]))
    if not expected:
        raise OmError(f"om: {name} has neither a digest nor a {SUMS_NAME} entry; refusing to install it")
    for source, want in expected:
        if got_sha256 != want:
            raise OmError(f"om: {name}: sha256 {got_sha256} does not match {source} ({want}); nothing changed")
    return got_sha256
