"""`om export` carries the project memory of the sessions it exports: JSON, Markdown and the HTML page
(the page itself in a real browser: tests/cli/test_export_browser.py)."""

import json
import os
from html.parser import HTMLParser

import pytest
from markdown_it import MarkdownIt

from conftest import run_om, tree_bytes
from export_sample import HOSTILE
from mcp_client import McpServer
from project_support import CodexAt, build_project, om_json, project_key, remember, started


@pytest.fixture
def home(project_home):
    return project_home


@pytest.fixture
def project(tmp_path, home):
    return build_project(tmp_path)


def export(store, fmt, *more, session="codex-1"):
    result = run_om("--store", store, "--session", session, "export", "--format", fmt, *more)
    assert result.returncode == 0, result
    return result.stdout


def test_the_json_export_holds_the_sessions_project_memory_with_provenance(project):
    doc = json.loads(export(project["store"], "json"))
    assert doc["sessions"][0]["project_id"] == project["key"]
    memory = doc["project"]
    assert memory["project"] == project["key"] and memory["session"] == "project-" + project["key"]
    assert memory["root"] == str(project["folder"])
    assert memory["counts"] == {"active": 2, "retired": 1, "carried": 0}
    # The entries with provenance are exactly what `om project view --all` prints.
    view = om_json("project", "--project", str(project["folder"]), "view", "--all")
    assert [e for e in memory["entries"] if e["provenance"] is not None] == view
    by_id = {e["id"]: e for e in memory["entries"]}
    assert by_id[project["hostile"]]["text"] == HOSTILE
    first = by_id[project["hostile"]]["provenance"]
    assert first["promoted"]["client"] == "codex" and first["promoted"]["session"] == "codex-1"
    cache = by_id[project["cache"]]["provenance"]
    assert cache["times"] == 2 and cache["promoted"]["session"] == "codex-1"
    assert cache["confirmed"]["client"] == "claude" and cache["confirmed"]["session"] == "claude-1"
    retired = by_id[project["deploys"]]
    assert retired["active"] is False and retired["retirement"]["reason"] == "Deploys moved to CI </div>"
    cited = {sid for e in memory["entries"] for sid in e["support"]}
    assert cited == {s["id"] for s in memory["sources"]}
    assert export(project["store"], "json") == export(project["store"], "json"), "the same document every time"


def test_a_session_without_project_memory_exports_project_null(tmp_path, home):
    folder = tmp_path / "alone"
    folder.mkdir()
    alone = started(CodexAt(tmp_path / "store", folder, "alone"))
    remember(alone, "A fact of its own.")
    doc = json.loads(export(str(alone.store), "json", session="alone"))
    assert doc["project"] is None and doc["sessions"][0]["project_id"] == project_key(folder)
    assert "Project memory" not in export(str(alone.store), "md", session="alone")
    assert 'class="session project"' not in export(str(alone.store), "html", session="alone")


def test_the_markdown_export_has_a_project_memory_section_with_provenance_and_verbatim_texts(project):
    text = export(project["store"], "md")
    tokens = MarkdownIt("commonmark").parse(text)
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open" and t.tag == "h2"]
    assert headings[-2:] == ["Cited sources", f"Project memory of project {project['key']}"]
    section = text.split(f"## Project memory of project {project['key']}", 1)[1]
    fences = [t.content for t in MarkdownIt("commonmark").parse(section) if t.type == "fence"]
    assert HOSTILE + "\n" in fences and "Deploys moved to CI </div>\n" in fences
    assert "Promoted by Codex in session `codex-1`" in section
    assert "Last confirmed by Claude Code in session `claude-1`" in section and "Promoted 2 times" in section
    assert "### Retired from the project memory" in section
    retired = section.split("### Retired from the project memory", 1)[1]
    assert project["deploys"] in retired and "retired" in retired and project["cache"] not in retired


def test_the_html_export_has_a_project_section_and_escapes_its_texts(project):
    page = export(project["store"], "html")

    class Cards(HTMLParser):
        def __init__(self):
            super().__init__()
            self.project, self.scripts = [], 0

        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            if tag == "script":
                self.scripts += 1
            if tag == "article" and attrs.get("data-scope") == "project":
                self.project.append((attrs["data-id"], attrs["data-state"], attrs.get("id")))

    parsed = Cards()
    parsed.feed(page)
    assert parsed.scripts == 2, "no stored text became a script"
    assert sorted(parsed.project) == sorted([
        (project["hostile"], "active", "P1-" + project["hostile"]),
        (project["cache"], "active", "P1-" + project["cache"]),
        (project["deploys"], "retired", "P1-" + project["deploys"])])
    assert "<script>window.__pwned" not in page and "Deploys moved to CI &lt;/div&gt;" in page


def test_a_store_wide_export_holds_each_project_memory_once(project):
    doc = json.loads(export(project["store"], "json", "--all-sessions"))
    assert [p["project"] for p in doc["projects"]] == [project["key"]]
    text = export(project["store"], "md", "--all-sessions")
    assert text.count(f"## Project memory of project {project['key']}") == 1
    assert export(project["store"], "html", "--all-sessions").count('class="session project"') == 1


def test_export_reads_the_project_home_without_writing_it_and_an_unreadable_one_is_named(project, home):
    before = tree_bytes(home)
    for fmt in ("json", "md", "html"):
        export(project["store"], fmt)
    assert tree_bytes(home) == before
    [database] = home.glob("session-*/memory.sqlite3")
    database.write_bytes(b"not a database" * 100)
    doc = json.loads(export(project["store"], "json"))
    assert doc["project"]["project"] == project["key"] and "cannot read" in doc["project"]["error"]
    assert doc["sessions"][0]["entries"], "the session itself is exported whole"
    assert "Not exported:" in export(project["store"], "md")


def test_the_mcp_export_writes_the_cli_document_with_the_project_memory(project):
    expected = export(project["store"], "json")
    assert json.loads(expected)["project"]["project"] == project["key"]
    with McpServer(store=project["store"]) as server:
        server.initialize()
        receipt = json.loads(server.ok("export", session="codex-1", format="json"))
        try:
            with open(receipt["path"], encoding="utf-8") as f:
                assert f.read() == expected
        finally:
            os.unlink(receipt["path"])
