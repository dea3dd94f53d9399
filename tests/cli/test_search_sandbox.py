"""Search where Codex's default sandbox puts it: the MCP server (outside the
sandbox) builds and catches up the index, and the agent's shell, which cannot
write the store, answers from that index plus a scan of newer rows."""

import json
import sqlite3

from conftest import run_read_only
from mcp_client import McpServer, run_om

SESSION = "s1"


def om(store, *args, input=None):
    r = run_om("--store", store, "--session", SESSION, *args, input=input)
    assert r.returncode == 0, r
    return r


def capture(store, text):
    return om(store, "capture", input=json.dumps({"kind": "tool", "text": text, "key": text})).json["source_id"]


def observe(store, text, source_id):
    through = om(store, "pending").json["through"]
    checkpoint = {"through": through, "observations": [{"text": text, "source_ids": [source_id]}]}
    return om(store, "apply", input=json.dumps(checkpoint)).json["observations"][0]


def index_state(store):
    db = om(store, "status").json["database"]
    with sqlite3.connect(db) as c:
        if not c.execute("SELECT count(*) FROM sqlite_master WHERE name = 'om_fts_v2_state'").fetchone()[0]:
            return None
        state = dict(c.execute("SELECT key, value FROM om_fts_v2_state"))
        state["documents"] = c.execute("SELECT count(*) FROM om_fts_v2_docsize").fetchone()[0]
        return state


def mcp_search(store, query, **options):
    with McpServer(store=store) as server:
        server.initialize()
        return json.loads(server.ok("search", session=SESSION, query=query, **options))["results"]


def test_the_mcp_search_tool_builds_the_index_and_catches_it_up(store):
    first = capture(store, "the nightly backup to the cold bucket timed out")
    assert index_state(store) is None
    assert [r["id"] for r in mcp_search(store, "backup timed out", sources=True)] == [first]
    state = index_state(store)
    assert state["sources_seq"] == "1" and state["documents"] == 1
    second = capture(store, "the backup succeeded on the second attempt")
    oid = observe(store, "Nightly backups sometimes time out; the retry succeeds.", second)
    results = mcp_search(store, "backup", sources=True)
    assert {r["id"] for r in results} == {first, second, oid}
    state = index_state(store)
    assert (state["sources_seq"], state["entries_seq"], state["documents"]) == ("2", "1", 3)


def test_a_read_only_shell_search_answers_from_the_servers_index_and_newer_rows(store):
    old_source = capture(store, "redis evicted session keys under memory pressure")
    old_memory = observe(store, "Redis evicts session keys when memory is short.", old_source)
    mcp_search(store, "redis")
    before = index_state(store)
    assert before["documents"] == 2
    # Hooks run outside the sandbox and keep writing after the server indexed.
    new_source = capture(store, "raised redis maxmemory to 2gb, evictions stopped")
    new_memory = observe(store, "Redis maxmemory is 2gb now; no more evictions.", new_source)
    shell = run_read_only(store, "search", "--sources", "redis evictions")
    assert shell.returncode == 0, shell
    assert index_state(store) == before  # the shell wrote nothing
    found = [r["id"] for r in shell.json["results"]]
    assert set(found) == {old_source, old_memory, new_source, new_memory}
    # Same answer, same order and scores, as the server gives once it has indexed everything.
    served = mcp_search(store, "redis evictions", sources=True)
    assert index_state(store)["documents"] == 4
    assert [(r["id"], int(r["score"])) for r in shell.json["results"]] == [(r["id"], int(r["score"])) for r in served]
    memories = run_read_only(store, "search", "redis maxmemory")
    assert [r["id"] for r in memories.json["results"]] == [new_memory, old_memory]
