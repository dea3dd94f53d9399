"""The MCP tools `sessions`, `import` and `search` with `all_sessions` return what the CLI prints."""

import json
import shutil

import pytest

from mcp_client import McpServer, run_om
from sessions_support import session_with_memory


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    return root


@pytest.fixture
def populated(store, project, tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()
    session_with_memory(store, "alpha", project, "The cache lives in redis.")
    session_with_memory(store, "beta", other, "The redis cluster has three nodes.")
    run_om("--store", store, "--session", "legacy", "capture",
           input=json.dumps({"kind": "user", "text": "redis by hand", "key": "k"}))
    return store


def same(text, result):
    assert result.returncode == 0, result
    assert text == result.stdout[:-1]


def test_sessions_tool_is_the_json_listing(populated, project):
    with McpServer(store=populated) as srv:
        srv.initialize()
        same(srv.ok("sessions", session="me"), run_om("--store", populated, "sessions", "--json"))
        same(srv.ok("sessions", session="me", project=str(project)),
             run_om("--store", populated, "sessions", "--json", "--project", str(project)))
        error = srv.fail("sessions", session="me", project=" ")
    cli = run_om("--store", populated, "sessions", "--project", " ")
    assert cli.returncode == 65 and error == cli.stderr.strip()


def test_search_with_all_sessions_is_the_cli_search(populated, project):
    with McpServer(store=populated) as srv:
        srv.initialize()
        for extra, argv in (({}, []), ({"sources": True}, ["--sources"]),
                            ({"project": str(project)}, ["--project", str(project)]),
                            ({"limit": 1, "sources": True}, ["--limit", "1", "--sources"])):
            text = srv.ok("search", session="me", query="redis", all_sessions=True, **extra)
            same(text, run_om("--store", populated, "--session", "me", "search", "redis", "--all-sessions", *argv))
        assert json.loads(text)["results"][0]["session"] in ("alpha", "beta", "legacy")
        error = srv.fail("search", session="me", query="redis", project=str(project))
    assert error == run_om("--store", populated, "search", "redis", "--project", str(project)).stderr.strip()


def test_import_tool_is_the_cli_import(populated, tmp_path):
    twin = tmp_path / "twin"
    shutil.copytree(populated, twin)
    with McpServer(store=populated) as srv:
        srv.initialize()
        text = srv.ok("import", session="fresh", from_session="alpha")
        again = srv.fail("import", session="fresh", from_session="beta")
        missing = srv.fail("import", session="other", from_session="nobody", from_store=str(twin))
    cli = run_om("--store", twin, "--session", "fresh", "import", "--from-store", twin, "--from-session", "alpha")
    same(text.replace(str(populated), str(twin)), cli)
    assert json.loads(text)["active"] == {"observations": 1, "reflections": 0}
    cli_again = run_om("--store", twin, "--session", "fresh", "import", "--from-store", twin, "--from-session", "beta")
    assert cli_again.returncode == 67 and again == cli_again.stderr.strip().replace(str(twin), str(populated))
    cli_missing = run_om("--store", twin, "--session", "other", "import", "--from-store", twin,
                         "--from-session", "nobody")
    assert cli_missing.returncode == 66 and missing == cli_missing.stderr.strip()
