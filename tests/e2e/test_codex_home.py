"""The end-to-end tests' CODEX_HOMEs go where the real Codex accepts them, wherever the development cache is.

Containers and CI runners often have HOME, XDG_CACHE_HOME or OM_DEV_CACHE under /tmp; the
cache then lies in Codex's temporary directory, where Codex refuses to create its helper
aliases. The homes then go in a folder made for the run in /var/tmp (tests/codexhome.py), and
where no place will do, scripts/test says so first, naming the variable to set.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import codexhome
from codex_harness import codex_bin  # noqa: F401 (fixture)

TESTS = Path(__file__).resolve().parents[1]
REFUSAL = "Refusing to create helper binaries under temporary dir"


def codex_version(codex, home):
    """Run `codex --version` with CODEX_HOME=home; return its stderr and whether it made its helper aliases there."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX_", "OM_", "PLUGIN_"))}
    env.update(CODEX_HOME=str(home), HOME=str(home))
    done = subprocess.run([codex, "--version"], env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stderr, any((home / "tmp").glob("arg0*"))


@pytest.fixture
def cache_under_tmp():
    cache = Path(tempfile.mkdtemp(prefix="om-dev-", dir="/tmp"))
    yield cache
    shutil.rmtree(cache, ignore_errors=True)


@pytest.mark.e2e
def test_with_the_development_cache_under_tmp_codex_accepts_the_codex_home_the_tests_choose(codex_bin, cache_under_tmp):
    folder, per_run = codexhome.choice(cache_under_tmp)
    assert per_run and folder == Path(codexhome.SYSTEM_FALLBACK)
    home = Path(tempfile.mkdtemp(prefix=codexhome.RUN_PREFIX, dir=folder))
    try:
        stderr, aliases = codex_version(codex_bin, home)
        assert REFUSAL not in stderr and aliases, stderr
    finally:
        shutil.rmtree(home, ignore_errors=True)
    # What the tests chose before: a home in the cache itself, which Codex refuses.
    refused = cache_under_tmp / "e2e" / "home"
    refused.mkdir(parents=True)
    stderr, aliases = codex_version(codex_bin, refused)
    assert REFUSAL in stderr and not aliases


def test_scripts_test_names_where_the_codex_homes_go_before_it_sets_anything_up():
    done = subprocess.run([sys.executable, str(TESTS / "codexhome.py")], capture_output=True, text=True, timeout=30,
                          env=dict(os.environ, OM_DEV_CACHE="/tmp/om-dev-elsewhere", TMPDIR="/tmp"))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ("scripts/test: the Codex end-to-end tests keep their CODEX_HOMEs in a folder made for each"
                           " run in /var/tmp\n")
    assert not Path("/tmp/om-dev-elsewhere").exists()


def test_where_no_folder_will_do_scripts_test_stops_at_once_naming_the_variable_to_set(tmp_path):
    cache = Path("/tmp") / f"om-dev-{os.getpid()}-nowhere"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OM_", "VIRTUAL_ENV"))}
    # With /var/tmp as Codex's temporary directory, neither the cache under /tmp nor /var/tmp will do.
    env.update(OM_DEV_CACHE=str(cache), TMPDIR="/var/tmp", HOME=str(tmp_path))
    began = time.monotonic()
    done = subprocess.run(["bash", str(TESTS.parent / "scripts" / "test")], capture_output=True, text=True,
                          timeout=60, env=env, stdin=subprocess.DEVNULL)
    took = time.monotonic() - began
    assert done.returncode == 64, done.stderr
    last = done.stderr.splitlines()[-1]
    assert last.startswith("scripts/test: the Codex end-to-end tests need a folder for CODEX_HOME outside"), last
    assert "set OM_DEV_CACHE to a folder outside them" in last
    # Before the virtualenv, the CLIs or any test: nothing was made, and it took a moment, not minutes.
    assert not cache.exists() and list(tmp_path.iterdir()) == []
    assert took < 5, took
