"""The store index answers as reading every ledger does, however the store changes between calls.

Random stores are built and changed the way their writers change them: a v1 peer (plain
SQL on the documented v1 schema), om's own commands (capture, apply, forget), a rewrite
in place that bumps `om_generation`, a hand copy, a file replaced by a rename, damage,
removal, and damage to the index itself. After every step each store-wide read, run
through the index, must answer what the same command answers when no index can be used
(every ledger read, each session searched alone): `sessions --json` and `export
--all-sessions` exactly; `search --all-sessions`, which ranks the whole store at once from
the index, finds exactly the documents the full scan finds (whatever their order and
scores), in the same sessions, skipping the same.

In process (`om.cli.main`), so hypothesis can try many stores. A row is trusted by its
stamp only once its ledger has settled (SETTLE_NS, 3 s in use); here it is 50 ms and
every read waits 60 ms first, so the stamp-only path is what most steps exercise.
"""

import json
import os
import shutil
import sqlite3
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import om.derived.store_index as store_index
import om.sessions.index as index_module
from inprocess import run_om_in_process
from sessions_support import ledger_path as path_of
from sessions_support import peer_source, v1_session

SESSIONS = ["alpha", "beta", "gamma", "delta"]
WORDS = ["redis", "timeout", "cache", "deploy", "retry", "queue"]
def om(store, *args, session="whoever"):
    return run_om_in_process("--store", store, "--session", session, *args)


def step(store, op, session, other, text):
    try:
        change(store, op, session, other, text)
    except sqlite3.DatabaseError:
        pass  # a writer meeting a damaged ledger changes nothing


