"""Search benchmark: retrieval quality and latency, each against baselines measured in the same run.

- retrieval quality on LoCoMo's long conversations (bench/retrieval.py says
  how): R@1/5/10 and MRR of `om search --sources`, of plain BM25 and of BM25
  with om's stop words, on the half the ranking was tuned on, the held-out
  half and the whole; with --compare REV also of REV's om, and the median
  in-process latency of a question for both trees (runs alternated); with
  --ablations also this tree's rule with its parts switched off one by one;
  and the cross-session form (the conversations as the sessions of one store,
  every question asked of them all): the store index's one ranking against
  each session searched alone and merged, same run (goal: R@5 and MRR no worse);
- median `om search` latency on N sources (default 100,000) / median `om status`
  on the same ledger (target <= 2x), both as CLI subprocesses, index warm;
  with --compare REV also each query's median over REV's, each tree on its
  own copy of the same ledger, calls interleaved (target <= 1.5x);
- index catch-up time per 1,000 new sources;
- median `om capture` and PostToolUse hook latency with / without an index
  present, calls interleaved (target <= 1.10), and the same capture in
  process, capture and hook (the ledger work alone, without interpreter start-up).

Usage: python bench/search.py [--sources N] [--runs R] [--compare REV] [--only quality|latency] [--ablations]
"""

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time

import retrieval
from om_runs import ROOT, WORDS, export_commit
from om_runs import hook as om_hook
from om_runs import om as om_run

sys.path.insert(0, ROOT)


def om(store, *args, input=None, root=ROOT):
    return om_run(store, *args, input=input, root=root)[0]


def fill(db, start, count, rng):
    rows = []
    for i in range(start, start + count):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 80))) + f" item{i}"
        sid = f"s-{i:024x}"
        rows.append((sid, json.dumps({"seq": 0, "id": sid, "kind": "tool", "timestamp": "2026-09-06T06:40:53Z",
                                      "text": text, "truncated": False}, separators=(",", ":"))))
    with sqlite3.connect(db) as c:
        c.executemany("INSERT INTO sources(id, body) VALUES (?, ?)", rows)


def median_of(fn, runs):
    return statistics.median(fn() for _ in range(runs))


def quality(other, ablations=False):
    """Print the retrieval-quality table (and, with another tree, its numbers and the latency ratio)."""
    from om.search import STOP_WORDS

    trees = [("om (this tree)", ROOT)] + ([(f"om ({other[0]})", other[1])] if other else [])
    seconds = {name: [] for name, _ in trees}
    ranked, expanded = {}, {}
    # Alternate the trees, twice, so that drift in the machine's load hits both alike.
    for _ in range(2 if other else 1):
        for name, root in trees:
            out = retrieval.rankings(root)
            ranked[name] = out["rankings"]
            seconds[name].extend(out["seconds"])
            expanded[name] = out.get("expanded")
    print(f"retrieval on LoCoMo ({len(ranked[trees[0][0]])} questions; halves by conversation)")
    for name, _ in trees:
        print(retrieval.line(name, retrieval.metrics(ranked[name])))
        if expanded[name] is not None:
            print(f"  {name}: {expanded[name]} of {len(ranked[name])} searches expanded by feedback (om.feedback)")
    if ablations:
        # Each row undoes one more change, most recent first, down to the rule before word forms.
        for k in range(1, len(retrieval.ABLATIONS) + 1):
            parts = retrieval.ABLATIONS[:k]
            ranked_without = retrieval.rankings(ROOT, parts)["rankings"]
            print(retrieval.line("  without " + ", ".join(parts), retrieval.metrics(ranked_without)))
    across(ROOT)
    print(retrieval.line("BM25", retrieval.metrics(retrieval.bm25_rankings())))
    print(retrieval.line("BM25 + om's stop words", retrieval.metrics(retrieval.bm25_rankings(STOP_WORDS))))
    medians = {name: statistics.median(v) for name, v in seconds.items()}
    for name, m in medians.items():
        print(f"{name} median in-process search of a question: {m * 1000:.2f} ms")
    if other:
        ratio = medians[trees[0][0]] / medians[trees[1][0]]
        print(f"in-process question latency, this tree / {other[0]}: {ratio:.2f}x (target <= 1.50)")


