"""Each MCP tool's result text is the CLI command's stdout (without its final newline),
and each tool error is the CLI's stderr line, for one scripted session."""

import json
import shutil

import pytest

from inprocess import setup_om
from mcp_client import McpServer, run_om

SESSION = "equivalence"


def cli(store, *args, input=None, session=SESSION):
    return run_om("--store", store, "--session", session, *args, input=input)


def same_as_cli(text, result):
    assert result.returncode == 0, result
    assert result.stdout.endswith("\n")
    assert text == result.stdout[:-1]


def same_error_as_cli(text, result):
    assert result.returncode != 0 and result.stdout == ""
    assert text == result.stderr.strip()


def arrange(store, *args, input=None):
    """A step that builds the scripted session, in process: the tools are compared with CLI subprocesses."""
    return setup_om("--store", store, "--session", SESSION, *args, input=input)


def capture(store, kind, text):
    return arrange(store, "capture", input=json.dumps({"kind": kind, "text": text, "key": text})).json["source_id"]


@pytest.fixture
def scripted(tmp_path):
    """A store with evidence, two checkpoints (one with a retirement) and evidence pending."""
    store = tmp_path / "store"
    a = capture(store, "user", "Please keep the API <stable> & documented.")
    b = capture(store, "assistant", "I ran the tests: 41 passed, 1 failed in test_io.")
    c = capture(store, "tool", "line one\nline two \u2028 with a separator, and ünïcödé")
    first = arrange(store, "apply", input=json.dumps({"through": 3, "observations": [
        {"text": "The user wants the API stable & documented.", "importance": "high", "source_ids": [a]},
        {"text": "test_io fails.", "source_ids": [b]},
        {"text": "Tool output mentions ünïcödé.", "importance": "low", "source_ids": [c]},
    ]}))
    o1, o2, _ = first.json["observations"]
    second = arrange(store, "apply", input=json.dumps({
        "through": 3,
        "observations": [{"text": "test_io passes after the fix.", "source_ids": [b]}],
    }))
    o4 = second.json["observations"][0]
    third = arrange(store, "apply", input=json.dumps({
        "through": 3,
        "reflections": [{"text": "API stability matters and tests are green.", "observation_ids": [o1, o4]}],
        "retire": [{"id": o2, "reason": "fixed", "replacement_ids": [o4]}],
    }))
    capture(store, "user", "Next: write the changelog.")
    return {"store": store, "sources": [a, b, c], "observations": [o1, o2, o4],
            "reflection": third.json["reflections"][0]}


def test_every_read_tool_returns_the_cli_output(scripted):
    store = scripted["store"]
    with McpServer(store=store) as srv:
        srv.initialize()
        same_as_cli(srv.ok("prime", session=SESSION), cli(store, "prime"))
        same_as_cli(srv.ok("view", session=SESSION), cli(store, "view"))
        same_as_cli(srv.ok("view_all", session=SESSION), cli(store, "view", "--all"))
        same_as_cli(srv.ok("status", session=SESSION), cli(store, "status"))
        same_as_cli(srv.ok("pending", session=SESSION), cli(store, "pending"))
        for item in scripted["sources"] + scripted["observations"] + [scripted["reflection"]]:
            same_as_cli(srv.ok("recall", session=SESSION, id=item), cli(store, "recall", item))


def test_pause_and_resume_return_the_cli_output(scripted):
    store = scripted["store"]
    with McpServer(store=store) as srv:
        srv.initialize()
        paused = srv.ok("pause", session=SESSION)
        assert cli(store, "resume").returncode == 0
        same_as_cli(paused, cli(store, "pause"))
        resumed = srv.ok("resume", session=SESSION)
        assert cli(store, "pause").returncode == 0
        same_as_cli(resumed, cli(store, "resume"))


def test_apply_returns_the_cli_receipt_and_leaves_the_same_ledger(scripted, tmp_path):
    store = scripted["store"]
    twin = tmp_path / "twin"
    shutil.copytree(store, twin)
    pending = cli(store, "pending").json
    checkpoint = {"through": pending["through"], "observations": [
        {"text": "Next step: the changelog.", "importance": "medium", "source_ids": [pending["sources"][0]["id"]]}],
        "reflections": [{"text": "Work moves to release notes.", "observation_ids": [scripted["observations"][0]]}]}
    with McpServer(store=store) as srv:
        srv.initialize()
        text = srv.ok("apply", session=SESSION, checkpoint=checkpoint)
    same_as_cli(text, cli(twin, "apply", input=json.dumps(checkpoint)))
    for args in (("view",), ("view", "--all"), ("pending",)):
        assert cli(store, *args).stdout == cli(twin, *args).stdout, args


