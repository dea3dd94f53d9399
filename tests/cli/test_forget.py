"""`om forget`: text taken out of memory on purpose, through the real CLI and the hooks.

Every check that the text is gone reads what a user or a peer could read: the CLI's
search, prime, recall and export, and the raw bytes of every file under the store
(tests/raw_bytes.py walks them generically, whatever files a later version adds),
SQLite's free pages and the search index included.
"""

import json
import os
import sqlite3

import pytest

from conftest import run_om, run_on_a_terminal
from hook_drivers import DRIVERS
from mcp_client import McpServer
from raw_bytes import files_holding
from sessions_support import v1_tables

SECRET = "Zebra-77-quux-Plinth"
MARKER = "[FORGOTTEN]"


def forget(store, *args, session="s1", env=None):
    scope = ("--session", session) if session else ()
    r = run_om("--store", store, *scope, "forget", *args, env=env)
    return r


@pytest.fixture(params=sorted(DRIVERS))
def hook(request, tmp_path):
    return DRIVERS[request.param](tmp_path / "store")


def _session_with_the_secret(hook):
    """A turn whose prompt, tool result and reply hold SECRET, checkpointed into an observation."""
    hook(hook.start())
    hook(hook.prompt(f"the staging db password is {SECRET}, use it", turn="t-1"))
    hook(hook.tool("cat .env", response={"stdout": f'DB="{SECRET}"\nOK\n', "stderr": ""}
                   if hook.client == "claude" else f'DB="{SECRET}"\nOK\n', call="call-1", turn="t-1"))
    hook(hook.stop("Connected with the staging password.", turn="t-1"))
    pending = hook.om("pending")
    ids = [s["id"] for s in pending["sources"]]
    receipt = hook.om("apply", input=json.dumps({"through": pending["through"], "observations": [
        {"text": f"The staging db password is {SECRET}.", "importance": "high", "source_ids": ids[:2]}]}))
    return ids, receipt["observations"][0]


def test_a_secret_in_a_prompt_a_tool_result_and_an_observation_is_gone_from_every_reader_and_every_byte(
        hook, tmp_path):
    store = hook.store
    ids, oid = _session_with_the_secret(hook)
    temp = tmp_path / "tmp"
    temp.mkdir()
    # The index is built (and holds the secret's tokens) before the forget.
    assert len(hook.om("search", SECRET, "--sources")["results"]) >= 3
    with McpServer(store=store, env={"TMPDIR": str(temp)}) as server:
        server.initialize()
        exported = json.loads(server.ok("export", session=hook.session, format="html"))["path"]
        # A hook failure that once quoted it, in the store's error log.
        with open(store / "hook-errors.log", "a") as log:
            log.write(f"2026-12-01T00:00:00Z om: hook failed open: bad value {SECRET!r}\n"
                      "2026-12-01T00:00:01Z om: another failure\n")
        assert files_holding(store, SECRET)
        before = {t: [row[:2] for row in rows] for t, rows in v1_tables(_db(store)).items() if t != "meta"}

        r = forget(store, "--text", SECRET, "-y", session=hook.session, env={"TMPDIR": str(temp)})
        assert r.returncode == 0, r
        report = r.json
        (changed,) = report["sessions"]
        assert sorted(changed["sources"]) == sorted(ids[:2]) and changed["entries"] == [oid]
        assert changed["occurrences"] == 3 and report["remaining"] == [] and report["marker"] == MARKER
        assert report["exports_removed"] == [exported] and not os.path.exists(exported)
        assert SECRET not in r.stdout + r.stderr and "export --out" in r.stderr
        # The server still exports afterwards, without the secret.
        again = json.loads(server.ok("export", session=hook.session, format="json"))["path"]
        assert SECRET not in open(again, encoding="utf-8").read()

    # Every id and every citation stays; only text changed.
    after = {t: [row[:2] for row in rows] for t, rows in v1_tables(_db(store)).items() if t != "meta"}
    assert after == before
    assert hook.om("search", SECRET, "--sources")["results"] == []
    assert hook.om("search", SECRET.split("-")[0], "--sources")["results"] == []
    prime = run_om("--store", store, "--session", hook.session, "prime").stdout
    assert SECRET not in prime and f"The staging db password is {MARKER}." in prime
    recall = hook.om("recall", oid)
    assert [s["id"] for s in recall["sources"]] == ids[:2]
    assert all(SECRET not in s["text"] and MARKER in s["text"] for s in recall["sources"])
    for fmt in ("md", "json", "html"):
        doc = run_om("--store", store, "--session", hook.session, "export", "--format", fmt).stdout
        assert SECRET not in doc and MARKER in doc
    assert "another failure" in (store / "hook-errors.log").read_text()
    # Searching rebuilt the index from the rewritten rows: still nothing in any byte.
    assert files_holding(store, SECRET) == []
    assert files_holding(temp, SECRET) == []