def across(root):
    """The cross-session form: the store index's one ranking against the per-session merge, same run.
    Returns {form: metrics}."""
    found = {}
    for how, name in (("store", "all sessions: one ranking"), ("merge", "all sessions: merged")):
        out = retrieval.rankings(root, across=how)
        found[how] = retrieval.metrics(out["rankings"], across=True)
        print(retrieval.line(name, found[how]) + f"  ({statistics.median(out['seconds']) * 1000:.1f} ms median)")
    worse = [m for m in ("R@5", "MRR") if found["store"]["all"][m] < found["merge"]["all"][m]]
    print("  one ranking " + (f"below the merge in {', '.join(worse)}" if worse else
                              "no worse than the merge in R@5 and MRR (the goal)"))
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sources", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--compare", metavar="REV", help="also measure commit REV of this repository (e.g. main)")
    ap.add_argument("--only", choices=("quality", "latency"))
    ap.add_argument("--ablations", action="store_true", help="also rank with each part of the rule switched off")
    a = ap.parse_args()
    rng = random.Random(7)
    work = tempfile.mkdtemp(prefix="om-bench-search-")
    try:
        other = (a.compare, export_commit(a.compare, os.path.join(work, "compare"))) if a.compare else None
        if a.only != "latency":
            quality(other, a.ablations)
        if a.only == "quality":
            return
        store = os.path.join(work, "store")
        om(store, "status")
        from om.ledger import Ledger

        with Ledger.open(store, "bench") as led:
            db = led.path
        fill(db, 0, a.sources, rng)
        theirs = os.path.join(work, "theirs")
        print(f"sources: {a.sources}")
        if other:
            shutil.copytree(store, theirs)
            t = time.perf_counter()
            om(theirs, "search", "--sources", "warmup", root=other[1])
            print(f"first search with {other[0]} (full index build + query): {time.perf_counter() - t:.2f} s")

        t = time.perf_counter()
        om(store, "search", "--sources", "warmup")
        first = time.perf_counter() - t
        print(f"first search (full index build + query): {first:.2f} s")

        queries = [["--sources", "redis timeout"], ["--sources", "item4242"], ["--sources", "why did the deploy fail on retry"],
                   ["--sources", "kafka"], ["redis cache"]]
        status = median_of(lambda: om(store, "status"), a.runs)
        print(f"status median: {status * 1000:.1f} ms")
        for q in queries:
            if other:
                ours, base = [], []
                for i in range(a.runs):
                    for side in ((store, ROOT, ours), (theirs, other[1], base))[:: 1 if i % 2 else -1]:
                        side[2].append(om(side[0], "search", *q, root=side[1]))
                s, b = statistics.median(ours), statistics.median(base)
                print(f"search {' '.join(q)!r}: {s * 1000:.1f} ms  ratio to status {s / status:.2f}x"
                      f"  ratio to {other[0]} ({b * 1000:.1f} ms) {s / b:.2f}x (target <= 1.50)")
                continue
            s = median_of(lambda q=q: om(store, "search", *q), a.runs)
            print(f"search {' '.join(q)!r}: {s * 1000:.1f} ms  ratio to status {s / status:.2f}x")

        per = []
        for k in range(3):
            fill(db, a.sources + 10_000 * (k + 1), 1000, rng)
            t = time.perf_counter()
            om(store, "search", "--sources", "item1")
            catch = time.perf_counter() - t
            base = om(store, "search", "--sources", "item1")
            per.append(catch - base)
        print(f"catch-up per 1,000 new sources: {statistics.median(per) * 1000:.0f} ms (search with catch-up minus search without)")

        # Capture and the PostToolUse hook with vs without an index: two copies of
        # the same ledger, the index dropped in one, calls interleaved so drift in
        # the machine's load hits both sides alike.
        plain = os.path.join(work, "plain")
        shutil.copytree(store, plain)
        from om.derived import fts

        with Ledger.open(plain, "bench") as led:
            fts.drop(led.conn)
        n = iter(range(10**9))

        def capture(store_dir):
            return om(store_dir, "capture", input=json.dumps(
                {"kind": "tool", "text": f"capture bench {next(n)} {random.random()}", "key": "b"}).encode())

        def post_tool_use():
            i = next(n)
            return {"session_id": "bench", "turn_id": f"t{i}", "cwd": "/tmp", "model": "mock",
                     "transcript_path": "/tmp/t.jsonl", "permission_mode": "bypassPermissions",
                     "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": f"call-{i}",
                     "tool_input": {"command": f"grep -rn bug{i} src"}, "tool_response": f"src/a.py:{i}: bug"}

        def hook(store_dir):
            return om_hook(store_dir, post_tool_use())[0]

        def hook_in_process(store_dir):
            import io

            from om.adapter import run_client_hook

            t = time.perf_counter()
            run_client_hook("codex", io.BytesIO(json.dumps(post_tool_use()).encode()), sys.stderr, store_dir)
            return time.perf_counter() - t

        def capture_in_process(store_dir):
            # The ledger work alone, without interpreter start-up: the only part the
            # index could slow down, and far less noisy on a busy machine.
            t = time.perf_counter()
            with Ledger.open(store_dir, "bench") as led:
                with led.transaction():
                    led.capture("tool", f"in-process capture {next(n)} {random.random()}", "b")
            return time.perf_counter() - t

        for label, fn in (("capture", capture), ("PostToolUse hook", hook),
                          ("in-process open + capture", capture_in_process),
                          ("in-process PostToolUse hook", hook_in_process)):
            with_index, without = [], []
            for i in range(a.runs * 4):
                # Alternate which side goes first, so neither always runs on a warmer cache.
                for side in ((plain, without), (store, with_index))[:: 1 if i % 2 else -1]:
                    side[1].append(fn(side[0]))
            w, wo = statistics.median(with_index), statistics.median(without)
            print(f"{label} median: {wo * 1000:.1f} ms without index, {w * 1000:.1f} ms with index: ratio {w / wo:.3f}"
                  " (target <= 1.10)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