def test_memory_over_the_budget_is_cut_the_same_way(tmp_path):
    store = tmp_path / "store"
    sid = capture(store, "user", "many facts")
    observations = [{"text": f"fact {i} " + "é" * 1500, "importance": ["low", "high", "critical"][i % 3],
                     "source_ids": [sid]} for i in range(20)]
    arrange(store, "apply", input=json.dumps({"through": 1, "observations": observations}))
    with McpServer(store=store) as srv:
        srv.initialize()
        for name in ("view", "prime"):
            text = srv.ok(name, session=SESSION)
            assert len(text.encode("utf-8")) < 12000
            same_as_cli(text, cli(store, name))


@pytest.mark.parametrize("tool, arguments, argv, stdin", [
    ("apply", {"checkpoint": {"through": 99}}, ["apply"], {"through": 99}),
    ("apply", {"checkpoint": {"through": 4, "observations": [{"text": "x", "source_ids": ["s-gone"]}]}},
     ["apply"], {"through": 4, "observations": [{"text": "x", "source_ids": ["s-gone"]}]}),
    ("apply", {"checkpoint": {"through": 4, "observations": [{"text": " ", "importance": "urgent"}]}},
     ["apply"], {"through": 4, "observations": [{"text": " ", "importance": "urgent"}]}),
    ("apply", {"checkpoint": {"through": 4, "retire": [{"id": "o-nope", "reason": "r", "replacement_ids": []}]}},
     ["apply"], {"through": 4, "retire": [{"id": "o-nope", "reason": "r", "replacement_ids": []}]}),
    ("apply", {"checkpoint": {"through": True}}, ["apply"], {"through": True}),
    ("apply", {"checkpoint": "{\"through\": 4,}"}, ["apply"], "{\"through\": 4,}"),
    ("apply", {"checkpoint": "[]"}, ["apply"], "[]"),
    ("recall", {"id": "o-0000000000"}, ["recall", "o-0000000000"], None),
    ("recall", {"id": "s-0000000000"}, ["recall", "s-0000000000"], None),
    ("recall", {"id": ""}, ["recall", ""], None),
])
def test_tool_errors_are_the_cli_error_lines(scripted, tool, arguments, argv, stdin):
    store = scripted["store"]
    if stdin is not None and not isinstance(stdin, str):
        stdin = json.dumps(stdin)
    with McpServer(store=store) as srv:
        srv.initialize()
        same_error_as_cli(srv.fail(tool, session=SESSION, **arguments), cli(store, *argv, input=stdin))


@pytest.mark.parametrize("session", ["   ", "x" * 257])
def test_session_errors_are_the_cli_error_lines(scripted, session):
    store = scripted["store"]
    with McpServer(store=store) as srv:
        srv.initialize()
        for tool, argv in (("status", ["status"]), ("prime", ["prime"]), ("pause", ["pause"])):
            same_error_as_cli(srv.fail(tool, session=session), cli(store, *argv, session=session))


@pytest.mark.parametrize("arguments, argv", [
    ({"query": "API stable"}, ["API stable"]),
    ({"query": "ünïcödé", "sources": True}, ["ünïcödé", "--sources"]),
    ({"query": "test_io", "include_retired": True, "limit": 1}, ["test_io", "--include-retired", "--limit", "1"]),
    ({"query": "changelog", "sources": True, "include_retired": True}, ["changelog", "--sources", "--include-retired"]),
])
def test_search_returns_the_cli_search_output(scripted, arguments, argv):
    store = scripted["store"]
    expected = cli(store, "search", *argv)
    with McpServer(store=store) as srv:
        srv.initialize()
        same_as_cli(srv.ok("search", session=SESSION, **arguments), expected)
        same_error_as_cli(srv.fail("search", session=SESSION, query="  "), cli(store, "search", "  "))
        same_error_as_cli(srv.fail("search", session=SESSION, query="x", limit=0),
                          cli(store, "search", "x", "--limit", "0"))
        same_error_as_cli(srv.fail("search", session=SESSION, query="x", limit=101),
                          cli(store, "search", "x", "--limit", "101"))
