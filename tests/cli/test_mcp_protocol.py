"""`om mcp` spoken to over pipes: lifecycle, tools, errors, malformed input, limits, EOF.

Every test runs the server as a subprocess through `McpServer`, whose close()
checks that stdout carried only JSON-RPC response lines.
"""

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from inprocess import setup_om
from mcp_client import McpServer

ROOT = Path(__file__).resolve().parents[2]
SESSION = "sess-mcp"
EVERY_TOOL = ["prime", "view", "view_all", "recall", "status", "pending", "apply", "pause", "resume", "search",
              "sessions", "import", "export", "ingest", "promote", "project_view", "project_retire", "sync_status"]
#: Tools about the installation rather than one session's ledger (no session argument needed).
NO_SESSION = ["doctor"]
MAX_LINE = 4 * 1024 * 1024


def capture(store, text, kind="user", key=None, session=SESSION):
    """Evidence for the server to serve, captured in process (the server is the subprocess under test)."""
    return setup_om("--store", store, "--session", session, "capture",
                    input=json.dumps({"kind": kind, "text": text, "key": key or text})).json["source_id"]


def minimal_arguments(name):
    args = {"session": SESSION}
    if name == "recall":
        args["id"] = "s-0000"
    if name == "apply":
        args["checkpoint"] = {"through": 0}
    if name == "search":
        args["query"] = "anything"
    if name == "import":
        args["from_session"] = "earlier"
    if name == "export":
        args["format"] = "md"
    if name == "promote":
        args["ids"] = ["o-0000"]
    if name == "project_retire":
        args.update(id="o-0000", reason="wrong")
    return args


@pytest.fixture
def server(store):
    with McpServer(store=store) as srv:
        srv.initialize()
        yield srv


# -- lifecycle ------------------------------------------------------------------


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"])
def test_initialize_answers_with_the_clients_protocol_version_when_it_is_supported(store, version):
    with McpServer(store=store) as srv:
        result = srv.initialize(version)
    assert result["protocolVersion"] == version
    assert result["capabilities"] == {"tools": {"listChanged": False}}
    assert result["serverInfo"]["name"] == "om"
    assert "evidence" in result["instructions"]


def test_initialize_answers_with_the_newest_version_when_the_clients_is_unknown(store):
    with McpServer(store=store) as srv:
        assert srv.initialize("2099-01-01")["protocolVersion"] == "2025-11-25"


def test_initialize_without_a_protocol_version_is_an_invalid_params_error(store):
    with McpServer(store=store) as srv:
        response = srv.request("initialize", {"capabilities": {}})
    assert response["error"]["code"] == -32602


def test_ping_answers_an_empty_result_before_and_after_initialize(store):
    with McpServer(store=store) as srv:
        assert srv.request("ping")["result"] == {}
        srv.initialize()
        assert srv.request("ping", id="p-1")["result"] == {}


def test_notifications_get_no_response(server):
    server.notify("notifications/initialized")
    server.notify("notifications/cancelled", {"requestId": 7, "reason": "user"})
    server.notify("notifications/unknown-thing", {"x": 1})
    server.notify("tools/call", {"name": "pause", "arguments": {"session": SESSION}})
    assert server.no_response()
    assert server.request("ping", id="after")["id"] == "after"


def test_a_notification_never_runs_a_tool(server):
    server.notify("tools/call", {"name": "pause", "arguments": {"session": SESSION}})
    assert json.loads(server.ok("status", session=SESSION))["paused"] is False


def test_responses_sent_by_the_client_are_ignored(server):
    server.send({"jsonrpc": "2.0", "id": 99, "result": {}})
    server.send({"jsonrpc": "2.0", "id": 98, "error": {"code": 1, "message": "x"}})
    assert server.no_response()


def test_end_of_input_ends_the_server_with_status_zero_and_a_silent_stderr(store):
    srv = McpServer(store=store)
    srv.initialize()
    assert srv.close() == 0
    assert srv.stderr == ""


