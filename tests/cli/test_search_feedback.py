"""Pseudo-relevance feedback: a weak first pass is followed by its best hits' strongest words, below every match."""

import json

from conftest import run_om

DEPLOY = "The deploy failed: the kubelet evicted the ingress pods under memory pressure; kubelet restarted ingress twice."
INGRESS = "Ingress controller logs show kubelet on node-3 NotReady since 09:14."
UNRELATED = "Refactored the CSV parser to stream rows."


def capture(om, text, key, session="s1"):
    r = om("capture", input=json.dumps({"kind": "tool", "text": text, "key": key}), session=session)
    assert r.returncode == 0, r
    return r.json["source_id"]


def search(om, *words, session="s1"):
    r = om("search", "--sources", *words, session=session)
    assert r.returncode == 0, r
    return r.json


def test_a_paraphrase_whose_words_never_meet_finds_the_evidence_its_best_hit_talks_about(om):
    deploy, ingress = capture(om, DEPLOY, "a"), capture(om, INGRESS, "b")
    capture(om, UNRELATED, "c")
    found = search(om, "deploy", "outage")  # no text holds both words
    assert found["expansion"] == ["ingress", "kubelet"]  # each named twice by the one hit (ties by stem)
    assert [r["id"] for r in found["results"]] == [deploy, ingress]
    first, more = found["results"]
    assert first["score"] >= 1 and "expansion" not in first
    assert more["expansion"] is True and 0 < more["score"] < 1
    assert "[Ingress]" in more["snippet"] and "[kubelet]" in more["snippet"]


def test_a_search_whose_words_occur_together_is_not_expanded(om):
    deploy = capture(om, DEPLOY, "a")
    capture(om, INGRESS, "b")
    found = search(om, "deploy", "failed")
    assert "expansion" not in found and [r["id"] for r in found["results"]] == [deploy]


def test_a_one_word_search_and_a_full_first_pass_are_not_expanded(om):
    deploy = capture(om, DEPLOY, "a")
    capture(om, INGRESS, "b")
    assert "expansion" not in search(om, "deploy")
    r = om("search", "--sources", "--limit", "1", "deploy", "outage")
    assert "expansion" not in r.json and [x["id"] for x in r.json["results"]] == [deploy]


def test_a_word_its_best_hits_mention_once_is_no_expansion(om):
    capture(om, "The deploy failed on the kubelet.", "a")
    capture(om, INGRESS, "b")
    found = search(om, "deploy", "outage")
    assert "expansion" not in found and len(found["results"]) == 1


def test_the_store_wide_list_is_expanded_once_from_its_merged_first_pass(om):
    deploy = capture(om, DEPLOY, "a", session="alpha")
    ingress = capture(om, INGRESS, "b", session="beta")
    r = run_om("--store", om.store, "search", "--sources", "--all-sessions", "deploy", "outage")
    assert r.returncode == 0, r
    assert r.json["expansion"] == ["ingress", "kubelet"]
    assert [(x["session"], x["id"], x.get("expansion", False)) for x in r.json["results"]] == [
        ("alpha", deploy, False), ("beta", ingress, True)]
