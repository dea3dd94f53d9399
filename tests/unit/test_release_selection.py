"""Choosing a release for a channel and verifying an asset (pure functions)."""

import pytest

from om.errors import OmError
from om.selfupdate.releases import best, parse_sums, verify


def rel(tag, draft=False, prerelease=None):
    return {"tag_name": tag, "draft": draft, "prerelease": ("-" in tag) if prerelease is None else prerelease}


def test_each_channel_takes_the_highest_release_it_offers():
    rs = [rel("v1.3.0-dev.202601011200"), rel("v1.2.0-rc.2"), rel("v1.1.0"), rel("v9.0.0", draft=True),
          rel("v5.0.0", prerelease=True), rel("latest"), rel("v1.2.0-rc.3", prerelease=False)]
    assert str(best(rs, "stable")[0]) == "1.1.0"
    assert str(best(rs, "rc")[0]) == "1.2.0-rc.2"
    assert str(best(rs, "nightly")[0]) == "1.3.0-dev.202601011200"
    assert best([rel("v1.0.0-rc.1")], "stable") is None


def test_sha256sums_accepts_text_and_binary_markers():
    a, b = "a" * 64, "B" * 64
    assert parse_sums(f"{a}  om-1.pyz\r\n{b} *om-2.pyz\n\n") == {"om-1.pyz": a, "om-2.pyz": b.lower()}
    with pytest.raises(OmError):
        parse_sums("nothex  om.pyz\n")


def test_every_published_checksum_must_match():
    asset = {"name": "om-1.pyz", "size": 3, "digest": "sha256:" + "a" * 64}
    assert verify(asset, "a" * 64, 3, None) == "a" * 64
    with pytest.raises(OmError, match="SHA256SUMS"):
        verify(asset, "a" * 64, 3, "b" * 64 + "  om-1.pyz\n")
    with pytest.raises(OmError, match="neither"):
        verify(dict(asset, digest=None), "a" * 64, 3, None)
