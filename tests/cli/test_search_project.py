"""`search` finds the project memory: a session's search its project's entries, `--all-sessions` every
project memory of the machine (or `--project DIR`'s), each marked as the project's, through the CLI and MCP."""

import json
import sqlite3

import pytest

from conftest import run_om, run_read_only, tree_bytes
from mcp_client import McpServer
from project_support import ClaudeAt, CodexAt, om_json, project_key, remember, started

#: The fields of a session's search result (docs/search.md): a session result has these and no others.
SESSION_FIELDS = {"id", "kind", "seq", "active", "importance", "score", "snippet"}


@pytest.fixture
def home(project_home):
    """A project home of this test's own: `--all-sessions` searches every project memory in it."""
    return project_home


@pytest.fixture
def shop(tmp_path, home):
    """Folder `shop` (a project of its own, outside git) with a fact promoted by one Codex session of it,
    and a second Codex session of it, in the same store, that holds an entry of its own."""
    folder = tmp_path / "shop"
    folder.mkdir()
    first = started(CodexAt(tmp_path / "store", folder, "codex-1"))
    [promoted] = remember(first, "The cache is SQLite; Redis was dropped for good.", promote=True,
                          importance="high")
    second = started(CodexAt(tmp_path / "store", folder, "codex-2"))
    [own] = remember(second, "The cache warms up in ten seconds.")
    return {"folder": folder, "key": project_key(folder), "first": first, "second": second,
            "promoted": promoted, "own": own, "store": str(tmp_path / "store")}


def search(store, session, *words):
    return om_json("--store", store, "--session", session, "search", *words)


def test_a_promoted_fact_is_found_by_another_sessions_search_marked_as_project(shop):
    found = search(shop["store"], "codex-2", "cache")
    by_id = {r["id"]: r for r in found["results"]}
    assert set(by_id) == {shop["promoted"], shop["own"]}
    project = by_id[shop["promoted"]]
    assert project["scope"] == "project" and project["project"] == shop["key"]
    assert project["kind"] == "observation" and project["active"] and project["importance"] == "high"
    assert "[cache]" in project["snippet"].lower()
    assert set(by_id[shop["own"]]) == SESSION_FIELDS, "a session result keeps its shape"
    recalled = om_json("--store", shop["store"], "--session", "codex-2", "recall", shop["promoted"])
    assert recalled["project"] == shop["key"], "the id a project result names recalls from the session"


def test_an_entry_both_in_the_session_and_its_project_shows_once_as_the_sessions_marked_also_in_the_project(
        shop):
    found = search(shop["store"], "codex-1", "Redis")
    [result] = found["results"]
    assert result["id"] == shop["promoted"] and "scope" not in result
    assert result["also_in_project"] == shop["key"] and "retired_in_project" not in result
    assert set(result) == SESSION_FIELDS | {"also_in_project"}


def test_a_session_without_project_memory_searches_as_before(tmp_path, home):
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    alone = started(CodexAt(tmp_path / "store", folder, "alone"))
    [own] = remember(alone, "The cache is Memcached here.")
    found = search(str(alone.store), "alone", "cache")
    assert [r["id"] for r in found["results"]] == [own]
    assert set(found) == {"query", "results"} and set(found["results"][0]) == SESSION_FIELDS


def test_retired_project_entries_show_only_with_include_retired_as_session_ones_do(shop):
    retired = om_json("project", "--project", str(shop["folder"]), "retire", shop["promoted"],
                      "--reason", "Redis is back")
    assert retired["retired"] == [shop["promoted"]]
    assert [r["id"] for r in search(shop["store"], "codex-2", "Redis")["results"]] == []
    [result] = search(shop["store"], "codex-2", "Redis", "--include-retired")["results"]
    assert result["id"] == shop["promoted"] and result["scope"] == "project" and result["active"] is False
    assert result["replacement_ids"] == []
    # The session that promoted it still holds it active: its own result, marked retired in the project.
    [own] = search(shop["store"], "codex-1", "Redis")["results"]
    assert own["active"] and own["also_in_project"] == shop["key"] and own["retired_in_project"] is True


