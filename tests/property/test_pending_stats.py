"""Pending counts from the derived size table always equal a plain scan of the ledger."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from om.ledger import Ledger

steps = st.lists(
    st.one_of(
        st.tuples(st.just("capture"), st.text(min_size=1, max_size=40).filter(lambda t: t.strip())),
        st.tuples(st.just("hook catch-up"), st.none()),
        st.tuples(st.just("checkpoint"), st.integers(0, 100)),
        st.tuples(st.just("peer capture"), st.text(min_size=1, max_size=40)),
    ),
    max_size=40,
)


def scanned(ledger):
    cursor = ledger.cursor()
    count, chars, oldest = ledger.conn.execute(
        "SELECT count(*), coalesce(sum(length(json_extract(body, '$.text'))), 0), min(seq)"
        " FROM sources WHERE seq > ?",
        (cursor,),
    ).fetchone()
    return count, chars, oldest


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps)
def test_pending_stats_match_a_scan_whatever_was_caught_up(tmp_path_factory, ops):
    store = tmp_path_factory.mktemp("sizes")
    with Ledger.open(str(store), "s") as ledger:
        for i, (op, arg) in enumerate(ops):
            if op == "capture":
                ledger.capture("tool", arg + "\u00e9\U0001F600", f"k{i}")
            elif op == "peer capture":  # a v1 peer appends without knowing the size table
                body = '{"seq":0,"id":"s-peer%d","kind":"user","timestamp":"2026-01-01T00:00:00Z","text":%s,"truncated":false}'
                ledger.conn.execute(
                    "INSERT INTO sources(id, body) VALUES (?, ?)",
                    (f"s-peer{i}", body % (i, json.dumps(arg + "x", ensure_ascii=False))),
                )
            elif op == "hook catch-up":
                with ledger.transaction():
                    ledger.backlog()
            else:
                latest = ledger.conn.execute("SELECT coalesce(max(seq), 0) FROM sources").fetchone()[0]
                through = max(ledger.cursor(), min(arg, latest))
                ledger.apply({"through": through, "observations": [], "reflections": [], "retire": []})
            assert ledger.pending_stats() == scanned(ledger)
            pending_bytes = ledger.conn.execute(
                "SELECT coalesce(sum(length(CAST(json_extract(body, '$.text') AS BLOB))), 0)"
                " FROM sources WHERE seq > ?",
                (ledger.cursor(),),
            ).fetchone()[0]
            assert ledger._pending_totals()[1] == pending_bytes  # what the hook's checkpoint policy reads


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(st.text(min_size=1, max_size=40).filter(str.strip), min_size=1, max_size=12),
       through=st.integers(min_value=0, max_value=12), paired=st.booleans())
def test_the_hooks_backlog_counts_exactly_what_status_reads_as_pending(tmp_path_factory, texts, through, paired):
    # backlog() (the hooks' read, inside the capture's transaction, from the running sizes
    # it just caught up) and the read-only pending totals must never disagree.
    from om.ledger import Ledger

    store = tmp_path_factory.mktemp("backlog")
    with Ledger.open(str(store), "s1") as ledger:
        with ledger.transaction():
            for i, text in enumerate(texts):
                ledger.capture("tool", text, f"k{i}")
                if paired:
                    ledger.backlog()  # the running table kept current, as the hooks keep it
            ledger.meta_set("cursor", str(min(through, len(texts))))
            count, size, oldest, last = ledger.backlog()
        with ledger.reading():
            expected = ledger._pending_totals()
    assert (count, size, oldest) == (expected[0], expected[1], expected[3])
    pending = texts[min(through, len(texts)):]
    assert count == len(pending) and last == len(texts)
