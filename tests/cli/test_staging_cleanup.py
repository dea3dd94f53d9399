"""Staging folders of a fork killed with SIGKILL are removed by the next fork, import or doctor.

A fork stages its copy in `.om-tmp-<pid>-*` inside the store. Each test kills
a real `om fork` (SIGKILL) while its staging folder exists, checks that the
folder really was left behind, then runs the next command and checks it is gone;
a staging folder whose process is alive is never touched.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT, RUNTIME_ARGV, run_om

SOURCES = 4000


def _env():
    env = {k: v for k, v in os.environ.items() if k != "OBSERVATIONAL_MEMORY_STORE"}
    env["PYTHONPATH"] = str(ROOT)
    return env


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    from om.ledger import Ledger

    store = tmp_path_factory.mktemp("staging") / "template"
    with Ledger.open(str(store), "s1") as ledger:
        with ledger.transaction():
            for i in range(SOURCES):
                ledger.capture("tool", f"source {i}: " + "output of a long command\n" * 20, f"k{i}")
    return store


def _session_dir(session):
    from om.ids import session_hash

    return "session-" + session_hash(session)


def _staging(store):
    return sorted(n for n in os.listdir(store) if n.startswith(".om-tmp-"))


def _fork_killed_while_staging(template, store, attempts=20):
    """Restore the store, kill `om fork` (SIGKILL) the moment its staging folder appears."""
    argv = [*RUNTIME_ARGV, "--store", str(store), "--session", "s1", "fork", "--to-session", "killed"]
    for _ in range(attempts):
        if os.path.exists(store):
            shutil.rmtree(store)
        shutil.copytree(template, store)
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env())
        deadline = time.monotonic() + 30
        while proc.poll() is None and not _staging(store) and time.monotonic() < deadline:
            pass
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        # Under load the kill can land after the fork published its destination (one rename)
        # and before it removed its staging folder: that fork was not killed while staging.
        if proc.returncode == -signal.SIGKILL and _staging(store) and not (store / _session_dir("killed")).exists():
            return _staging(store)
    pytest.fail(f"no kill landed while the fork was staging in {attempts} attempts")


@pytest.mark.parametrize("command", ["fork", "import", "doctor"])
def test_a_staging_folder_left_by_a_killed_fork_is_removed_by_the_next_fork_import_or_doctor(
    template, tmp_path, command
):
    store = tmp_path / "store"
    (left,) = _fork_killed_while_staging(template, store)
    assert left.startswith(".om-tmp-")
    if command == "fork":
        r = run_om("--store", store, "--session", "s1", "fork", "--to-session", "next")
    elif command == "import":
        r = run_om("--store", store, "--session", "fresh", "import", "--from-store", store, "--from-session", "s1")
    else:
        r = run_om("doctor", "--json", "--store", store, env={"CODEX_HOME": str(tmp_path / "no-codex")})
    assert r.returncode in ((0, 1) if command == "doctor" else (0,)), r
    assert _staging(store) == []
    if command == "doctor":
        (check,) = [c for c in json.loads(r.stdout)["checks"] if c["check"] == "store.temp"]
        assert check["status"] == "ok" and "removed 1 " in check["finding"]
    # The killed fork never published a destination, and a retry succeeds.
    retry = run_om("--store", store, "--session", "s1", "fork", "--to-session", "killed")
    assert retry.returncode == 0, retry


def test_a_staging_folder_whose_process_is_alive_is_kept_and_reported(om, tmp_path):
    assert om("capture", input=json.dumps({"kind": "user", "text": "hello", "key": "k"})).returncode == 0
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = om.store / f".om-tmp-{owner.pid}-abcd1234"
        live.mkdir()
        (live / "memory.sqlite3").write_bytes(b"partial")
        assert om("fork", "--to-session", "child").returncode == 0
        assert live.is_dir()
        r = run_om("doctor", "--json", "--store", om.store, env={"CODEX_HOME": str(tmp_path / "no-codex")})
        (check,) = [c for c in json.loads(r.stdout)["checks"] if c["check"] == "store.temp"]
        assert check["status"] == "warn" and live.name in check["fix"]
        assert live.is_dir()
    finally:
        owner.kill()
        owner.wait()
    # Once its process is gone, the folder is abandoned and the next fork removes it.
    assert om("fork", "--to-session", "child2").returncode == 0
    assert not live.exists()
