"""Stray stores: a session folder or a ledger file is refused as a store, and a new store is announced.

A session folder passed as --store used to get a ledger nested inside it, and a relative
--store run from another directory silently started a second store.
"""

import json
import os

import pytest

from conftest import run_om

NOTE = json.dumps({"kind": "user", "text": "we chose sqlite", "key": "k"})


@pytest.fixture
def session_folder(tmp_path):
    store = tmp_path / "store"
    assert run_om("--store", store, "--session", "s1", "capture", input=NOTE).returncode == 0
    (folder,) = store.glob("session-*")
    return store, folder


@pytest.mark.parametrize("command", [("capture",), ("status",), ("prime",), ("sessions",), ("pause",),
                                     ("export", "--format", "md")])
@pytest.mark.parametrize("given", ["session folder", "ledger file"])
def test_a_session_folder_or_a_ledger_file_given_as_the_store_is_refused_and_names_the_store(
        session_folder, command, given):
    store, folder = session_folder
    path = folder if given == "session folder" else folder / "memory.sqlite3"
    before = sorted(p.name for p in folder.iterdir())
    r = run_om("--store", path, "--session", "s1", *command, input=NOTE)
    assert r.returncode == 74 and r.stdout == "", r
    kind = "a session directory" if given == "session folder" else "a ledger file"
    assert r.stderr == f"om: {path} is {kind}, not a store; its store is {store}\n"
    assert sorted(p.name for p in folder.iterdir()) == before


def test_a_command_that_creates_a_store_says_so_and_where_a_relative_path_led(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    r = run_om("--store", "store", "--session", "s1", "capture", input=NOTE, cwd=tmp_path / "elsewhere")
    assert r.returncode == 0 and r.json["source_id"].startswith("s-")
    made = tmp_path / "elsewhere" / "store"
    assert r.stderr == f"om: created a new store {made} (--store store from {tmp_path / 'elsewhere'})\n"
    again = run_om("--store", "store", "--session", "s1", "capture", input=NOTE, cwd=tmp_path / "elsewhere")
    assert again.returncode == 0 and again.stderr == ""
    absolute = run_om("--store", tmp_path / "other", "--session", "s1", "capture", input=NOTE)
    assert absolute.returncode == 0 and absolute.stderr == f"om: created a new store {tmp_path / 'other'}\n"


def test_through_the_environment_variable_a_new_store_is_announced_too(tmp_path):
    r = run_om("--session", "s1", "capture", input=NOTE, env={"OBSERVATIONAL_MEMORY_STORE": str(tmp_path / "env-store")})
    assert r.returncode == 0 and r.stderr == f"om: created a new store {tmp_path / 'env-store'}\n"
    assert os.path.isdir(tmp_path / "env-store")