def test_a_last_request_without_a_newline_is_still_answered_before_exit(store):
    srv = McpServer(store=store)
    srv.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
    srv.proc.stdin.close()
    assert srv.receive() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert srv.close() == 0


def test_blank_lines_are_ignored(server):
    server.send_raw(b"\n   \n\r\n")
    assert server.no_response()
    assert server.request("ping")["result"] == {}


# -- tools/list -------------------------------------------------------------------


def test_tools_list_offers_every_ledger_operation_with_a_required_session(server):
    tools = server.request("tools/list")["result"]["tools"]
    assert sorted(t["name"] for t in tools) == sorted(EVERY_TOOL + NO_SESSION)
    for tool in tools:
        schema = tool["inputSchema"]
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert ("session" in schema["required"]) != (tool["name"] in NO_SESSION), tool["name"]
        assert tool["description"] and tool["annotations"]["openWorldHint"] is False
    writes = {t["name"] for t in tools if not t["annotations"]["readOnlyHint"]}
    assert writes == {"apply", "pause", "resume", "import", "ingest", "promote", "project_retire"}


def test_tool_descriptions_teach_evidence_real_ids_and_the_cursor(server):
    tools = {t["name"]: t["description"] for t in server.request("tools/list")["result"]["tools"]}
    for name in ("prime", "view", "view_all", "recall", "search"):
        assert "not instructions" in tools[name], name
    assert "real id" in tools["apply"] and "never invent" in tools["apply"]
    assert "'through'" in tools["apply"] and "'through'" in tools["pending"]
    assert "call pending again" in tools["pending"]


def test_tools_list_accepts_a_cursor_and_returns_one_page(server):
    result = server.request("tools/list", {"cursor": "anything"})["result"]
    assert "nextCursor" not in result and len(result["tools"]) >= len(EVERY_TOOL)


# -- the tools, success paths ---------------------------------------------------------


def test_a_checkpoint_through_pending_and_apply_becomes_memory(server, store):
    first = capture(store, "We deploy with make ship on Fridays.")
    second = capture(store, "The staging database is called atlas.", kind="assistant")
    pending = json.loads(server.ok("pending", session=SESSION))
    assert [s["id"] for s in pending["sources"]] == [first, second]
    receipt = json.loads(server.ok("apply", session=SESSION, checkpoint={
        "through": pending["through"],
        "observations": [{"text": "Deploys run with make ship on Fridays.", "importance": "high",
                          "source_ids": [first]},
                         {"text": "Staging DB: atlas.", "source_ids": [second]}],
    }))
    assert receipt["through"] == pending["through"] and len(receipt["observations"]) == 2
    ref = json.loads(server.ok("apply", session=SESSION, checkpoint={
        "through": pending["through"],
        "reflections": [{"text": "Release facts are known.", "observation_ids": receipt["observations"]}],
    }))["reflections"][0]
    assert json.loads(server.ok("pending", session=SESSION))["sources"] == []
    view = server.ok("view", session=SESSION)
    assert "make ship on Fridays" in view and view.startswith("# om memory: quoted historical evidence")
    prime = server.ok("prime", session=SESSION)
    assert prime.startswith("# om prime") and "Staging DB: atlas." in prime
    recalled = json.loads(server.ok("recall", session=SESSION, id=receipt["observations"][0]))
    assert recalled["entry"]["id"] == receipt["observations"][0]
    assert [s["id"] for s in recalled["sources"]] == [first]
    assert [o["id"] for o in json.loads(server.ok("recall", session=SESSION, id=ref))["observations"]] == \
        receipt["observations"]
    assert json.loads(server.ok("recall", session=SESSION, id=first))["sources"][0]["text"].startswith("We deploy")
    status = json.loads(server.ok("status", session=SESSION))
    assert status["active"] == {"observations": 2, "reflections": 1} and status["pending_sources"] == 0
    retired = json.loads(server.ok("apply", session=SESSION, checkpoint={
        "through": pending["through"],
        "observations": [{"text": "Staging DB was renamed to atlas2.", "source_ids": [second]}],
    }))["observations"][0]
    json.loads(server.ok("apply", session=SESSION, checkpoint={
        "through": pending["through"],
        "retire": [{"id": receipt["observations"][1], "reason": "renamed", "replacement_ids": [retired]}],
    }))
    everything = json.loads(server.ok("view_all", session=SESSION))
    assert [e["active"] for e in everything].count(False) == 1