def _db(store):
    (path,) = store.glob("session-*/memory.sqlite3")
    return path


def test_capturing_the_same_evidence_again_maps_to_the_same_ids_and_never_brings_the_text_back(hook):
    ids, oid = _session_with_the_secret(hook)
    assert forget(hook.store, "--text", SECRET, "-y", session=hook.session).returncode == 0
    rows = v1_tables(_db(hook.store))
    # The same hook events again, the same explicit capture, the same checkpoint.
    hook(hook.prompt(f"the staging db password is {SECRET}, use it", turn="t-1"))
    hook(hook.tool("cat .env", response={"stdout": f'DB="{SECRET}"\nOK\n', "stderr": ""}
                   if hook.client == "claude" else f'DB="{SECRET}"\nOK\n', call="call-1", turn="t-1"))
    prompt = json.dumps({"kind": "user", "text": f"the staging db password is {SECRET}, use it", "key": "t-1"})
    assert hook.om("capture", input=prompt)["source_id"] == ids[0]
    receipt = hook.om("apply", input=json.dumps({"through": hook.om("status")["through"], "observations": [
        {"text": f"The staging db password is {SECRET}.", "importance": "high", "source_ids": ids[:2]}]}))
    assert receipt["observations"] == [oid]
    now = v1_tables(_db(hook.store))
    assert {k: v for k, v in now.items() if k != "meta"} == {k: v for k, v in rows.items() if k != "meta"}
    assert files_holding(hook.store, SECRET) == []


def test_forgetting_across_sessions_rewrites_each_holder_and_leaves_the_others_byte_for_byte(om):
    store = om.store
    for session in ("a", "b", "clean"):
        text = f"token {SECRET} for {session}" if session != "clean" else "nothing to hide"
        om.setup("capture", session=session, input=json.dumps({"kind": "user", "text": text, "key": "k"}))
    clean_file = _session_file(store, "clean")
    clean = open(clean_file, "rb").read()

    only_a = forget(store, "--text", SECRET, "-y", session="a")
    assert [s["session"] for s in only_a.json["sessions"]] == ["a"]
    assert files_holding(store, SECRET) == [_session_file(store, "b")]

    r = forget(store, "--all-sessions", "--text", SECRET, "-y", session=None)
    assert r.returncode == 0, r
    assert [s["session"] for s in r.json["sessions"]] == ["b"]
    assert files_holding(store, SECRET) == []
    assert open(clean_file, "rb").read() == clean
    texts = [run_om("--store", store, "--session", s, "pending").json["sources"][0]["text"] for s in ("a", "b")]
    assert texts == [f"token {MARKER} for a", f"token {MARKER} for b"]


def _session_file(store, session):
    r = run_om("--store", store, "sessions", "--json")
    (row,) = [row for row in r.json["sessions"] if row["session"] == session]
    return row["database"]


