"""Search benchmark: prints ratios to baselines measured in the same run.

- median `om search` latency on N sources (default 100,000) / median `om status`
  on the same ledger (target <= 2x), both as CLI subprocesses, index warm;
- index catch-up time per 1,000 new sources;
- median `om capture` and PostToolUse hook latency with / without an index
  present, calls interleaved (target <= 1.10), and the same capture in
  process, capture and hook (the ledger work alone, without interpreter start-up).

Usage: python bench/search.py [--sources N] [--runs R]
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

from om_runs import ROOT, WORDS
from om_runs import hook as om_hook
from om_runs import om as om_run

sys.path.insert(0, ROOT)


def om(store, *args, input=None):
    return om_run(store, *args, input=input)[0]



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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sources", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=15)
    a = ap.parse_args()
    rng = random.Random(7)
    work = tempfile.mkdtemp(prefix="om-bench-search-")
    try:
        store = os.path.join(work, "store")
        om(store, "status")
        from om.ledger import Ledger

        with Ledger.open(store, "bench") as led:
            db = led.path
        fill(db, 0, a.sources, rng)

        t = time.perf_counter()
        om(store, "search", "--sources", "warmup")
        first = time.perf_counter() - t
        print(f"sources: {a.sources}")
        print(f"first search (full index build + query): {first:.2f} s")

        queries = [["--sources", "redis timeout"], ["--sources", "item4242"], ["--sources", "why did the deploy fail on retry"],
                   ["--sources", "kafka"], ["redis cache"]]
        status = median_of(lambda: om(store, "status"), a.runs)
        print(f"status median: {status * 1000:.1f} ms")
        for q in queries:
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

            from om.codex.hook import run_hook

            t = time.perf_counter()
            run_hook(store_dir, io.BytesIO(json.dumps(post_tool_use()).encode()), sys.stderr)
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
