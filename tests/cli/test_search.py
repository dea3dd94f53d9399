"""`om search`: ranking, Unicode, plain-word queries, filters, and an index that never fails."""

import json
import sqlite3

import pytest

from conftest import run_read_only

ENTRY_BASE = 1 << 40


# Captures, checkpoints and status arrange the ledger in process (`om.setup`); every
# search a test asserts on is a subprocess.


def capture(om, text, kind="tool", key="k"):
    return om.setup("capture", input=json.dumps({"kind": kind, "text": text, "key": key})).json["source_id"]


def observe(om, *observations):
    """Checkpoint everything pending with the given (text, source_id[, importance]) observations."""
    through = om.setup("pending").json["through"]
    obs = [{"text": o[0], "source_ids": [o[1]], "importance": o[2] if len(o) > 2 else "medium"} for o in observations]
    return om.setup("apply", input=json.dumps({"through": through, "observations": obs})).json["observations"]


def search(om, *args):
    r = om("search", *args)
    assert r.returncode == 0, r
    return r.json["results"]


def ids(results):
    return [r["id"] for r in results]


def db_path(om):
    return om.setup("status").json["database"]


def test_an_exact_phrase_ranks_above_the_same_words_scattered(om):
    scattered = capture(om, "the disk was full, so the build cache could not grow and the rollback started")
    phrase = capture(om, "we had to rollback the build cache after the failed deploy")
    results = search(om, "--sources", "build cache rollback")
    assert ids(results)[:2] == [phrase, scattered] or ids(results)[0] == phrase
    results = search(om, "--sources", "build cache")
    assert set(ids(results)) == {phrase, scattered}
    s2 = capture(om, "cache of the build system")
    results = search(om, "--sources", "the build cache")
    assert ids(results)[0] in (phrase, scattered) and ids(results)[-1] == s2


def test_a_paraphrase_sharing_some_words_still_finds_evidence_ranked_by_terms_covered(om):
    two = capture(om, "postgres connection pool exhausted during the nightly import")
    one = capture(om, "the import finished in four minutes")
    capture(om, "unrelated note about the logo colours")
    results = search(om, "--sources", "why was the postgres pool exhausted at night")
    assert ids(results) == [two, one] or ids(results)[0] == two
    assert two in ids(results)
    assert all(r["kind"] == "source" for r in results)


def test_a_memory_precedes_a_source_with_the_same_text_only_when_sources_are_asked_for(om):
    text = "Deploys go through the blue green switch on Fridays"
    sid = capture(om, text)
    (oid,) = observe(om, (text, sid))
    with_sources = search(om, "--sources", "blue green switch")
    assert ids(with_sources) == [oid, sid]
    assert with_sources[0]["score"] == with_sources[1]["score"]
    assert ids(search(om, "blue green switch")) == [oid]


def test_a_more_relevant_source_ranks_above_a_less_relevant_memory(om):
    sid = capture(om, "kafka consumer lag grew; kafka consumer restarted; lag cleared")
    other = capture(om, "weekly sync notes")
    (oid,) = observe(om, ("The weekly sync mentioned kafka once.", other))
    results = search(om, "--sources", "kafka consumer lag")
    assert ids(results) == [sid, oid]


def test_default_search_returns_active_memories_only_with_their_fields(om):
    sid = capture(om, "The CI runner image pins Python 3.11")
    (oid,) = observe(om, ("CI pins Python 3.11 in the runner image.", sid, "high"))
    (result,) = search(om, "python runner")
    assert result["id"] == oid
    assert result["kind"] == "observation"
    assert result["active"] is True
    assert result["importance"] == "high"
    assert result["seq"] == 1
    assert isinstance(result["score"], float)
    assert "[Python]" in result["snippet"] and "[runner]" in result["snippet"]
    assert "replacement_ids" not in result


def test_each_kind_has_its_own_shape_reflections_and_sources_included(om):
    sid = capture(om, "the flaky integration suite timed out twice on the arm runner")
    (oid,) = observe(om, ("The integration suite is flaky on the arm runner.", sid, "low"))
    through = om("pending").json["through"]
    checkpoint = {"through": through, "reflections": [{"text": "Arm runner flakiness keeps recurring.", "observation_ids": [oid]}]}
    r = om("apply", input=json.dumps(checkpoint))
    assert r.returncode == 0, r
    (rid,) = r.json["reflections"]
    out = om("search", "--sources", "arm runner")
    assert out.returncode == 0 and set(out.json) == {"query", "results"} and out.json["query"] == "arm runner"
    by_id = {x["id"]: x for x in out.json["results"]}
    assert set(by_id) == {sid, oid, rid}
    assert by_id[rid]["kind"] == "reflection" and by_id[rid]["importance"] == "medium"
    assert set(by_id[rid]) == set(by_id[oid]) == {"id", "kind", "seq", "active", "importance", "score", "snippet"}
    assert by_id[oid]["importance"] == "low" and (by_id[oid]["seq"], by_id[rid]["seq"]) == (1, 2)
    assert set(by_id[sid]) == {"id", "kind", "seq", "active", "score", "snippet"}
    assert by_id[sid]["kind"] == "source" and by_id[sid]["seq"] == 1 and "[arm] [runner]" in by_id[sid]["snippet"]
    assert {x["id"] for x in search(om, "arm runner")} == {oid, rid}


