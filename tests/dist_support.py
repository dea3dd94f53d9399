"""Helpers for distribution tests: cached zipapp builds and a throwaway standalone install.

Builds are cached per test process (a module-level dict), so every test file that
needs `om-1.1.0.pyz` shares one build however the fixtures are imported.
"""

import hashlib
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import ROOT
from fake_github import FakeGitHub

EPOCH = "1767225600"
BASE_VERSION = "1.0.0"
_BUILDS = {}
_BUILD_DIR = None


def load_builder():
    spec = importlib.util.spec_from_file_location("om_build_zipapp", ROOT / "build" / "zipapp.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pyz(version):
    """Path of a shiv zipapp of this tree stamped with `version` (built once per process)."""
    global _BUILD_DIR
    if version not in _BUILDS:
        if _BUILD_DIR is None:
            _BUILD_DIR = Path(tempfile.mkdtemp(prefix="om-test-builds-"))
        out = _BUILD_DIR / version
        _BUILDS[version] = load_builder().build(
            root=ROOT, out_dir=out, version=version, source_date_epoch=int(EPOCH)
        )
    return _BUILDS[version]


def pyz_bytes(version):
    return Path(pyz(version)).read_bytes()


def pin_a_runtime(root, staging, version="9.2.0"):
    """Make the plugin at `root` ship a pinned runtime: a plain zipapp of this tree's om in
    runtime/, named in plugin-pins.json with its size and sha256 (`staging` is a new scratch folder)."""
    import json
    import shutil
    import zipapp

    shutil.copytree(ROOT / "om", Path(staging) / "om", ignore=shutil.ignore_patterns("__pycache__"))
    (Path(root) / "runtime").mkdir()
    asset = Path(root) / "runtime" / f"om-{version}.pyz"
    zipapp.create_archive(staging, asset, interpreter="/usr/bin/env python3", main="om.cli:run")
    blob = asset.read_bytes()
    (Path(root) / "plugin-pins.json").write_text(json.dumps({"schema_version": 1, "pin": {
        "version": version, "tag": f"v{version}", "protocol": 1, "asset": asset.name,
        "sha256": hashlib.sha256(blob).hexdigest(), "size": len(blob), "repo": "om-memory/om"}}))
    return asset


class Install:
    """A standalone install in tmp dirs, with the environment that points `om` at it."""

    def __init__(self, tmp, fake):
        self.tmp = Path(tmp)
        self.home = self.tmp / "home"
        self.bin = self.tmp / "bin"
        self.launcher = self.bin / "om"
        self.fake = fake
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.tmp / "userhome"),
            "OM_HOME": str(self.home),
            "OM_BIN_DIR": str(self.bin),
            "XDG_CONFIG_HOME": str(self.tmp / "config"),
            "XDG_CACHE_HOME": str(self.tmp / "cache"),
            "SHIV_ROOT": str(self.tmp / "shiv"),
            "OM_UPDATE_API_URL": fake.api_url if fake else "http://127.0.0.1:9",
            "OM_UPDATE_REPO": "om-memory/om",
            "OM_UPDATE_TIMEOUT": "2",
        }

    def run(self, *args, env=None, input=b"", timeout=60, argv0=None):
        full = dict(self.env, **(env or {}))
        cmd = [str(argv0 or self.launcher), *map(str, args)]
        p = subprocess.run(cmd, input=input, capture_output=True, env=full, timeout=timeout)
        return _Result(p)

    def run_pyz(self, path, *args, env=None):
        full = dict(self.env, **(env or {}))
        p = subprocess.run([sys.executable, "-I", str(path), *map(str, args)],
                           input=b"", capture_output=True, env=full, timeout=120)
        return _Result(p)

    def snapshot(self):
        """Every file of the install (home and launcher) with its bytes' sha256."""
        files = {}
        for base in (self.home, self.bin):
            for p in sorted(base.rglob("*")):
                if p.is_file():
                    files[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
        return files

    def receipt(self):
        import json

        return json.loads((self.home / "receipt.json").read_text())


class _Result:
    def __init__(self, p):
        self.returncode = p.returncode
        self.stdout = p.stdout.decode("utf-8", "replace")
        self.stderr = p.stderr.decode("utf-8", "replace")

    def __repr__(self):
        return f"Result(rc={self.returncode}, stdout={self.stdout[-400:]!r}, stderr={self.stderr[-600:]!r})"


@pytest.fixture
def fake_github():
    fake = FakeGitHub()
    yield fake
    fake.close()


@pytest.fixture
def installed(tmp_path, fake_github):
    """om 1.0.0 installed standalone from its zipapp, pointed at the fake GitHub."""
    inst = Install(tmp_path, fake_github)
    # The installer runs from the pyz's shiv extraction, shared by every test (the install
    # itself is unpacked from the pyz into this test's OM_HOME; test_selfupdate.py proves
    # it runs without the extraction).
    artifact = pyz(BASE_VERSION)
    r = inst.run_pyz(artifact, "self", "install", env={"SHIV_ROOT": str(Path(artifact).parent.parent / "shiv")})
    assert r.returncode == 0, r
    fake_github.requests.clear()
    return inst
