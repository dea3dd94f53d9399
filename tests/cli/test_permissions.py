"""Files: every directory `om` creates is 0700 and every database 0600, whatever the umask."""

import json
import os
import stat
import subprocess
import sys

import pytest

import sqlite_probe
from conftest import ROOT, RUNTIME_ARGV

UMASKS = [0o000, 0o002, 0o022]


def om_with_umask(umask, store, session, *args, input=b""):
    env = {k: v for k, v in os.environ.items() if k != "OBSERVATIONAL_MEMORY_STORE"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [*RUNTIME_ARGV, "--store", str(store), "--session", session, *args],
        input=input, capture_output=True, env=env, umask=umask, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def capture(umask, store, session, text="evidence"):
    return om_with_umask(umask, store, session, "capture",
                         input=json.dumps({"kind": "user", "text": text, "key": ""}).encode())


def assert_private_session(store, session):
    assert mode(sqlite_probe.session_dir(store, session)) == 0o700
    assert mode(sqlite_probe.database(store, session)) == 0o600


@pytest.mark.parametrize("umask", UMASKS)
def test_a_new_store_its_session_directory_and_database_are_private(tmp_path, umask):
    store = tmp_path / "store"
    capture(umask, store, "s1")
    assert mode(store) == 0o700
    assert_private_session(store, "s1")


@pytest.mark.parametrize("umask", UMASKS)
def test_missing_parent_directories_of_the_store_are_created_private_too(tmp_path, umask):
    store = tmp_path / "a" / "b" / "store"
    capture(umask, store, "s1")
    for path in (tmp_path / "a", tmp_path / "a" / "b", store):
        assert mode(path) == 0o700, path


def test_a_forked_session_is_private_under_a_permissive_umask(tmp_path):
    store = tmp_path / "store"
    capture(0o000, store, "s1")
    om_with_umask(0o000, store, "s1", "fork", "--to-session", "s2")
    assert_private_session(store, "s2")
    assert_private_session(store, "s1")
    # No temporary directory is left behind to hold a copy of the ledger.
    assert sorted(os.listdir(store)) == sorted(
        os.path.basename(sqlite_probe.session_dir(store, s)) for s in ("s1", "s2")
    )


def test_an_imported_session_is_private_under_a_permissive_umask(tmp_path):
    source = tmp_path / "source"
    store = tmp_path / "a" / "store"
    capture(0o000, source, "from")
    om_with_umask(0o000, store, "into", "import", "--from-store", str(source), "--from-session", "from")
    assert mode(tmp_path / "a") == 0o700
    assert mode(store) == 0o700
    assert_private_session(store, "into")


def test_a_writer_killed_mid_transaction_leaves_a_journal_as_private_as_the_database(tmp_path):
    store = tmp_path / "store"
    capture(0o000, store, "s1")
    db = sqlite_probe.database(store, "s1")
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sqlite3,sys,time\n"
         "c=sqlite3.connect(sys.argv[1],isolation_level=None)\n"
         "c.execute('PRAGMA cache_size=1')\nc.execute('BEGIN IMMEDIATE')\n"
         "c.executemany('INSERT INTO meta VALUES (?, ?)', [(str(i), 'x' * 3000) for i in range(50)])\n"
         "print('ready', flush=True)\ntime.sleep(60)\n", db],
        stdout=subprocess.PIPE, umask=0o000,
    )
    try:
        assert holder.stdout.readline() == b"ready\n"
        assert mode(db + "-journal") == 0o600
    finally:
        holder.kill()
        holder.wait()



CLIENT_HOOKS = {
    "claude": json.loads((ROOT / "hooks" / "hooks.json").read_text())["hooks"]["UserPromptSubmit"],
    "codex": json.loads((ROOT / "hooks" / "codex.json").read_text())["hooks"]["UserPromptSubmit"],
}


@pytest.mark.parametrize("umask", UMASKS)
@pytest.mark.parametrize("client", list(CLIENT_HOOKS))
def test_each_clients_hooks_keep_its_store_and_the_plugins_data_folder_private(tmp_path, client, umask):
    # Claude Code makes the plugin's data folder itself, 0755, before the first hook runs.
    home = tmp_path / "home"
    data = home / "plugins" / "data" / "om-observational-memory"
    data.mkdir(parents=True)
    os.chmod(data, 0o755)
    command = CLIENT_HOOKS[client][0]["hooks"][0]["command"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OM_", "PLUGIN_", "CLAUDE_", "OBSERVATIONAL"))}
    env.update(CLAUDE_PLUGIN_ROOT=str(ROOT), CLAUDE_PLUGIN_DATA=str(data))
    if client == "codex":
        env.update(PLUGIN_ROOT=str(ROOT), PLUGIN_DATA=str(data))
    payload = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": "hello", "prompt_id": "p1",
               "turn_id": "t1", "cwd": "/tmp"}
    proc = subprocess.run(["/bin/sh", "-c", command.replace("${PLUGIN_ROOT}", str(ROOT))],
                          input=json.dumps(payload).encode(), capture_output=True, env=env, umask=umask, timeout=60)
    assert proc.returncode == 0 and proc.stdout == b"", proc
    store = home / "om"
    assert mode(data) == 0o700 and mode(store) == 0o700
    assert_private_session(store, "s1")
    receipts = store / "receipts" if client == "codex" else store / "receipts" / client
    assert mode(receipts) == 0o700 and mode(next(receipts.glob("*.json"))) == 0o600