def test_retired_memories_appear_only_when_asked_and_name_their_replacements(om):
    s1 = capture(om, "staging database lives on host alpha")
    (old,) = observe(om, ("The staging database is on host alpha.", s1))
    s2 = capture(om, "staging database moved to host beta")
    through = om("pending").json["through"]
    r = om(
        "apply",
        input=json.dumps(
            {
                "through": through,
                "observations": [{"text": "The staging database is on host beta.", "source_ids": [s2]}],
            }
        ),
    )
    (new,) = r.json["observations"]
    r = om("apply", input=json.dumps({"through": through, "retire": [{"id": old, "reason": "Moved.", "replacement_ids": [new]}]}))
    assert r.returncode == 0, r
    assert ids(search(om, "staging database host")) == [new]
    results = search(om, "--include-retired", "staging database host")
    assert set(ids(results)) == {old, new}
    retired = next(x for x in results if x["id"] == old)
    assert retired["active"] is False and retired["replacement_ids"] == [new]
    assert "replacement_ids" not in next(x for x in results if x["id"] == new)


@pytest.mark.parametrize(
    "text, query",
    [
        ("Le café est fermé le lundi", "cafe ferme"),
        ("the cafe is closed on monday", "café"),
        ("Über die Brücke", "uber brucke"),
        ("Сервер упал после обновления", "СЕРВЕР упал"),
        ("Сервер упал после обновления", "обновления сервер"),
        ("数据库连接超时了", "连接超时"),
        ("数据库连接超时了", "数据库"),
        ("東京の天気は晴れです", "天気"),
        ("서울에서 배포가 실패했습니다", "배포가"),
    ],
)
def test_unicode_words_are_found_with_case_and_accents_folded(om, text, query):
    sid = capture(om, text)
    capture(om, "an unrelated english line")
    assert ids(search(om, "--sources", query)) == [sid]


def test_cjk_queries_rank_texts_sharing_more_characters_first(om):
    full = capture(om, "数据库连接超时")
    part = capture(om, "连接成功")
    results = search(om, "--sources", "数据库连接超时")
    assert ids(results)[0] == full and part in ids(results)


@pytest.mark.parametrize(
    "query",
    ['"unbalanced retry', "retry*", "-retry", "retry:", "(retry", "retry)", "NEAR(retry)", "retry AND", "OR retry",
     "NOT retry", "retry^", "{retry}", "retry + 1", "col:retry", "'retry'", "retry\\", "retry;DROP TABLE sources"],
)
def test_fts_syntax_characters_in_a_query_are_treated_as_plain_words(om, query):
    sid = capture(om, "the job will retry three times before giving up")
    results = search(om, "--sources", "--", query)
    assert sid in ids(results)


def test_stop_words_do_not_count(om):
    sid = capture(om, "redis eviction policy set to allkeys-lru")
    capture(om, "this is what the team did when it was there")
    assert ids(search(om, "--sources", "what is the redis policy")) == [sid]


@pytest.mark.parametrize("query", ["", "   ", "?!.,;", "*", '""'])
def test_a_query_without_any_word_is_a_clear_input_error(om, query):
    capture(om, "anything at all")
    r = om("search", query)
    assert r.returncode == 65
    assert r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and "search" in r.stderr


def test_the_last_term_matches_as_a_prefix(om):
    sid = capture(om, "authentication tokens expire after an hour")
    assert ids(search(om, "--sources", "tokens authent")) == [sid]
    assert ids(search(om, "--sources", "authent tokens")) == [sid]
    assert search(om, "--sources", "authent hour") != []


@pytest.mark.parametrize("limit", ["0", "101", "-3"])
def test_limit_outside_one_to_a_hundred_is_refused(om, limit):
    capture(om, "limit test")
    r = om("search", "--limit", limit, "limit")
    assert r.returncode == 65 and r.stdout == ""


def test_limit_bounds_the_number_of_results(om):
    for i in range(15):
        capture(om, f"flaky test number {i} failed on retry")
    assert len(search(om, "--sources", "flaky")) == 10
    assert len(search(om, "--sources", "--limit", "3", "flaky")) == 3
    assert len(search(om, "--sources", "--limit", "100", "flaky")) == 15