def test_a_source_or_entry_named_by_id_loses_its_whole_text_and_keeps_every_citation(om):
    s1 = om.setup("capture", input=json.dumps({"kind": "user", "text": "a private matter", "key": "1"})).json["source_id"]
    s2 = om.setup("capture", input=json.dumps({"kind": "tool", "text": "public output", "key": "2"})).json["source_id"]
    o1, o2 = om.setup("apply", input=json.dumps({"through": 2, "observations": [
        {"text": "Older: the private matter.", "source_ids": [s1]},
        {"text": "Newer: the private matter, restated.", "source_ids": [s1, s2]}]})).json["observations"]
    om.setup("apply", input=json.dumps({"through": 2, "retire": [
        {"id": o1, "reason": "Restated as the private matter.", "replacement_ids": [o2]}]}))
    r = om("forget", "--source", s1, "--entry", o1, "-y")
    assert r.returncode == 0, r
    (changed,) = r.json["sessions"]
    assert changed["sources"] == [s1] and changed["entries"] == [o1]
    assert om("recall", s1).json["sources"][0]["text"] == MARKER
    entry = om("recall", o1).json
    assert entry["entry"]["text"] == MARKER and entry["entry"]["retirement"]["reason"] == MARKER
    assert entry["entry"]["retirement"]["replacement_ids"] == [o2] and entry["entry"]["active"] is False
    assert [s["id"] for s in om("recall", o2).json["sources"]] == [s1, s2]
    assert om("recall", s2).json["sources"][0]["text"] == "public output"
    assert files_holding(om.store, "a private matter") == []


def test_a_dry_run_names_ids_and_counts_and_changes_nothing(om):
    sid = om.setup("capture", input=json.dumps({"kind": "user", "text": f"x {SECRET} y {SECRET}", "key": "1"})).json[
        "source_id"]
    om("search", "anything", "--sources")
    files = {p: open(p, "rb").read() for p in _all_files(om.store)}
    r = om("forget", "--text", SECRET, "--dry-run")
    assert r.returncode == 0, r
    assert r.json["dry_run"] is True and r.json["sessions"] == [
        {"session": "s1", "sources": [sid], "entries": [], "occurrences": 2}]
    assert SECRET not in r.stdout + r.stderr
    assert {p: open(p, "rb").read() for p in _all_files(om.store)} == files


def _all_files(root):
    return sorted(os.path.join(d, n) for d, _, names in os.walk(root) for n in names)


def test_without_y_and_without_a_terminal_it_refuses_and_changes_nothing(om):
    om.setup("capture", input=json.dumps({"kind": "user", "text": SECRET, "key": "1"}))
    before = v1_tables(_db(om.store))
    r = om("forget", "--text", SECRET)
    assert r.returncode == 64 and "-y" in r.stderr and r.stdout == ""
    assert v1_tables(_db(om.store)) == before


def _forget_on_a_terminal(store, answer):
    return run_on_a_terminal(("--store", store, "--session", "s1", "forget", "--text", SECRET), answer)


def test_on_a_terminal_it_asks_with_the_counts_and_only_yes_forgets(om):
    om.setup("capture", input=json.dumps({"kind": "user", "text": SECRET, "key": "1"}))
    code, out, err = _forget_on_a_terminal(om.store, "n")
    assert code == 1 and out == "" and "1 occurrence(s) in 1 record(s)" in err and "cancelled" in err
    assert files_holding(om.store, SECRET)
    code, out, err = _forget_on_a_terminal(om.store, "y")
    assert code == 0 and json.loads(out)["sessions"][0]["occurrences"] == 1
    assert files_holding(om.store, SECRET) == []


