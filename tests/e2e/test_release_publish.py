"""release/publish.py end to end: tag, build, draft, upload, publish, pin, then update to it."""

import json
import subprocess
import sys

from conftest import ROOT, bytecode_env
from dist_support import fake_github, installed  # noqa: F401
from om.selfupdate import pins


def publish(fake, tmp_path, *args):
    env = {"PATH": "/usr/bin:/bin", "GITHUB_TOKEN": "RELEASE-TOKEN", "SOURCE_DATE_EPOCH": "1767225600",
           "HOME": str(tmp_path), **bytecode_env()}
    return subprocess.run(
        [sys.executable, str(ROOT / "release" / "publish.py"), "--api-url", fake.api_url, "--repo", fake.repo,
         "--out-dir", str(tmp_path / "dist"), "--target", "abc123", *args],
        capture_output=True, text=True, env=env, timeout=180,
    )


def test_rc_releases_are_numbered_published_complete_and_pinned(fake_github, tmp_path):
    pins_file = tmp_path / "plugin-pins.json"
    fake_github.add_release("v1.1.0-rc.1")
    p = publish(fake_github, tmp_path, "--channel", "rc", "--version", "1.1.0", "--pin", "--plugin-root", str(tmp_path))
    assert p.returncode == 0, p.stderr
    release = fake_github.releases[0]
    assert (release["tag_name"], release["draft"], release["prerelease"]) == ("v1.1.0-rc.2", False, True)
    assert release["target_commitish"] == "abc123"
    assert sorted(a["name"] for a in release["assets"]) == ["SHA256SUMS", "om-1.1.0-rc.2.pyz"]
    methods = [(q["server"], q["method"]) for q in fake_github.requests if q["method"] != "GET"]
    assert methods == [("api", "POST"), ("cdn", "POST"), ("cdn", "POST"), ("api", "PATCH")]
    pin = pins.load(pins_file)
    pyz = next(a for a in release["assets"] if a["name"] == "om-1.1.0-rc.2.pyz")
    assert pin["version"] == "1.1.0-rc.2" and pin["asset"] == pyz["name"] and pin["size"] == pyz["size"]
    assert "sha256:" + pin["sha256"] == pyz["digest"]
    assert (tmp_path / "runtime" / pyz["name"]).stat().st_size == pyz["size"]


def test_a_nightly_is_tagged_with_its_utc_timestamp_and_an_existing_tag_is_refused(fake_github, tmp_path):
    p = publish(fake_github, tmp_path, "--channel", "nightly", "--version", "1.2.0", "--now", "202611291200")
    assert p.returncode == 0, p.stderr
    assert fake_github.releases[0]["tag_name"] == "v1.2.0-dev.202611291200"
    again = publish(fake_github, tmp_path, "--tag", "v1.2.0-dev.202611291200")
    assert again.returncode == 1 and "already released" in again.stderr
    bad = publish(fake_github, tmp_path, "--tag", "v1.2.0-nightly")
    assert bad.returncode == 1 and "not an om version" in bad.stderr


def test_a_published_stable_release_is_what_om_self_update_installs(installed, fake_github, tmp_path):
    p = publish(fake_github, tmp_path, "--tag", "v1.1.0")
    assert p.returncode == 0, p.stderr
    assert fake_github.releases[0]["prerelease"] is False
    r = installed.run("self", "update")
    assert (r.returncode, r.stdout) == (0, "om: updated 1.0.0 → 1.1.0 (stable)\n"), r
    assert installed.run("--version").stdout == "om 1.1.0\n"


def test_the_default_pins_file_is_not_touched_without_pin(fake_github, tmp_path):
    before = (ROOT / "plugin-pins.json").read_bytes()
    assert publish(fake_github, tmp_path, "--channel", "stable", "--version", "1.3.0").returncode == 0
    assert (ROOT / "plugin-pins.json").read_bytes() == before
    assert json.loads(before)["schema_version"] == 1
