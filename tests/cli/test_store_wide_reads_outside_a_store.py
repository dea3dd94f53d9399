"""The store-wide reads write their index only into a store.

`sessions` and `search --all-sessions` keep a store index (`<store>/index/`). Given a folder
that is no store (a checkout, a home folder: a mistyped `--store`), they used to write that
index into it, 77 KB that showed as untracked in a git checkout. A store is a folder holding
session ledgers, or one holding only what om keeps in a store (a store om made and emptied,
a new empty folder); anywhere else the store-wide commands write nothing and say the folder
holds no store.
"""

import json
import os

import pytest

from conftest import run_om
from sessions_support import hook, session_with_memory

STORE_WIDE = [
    ("sessions",),
    ("sessions", "--json"),
    ("sessions", "--project", "."),
    ("search", "redis", "--all-sessions"),
    ("export", "--format", "md", "--all-sessions"),
    ("forget", "--all-sessions", "--text", "redis", "--dry-run"),
    ("sessions", "--prune", "--inactive-for", "1", "--dry-run"),
    ("sessions", "--remove", "s1", "-y"),
]


def everything_in(folder):
    """Every path under `folder` with its size and modification time."""
    found = {}
    for top, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(top, name)
            st = os.lstat(path)
            found[os.path.relpath(path, folder)] = (st.st_size, st.st_mtime_ns)
    return found


@pytest.fixture
def checkout(tmp_path):
    """A folder that is no store: a small git checkout."""
    folder = tmp_path / "checkout"
    (folder / ".git").mkdir(parents=True)
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / "README.md").write_text("# a project\n")
    (folder / "src").mkdir()
    (folder / "src" / "app.py").write_text("print('hi')\n")
    return folder


@pytest.mark.parametrize("command", STORE_WIDE, ids=" ".join)
def test_a_store_wide_command_on_a_folder_that_is_no_store_writes_nothing_and_says_so(checkout, command):
    before = everything_in(checkout)
    r = run_om("--store", checkout, *command, cwd=checkout)
    assert r.returncode == 74 and r.stdout == "", r
    assert r.stderr == (f"om: {checkout} holds no store: no session ledger, and .git, README.md, src are not"
                        " what om keeps in one; nothing was written there\n")
    assert everything_in(checkout) == before


def test_a_store_om_made_and_emptied_still_lists_searches_and_keeps_its_index(store, tmp_path):
    session_with_memory(store, "s1", tmp_path, "We dropped redis for sqlite.")
    hook(store, "UserPromptSubmit", "s1", tmp_path, turn_id="turn-2", prompt="and redis again")
    assert json.loads(run_om("--store", store, "sessions", "--json").stdout)["sessions"][0]["session"] == "s1"
    assert (store / "index").is_dir() and (store / "receipts").is_dir()
    assert run_om("--store", store, "sessions", "--remove", "s1", "-y").returncode == 0
    assert not list(store.glob("session-*"))
    listed = run_om("--store", store, "sessions")
    assert (listed.returncode, listed.stdout, listed.stderr) == (0, f"No sessions in {store}.\n", "")
    found = run_om("--store", store, "search", "redis", "--all-sessions")
    assert found.returncode == 0 and found.json["results"] == [], found
    assert run_om("--store", store, "export", "--format", "json", "--all-sessions").returncode == 0


def test_a_new_empty_folder_lists_no_sessions_and_gets_no_index(store):
    store.mkdir()
    listed = run_om("--store", store, "sessions")
    assert (listed.returncode, listed.stdout, listed.stderr) == (0, f"No sessions in {store}.\n", "")
    found = run_om("--store", store, "search", "redis", "--all-sessions")
    assert found.returncode == 0 and found.json["results"] == [], found
    assert os.listdir(store) == []


def test_a_store_with_session_ledgers_is_a_store_whatever_else_it_holds(store, tmp_path):
    session_with_memory(store, "s1", tmp_path, "We dropped redis for sqlite.")
    (store / "notes.txt").write_text("mine\n")
    listed = run_om("--store", store, "sessions", "--json")
    assert listed.returncode == 0 and [s["session"] for s in listed.json["sessions"]] == ["s1"], listed
    assert (store / "index" / "store-v1.sqlite3").is_file()


def test_what_om_keeps_in_a_store_is_named_where_it_is_made():
    from om import receipts
    from om.adapter import LOG_NAME
    from om.derived import store_index
    from om.sessions.removal import REMOVED_PREFIX
    from om.store import HIDDEN_PREFIX, STAGING_PREFIX, STORE_NAMES
    from om.sync.layout import SYNC_DIR

    assert set(STORE_NAMES) == {store_index.FOLDER, receipts.DIR, LOG_NAME, SYNC_DIR}
    assert STAGING_PREFIX.startswith(HIDDEN_PREFIX) and REMOVED_PREFIX.startswith(HIDDEN_PREFIX)