@pytest.mark.parametrize("args,code,words", [
    (("forget", "-y"), 65, "--text, --source or --entry"),
    (("forget", "--text", "   ", "-y"), 65, "blank"),
    (("forget", "--text", "GOTTEN", "-y"), 65, "part of the marker"),
    (("forget", "--source", "o-1", "-y"), 65, "source id"),
    (("forget", "--entry", "s-1", "-y"), 65, "entry id"),
    (("forget", "--source", "s-nothing", "-y"), 66, "s-nothing"),
    (("forget", "--all-sessions", "--text", "x", "-y"), 64, "one of them"),
    (("--session", "nobody", "forget", "--text", "x", "-y"), 66, "no session"),
])
def test_bad_requests_fail_on_one_line_and_change_nothing(om, args, code, words):
    om.setup("capture", input=json.dumps({"kind": "user", "text": "kept text", "key": "1"}))
    before = v1_tables(_db(om.store))
    scoped = args if args[0] == "--session" else ("--session", "s1", *args)
    r = run_om("--store", om.store, *scoped)
    assert r.returncode == code and r.stdout == "" and len(r.stderr.splitlines()) == 1, r
    assert words in r.stderr
    assert v1_tables(_db(om.store)) == before
    unscoped = run_om("--store", om.store, "forget", "--text", "x", "-y")
    assert unscoped.returncode == 64


def _store_bytes(store):
    return {p: open(p, "rb").read() for p in _all_files(store)}


@pytest.mark.parametrize("scope", [("--session", "s1"), ("--all-sessions",)])
@pytest.mark.parametrize("dry_run", [(), ("--dry-run",)])
def test_a_literal_found_nowhere_exits_68_on_one_line_and_changes_nothing(om, scope, dry_run):
    om.setup("capture", input=json.dumps({"kind": "user", "text": f"the password is {SECRET}", "key": "1"}))
    om.setup("capture", input=json.dumps({"kind": "user", "text": "another session", "key": "1"}), session="s2")
    om("search", "password", "--sources")
    before = _store_bytes(om.store)
    mistyped = SECRET.replace("77", "78")
    r = run_om("--store", om.store, "forget", *scope, "--text", mistyped, *dry_run, "-y")
    assert r.returncode == 68 and r.stdout == "", r
    (line,) = r.stderr.splitlines()
    assert line.startswith("om: nothing matched: --text occurs nowhere in ") and "nothing was changed" in line
    assert ("--dry-run first" in line) != bool(dry_run)
    assert mistyped not in line
    assert _store_bytes(om.store) == before


def test_one_literal_found_nowhere_among_several_refuses_the_whole_forget_and_says_which(om):
    om.setup("capture", input=json.dumps({"kind": "user", "text": f"the password is {SECRET}", "key": "1"}))
    before = _store_bytes(om.store)
    r = om("forget", "--text", SECRET, "--text", "Zebra-77-quux-Plinht", "-y")
    assert r.returncode == 68 and r.stdout == "", r
    assert "--text (2nd of 2) occurs nowhere" in r.stderr and len(r.stderr.splitlines()) == 1
    assert _store_bytes(om.store) == before and files_holding(om.store, SECRET)


def test_a_literal_inside_a_longer_one_and_a_literal_only_in_the_hook_log_are_found(om):
    om.setup("capture", input=json.dumps({"kind": "user", "text": f"the password is {SECRET}", "key": "1"}))
    with open(om.store / "hook-errors.log", "a") as log:  # what a failed hook once quoted, and nothing else holds
        log.write("2026-12-01T00:00:00Z om: hook failed open: bad value 'Kestrel-31'\n")
    r = om("forget", "--text", SECRET, "--text", "quux", "--text", "Kestrel-31", "-y")
    assert r.returncode == 0, r
    assert files_holding(om.store, SECRET) == [] and files_holding(om.store, "Kestrel-31") == []


def test_a_forget_increments_om_generation_once_per_change_and_the_index_comes_back(om):
    om.setup("capture", input=json.dumps({"kind": "user", "text": f"first {SECRET}", "key": "1"}))
    om("search", "first", "--sources")
    generation = lambda: dict(v1_tables(_db(om.store))["meta"]).get("om_generation")  # noqa: E731
    assert generation() is None
    assert om("forget", "--text", SECRET, "-y").returncode == 0
    assert generation() == "1"
    again = om("forget", "--text", SECRET, "-y")  # nothing left: nothing matched, nothing rewritten
    assert again.returncode == 68 and "nothing matched" in again.stderr, again
    assert generation() == "1"
    om.setup("capture", input=json.dumps({"kind": "user", "text": "second Plover-88", "key": "2"}))
    assert om("forget", "--text", "Plover-88", "-y").returncode == 0
    assert generation() == "2"
    assert [h["id"] for h in om("search", "first", "--sources").json["results"]]
    assert om("search", "Plover", "--sources").json["results"] == []


