"""`om export`: the JSON, Markdown and HTML documents through the real CLI."""

import json
import os
import re
import sqlite3
import stat
import subprocess
import sys
from html.parser import HTMLParser

from markdown_it import MarkdownIt

from conftest import ROOT, run_om, run_read_only, tree_bytes
from export_sample import HOSTILE, build
from inprocess import setup_om
from mcp_client import McpServer


def export(store, fmt, *more, session="s1"):
    r = run_om("--store", store, "--session", session, "export", "--format", fmt, *more)
    assert r.returncode == 0, r
    return r.stdout


def om_json(store, *args, session="s1", input=None):
    r = run_om("--store", store, "--session", session, *args, input=input)
    assert r.returncode == 0, r
    return r.json


def arrange(store, *args, session="s1", input=None):
    """A step that arranges the ledger (in process); the exports under test are subprocesses."""
    return setup_om("--store", store, "--session", session, *args, input=input).json


def ledger_bytes(store):
    """Every file of the store but the store index, with its bytes: proof that no ledger was written.

    (A store-wide export reads the session list through the store index, which it may bring up to date.)
    """
    return {path: data for path, data in tree_bytes(store).items() if not path.startswith("index" + os.sep)}


# -- json ---------------------------------------------------------------------------


def test_the_json_export_holds_exactly_what_view_all_and_recall_print(store):
    ids = build(store)
    doc = json.loads(export(store, "json"))
    assert (doc["format"], doc["version"], doc["scope"]) == ("om-export", 1, "session")
    (session,) = doc["sessions"]
    assert session["session"] == "s1" and session["project"] is None
    assert session["entries"] == om_json(store, "view", "--all")
    assert session["sources"] == [om_json(store, "recall", sid)["sources"][0] for sid in ids["sources"]]
    status = om_json(store, "status")
    assert session["meta"] == {"cursor": status["through"], "paused": False,
                               "last_checkpoint_at": status["last_checkpoint_at"], "imported_from": None}
    assert session["counts"] == {"sources": 8, "observations": 4, "reflections": 1, "retired": 1}
    assert session["last_activity"] == status["last_checkpoint_at"]
    assert [s["truncated"] for s in session["sources"]][-1] is True


def test_the_json_export_records_an_import_and_the_paused_state(store, tmp_path):
    build(store)
    arrange(store, "pause")
    other = tmp_path / "other"
    arrange(other, "import", "--from-store", store, "--from-session", "s1", session="s2")
    meta = json.loads(export(other, "json", session="s2"))["sessions"][0]["meta"]
    assert meta["imported_from"] == {"store": os.path.realpath(store), "session": "s1"}
    assert json.loads(export(store, "json"))["sessions"][0]["meta"]["paused"] is True


