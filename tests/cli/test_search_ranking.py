"""`om search` ranking rules: word forms, the exact word's lead, neighbouring evidence, the index's format."""

import json
import sqlite3

from conftest import run_read_only


def capture(om, text, key=None):
    r = om.setup("capture", input=json.dumps({"kind": "user", "text": text, "key": key or text}))
    return r.json["source_id"]


def search(om, *args):
    r = om("search", "--sources", *args)
    assert r.returncode == 0, r
    return r.json["results"]


def ids(results):
    return [r["id"] for r in results]


def test_a_query_finds_evidence_written_with_other_forms_of_its_words(om):
    said = capture(om, "the retries were rejected because they hid the flaky network")
    capture(om, "unrelated note about the logo colours")
    results = search(om, "why did we reject the retry approach")
    assert ids(results) == [said]
    assert "[retries]" in results[0]["snippet"] and "[rejected]" in results[0]["snippet"]


def test_the_exact_word_ranks_above_another_form_of_it(om):
    exact = capture(om, "the job retries twice")
    other = capture(om, "the job retried twice")  # newer, so it would win a tie
    assert ids(search(om, "retries")) == [exact, other]
    assert ids(search(om, "retried")) == [other, exact]


def test_more_of_the_querys_words_beat_their_exact_forms(om):
    # The exact-word bonus orders results within the same coverage, never above it.
    both = capture(om, "deployed after the migrations finished")
    one_exact = capture(om, "deploy")
    assert ids(search(om, "deploy migration")) == [both, one_exact]


def test_an_exact_phrase_still_beats_the_same_words_stemmed(om):
    phrase = capture(om, "we rolled back the build cache")
    stemmed = capture(om, "caching builds rolled backs")
    assert ids(search(om, "rolled back the build cache")) == [phrase, stemmed]


def test_a_source_next_to_a_match_ranks_above_its_twin_elsewhere(om):
    # A question and its answer are two sources: the answer alone shares one
    # word with the query, its neighbour shares another.
    capture(om, "which port does the redis cache listen on?")
    answered = capture(om, "it listens on 6380 now", key="after the question")
    capture(om, "lunch order: two pizzas")
    twin = capture(om, "it listens on 6380 now", key="elsewhere")
    capture(om, "the logo colours are final")
    results = search(om, "redis 6380")
    assert ids(results).index(answered) < ids(results).index(twin)


def test_a_memory_and_its_source_tie_when_the_sources_neighbours_do_not_match(om):
    sid = capture(om, "blue green switch on fridays")
    capture(om, "the blue team owns deploys")
    through = om.setup("pending").json["through"]
    apply = {"through": through, "observations": [{"text": "blue green switch on fridays", "source_ids": [sid]}]}
    (oid,) = om.setup("apply", input=json.dumps(apply)).json["observations"]
    results = search(om, "green switch")
    assert ids(results)[:2] == [oid, sid]
    assert results[0]["score"] == results[1]["score"]


def test_single_letters_and_common_words_are_not_terms(om):
    said = capture(om, "Melanie paints sunsets by the lake")
    capture(om, "s t u v w x y z")
    capture(om, "what kind of thing would you like to do")
    assert ids(search(om, "What kind of things does Melanie's painting show?")) == [said]


def test_a_store_indexed_by_the_earlier_format_is_reindexed_and_the_old_index_dropped(om, store):
    said = capture(om, "the flaky resolver timed out")
    db = om.setup("status").json["database"]
    with sqlite3.connect(db) as c:  # the one-column index of the first format, as an earlier om left it
        c.execute("CREATE VIRTUAL TABLE om_fts USING fts5(text, content='', tokenize='unicode61 remove_diacritics 2')")
        c.execute("CREATE TABLE om_fts_state (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        c.execute("INSERT INTO om_fts(rowid, text) VALUES (1, 'the flaky resolver timed out')")
        c.executemany("INSERT INTO om_fts_state VALUES (?, ?)", [
            ("format", "1;unicode61 remove_diacritics 2;cjk-chars;entry-base-40"), ("sources_seq", "1"),
            ("sources_count", "1"), ("sources_id", said), ("entries_seq", "0"), ("entries_count", "0"),
            ("entries_id", "")])
    # A read-only search cannot reindex: it scans, with the same ranking, and writes nothing.
    r = run_read_only(store, "search", "--sources", "resolver timeouts")
    assert r.returncode == 0, r
    assert ids(r.json["results"]) == [said]
    assert ids(search(om, "resolver timing")) == [said]
    with sqlite3.connect(db) as c:
        names = {n for (n,) in c.execute("SELECT name FROM sqlite_master WHERE name LIKE 'om_fts%'")}
        assert "om_fts" not in names and "om_fts_state" not in names and "om_fts_data" not in names
        assert {"om_fts_v2", "om_fts_v2_state"} <= names
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_the_scan_of_a_read_only_store_ranks_like_the_index(om, store):
    texts = ["the deploy retried twice then passed", "deploys retry on failure", "retrying deploys is risky",
             "the deploy went out", "an unrelated line about lunch", "the retry budget was raised"]
    for t in texts:
        capture(om, t)
    read_only = run_read_only(store, "search", "--sources", "deploy retries")
    assert read_only.returncode == 0, read_only
    indexed = search(om, "deploy retries")
    assert [(x["id"], round(x["score"], 3)) for x in read_only.json["results"]] == [
        (x["id"], round(x["score"], 3)) for x in indexed]