def test_the_rewritten_ledger_keeps_v1s_schema_rows_and_field_order(tmp_path):
    from test_interop import LEGACY_SESSION, legacy_store

    store = tmp_path / "legacy"
    info = legacy_store(store)
    path = info["dir"] / "memory.sqlite3"

    def schema():
        conn = sqlite3.connect(path)
        try:
            return conn.execute("SELECT type, name, sql FROM sqlite_master WHERE name IN"
                                " ('meta', 'sources', 'entries', 'sqlite_sequence') ORDER BY name").fetchall()
        finally:
            conn.close()

    tables, before = schema(), v1_tables(path)
    r = run_om("--store", store, "--session", LEGACY_SESSION, "forget", "--text", "never push to main", "--entry",
               info["oid"], "-y")
    assert r.returncode == 0, r
    after = v1_tables(path)
    assert schema() == tables
    assert dict(after["meta"]) == dict(before["meta"], om_generation="1")
    for table in ("sources", "entries"):
        assert [row[:2] for row in after[table]] == [row[:2] for row in before[table]]
        for old, new in zip(before[table], after[table]):
            assert list(json.loads(new[2])) == list(json.loads(old[2]))  # v1's fields, in v1's order
            assert new[3:] == old[3:] or table == "entries" and new[3] == old[3]
    (source,) = after["sources"]
    assert json.loads(source[2])["text"] == info["text"].replace("never push to main", MARKER)
    retired = json.loads(after["entries"][0][4])
    assert retired == {"id": info["oid"], "reason": MARKER, "replacement_ids": [info["rid"]]}
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        # A v1 reader needs nothing else: every table it knows, no om_* table left behind by the rewrite.
        names = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        conn.close()
    assert {"meta", "sources", "entries"} <= names
    assert run_om("--store", store, "--session", LEGACY_SESSION, "recall", info["rid"]).returncode == 0


def test_free_pages_another_writer_left_holding_the_text_are_compacted_away(om):
    om.setup("capture", input=json.dumps({"kind": "user", "text": "unrelated", "key": "1"}))
    path = _db(om.store)
    # A writer without secure_delete (an older SQLite, a peer) dropped a table that held the text.
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA secure_delete = OFF")
    conn.execute("CREATE TABLE om_scratch (t TEXT)")
    conn.execute("INSERT INTO om_scratch VALUES (?)", (f"{SECRET} " * 2000,))
    conn.execute("DROP TABLE om_scratch")
    conn.close()
    assert files_holding(om.store, SECRET) == [str(path)]
    r = om("forget", "--text", SECRET, "-y")
    assert r.returncode == 0 and r.json["sessions"] == [] and r.json["remaining"] == [], r
    assert files_holding(om.store, SECRET) == []


def test_the_rewrite_itself_zeroes_what_it_frees_even_where_secure_delete_is_off(tmp_path):
    # The ledger layer on its own, without the compaction that follows in `om forget`.
    from om.ledger import Ledger
    from om.ledger.forget import Request
    from om.search import search

    with Ledger.open(str(tmp_path / "store"), "s1") as ledger:
        ledger.conn.execute("PRAGMA secure_delete = OFF")
        with ledger.transaction():
            ledger.capture("tool", f"output {SECRET} " * 3000, "k")  # overflow pages
            ledger.capture("user", f"short {SECRET}", "k2")
        assert search(ledger, SECRET.split("-")[0], True, False, 10)["results"]  # the index holds its tokens
        ledger.conn.execute("PRAGMA secure_delete = OFF")
        assert ledger.forget(Request([SECRET]))["occurrences"] > 800  # the stored head and tail of the output
        path = ledger.path
    assert files_holding(os.path.dirname(path), SECRET) == []