def test_snippets_are_short_and_mark_the_matched_terms(om):
    text = ("filler words " * 60) + "the migration failed on table invoices " + ("more filler " * 60)
    capture(om, text)
    (result,) = search(om, "--sources", "migration invoices")
    assert "[migration]" in result["snippet"] and "[invoices]" in result["snippet"]
    assert len(result["snippet"]) <= 200
    assert result["snippet"].startswith("…") and result["snippet"].endswith("…")


def peer_insert_source(db, text, kind="tool"):
    """Write a source exactly as a v1 peer does, bypassing om."""
    import hashlib

    sid = "s-" + hashlib.sha256(json.dumps([kind, "peer", text], ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()[:24]
    body = json.dumps(
        {"seq": 0, "id": sid, "kind": kind, "timestamp": "2026-09-06T06:40:53Z", "text": text, "truncated": False},
        ensure_ascii=False,
        separators=(",", ":"),
    )
    with sqlite3.connect(db) as c:
        c.execute("INSERT INTO sources(id, body) VALUES (?, ?)", (sid, body))
    return sid


def peer_insert_entry(db, text, support, entry_id):
    body = json.dumps(
        {"seq": 0, "id": entry_id, "kind": "observation", "timestamp": "2026-09-06T06:40:53Z", "importance": "medium",
         "text": text, "support": support, "active": True, "retirement": None},
        ensure_ascii=False,
        separators=(",", ":"),
    )
    with sqlite3.connect(db) as c:
        c.execute("INSERT INTO entries(id, body, active, retirement) VALUES (?, ?, 1, NULL)", (entry_id, body))


def test_rows_written_by_a_v1_peer_are_indexed_on_the_next_search(om):
    capture(om, "first line from om about gradle")
    assert len(search(om, "--sources", "gradle")) == 1
    db = db_path(om)
    peer_source = peer_insert_source(db, "the peer wrote about gradle daemons")
    peer_insert_entry(db, "Gradle daemons leak memory.", [peer_source], "o-" + "a" * 24)
    results = search(om, "--sources", "gradle")
    assert peer_source in ids(results) and "o-" + "a" * 24 in ids(results) and len(results) == 3
    assert ids(search(om, "gradle daemons")) == ["o-" + "a" * 24]
    # A peer's retirement is seen at once: activity is read from the ledger, not the index.
    with sqlite3.connect(db) as c:
        c.execute("UPDATE entries SET active = 0, retirement = ? WHERE id = ?",
                  (json.dumps({"id": "o-" + "a" * 24, "reason": "x", "replacement_ids": []}), "o-" + "a" * 24))
    assert search(om, "gradle daemons") == []
    with sqlite3.connect(db) as c:
        indexed = c.execute("SELECT count(*) FROM om_fts_v2").fetchone()[0]
    assert indexed == 3


def test_the_index_is_additive_and_leaves_the_v1_tables_as_they_were(om):
    capture(om, "schema check")
    db = db_path(om)
    with sqlite3.connect(db) as c:
        before = c.execute("SELECT name, sql FROM sqlite_master WHERE name NOT LIKE '%om_fts%' ORDER BY name").fetchall()
        rows_before = c.execute("SELECT * FROM sources").fetchall(), c.execute("SELECT * FROM meta").fetchall()
    search(om, "--sources", "schema")
    with sqlite3.connect(db) as c:
        after = c.execute("SELECT name, sql FROM sqlite_master WHERE name NOT LIKE '%om_fts%' ORDER BY name").fetchall()
        rows_after = c.execute("SELECT * FROM sources").fetchall(), c.execute("SELECT * FROM meta").fetchall()
        added = [n for (n,) in c.execute("SELECT name FROM sqlite_master WHERE name LIKE 'om_fts%'")]
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert before == after and rows_before == rows_after
    assert "om_fts_v2" in added and "om_fts_v2_state" in added


@pytest.mark.parametrize(
    "damage",
    [
        "DROP TABLE om_fts_v2_data",
        "DROP TABLE om_fts_v2_config",
        "DROP TABLE om_fts_v2_state",
        "DELETE FROM om_fts_v2_state",
        "UPDATE om_fts_v2_state SET value = 'garbage' WHERE key = 'sources_seq'",
        "UPDATE om_fts_v2_state SET value = '999' WHERE key = 'sources_count'",
        "UPDATE om_fts_v2_data SET block = x'deadbeef'",
        "DELETE FROM om_fts_v2_data",
        "DROP TABLE om_fts_v2_state; DROP TABLE om_fts_v2_idx",
    ],
)
def test_a_damaged_index_is_rebuilt_and_the_search_answers(om, damage):
    sid = capture(om, "terraform plan showed drift in the vpc module")
    assert ids(search(om, "--sources", "terraform drift")) == [sid]
    db = db_path(om)
    c = sqlite3.connect(db)
    c.executescript(damage)
    c.close()
    later = capture(om, "terraform apply fixed the drift")
    assert set(ids(search(om, "--sources", "terraform drift"))) == {sid, later}
    with sqlite3.connect(db) as c:
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert c.execute("SELECT count(*) FROM om_fts_v2 WHERE om_fts_v2 MATCH 'terraform'").fetchone()[0] == 2


def test_an_import_that_rewrites_sequence_numbers_rebuilds_the_index(om, store):
    from conftest import run_om

    donor = capture(om, "donor session knew about the flaky dns resolver", key="d")
    r = run_om("--store", store, "--session", "dest", "capture",
               input=json.dumps({"kind": "user", "text": "dest asks about dns resolver", "key": "x"}))
    own = r.json["source_id"]
    assert ids(search(lambda *a, **k: run_om("--store", store, "--session", "dest", *a, **k), "--sources", "dns resolver")) == [own]
    r = run_om("--store", store, "--session", "dest", "import", "--from-store", store, "--from-session", "s1")
    assert r.returncode == 0, r
    results = search(lambda *a, **k: run_om("--store", store, "--session", "dest", *a, **k), "--sources", "dns resolver")
    assert set(ids(results)) == {donor, own}
    by_id = {x["id"]: x["seq"] for x in results}
    assert by_id[donor] == 1 and by_id[own] == 2


def test_a_read_only_store_without_an_index_still_answers(om, store):
    sid = capture(om, "nginx returned 502 during the reload")
    text = "Nginx reload causes brief 502 errors."
    (oid,) = observe(om, (text, sid))
    r = run_read_only(store, "search", "--sources", "nginx 502")
    assert r.returncode == 0, r
    assert [x["id"] for x in r.json["results"]] == [oid, sid]
    with sqlite3.connect(db_path(om)) as c:
        assert c.execute("SELECT count(*) FROM sqlite_master WHERE name LIKE 'om_fts%'").fetchone()[0] == 0


def test_a_read_only_store_with_a_stale_index_answers_from_index_and_newer_rows(om, store):
    old = capture(om, "nginx returned 502 during the reload")
    assert ids(search(om, "--sources", "nginx")) == [old]
    new = peer_insert_source(db_path(om), "nginx config test passed")
    r = run_read_only(store, "search", "--sources", "nginx")
    assert r.returncode == 0, r
    assert set(x["id"] for x in r.json["results"]) == {old, new}


def test_a_partial_match_covering_more_common_words_is_found_behind_many_newer_partial_matches(om):
    # "deploy" and "retry" occur in most documents, "fail" in none: BM25 gives the
    # common words no weight, so coverage alone must surface the old document.
    both = capture(om, "the deploy went through after one retry")
    db = db_path(om)
    newer = [peer_insert_source(db, f"{'deploy' if i % 2 else 'retrying'} number {i} of the week") for i in range(500)]
    assert ids(search(om, "--sources", "--limit", "3", "why did the deploy fail on retry"))[0] == both
    results = search(om, "--sources", "why did the deploy fail on retry")
    assert ids(results)[0] == both and int(results[0]["score"]) == 2
    assert all(int(r["score"]) == 1 for r in results[1:]) and set(ids(results[1:])) <= set(newer)


def test_a_rare_word_ranks_its_documents_above_documents_with_only_common_words(om):
    rare = capture(om, "the kafka deploy stalled")
    db = db_path(om)
    for i in range(50):
        peer_insert_source(db, f"deploy {i} finished")
    results = search(om, "--sources", "kafka deploy timeout")
    assert ids(results)[0] == rare


def test_catch_up_indexes_only_new_rows_and_never_rebuilds_a_sound_index(om):
    first = capture(om, "the cron job for invoices runs at midnight")
    assert ids(search(om, "--sources", "invoices")) == [first]
    db = db_path(om)
    # A marker the ledger cannot produce: it survives only if the index is never rebuilt.
    with sqlite3.connect(db) as c:
        c.execute("INSERT INTO om_fts_v2(rowid, text, stems) VALUES (999999, 'rebuildmarker', 'rebuildmarker')")
    peer = peer_insert_source(db, "invoices cron moved to one in the morning")
    later = capture(om, "invoices were late once")
    for _ in range(3):
        assert set(ids(search(om, "--sources", "invoices"))) == {first, peer, later}
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT count(*) FROM om_fts_v2 WHERE om_fts_v2 MATCH 'rebuildmarker'").fetchone()[0] == 1
        assert c.execute("SELECT count(*) FROM om_fts_v2_docsize").fetchone()[0] == 4
        assert dict(c.execute("SELECT key, value FROM om_fts_v2_state"))["sources_seq"] == "3"
