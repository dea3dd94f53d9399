"""A session folder or database file that is a symlink is refused, by the CLI and by the hook.

om creates and writes ledgers only inside the store: a link placed where a
session folder or its database should be would make it write wherever the
link points, so every command refuses it with one line (exit 74), and the
hook fails open (exit 0, advisory JSON) without writing anything.
"""

import json
import os

import pytest

import sqlite_probe
from test_codex_hook import SESSION, Hook, prompt, start, stop, tool

CAPTURE = json.dumps({"kind": "user", "text": "hello", "key": "k"})


def _linked_session_dir(store, session, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    store.mkdir(parents=True, exist_ok=True)
    os.symlink(elsewhere, sqlite_probe.session_dir(store, session))
    return elsewhere


def _linked_database(store, session, tmp_path):
    target = tmp_path / "elsewhere.sqlite3"
    os.makedirs(sqlite_probe.session_dir(store, session), mode=0o700)
    os.symlink(target, sqlite_probe.database(store, session))
    return target


@pytest.mark.parametrize("link", ["session folder", "database file"])
@pytest.mark.parametrize(
    "args,input", [(("capture",), CAPTURE), (("status",), ""), (("prime",), ""), (("pending",), "")],
    ids=["capture", "status", "prime", "pending"],
)
def test_a_symlinked_session_folder_or_database_is_refused_with_one_line_and_nothing_is_written(
    om, tmp_path, link, args, input
):
    if link == "session folder":
        target = _linked_session_dir(om.store, "s1", tmp_path)
        written = lambda: sorted(os.listdir(target))  # noqa: E731
    else:
        target = _linked_database(om.store, "s1", tmp_path)
        written = lambda: target.exists()  # noqa: E731
    before = written()
    r = om(*args, input=input)
    assert r.returncode == 74 and r.stdout == "", r
    assert r.stderr.count("\n") == 1 and "symlink" in r.stderr and "Traceback" not in r.stderr
    assert written() == before


def test_import_refuses_a_source_session_folder_that_is_a_symlink(om, tmp_path):
    other = tmp_path / "other-store"
    _linked_session_dir(other, "s9", tmp_path)
    r = om("import", "--from-store", other, "--from-session", "s9")
    assert r.returncode == 74 and "symlink" in r.stderr, r


@pytest.mark.parametrize("link", ["session folder", "database file"])
def test_the_hook_fails_open_on_a_symlinked_session_and_writes_nothing_there(tmp_path, link):
    hook = Hook(tmp_path / "plugins" / "data" / "om-observational-memory", tmp_path / "om")
    if link == "session folder":
        target = _linked_session_dir(hook.store, SESSION, tmp_path)
        written = lambda: sorted(os.listdir(target))  # noqa: E731
    else:
        target = _linked_database(hook.store, SESSION, tmp_path)
        written = lambda: target.exists()  # noqa: E731
    before = written()
    for payload in (start(), prompt("hi"), tool("ls"), stop("bye")):
        response = hook(payload)
        assert set(response) == {"systemMessage"}, response
        assert "symlink" in hook.stderr
    assert written() == before