def change(store, op, session, other, text):
    path = str(path_of(store, session))
    exists = os.path.isfile(path)
    if op == "new":
        v1_session(store, session, [text, text + " two"], memory=True)
    elif op == "capture":
        run_om_in_process("--store", store, "--session", session, "capture",
                          input=json.dumps({"kind": "user", "text": text, "key": text}))
    elif op == "peer" and exists:
        conn = sqlite3.connect(path, isolation_level=None)
        with conn:
            peer_source(conn, session, len(text) + 20, text + " from a peer")
        conn.close()
    elif op == "retire" and exists:
        # What apply does to an entry it replaces (a v1 peer's apply the same): retired in place.
        conn = sqlite3.connect(path, isolation_level=None)
        with conn:
            conn.execute("UPDATE entries SET active = 0, retirement = '{\"reason\":\"replaced\"}'"
                         " WHERE seq = (SELECT min(seq) FROM entries WHERE active = 1)")
        conn.close()
    elif op == "forget" and exists:
        om(store, "forget", "--text", text.split()[0], "-y", session=session)
    elif op == "checkpoint" and exists:
        pending = om(store, "pending", session=session)
        if pending.returncode == 0 and json.loads(pending.stdout)["sources"]:
            p = json.loads(pending.stdout)
            run_om_in_process("--store", store, "--session", session, "apply", input=json.dumps({
                "through": p["through"],
                "observations": [{"text": "noted " + text, "source_ids": [p["sources"][0]["id"]]}]}))
    elif op == "rewrite" and exists:
        # What forget does: the same rows, one text replaced in place, om_generation bumped, and the
        # ledger's own derived tables dropped in the same transaction.
        from om.derived import fts, sizes, view_order

        conn = sqlite3.connect(path, isolation_level=None)
        with conn:
            for table in (sizes, view_order, fts):  # as Ledger.rows_rewritten drops them
                table.invalidate(conn)
            conn.execute("UPDATE sources SET body = json_set(body, '$.text', 'x' || substr(json_extract(body,"
                         " '$.text'), 2)) WHERE seq = (SELECT min(seq) FROM sources)")
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('om_generation', coalesce((SELECT value + 1 FROM meta"
                         " WHERE key = 'om_generation'), 1))")
        conn.close()
    elif op == "project" and exists:
        conn = sqlite3.connect(path, isolation_level=None)
        with conn:
            root = "/" + text.split()[0]  # a project root `--project` can name (one that does not exist names itself)
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('om_project', ?), ('om_cwd', ?)", (root, root))
        conn.close()
    elif op == "copy" and exists and os.path.isfile(path_of(store, other)) and other != session:
        shutil.copyfile(path_of(store, other), path)  # same inode, another session's ledger: skipped
    elif op == "replace" and exists:
        fresh = path + ".new"
        shutil.copyfile(path, fresh)
        conn = sqlite3.connect(fresh, isolation_level=None)
        with conn:
            peer_source(conn, session, 99, text + " replaced")
        conn.close()
        os.replace(fresh, path)
    elif op == "keep-mtime" and exists:
        # A change that puts the modification time back (cp -p, rsync -t): only the change time tells.
        before = os.stat(path)
        conn = sqlite3.connect(path, isolation_level=None)
        with conn:
            conn.execute("UPDATE meta SET value = value || 'x' WHERE key = 'session'")  # now hashes elsewhere
        conn.close()
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    elif op == "touch" and exists:
        os.utime(path, (1.6e9, 1.6e9))  # an old modification time; the change time still moves
    elif op == "garbage" and exists:
        with open(path, "wb") as f:
            f.write(b"not a ledger " * 100)
    elif op == "unlink" and exists:
        os.unlink(path)
    elif op == "remove":
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    elif op == "index-garbage" and os.path.isfile(store_index.path_of(store)):
        with open(store_index.path_of(store), "wb") as f:
            f.write(b"garbage" * 500)
    elif op == "index-delete":
        shutil.rmtree(os.path.join(store, store_index.FOLDER), ignore_errors=True)


#: Store-wide reads; a search asks for every document it finds (no store here holds 100).
COMMANDS = (("sessions", "--json"), ("search", "redis", "--all-sessions", "--sources", "--limit", "100"),
            ("search", "cache", "timeout", "--all-sessions", "--include-retired", "--limit", "100"),
            ("search", "redis", "--all-sessions", "--sources", "--project", "/redis", "--limit", "100"))


def answers(store, monkeypatch, command, scan):
    """(exit code, what the command printed, stderr); of a search, what it found rather than how it ranked it."""
    with monkeypatch.context() as m:
        if scan:
            m.setattr(store_index, "open_index", lambda *a, **k: None)
        r = om(store, *command)
    return r.returncode, found(r.stdout) if "search" in command else r.stdout, r.stderr


def found(stdout):
    """A search's answer as the documents it found: the first pass's (an expansion is read from its
    order), each with what it says, its score left out; the sessions searched and the ones skipped."""
    if not stdout:
        return stdout
    answer = json.loads(stdout)
    results = sorted(json.dumps({k: v for k, v in r.items() if k != "score"}, sort_keys=True)
                     for r in answer["results"] if not r.get("expansion"))
    return results, answer["sessions"], answer["skipped"], answer["query"], answer["project"]


OPS = st.sampled_from(["new", "new", "capture", "peer", "checkpoint", "retire", "forget", "rewrite", "project", "copy",
                       "replace", "keep-mtime", "touch", "garbage", "unlink", "remove", "index-garbage",
                       "index-delete"])
STEP = st.tuples(OPS, st.sampled_from(SESSIONS), st.sampled_from(SESSIONS),
                 st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(STEP, min_size=1, max_size=10))
def test_every_store_wide_read_through_the_index_prints_what_reading_every_ledger_prints(
        tmp_path_factory, monkeypatch, steps):
    store = str(tmp_path_factory.mktemp("store"))
    monkeypatch.setattr(index_module, "SETTLE_NS", 50_000_000)
    v1_session(store, "alpha", ["redis cache timeout", "deploy queue"], memory=True)
    for op, session, other, text in steps:
        step(store, op, session, other, text)
        time.sleep(0.06)  # what was written before this read has settled
        for command in COMMANDS:
            assert answers(store, monkeypatch, command, False) == answers(store, monkeypatch, command, True), \
                (op, session, command)
    export = ("export", "--format", "json", "--all-sessions")
    assert answers(store, monkeypatch, export, False) == answers(store, monkeypatch, export, True)


def test_a_warm_search_reads_no_catalogue_row_it_does_not_search_and_reads_them_all_when_the_index_changes_under_it(
        tmp_path_factory, monkeypatch):
    from om.sessions import index as catalogue_index

    store = str(tmp_path_factory.mktemp("store"))
    monkeypatch.setattr(index_module, "SETTLE_NS", 50_000_000)
    for i, session in enumerate(SESSIONS):
        v1_session(store, session, [f"redis cache w{i}", "deploy queue", f"timeout {session}"], memory=True)
    search = ("search", "redis", "timeout", "--all-sessions", "--limit", "2")
    expected = answers(store, monkeypatch, search, False)  # the catalogue and the search part built
    for _ in range(3):  # and read again once the ledgers settled
        time.sleep(0.06)
        assert answers(store, monkeypatch, search, False) == expected
    made = []
    real = catalogue_index.Catalogue._made
    monkeypatch.setattr(catalogue_index.Catalogue, "_made", lambda self: made.append(1) or real(self))
    assert answers(store, monkeypatch, search, False) == expected
    assert made == [], "a warm search of an unchanged store read every catalogue row"

    scope = store_index.Index.search_scope

    def changed_meanwhile(self, *args, **kwargs):
        found = scope(self, *args, **kwargs)
        other = sqlite3.connect(store_index.path_of(store), isolation_level=None)
        other.execute("UPDATE meta SET value = value + 1 WHERE key = 'version'")  # another reader's write
        other.close()
        return found

    monkeypatch.setattr(store_index.Index, "search_scope", changed_meanwhile)
    assert answers(store, monkeypatch, search, False) == expected
    assert made == [1], "a search whose index changed under it did not read the catalogue as it was checked"


# -- the search part: one ranking for the store, finding what a full scan finds ---------------

VOCABULARY = ["redis", "redis", "cache", "timeout", "timeouts", "time", "deploy", "retry", "the", "of", "café",
              "数据库", "连接", "e2e", "x1", "naïve", "naive"]
#: Words no query names, so the query's are rare enough for BM25 to weigh them (idf above its floor).
FILLER = [f"w{i}" for i in range(40)]
TEXT = st.lists(st.sampled_from(VOCABULARY) | st.sampled_from(FILLER), min_size=1, max_size=12).map(" ".join)
QUERY = st.lists(st.sampled_from(VOCABULARY + ["redi", "tim", "dep", "cach"]), min_size=1, max_size=4).map(" ".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sessions=st.lists(st.tuples(st.lists(TEXT, min_size=1, max_size=20), st.booleans()), min_size=1, max_size=8),
       query=QUERY, sources=st.booleans(), retired=st.booleans())
def test_the_store_ranking_finds_the_documents_searching_every_session_alone_finds(
        tmp_path_factory, monkeypatch, sessions, query, sources, retired):
    store = str(tmp_path_factory.mktemp("store"))
    for i, (texts, memory) in enumerate(sessions):
        v1_session(store, f"s{i}", texts, memory)
    command = ("search", query, "--all-sessions", "--limit", "100") + (("--sources",) if sources else ()) + (
        ("--include-retired",) if retired else ())
    for _ in range(2):  # the first call builds the index, the second reads it
        assert answers(store, monkeypatch, command, False) == answers(store, monkeypatch, command, True)
