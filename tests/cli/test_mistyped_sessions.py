"""A mistyped session id creates nothing: the writing commands refuse as the reads warn.

Only `capture` and the hooks begin a session. `pause`, `resume` and `apply` on a session
the store holds no ledger of, and `fork` or `import` from one, fail in one line that names
the command listing the store's sessions, and leave every file as it was, on either side.
"""

import json
import os

import pytest

from conftest import run_om, tree_bytes
from mcp_client import McpServer


def capture(om, text, session="real"):
    r = om("capture", input=json.dumps({"kind": "user", "text": text, "key": text}), session=session)
    assert r.returncode == 0, r
    return r.json["source_id"]


def listed(store):
    r = run_om("--store", store, "sessions", "--json")
    assert r.returncode == 0, r
    return [row["session"] for row in r.json["sessions"]]


def refused_in_one_line(r, session, store):
    assert r.returncode == 66 and r.stdout == "", r
    (line,) = r.stderr.splitlines()
    assert line.startswith(f'om: no ledger for session "{session}" in store {os.path.realpath(store)}'), line
    assert "nothing was created" in line and " sessions lists the store's sessions" in line
    return line


def ledgers(store):
    # The index folder is derived data `sessions` keeps; the session folders are what a typo would add.
    return {path: data for path, data in tree_bytes(store).items() if not path.startswith("index")}


@pytest.mark.parametrize("argv, stdin", [
    (["pause"], None),
    (["resume"], None),
    (["apply"], {"through": 0}),
    (["apply"], {"through": 5}),  # a checkpoint that would fail (stale cursor) anyway
    (["apply"], {"through": 0, "observations": [{"text": "a fact", "source_ids": ["s-nope"]}]}),
    (["fork", "--to-session", "copy"], None),
])
def test_a_writing_command_on_a_mistyped_session_refuses_in_one_line_and_creates_nothing(om, argv, stdin):
    capture(om, "the one real session")
    before = ledgers(om.store)
    r = om(*argv, session="relaa", input=json.dumps(stdin) if stdin is not None else None)
    refused_in_one_line(r, "relaa", om.store)
    assert ledgers(om.store) == before
    assert listed(om.store) == ["real"]


@pytest.mark.parametrize("argv", [["pause"], ["resume"], ["fork", "--to-session", "copy"]])
def test_a_writing_command_on_a_store_that_does_not_exist_creates_no_store(om, argv):
    r = om(*argv, session="real")
    assert r.returncode == 66 and r.stdout == "", r
    (line,) = r.stderr.splitlines()
    assert "which does not exist; nothing was created; check --store" in line
    assert not om.store.exists()


def test_an_import_from_a_missing_session_creates_nothing_on_either_side(om, tmp_path):
    capture(om, "the source store's one session")
    other = tmp_path / "destination-store"
    capture(lambda *a, **kw: run_om("--store", other, "--session", kw.pop("session"), *a, **kw),
            "the destination's own prompt", session="dest")
    before = ledgers(om.store), ledgers(other)
    for session in ("dest", "fresh"):  # a destination with a ledger, and one without
        r = run_om("--store", other, "--session", session, "import", "--from-store", om.store,
                   "--from-session", "relaa")
        line = refused_in_one_line(r, "relaa", om.store)
        assert os.path.realpath(om.store) in line.split("check the id (", 1)[1]
        assert (ledgers(om.store), ledgers(other)) == before
    assert listed(other) == ["dest"] and listed(om.store) == ["real"]


def test_capture_still_begins_a_session_and_the_writing_commands_then_work(om):
    source = capture(om, "a first prompt", session="new")
    assert om("pause", session="new").json["paused"] is True
    assert om("resume", session="new").json["paused"] is False
    receipt = om("apply", session="new", input=json.dumps(
        {"through": 1, "observations": [{"text": "a fact", "source_ids": [source]}]}))
    assert receipt.returncode == 0, receipt
    assert om("fork", "--to-session", "copy", session="new").json["through"] == 1
    assert sorted(listed(om.store)) == ["copy", "new"]


@pytest.mark.parametrize("tool, arguments", [
    ("pause", {}), ("resume", {}), ("apply", {"checkpoint": {"through": 0}}),
])
def test_the_mcp_writing_tools_refuse_a_mistyped_session_with_the_cli_line(om, tool, arguments):
    capture(om, "the one real session")
    before = ledgers(om.store)
    with McpServer(store=om.store) as srv:
        srv.initialize()
        error = srv.fail(tool, session="relaa", **arguments)
    cli = om(tool, session="relaa", input=json.dumps(arguments["checkpoint"]) if arguments else None)
    assert error == refused_in_one_line(cli, "relaa", om.store)
    assert ledgers(om.store) == before
