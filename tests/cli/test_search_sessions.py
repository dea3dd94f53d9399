"""`om search QUERY --all-sessions [--project DIR]`: one ranked list over the store's sessions."""

import json

import pytest

from conftest import run_om, run_read_only
from sessions_support import database, om_json, session_with_memory, v1_tables


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    return root


def search_all(store, *words, session="whoever"):
    r = run_om("--store", store, "--session", session, "search", *words, "--all-sessions")
    assert r.returncode == 0, r
    return r.json


def test_results_from_every_session_come_in_one_ranked_list_each_naming_its_session(store, project):
    a = session_with_memory(store, "alpha", project, "The cache lives in redis on port 6380.")
    b = session_with_memory(store, "beta", project, "The redis cache was replaced by memcached.")
    session_with_memory(store, "gamma", project, "Unrelated work on the parser.")
    found = search_all(store, "redis", "cache", "port")
    assert found["sessions"] == 3 and found["skipped"] == []
    assert [(r["session"], r["id"]) for r in found["results"]] == [("alpha", a), ("beta", b)]
    assert found["results"][0]["score"] > found["results"][1]["score"]
    assert "[redis]" in found["results"][0]["snippet"]
    # The id resolves in the session the result names.
    assert om_json(store, "alpha", "recall", a)["entry"]["text"].startswith("The cache lives")
    # The result a single-session search gives, scored over the whole store.
    single = om_json(store, "alpha", "search", "redis", "cache", "port")["results"][0]
    assert {k: v for k, v in found["results"][0].items() if k not in ("session", "score")} == \
        {k: v for k, v in single.items() if k != "score"}


def test_project_excludes_sessions_of_other_projects_and_of_unknown_projects(store, project, tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()
    session_with_memory(store, "ours", project, "Deploys go through the staging cluster.")
    session_with_memory(store, "theirs", other, "Deploys go straight to production.")
    legacy = run_om("--store", store, "--session", "legacy", "capture",
                    input=json.dumps({"kind": "user", "text": "Deploys need a ticket.", "key": "k"}))
    assert legacy.returncode == 0
    everywhere = run_om("--store", store, "search", "deploys", "--all-sessions", "--sources").json
    assert {r["session"] for r in everywhere["results"]} == {"ours", "theirs", "legacy"}
    ours = run_om("--store", store, "search", "deploys", "--all-sessions", "--sources", "--project", str(project))
    assert ours.returncode == 0, ours
    assert {r["session"] for r in ours.json["results"]} == {"ours"} and ours.json["sessions"] == 1
    assert ours.json["project"] == str(project.resolve())


def test_other_sessions_v1_tables_are_never_written(store, project):
    session_with_memory(store, "alpha", project, "Tokens rotate every 30 days.")
    session_with_memory(store, "beta", project, "Tokens are stored in the vault.")
    paths = [database(store, s) for s in ("alpha", "beta")]
    before = [v1_tables(p) for p in paths]
    assert len(search_all(store, "tokens")["results"]) == 2
    assert len(search_all(store, "vault", "tokens")["results"]) == 2
    assert [v1_tables(p) for p in paths] == before


def test_limit_bounds_the_merged_list_and_the_best_results_survive(store, project):
    for i in range(4):
        session_with_memory(store, f"s{i}", project, f"Retry policy number {i} uses backoff" + " backoff" * i)
    found = run_om("--store", store, "search", "backoff", "--all-sessions", "--limit", "2").json
    assert len(found["results"]) == 2
    full = search_all(store, "backoff")["results"]
    assert found["results"] == full[:2]


def test_a_read_only_store_is_searched_by_scanning_and_a_corrupt_session_is_skipped(store, project):
    session_with_memory(store, "alpha", project, "The migration renames the users table.")
    session_with_memory(store, "broken", project, "Broken session.")
    database(store, "broken").write_bytes(b"not sqlite" * 100)
    r = run_read_only(store, "search", "migration", "--all-sessions")
    assert r.returncode == 0, r
    found = json.loads(r.stdout)
    assert [x["session"] for x in found["results"]] == ["alpha"]
    assert len(found["skipped"]) == 1 and "broken" not in r.stdout.split('"results"')[1].split('"skipped"')[0]
    assert len(r.stderr.splitlines()) == 1 and "skipped" in r.stderr


def test_a_query_without_words_fails_before_any_session_is_opened(tmp_path):
    missing = tmp_path / "nope"
    r = run_om("--store", missing, "search", "?!", "--all-sessions")
    assert r.returncode == 65 and len(r.stderr.splitlines()) == 1 and not missing.exists()