def test_all_sessions_finds_every_project_memory_marked_and_deduplicated_and_project_dir_restricts_it(
        shop, tmp_path):
    # A Claude Code session of the same project, in another store, promotes a fact no session of the
    # searched store holds; a session of another project promotes one too.
    claude = started(ClaudeAt(tmp_path / "claude-store", shop["folder"], "claude-1"))
    [theirs] = remember(claude, "The cache keys carry the tenant id.", promote=True)
    other_folder = tmp_path / "blog"
    other_folder.mkdir()
    other = started(ClaudeAt(tmp_path / "claude-store", other_folder, "claude-2"))
    [elsewhere] = remember(other, "The blog cache is a CDN.", promote=True)

    found = om_json("--store", shop["store"], "search", "cache", "--all-sessions")
    rows = {(r["session"], r["id"]): r for r in found["results"]}
    home = str(tmp_path / "projects")
    assert set(rows) == {("codex-1", shop["promoted"]), ("codex-2", shop["own"]),
                         ("project-" + shop["key"], theirs), ("project-" + project_key(other_folder), elsewhere)}
    assert rows[("codex-1", shop["promoted"])]["also_in_project"] == shop["key"]
    assert "scope" not in rows[("codex-1", shop["promoted"])]
    project = rows[("project-" + shop["key"], theirs)]
    assert project["scope"] == "project" and project["project"] == shop["key"] and project["store"] == home
    assert found["projects"] == 2 and found["skipped"] == []
    recalled = om_json("--store", project["store"], "--session", project["session"], "recall", theirs)
    assert recalled["entry"]["text"] == "The cache keys carry the tenant id."

    narrowed = om_json("--store", shop["store"], "search", "cache", "--all-sessions",
                       "--project", str(shop["folder"]))
    assert {r["id"] for r in narrowed["results"]} == {shop["promoted"], shop["own"], theirs}
    assert narrowed["projects"] == 1


def test_a_project_memory_that_cannot_be_read_is_named_and_the_search_still_answers(shop, home):
    [database] = home.glob("session-*/memory.sqlite3")
    database.write_bytes(b"not a database at all" * 100)
    result = run_om("--store", shop["store"], "--session", "codex-2", "search", "cache")
    assert result.returncode == 0, result
    assert [r["id"] for r in result.json["results"]] == [shop["own"]]
    [skipped] = result.json["skipped"]
    assert skipped["directory"] == str(database.parent) and "project memory" in skipped["error"]
    assert result.stderr.count("\n") == 1 and str(database.parent) in result.stderr
    every = run_om("--store", shop["store"], "search", "cache", "--all-sessions")
    assert every.returncode == 0 and str(database.parent) in json.dumps(every.json["skipped"])


def test_a_weak_first_pass_is_expanded_from_the_project_memory_and_across_it(tmp_path, home):
    folder = tmp_path / "ci"
    folder.mkdir()
    first = started(CodexAt(tmp_path / "store", folder, "codex-1"))
    [promoted] = remember(first, "Deploys go through the blue pipeline; the blue pipeline runs nightly.",
                          promote=True)
    second = started(CodexAt(tmp_path / "store", folder, "codex-2"))
    [own] = remember(second, "The blue pipeline is slow on Mondays.")
    # Only the project entry holds a word of the query, and not both: a weak first pass, whose
    # strongest words (blue, pipeline) then find the session's own entry.
    found = search(str(second.store), "codex-2", "deploys", "outage")
    assert [r["id"] for r in found["results"]] == [promoted, own]
    assert found["results"][0]["scope"] == "project" and "expansion" not in found["results"][0]
    assert found["results"][1]["expansion"] is True and "scope" not in found["results"][1]
    assert set(found["expansion"]) >= {"blue", "pipeline"}


@pytest.mark.parametrize("arguments, argv", [
    ({"query": "cache"}, ["cache"]),
    ({"query": "Redis", "include_retired": True}, ["Redis", "--include-retired"]),
    ({"query": "cache", "all_sessions": True}, ["cache", "--all-sessions"]),
])
def test_the_mcp_search_tool_marks_project_entries_as_the_cli_does(shop, arguments, argv):
    expected = run_om("--store", shop["store"], "--session", "codex-2", "search", *argv)
    assert expected.returncode == 0
    assert any(r.get("scope") == "project" or "also_in_project" in r for r in expected.json["results"])
    with McpServer(store=shop["store"]) as server:
        server.initialize()
        assert server.ok("search", session="codex-2", **arguments) == expected.stdout[:-1]


def test_a_project_result_is_never_a_source_even_with_sources(shop, home):
    found = search(shop["store"], "codex-2", "Redis", "--sources")
    project = [r for r in found["results"] if r.get("scope") == "project"]
    assert [r["kind"] for r in project] == ["observation"]
    [database] = home.glob("session-*/memory.sqlite3")
    with sqlite3.connect(database) as conn:
        assert conn.execute("SELECT count(*) FROM sources").fetchone()[0] == 1


def test_a_project_home_the_shell_cannot_write_is_still_searched_and_nothing_is_written(shop, home):
    # A sandboxed shell (Codex's workspace-write) can write neither the store nor the project home.
    before = tree_bytes(home)
    paths = [home, *(p for p in home.rglob("*"))]
    modes = {p: p.stat().st_mode & 0o777 for p in paths}
    for p in sorted(paths, key=lambda p: -len(p.parts)):
        p.chmod(0o500 if p.is_dir() else 0o400)
    try:
        result = run_read_only(shop["store"], "search", "cache", session="codex-2")
    finally:
        for p, mode in sorted(modes.items(), key=lambda item: len(item[0].parts)):
            p.chmod(mode)
    assert result.returncode == 0, result
    found = json.loads(result.stdout)
    [project] = [r for r in found["results"] if r.get("scope") == "project"]
    assert project["id"] == shop["promoted"] and "skipped" not in found
    assert tree_bytes(home) == before