def test_the_documented_rebuild_turns_a_json_export_back_into_the_same_ledger(store, tmp_path):
    ids = build(store)
    export_file = tmp_path / "memory.json"
    export(store, "json", "--out", export_file)
    docs = (ROOT / "docs" / "export.md").read_text()
    (script,) = re.findall(r"```python\n(.*?)```", docs, re.S)
    rebuilt = tmp_path / "rebuilt"
    proc = subprocess.run([sys.executable, "-c", script, str(export_file), str(rebuilt), sys.executable, "-m", "om"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert om_json(rebuilt, "view", "--all") == om_json(store, "view", "--all")
    for item in ids["sources"] + [ids["reflection"], ids["symptom"]]:
        assert om_json(rebuilt, "recall", item) == om_json(store, "recall", item)
    before, after = om_json(store, "status"), om_json(rebuilt, "status")
    assert {k: v for k, v in after.items() if k != "database"} == \
        {k: v for k, v in before.items() if k != "database"}
    assert export(rebuilt, "json") == export(store, "json")
    # The rebuilt ledger is a working one: capture and checkpoint go on from the same cursor.
    sid = om_json(rebuilt, "capture", input=json.dumps({"kind": "user", "text": "more", "key": "new"}))
    assert om_json(rebuilt, "pending")["sources"][0]["id"] == sid["source_id"]


# -- markdown -------------------------------------------------------------------------


def headings(tokens):
    out = []
    for i, t in enumerate(tokens):
        if t.type == "heading_open":
            out.append((int(t.tag[1]), tokens[i + 1].content))
    return out


def test_the_markdown_export_reads_as_header_active_memory_retired_and_cited_sources(store):
    ids = build(store)
    text = export(store, "md")
    tokens = MarkdownIt("commonmark").parse(text)
    found = headings(tokens)
    assert found[0] == (1, "Memory of session `s1`")
    level2 = [h for lvl, h in found if lvl == 2]
    assert level2 == ["Active memory", "Retired", "Cited sources"]
    level3 = [h for lvl, h in found if lvl == 3 and h[:2] not in ("o-", "r-", "s-")]
    assert level3[:4] == ["Reflections", "Critical importance", "High importance", "Medium importance"]
    assert "Low importance" in level3
    order = [h for lvl, h in found if h[:2] in ("o-", "r-", "s-")]
    assert order.index(ids["reflection"]) < order.index(ids["secrets"]) < order.index(ids["fixed"])
    assert order.index(ids["fixed"]) < order.index(ids["db"]) < order.index(ids["hostile"])
    assert order.index(ids["hostile"]) < order.index(ids["symptom"])  # retired last, then the sources
    assert set(ids["sources"]) <= set(order)
    # Every stored text is one fence whose content is the text, verbatim.
    fences = [t.content for t in tokens if t.type == "fence"]
    entries = om_json(store, "view", "--all")
    for e in entries:
        assert e["text"] + "\n" in fences
    assert entries[0]["text"] != HOSTILE and HOSTILE + "\n" in fences
    retired = next(e for e in entries if not e["active"])
    assert retired["retirement"]["reason"] + "\n" in fences
    # Links point at headings that exist: reflection -> observations -> sources, retired -> replacement.
    section = text.split(f"#### {ids['reflection']}", 1)[1].split("####", 1)[0]
    assert f"[{ids['db']}](#{ids['db']})" in section and f"[{ids['fixed']}](#{ids['fixed']})" in section
    section = text.split(f"### {ids['symptom']}", 1)[1].split("####", 1)[0]
    assert f"Replaced by: [{ids['fixed']}](#{ids['fixed']})" in section


def test_the_markdown_export_marks_truncated_sources_and_counts_the_uncited(store):
    build(store)
    extra = json.dumps({"kind": "user", "text": "an uncited remark", "key": "u"})
    arrange(store, "capture", input=extra)
    text = export(store, "md")
    assert text.count("truncated when captured") == 1
    assert "1 captured sources that no entry cites are left out here" in text
    assert "an uncited remark" not in text


# -- html -------------------------------------------------------------------------------


class Structure(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.data, self.scripts, self._in_script = [], [], [], None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script = []

    def handle_endtag(self, tag):
        if tag == "script":
            self.scripts.append("".join(self._in_script))
            self._in_script = None

    def handle_data(self, data):
        (self._in_script if self._in_script is not None else self.data).append(data)


def test_the_html_page_counts_one_thing_in_the_singular_and_more_in_the_plural(store):
    sid = om_json(store, "capture", input=json.dumps({"kind": "user", "text": "One prompt.", "key": "k"}))["source_id"]
    om_json(store, "apply", input=json.dumps({"through": 1, "observations": [{"text": "One fact.", "source_ids": [sid]}]}))
    page = export(store, "html")
    assert "<b>1</b> observation ·" in page and "<b>0</b> reflections ·" in page and "<b>1</b> source</span>" in page
    assert "<b>1</b> observations" not in page and "<b>1</b> sources" not in page
    everything = export(store, "html", "--all-sessions")
    assert "<b>1</b> session ·" in everything and "<b>1</b> active entry ·" in everything
    om_json(store, "capture", input=json.dumps({"kind": "user", "text": "Another prompt.", "key": "k2"}))
    om_json(store, "apply", input=json.dumps({"through": 2, "observations": [{"text": "Another fact.", "source_ids": [sid]}]}))
    page = export(store, "html")
    assert "<b>2</b> observations ·" in page and "<b>2</b> sources</span>" in page


def test_the_html_export_escapes_every_stored_text_and_embeds_source_texts_safely(store):
    ids = build(store)
    page = export(store, "html")
    parsed = Structure()
    parsed.feed(page)
    tags = [t for t, _ in parsed.tags]
    assert tags.count("script") == 2 and "img" not in tags and tags.count("pre") == 8
    text = "".join(parsed.data)
    assert HOSTILE in text  # shown verbatim as text, with its quotes and line separators
    data = json.loads(parsed.scripts[0])
    assert data[f"S1-{ids['sources'][6]}"] == HOSTILE
    block = page.split('<script type="application/json" id="om-texts">', 1)[1].split("</script>", 1)[0]
    assert "<" not in block and ">" not in block and "\u2028" not in block and "\u2029" not in block
    # No network, ever: the policy allows nothing but the page's own style and script.
    (csp,) = [a["content"] for t, a in parsed.tags if a.get("http-equiv") == "Content-Security-Policy"]
    assert "default-src 'none'" in csp and "unsafe-inline" not in csp
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)


def test_an_export_is_the_same_document_every_time(store):
    build(store)
    for fmt in ("md", "json", "html"):
        assert export(store, fmt) == export(store, fmt)


# -- read-only, files, errors ----------------------------------------------------------------


def test_export_works_on_a_read_only_store_and_changes_nothing(store):
    build(store)
    expected = {fmt: export(store, fmt) for fmt in ("md", "json", "html")}
    before = ledger_bytes(store)
    for fmt in ("md", "json", "html"):
        r = run_read_only(store, "export", "--format", fmt)
        assert r.returncode == 0, r
        assert r.stdout == expected[fmt]
    assert ledger_bytes(store) == before


def test_export_of_a_missing_session_or_store_creates_nothing(store, tmp_path):
    build(store)
    before = ledger_bytes(store)
    r = run_om("--store", store, "--session", "nobody", "export", "--format", "md")
    assert r.returncode == 66 and r.stderr.startswith("om: no ledger for session 'nobody'") and not r.stdout
    assert ledger_bytes(store) == before and len(os.listdir(store)) == 1
    missing = tmp_path / "missing"
    r = run_om("--store", missing, "--session", "s1", "export", "--format", "json")
    assert r.returncode == 74 and "does not exist" in r.stderr and not missing.exists()


def test_export_out_writes_a_private_file_atomically_and_prints_a_receipt(store, tmp_path):
    build(store)
    target = tmp_path / "memory.html"
    target.write_text("an older export")
    r = run_om("--store", store, "--session", "s1", "export", "--format", "html", "--out", target)
    assert r.returncode == 0, r
    data = target.read_bytes()
    assert r.json == {"format": "html", "path": str(target), "bytes": len(data)}
    assert data.decode("utf-8") == export(store, "html")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(os.listdir(tmp_path)) == sorted(["store", "memory.html"])  # no temporary file left


def test_export_refuses_bad_usage_with_one_line_and_no_file(store, tmp_path):
    build(store)
    cases = [
        (["--format", "pdf"], 64, "invalid choice"),
        ([], 64, "--format"),
        (["--format", "md", "--out", tmp_path / "no" / "such" / "dir.md"], 65, "does not exist"),
        (["--format", "md", "--out", tmp_path], 65, "is a directory"),
        (["--format", "json", "--out", store / "export.json"], 65, "outside the store"),
    ]
    before = ledger_bytes(store)
    for args, code, words in cases:
        r = run_om("--store", store, "--session", "s1", "export", *args)
        assert r.returncode == code, (args, r)
        assert words in r.stderr and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert ledger_bytes(store) == before


def test_a_damaged_ledger_is_a_store_error_not_a_traceback(store):
    build(store)
    db = arrange(store, "status")["database"]
    with open(db, "r+b") as f:
        f.write(b"this is not sqlite" * 10)
    r = run_om("--store", store, "--session", "s1", "export", "--format", "json")
    assert r.returncode == 74 and r.stderr.startswith("om: ") and "Traceback" not in r.stderr


# -- all sessions --------------------------------------------------------------------------------


def test_all_sessions_exports_every_session_with_project_counts_and_last_activity(store):
    build(store, session="alpha")
    build(store, session="beta <b>")
    db = arrange(store, "status", session="alpha")["database"]
    from om.export.reader import PROJECT_META_KEY

    with sqlite3.connect(db) as c:
        c.execute("INSERT INTO meta(key, value) VALUES (?, ?)", (PROJECT_META_KEY, "checkout <api>"))
    doc = json.loads(run_om("--store", store, "export", "--format", "json", "--all-sessions").stdout)
    assert doc["scope"] == "store"
    by_name = {s["session"]: s for s in doc["sessions"]}
    assert set(by_name) == {"alpha", "beta <b>"}
    assert by_name["alpha"]["project"] == "checkout <api>" and by_name["beta <b>"]["project"] is None
    assert by_name["alpha"]["entries"] == om_json(store, "view", "--all", session="alpha")
    activity = [s["last_activity"] for s in doc["sessions"]]
    assert activity == sorted(activity, reverse=True)

    md = run_om("--store", store, "export", "--format", "md", "--all-sessions").stdout
    assert "project ` checkout <api> `" not in md and "project `checkout <api>`" in md
    assert "project unknown" in md and md.count("Memory of session") == 2

    page = run_om("--store", store, "export", "--format", "html", "--all-sessions").stdout
    parsed = Structure()
    parsed.feed(page)
    index = page.split('<table class="index">', 1)[1].split("</table>", 1)[0]
    assert "checkout &lt;api&gt;" in index and '<span class="unknown">unknown</span>' in index
    assert "beta &lt;b&gt;" in index and "Session <code>beta &lt;b&gt;</code>" in page
    assert "beta <b>" in "".join(parsed.data)  # the session name is text, never a tag
    assert [a["href"] for t, a in parsed.tags if t == "a" and a.get("href") in ("#S1", "#S2")] == ["#S1", "#S2"]
    ids = [a["id"] for t, a in parsed.tags if "id" in a]
    assert len(ids) == len(set(ids))  # the same item in two sessions gets two anchors


def damage(store, session, how):
    """Make one session's ledger unreadable: `garbage` (not a database) or `body` (a row that is not JSON)."""
    db = om_json(store, "status", session=session)["database"]
    if how == "garbage":
        with open(db, "wb") as f:
            f.write(b"this is not sqlite" * 300)
    else:
        with sqlite3.connect(db) as c:
            c.execute("UPDATE sources SET body = '{not json' WHERE seq = 1")
    return os.path.dirname(db)


def test_an_all_sessions_export_keeps_every_readable_session_and_names_each_unreadable_one(store, tmp_path):
    for name in ("alpha", "beta", "gamma"):
        build(store, session=name)
    beta = damage(store, "beta", "garbage")
    broken = sorted([beta, damage(store, "gamma", "body")])
    before = ledger_bytes(store)
    documents = {}
    for fmt in ("json", "md", "html"):
        r = run_om("--store", store, "export", "--format", fmt, "--all-sessions")
        assert r.returncode == 0, r
        (line,) = r.stderr.splitlines()
        assert line.startswith("om: export left out 2 unreadable sessions: ") and "Traceback" not in r.stderr
        assert all(d in line for d in broken), line
        assert all(d in r.stdout for d in broken), fmt
        assert r.stdout == export(store, fmt, "--all-sessions")  # the same document every time
        documents[fmt] = r.stdout
    doc = json.loads(documents["json"])
    assert [s["session"] for s in doc["sessions"]] == ["alpha"]
    assert doc["sessions"][0]["entries"] == om_json(store, "view", "--all", session="alpha")
    assert sorted(s["directory"] for s in doc["skipped"]) == broken
    assert {s["directory"]: s["error"] for s in doc["skipped"]}[beta].startswith("cannot open it")

    out = tmp_path / "exports"
    out.mkdir()
    r = run_om("--store", store, "export", "--format", "html", "--all-sessions", "--out", out / "store.html")
    assert r.returncode == 0 and len(r.stderr.splitlines()) == 1, r
    assert sorted(s["directory"] for s in r.json["skipped"]) == broken
    assert os.listdir(out) == ["store.html"] and r.json["bytes"] == os.path.getsize(out / "store.html")
    assert (out / "store.html").read_text(encoding="utf-8") == documents["html"]
    assert ledger_bytes(store) == before  # nothing was repaired or rewritten

    # One session that cannot be read is still an error of its own, on one line.
    for session in ("beta", "gamma"):
        r = run_om("--store", store, "--session", session, "export", "--format", "json")
        assert r.returncode == 74 and r.stdout == "" and "Traceback" not in r.stderr, r
        assert r.stderr.startswith("om: cannot read the ledger ") and r.stderr.count("\n") == 1, r


def test_the_mcp_export_of_all_sessions_names_the_unreadable_ones_and_writes_the_cli_document(store, tmp_path):
    build(store, session="alpha")
    build(store, session="beta")
    broken = damage(store, "beta", "garbage")
    with McpServer(store=store, env={"TMPDIR": str(tmp_path)}) as server:
        server.initialize()
        for fmt in ("json", "md"):
            receipt = json.loads(server.ok("export", session="alpha", format=fmt, all_sessions=True))
            assert [s["directory"] for s in receipt["skipped"]] == [broken]
            with open(receipt["path"], encoding="utf-8") as f:
                assert f.read() == export(store, fmt, "--all-sessions", session="alpha")
        # One session's own export has nothing to skip, and says so by leaving the key out.
        assert "skipped" not in json.loads(server.ok("export", session="alpha", format="md"))
        assert server.fail("export", session="beta", format="md").startswith("om: cannot read the ledger ")


# -- mcp ---------------------------------------------------------------------------------------------


def test_the_mcp_export_tool_writes_the_same_document_as_the_cli(store):
    build(store)
    with McpServer(store=store) as server:
        server.initialize()
        for fmt in ("md", "json", "html"):
            receipt = json.loads(server.ok("export", session="s1", format=fmt))
            try:
                assert receipt["format"] == fmt and os.path.isabs(receipt["path"])
                assert receipt["path"].endswith("." + fmt)
                with open(receipt["path"], encoding="utf-8") as f:
                    assert f.read() == export(store, fmt)
                assert stat.S_IMODE(os.stat(receipt["path"]).st_mode) == 0o600
                assert receipt["bytes"] == os.path.getsize(receipt["path"])
            finally:
                os.unlink(receipt["path"])
        assert server.fail("export", session="s1", format="pdf") == \
            "om: export format must be md, json or html, got 'pdf'"
        assert server.fail("export", session="nobody", format="md").startswith("om: no ledger for session")
        assert server.fail("export", session="s1", format="md", all_sessions="yes") == \
            "om: export: argument 'all_sessions' must be true or false"
    assert len(os.listdir(store)) == 1  # the unknown session was not created


def test_the_mcp_export_tool_leaves_no_file_behind_once_its_server_stops(store, tmp_path):
    build(store)
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {"TMPDIR": str(temp)}

    def export_all(server):
        server.initialize()
        paths = [json.loads(server.ok("export", session="s1", format=fmt))["path"] for fmt in ("md", "json", "html")]
        assert all(os.path.isfile(p) for p in paths)  # there while the session lasts
        (folder,) = {os.path.dirname(p) for p in paths}
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
        return folder

    with McpServer(store=store, env=env) as server:  # stopped by end of input
        export_all(server)
    assert os.listdir(temp) == []

    server = McpServer(store=store, env=env)  # stopped as a client stops it
    export_all(server)
    server.proc.terminate()
    assert server.proc.wait(timeout=30) == 0
    assert os.listdir(temp) == []

    killed = McpServer(store=store, env=env)  # killed outright: its folder stays until the next export
    left = export_all(killed)
    killed.proc.kill()
    killed.proc.wait(timeout=30)
    assert os.listdir(temp) == [os.path.basename(left)]
    with McpServer(store=store, env=env) as server:
        server.initialize()
        assert json.loads(server.ok("status", session="s1"))["session"] == "s1"
        assert os.listdir(temp) == [os.path.basename(left)]  # only an export sweeps
        own = export_all(server)
        assert os.listdir(temp) == [os.path.basename(own)]
    assert os.listdir(temp) == []

