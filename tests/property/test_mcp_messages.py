"""Whatever one line carries, `om mcp` answers it as JSON-RPC 2.0 prescribes and keeps serving.

Hypothesis sends one server (a real subprocess) lines of every shape: random
bytes, any JSON value, and request-like objects with wrong or right members,
including tools/call of every tool with arbitrary arguments. After each line a
ping with a fresh id must be answered, so the server never died or desynchronised;
before that ping at most one response arrives, and a well-formed request gets
exactly one, carrying its id. `McpServer.close()` then checks that every byte on
stdout was a JSON-RPC response line.
"""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_client import McpServer

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
TOOLS = ["prime", "view", "view_all", "recall", "status", "pending", "apply", "pause", "resume", "search"]
METHODS = ["initialize", "ping", "tools/list", "tools/call", "notifications/initialized", "resources/list", ""]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
ids = st.integers(min_value=-(2**63), max_value=2**63) | st.text(max_size=20)
any_id = ids | json_values
arguments = st.fixed_dictionaries({}, optional={
    "session": st.text(max_size=12) | json_values, "id": st.text(max_size=12) | json_values,
    "checkpoint": json_values | st.fixed_dictionaries({"through": st.integers(-2, 5)}),
    "query": st.text(max_size=12) | json_values, "limit": json_values, "sources": json_values,
}) | json_values
params = st.fixed_dictionaries({}, optional={
    "name": st.sampled_from(TOOLS) | json_values, "arguments": arguments,
    "protocolVersion": st.sampled_from(["2025-06-18", "2025-03-26", "1999-01-01"]) | json_values,
}) | json_values
requests = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0"), "id": ids, "method": st.sampled_from(METHODS) | st.text(max_size=10)},
    optional={"params": params},
)
messages = st.fixed_dictionaries({}, optional={
    "jsonrpc": st.sampled_from(["2.0", "1.0"]) | json_values, "id": any_id,
    "method": st.sampled_from(METHODS) | json_values, "params": params,
    "result": json_values, "error": json_values,
})


def line_of(value):
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = McpServer(store=tmp_path_factory.mktemp("mcp-property") / "store")
    srv.initialize()
    yield srv
    assert srv.close() == 0


def answered_then_alive(server, line):
    """Send `line`, then a ping with a fresh id; return the responses that came before the pong."""
    server.send_raw(line)
    server._next_id += 1
    pong = f"pong-{server._next_id}"
    server.send({"jsonrpc": "2.0", "id": pong, "method": "ping"})
    before = []
    while True:
        response = server.receive(timeout=30)
        if isinstance(response, dict) and response.get("id") == pong:
            assert response == {"jsonrpc": "2.0", "id": pong, "result": {}}
            return before
        before.append(response)


@SETTINGS
@given(request=requests)
def test_a_well_formed_request_gets_exactly_one_response_with_its_id(server, request):
    if request["method"] == "initialize":
        request["method"] = "ping"  # re-initializing mid-session is not what this is about
    (response,) = answered_then_alive(server, line_of(request))
    assert response["jsonrpc"] == "2.0" and response["id"] == request["id"]
    assert ("result" in response) != ("error" in response)
    if "error" in response:
        assert response["error"]["code"] in (-32601, -32602, -32603) and response["error"]["message"]
    elif request["method"] == "tools/call":
        (content,) = response["result"]["content"]
        assert content["type"] == "text" and isinstance(content["text"], str)
        if response["result"]["isError"] is not False:
            # A tool error is the CLI's kind of message: one line starting "om: ".
            assert response["result"]["isError"] is True
            assert content["text"].startswith("om: ") and "\n" not in content["text"], content


@SETTINGS
@given(message=messages | json_values)
def test_any_json_line_gets_at_most_one_response_and_the_server_keeps_serving(server, message):
    responses = answered_then_alive(server, line_of(message))
    assert len(responses) <= 1
    for response in responses:
        items = response if isinstance(response, list) else [response]
        for item in items:
            assert item["jsonrpc"] == "2.0" and "id" in item and ("result" in item) != ("error" in item)


@settings(SETTINGS, max_examples=80)
@given(data=st.binary(max_size=300))
def test_any_bytes_on_a_line_leave_the_server_serving(server, data):
    line = data.replace(b"\n", b" ") + b"\n"
    assert len(answered_then_alive(server, line)) <= 1