def test_pause_and_resume_flip_the_paused_flag_and_return_the_status(server, store):
    capture(store, "The session begins with its first capture.")
    assert json.loads(server.ok("pause", session=SESSION))["paused"] is True
    assert json.loads(server.ok("status", session=SESSION))["paused"] is True
    assert json.loads(server.ok("resume", session=SESSION))["paused"] is False


def test_a_checkpoint_sent_as_a_json_string_is_read_like_apply_reads_stdin(server, store):
    sid = capture(store, "Use tabs in the Makefile.")
    text = server.ok("apply", session=SESSION, checkpoint=json.dumps(
        {"through": 1, "observations": [{"text": "Makefile needs tabs.", "source_ids": [sid]}]}))
    assert json.loads(text)["through"] == 1


def test_sessions_are_kept_apart(server, store):
    capture(store, "only in session a", session="a")
    assert json.loads(server.ok("status", session="a"))["pending_sources"] == 1
    assert json.loads(server.ok("status", session="b"))["pending_sources"] == 0


def test_memory_responses_stay_within_twelve_thousand_bytes(server, store):
    sid = capture(store, "a long evening of facts")
    observations = [{"text": f"fact {i}: " + "x" * 1900, "source_ids": [sid]} for i in range(12)]
    server.ok("apply", session=SESSION, checkpoint={"through": 1, "observations": observations})
    for name in ("view", "prime"):
        text = server.ok(name, session=SESSION)
        assert len(text.encode("utf-8")) <= 12000 and "omitted to fit the budget" in text, name


def test_line_separators_in_memory_never_split_a_protocol_line(server, store):
    sid = capture(store, "one\u2028two\u2029three\x85four")
    server.ok("pending", session=SESSION)
    for raw in (b"\xe2\x80\xa8", b"\xe2\x80\xa9", b"\xc2\x85"):
        assert all(raw not in line for line in server.lines), raw
    recalled = json.loads(server.ok("recall", session=SESSION, id=sid))
    assert recalled["sources"][0]["text"] == "one\u2028two\u2029three\x85four"


# -- the tools, error paths ---------------------------------------------------------


@pytest.mark.parametrize("name", EVERY_TOOL)
def test_every_tool_without_a_session_is_a_tool_error(server, name):
    args = minimal_arguments(name)
    del args["session"]
    assert server.fail(name, **args) == f"om: {name}: argument 'session' is required"


@pytest.mark.parametrize("name", EVERY_TOOL)
def test_every_tool_rejects_a_blank_or_non_string_session(server, name):
    assert server.fail(name, **dict(minimal_arguments(name), session="  ")) == "om: session must not be blank"
    assert server.fail(name, **dict(minimal_arguments(name), session=7)) == \
        f"om: {name}: argument 'session' must be a string"


@pytest.mark.parametrize("name", EVERY_TOOL)
def test_every_tool_rejects_an_unknown_argument(server, name):
    assert server.fail(name, **dict(minimal_arguments(name), colour="red")) == \
        f"om: {name}: unknown argument 'colour'"


@pytest.mark.parametrize("name", EVERY_TOOL)
def test_every_tool_reports_an_unusable_store_as_a_tool_error(tmp_path, name):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    with McpServer(store=blocker) as srv:
        srv.initialize()
        assert srv.fail(name, **minimal_arguments(name)) == f"om: store {blocker} is not a directory"
        assert srv.request("ping")["result"] == {}


