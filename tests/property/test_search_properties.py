"""Search properties: any text is a valid query, the scan fallback ranks exactly like the index, and an
exact word leads its other forms."""

import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from om import search as search_mod
from om.errors import InputError
from om.ledger import Ledger

WORDS = ["retry", "cache", "café", "cafe", "Über", "uber", "сервер", "Сервер", "数据库", "连接", "the", "of", "build",
         "naïve", "naive", "deploy", "deployment", "東京", "天気", "retries", "retried", "caching", "builds", "deployed",
         "happy", "happiness", "sizing", "sized", "s", "x9", "42"]
doc = st.lists(st.sampled_from(WORDS + list(",.;:-()\"*")), min_size=1, max_size=12).map(" ".join)
query = st.lists(
    st.sampled_from(WORDS + ["dep", "cach", "*", '"', "-", "(", ":", "NEAR", "AND", "OR"]), min_size=1, max_size=5
).map(" ".join)


def fill(tmp_path_factory, docs):
    store = tmp_path_factory.mktemp("store")
    led = Ledger.open(str(store), "p")
    with led.transaction():  # one commit (one fsync) per example: the search sees the same rows
        for i, text in enumerate(docs):
            led.capture("tool", text, str(i))
    return led


def run(led, q, fts):
    saved = search_mod.ix.fts5_available
    if not fts:
        search_mod.ix.fts5_available = lambda conn: False
    try:
        return search_mod.search(led, q, sources=True, limit=100)["results"]
    finally:
        search_mod.ix.fts5_available = saved


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=st.lists(doc, min_size=1, max_size=15), q=query)
def test_the_scan_fallback_finds_the_same_results_with_the_same_scores_as_the_index(tmp_path_factory, docs, q):
    led = fill(tmp_path_factory, docs)
    try:
        try:
            indexed = run(led, q, True)
        except InputError:
            return
        scanned = run(led, q, False)
        # Coverage, phrase, bm25 (stems), exact words and neighbours: the same numbers on both paths.
        assert {r["id"]: r["score"] for r in indexed} == {r["id"]: r["score"] for r in scanned}
    finally:
        led.close()


FORMS = [("retries", "retry"), ("retried", "retrying"), ("deployed", "deploying"), ("caches", "caching"),
         ("builds", "build"), ("happiness", "happy")]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(forms=st.sampled_from(FORMS), filler=st.lists(st.sampled_from(WORDS[:19]), max_size=6), exact_first=st.booleans())
def test_a_document_with_the_exact_word_ranks_above_the_same_document_with_another_form(
    tmp_path_factory, forms, filler, exact_first
):
    word, other = forms
    text = " ".join(filler)
    docs = [f"{text} {word}", f"{text} {other}"]
    led = fill(tmp_path_factory, docs if exact_first else docs[::-1])
    try:
        results = run(led, word, True)
        assert [r["snippet"].split()[-1].strip("[]") for r in results][:2] == [word, other]
    finally:
        led.close()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(q=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
       | st.text(alphabet=string.punctuation + " ab", max_size=20))
def test_any_text_is_answered_or_refused_as_input_never_failing(tmp_path_factory, q):
    led = fill(tmp_path_factory, ["a b c retry café 数据库", "the quick brown fox"])
    try:
        try:
            out = search_mod.search(led, q, sources=True)
        except InputError:
            return
        assert out["query"] == q and isinstance(out["results"], list)
    finally:
        led.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=st.lists(doc, min_size=1, max_size=15), q=query, limit=st.integers(1, 12))
def test_an_expansion_only_adds_results_after_the_first_pass_and_below_every_one_of_them(tmp_path_factory, docs, q, limit):
    led = fill(tmp_path_factory, docs)
    try:
        try:
            found = search_mod.search(led, q, sources=True, limit=limit)
        except InputError:
            return
        first = search_mod.search(led, q, sources=True, limit=limit, feedback=False)["results"]
        results = found["results"]
        assert len(results) <= limit
        assert results[: len(first)] == first  # the first pass, untouched, in its order
        added = results[len(first):]
        assert ("expansion" in found) == bool(added)
        assert all(r["expansion"] is True and r["score"] < 1 <= min(f["score"] for f in first) for r in added)
        if added:
            assert len(first) < limit and int(first[0]["score"]) < len(search_mod.Query(q).terms)
    finally:
        led.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=st.lists(doc, min_size=1, max_size=10), memories=st.lists(doc, max_size=5), retire=st.booleans(),
       q=query, sources=st.booleans(), retired=st.booleans())
def test_the_scan_scores_memories_and_evidence_like_the_index_whatever_the_search_asks_for(
    tmp_path_factory, docs, memories, retire, q, sources, retired
):
    led = fill(tmp_path_factory, docs)
    try:
        ids = [row[0] for row in led.conn.execute("SELECT id FROM sources ORDER BY seq")]
        made = led.apply({"through": len(ids), "observations": [
            {"text": text, "source_ids": [ids[i % len(ids)]]} for i, text in enumerate(memories)]})["observations"]
        made = list(dict.fromkeys(made))  # the same text citing the same source is the same entry, made once
        if retire and len(made) >= 2:
            led.apply({"through": len(ids), "retire": [
                {"id": made[0], "reason": "Superseded.", "replacement_ids": [made[-1]]}]})
        saved = search_mod.ix.fts5_available
        try:
            indexed = search_mod.search(led, q, sources=sources, retired=retired, limit=100)["results"]
            search_mod.ix.fts5_available = lambda conn: False
            scanned = search_mod.search(led, q, sources=sources, retired=retired, limit=100)["results"]
        except InputError:
            return
        finally:
            search_mod.ix.fts5_available = saved
        # Retired memories and evidence count in N, avgdl and df on both paths, asked for or not.
        assert {r["id"]: r["score"] for r in indexed} == {r["id"]: r["score"] for r in scanned}
    finally:
        led.close()


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.characters(max_codepoint=127), max_size=60)
       | st.text(alphabet=string.printable + "_éÜ数据", max_size=40)
       | st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30))
def test_the_words_of_a_text_are_what_the_word_pattern_finds_in_it_folded_ascii_or_not(text):
    from om.derived import fts

    assert fts.words_of(text) == fts.pattern(fts.WORD_PATTERN).findall(fts.fold(fts.spread_cjk(text)))


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=string.ascii_letters + " .-_0123456789é", max_size=60), warm=st.booleans())
def test_a_stems_column_is_each_word_stemmed_whether_its_words_were_met_before_or_not(text, warm):
    from om import porter
    from om.derived import fts

    words = fts.words_of(text)
    if warm:
        fts.stems_text(text)
    else:
        fts._STEMS.clear()
    expected = [porter.stem(w) if w.isascii() and w.isalpha() else w for w in words]
    assert fts.stems_text(text) == " ".join(expected)