def test_arguments_that_are_not_an_object_are_a_tool_error(server):
    response = server.request("tools/call", {"name": "status", "arguments": ["sess"]})
    assert response["result"]["isError"] is True
    assert response["result"]["content"][0]["text"] == "om: status: arguments must be an object"


@pytest.mark.parametrize("checkpoint, message", [
    ({"through": 9}, "om: stale or out-of-range cursor 9 (checkpointed through 0, latest source 1); "
                     "reread pending and retry"),
    ({"through": "1"}, "om: field 'through' must be an integer, got a string"),
    ({"through": 1, "observations": [{"text": "x", "source_ids": ["s-nope"]}]},
     "om: observations[0] cites unknown source s-nope"),
    ({"through": 1, "observations": [{"text": "x", "source_ids": []}]},
     "om: observations[0] source_ids must list 1 to 100 ids"),
    ({"through": 1, "extra": True}, "om: unknown field 'extra' in checkpoint"),
    ([1], "om: a checkpoint must be a JSON object, got an array"),
    ("{not json", "om: invalid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
])
def test_apply_reports_a_bad_checkpoint_and_writes_nothing(server, store, checkpoint, message):
    capture(store, "one source")
    assert server.fail("apply", session=SESSION, checkpoint=checkpoint) == message
    status = json.loads(server.ok("status", session=SESSION))
    assert status["through"] == 0 and status["active"] == {"observations": 0, "reflections": 0}


def test_recall_of_an_unknown_id_is_a_tool_error(server):
    assert server.fail("recall", session=SESSION, id="o-missing") == "om: no entry o-missing"
    assert server.fail("recall", session=SESSION, id="s-missing") == "om: no source s-missing"
    assert server.fail("recall", session=SESSION) == "om: recall: argument 'id' is required"


def test_an_unknown_tool_is_an_invalid_params_error(server):
    response = server.request("tools/call", {"name": "capture", "arguments": {"session": SESSION}})
    assert response["error"]["code"] == -32602 and "unknown tool 'capture'" in response["error"]["message"]


def test_tools_call_without_a_name_is_an_invalid_params_error(server):
    assert server.request("tools/call", {"arguments": {}})["error"]["code"] == -32602


def test_params_that_are_not_an_object_are_an_invalid_params_error(server):
    assert server.request("tools/list", [1, 2])["error"]["code"] == -32602


# -- malformed JSON-RPC ---------------------------------------------------------------


@pytest.mark.parametrize("raw, code", [
    (b"{not json", -32700),
    (b'{"jsonrpc":"2.0","id":1,"method":"ping"} trailing', -32700),
    (b'{"jsonrpc":"2.0","id":1,"method":"ping","x":NaN}', -32700),
    (b"\xff\xfe{}", -32700),
    (b"42", -32600),
    (b'"ping"', -32600),
    (b"null", -32600),
    (b'{"jsonrpc":"2.0","id":1}', -32600),
    (b'{"id":1,"method":"ping"}', -32600),
    (b'{"jsonrpc":"1.0","id":1,"method":"ping"}', -32600),
    (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', -32600),
    (b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', -32600),
    (b'{"jsonrpc":"2.0","id":1,"method":5}', -32600),
])
def test_malformed_messages_get_the_json_rpc_error_and_the_server_keeps_serving(server, raw, code):
    server.send_raw(raw + b"\n")
    response = server.receive()
    assert response["error"]["code"] == code, response
    assert server.request("ping")["result"] == {}


def test_an_unknown_method_is_method_not_found_with_the_request_id(server):
    response = server.request("resources/list", {}, id="r-1")
    assert response["id"] == "r-1" and response["error"]["code"] == -32601


def test_batches_are_refused_under_protocol_versions_without_them(server):
    server.send([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
    response = server.receive()
    assert response["id"] is None and response["error"]["code"] == -32600


def test_batches_are_answered_as_arrays_under_2025_03_26(store):
    with McpServer(store=store) as srv:
        srv.initialize("2025-03-26")
        srv.send([{"jsonrpc": "2.0", "id": 1, "method": "ping"},
                  {"jsonrpc": "2.0", "method": "notifications/progress"},
                  {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "status", "arguments": {"session": SESSION}}},
                  7])
        responses = srv.receive()
        assert [r["id"] for r in responses] == [1, 2, None]
        assert responses[2]["error"]["code"] == -32600
        srv.send([])
        assert srv.receive()["error"]["code"] == -32600
        srv.send([{"jsonrpc": "2.0", "method": "notifications/progress"}])
        assert srv.no_response()


# -- limits -------------------------------------------------------------------


def test_a_line_over_four_megabytes_is_refused_and_the_server_keeps_serving(server):
    server.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"a" * MAX_LINE + b'"}}\n')
    response = server.receive(timeout=60)
    assert response["id"] is None and response["error"]["code"] == -32600
    assert "exceeds 4194304 bytes" in response["error"]["message"]
    assert server.request("ping")["result"] == {}


def test_a_large_request_under_the_limit_is_processed(server, store):
    sid = capture(store, "source")
    text = server.fail("apply", session=SESSION,
                       checkpoint={"through": 1, "observations": [{"text": "y" * 3_000_000, "source_ids": [sid]}]})
    assert text == "om: observations[0] text exceeds 2000 characters"


# -- where the store is ---------------------------------------------------------------


def test_the_store_comes_from_the_environment_when_no_store_option_is_given(tmp_path):
    env_store = tmp_path / "from-env"
    with McpServer(env={"OBSERVATIONAL_MEMORY_STORE": str(env_store)}) as srv:
        srv.initialize()
        database = json.loads(srv.ok("status", session=SESSION))["database"]
    assert database.startswith(str(env_store.resolve()) + "/")


def test_the_store_option_wins_over_the_environment(tmp_path):
    with McpServer(store=tmp_path / "opt", env={"OBSERVATIONAL_MEMORY_STORE": str(tmp_path / "env")}) as srv:
        srv.initialize()
        database = json.loads(srv.ok("status", session=SESSION))["database"]
    assert database.startswith(str((tmp_path / "opt").resolve()) + "/")


def test_an_installed_plugin_serves_the_codex_store_beside_its_plugin_folders(tmp_path):
    root = tmp_path / "codex-home" / "plugins" / "cache" / "om-mkt" / "obsmem" / "1.2.3"
    (root / ".codex-plugin").mkdir(parents=True)
    (root / ".codex-plugin" / "plugin.json").write_text('{"name":"obsmem","version":"1.2.3"}')
    with McpServer(cwd=root, env={"HOME": str(tmp_path)}) as srv:
        srv.initialize()
        database = json.loads(srv.ok("status", session=SESSION))["database"]
    store = (tmp_path / "codex-home" / "om").resolve()
    assert database.startswith(str(store) + "/")


def test_without_any_store_the_server_starts_and_every_tool_says_why(tmp_path):
    with McpServer(cwd=tmp_path) as srv:
        srv.initialize()
        assert len(srv.request("tools/list")["result"]["tools"]) >= len(EVERY_TOOL)
        message = srv.fail("status", session=SESSION)
        assert message.startswith("om: no store: pass --store, set OBSERVATIONAL_MEMORY_STORE")
        srv.proc.stdin.close()
        assert srv.close() == 0
    assert "om: no store" in srv.stderr


INSTALLED = ("plugins", "cache", "om-mkt", "obsmem", "1.2.3")


def installed_plugin(codex_home, where=INSTALLED, manifest=True):
    """This runtime copied the way Codex installs a plugin: plugins/cache/<mkt>/<plugin>/<version>/."""
    root = codex_home.joinpath(*where)
    ignore = shutil.ignore_patterns("__pycache__")
    for name in ("om", "bin"):
        shutil.copytree(ROOT / name, root / name, ignore=ignore)
    shutil.copy(ROOT / ".mcp.json", root / ".mcp.json")
    if manifest:
        shutil.copytree(ROOT / ".codex-plugin", root / ".codex-plugin")
    return root


def bundled_command(root):
    """The server command of the plugin's .mcp.json, run the way Codex runs it.

    `python3` becomes this interpreter, so the test does not depend on what PATH offers."""
    (entry,) = json.loads((root / ".mcp.json").read_text())["mcpServers"].values()
    command = [sys.executable if entry["command"] == "python3" else entry["command"], *entry["args"]]
    return command, (root / entry["cwd"]).resolve()


def codex_server_env(tmp_path):
    # What Codex gives an MCP server: HOME and PATH, no PLUGIN_* or CODEX_HOME.
    return {"HOME": str(tmp_path), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def test_the_bundled_server_command_serves_the_codex_store_with_only_home_and_path(tmp_path):
    root = installed_plugin(tmp_path / "codex-home")
    command, cwd = bundled_command(root)
    with McpServer(command=command, cwd=cwd, env=codex_server_env(tmp_path)) as srv:
        srv.initialize()
        assert sorted(t["name"] for t in srv.request("tools/list")["result"]["tools"]) == sorted(EVERY_TOOL + NO_SESSION)
        database = json.loads(srv.ok("status", session=SESSION))["database"]
    store = (tmp_path / "codex-home" / "om").resolve()
    assert database.startswith(str(store) + "/")


def test_an_installed_runtime_finds_its_store_from_any_working_directory(tmp_path):
    root = installed_plugin(tmp_path / "codex-home")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    command = [sys.executable, "-I", "-S", str(root / "bin" / "om"), "mcp"]
    with McpServer(command=command, cwd=elsewhere, env=codex_server_env(tmp_path)) as srv:
        srv.initialize()
        database = json.loads(srv.ok("status", session=SESSION))["database"]
    store = (tmp_path / "codex-home" / "om").resolve()
    assert database.startswith(str(store) + "/")


@pytest.mark.parametrize("layout", ["no manifest", "too shallow"])
def test_a_folder_that_only_looks_like_a_plugin_cache_never_picks_a_store(tmp_path, layout):
    home = tmp_path / "codex-home"
    if layout == "no manifest":
        root = installed_plugin(home, manifest=False)
    else:  # plugins/cache/<plugin>/<version>: the marketplace level is missing
        root = installed_plugin(home, where=("plugins", "cache", "obsmem", "1.2.3"))
    command = [sys.executable, "-I", "-S", str(root / "bin" / "om"), "mcp"]
    with McpServer(command=command, cwd=root, env=codex_server_env(tmp_path)) as srv:
        srv.initialize()
        assert srv.fail("status", session=SESSION).startswith("om: no store:")
    assert not (home / "plugins" / "data").exists()


def test_the_reading_tools_on_a_session_the_store_has_no_ledger_of_create_nothing(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    with McpServer(store=store) as srv:
        srv.initialize()
        status = json.loads(srv.ok("status", session="miscopied-id"))
        assert status["through"] == 0 and status["pending_sources"] == 0
        assert json.loads(srv.ok("pending", session="miscopied-id")) == {"through": 0, "sources": []}
        assert json.loads(srv.ok("view_all", session="miscopied-id")) == []
        for tool in ("prime", "view"):
            srv.ok(tool, session="miscopied-id")
        srv.ok("search", session="miscopied-id", query="anything")
        assert "no entry" in srv.fail("recall", session="miscopied-id", id="o-123")
    assert list(store.iterdir()) == []
