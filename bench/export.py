"""Export benchmark: seconds per format, and the ratio to `om view --all` on the same ledger.

Builds one session with N sources (default 10,000; one in a hundred a truncated
24,000-character log) and M entries (default 2,000: observations citing 1 to 3
sources, a reflection every tenth entry, every twentieth observation retired in
favour of a newer one), then times, as CLI subprocesses and interleaved, the
median of R runs of `om export --format md|json|html --out FILE` and of
`om view --all` (the baseline: the same entries as raw JSON). Also prints the
size of each document and, when Chromium is installed, how long the HTML takes
to load until its script is ready, to apply a text filter and to open a source.

Usage: python bench/export.py [--sources N] [--entries M] [--runs R]
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

import om_runs
from om_runs import ROOT

# The benchmarks' vocabulary, with text that must come out of the export escaped.
WORDS = om_runs.WORDS + "<tag> `tick` &amp; \"quote\"".split()
om = om_runs.om


def canonical(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def build(store, n_sources, n_entries, rng):
    _, out = om(store, "status")
    db = json.loads(out)["database"]
    stamp = "2026-09-06T06:40:53Z"
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("BEGIN IMMEDIATE")
    sources = []
    for i in range(1, n_sources + 1):
        sid = f"s-{i:024x}"
        if i % 100 == 0:
            text = ("LOG " + " ".join(rng.choice(WORDS) for _ in range(2000)))[:12000]
            text = text + "\n[om: 40000 characters omitted from the middle of this source]\n" + text
            truncated = True
        else:
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 200)))
            truncated = False
        body = {"seq": 0, "id": sid, "kind": rng.choice(["user", "assistant", "tool"]), "timestamp": stamp,
                "text": text, "truncated": truncated}
        sources.append((i, sid, canonical(body)))
    con.executemany("INSERT INTO sources(seq, id, body) VALUES (?, ?, ?)", sources)
    entries, observations = [], []
    for i in range(1, n_entries + 1):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 40)))
        if i % 10 == 0 and len(observations) >= 2:
            eid, kind, importance = f"r-{i:024x}", "reflection", "medium"
            support = sorted(rng.sample(observations[-50:], 2))
        else:
            eid, kind, importance = f"o-{i:024x}", "observation", rng.choice(["low", "medium", "high", "critical"])
            support = sorted({f"s-{rng.randint(1, n_sources):024x}" for _ in range(rng.randint(1, 3))})
            observations.append(eid)
        body = {"seq": 0, "id": eid, "kind": kind, "timestamp": stamp, "importance": importance, "text": text,
                "support": support, "active": True, "retirement": None}
        entries.append([i, eid, canonical(body), 1, None])
    by_id = {e[1]: e for e in entries}
    for n, oid in enumerate(observations[:-1]):
        if n % 20 == 0:
            newer = observations[n + 1]
            by_id[oid][3] = 0
            by_id[oid][4] = canonical({"id": oid, "reason": "Superseded by a newer observation.",
                                       "replacement_ids": [newer]})
    con.executemany("INSERT INTO entries(seq, id, body, active, retirement) VALUES (?, ?, ?, ?, ?)", entries)
    con.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('cursor', ?)", (str(n_sources),))
    con.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('last_checkpoint_at', ?)", (stamp,))
    con.execute("COMMIT")
    con.close()


def in_browser(page):
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from browser import Browser, find_chromium

    if find_chromium() is None:
        print("  (chromium not installed: no browser figures)")
        return
    with Browser() as b:
        b.open(page)  # a first load warms the browser's own caches
        t = time.perf_counter()
        b.open(page)
        ready = time.perf_counter() - t
        filtered = b.js("(() => { const t = performance.now(), q = document.getElementById('q');"
                        " q.value = 'redis kafka'; q.dispatchEvent(new Event('input'));"
                        " return performance.now() - t; })()")
        opened = b.js("(() => { const t = performance.now(), d = document.querySelectorAll('details.src')[99];"
                      " d.open = true; return new Promise(r => requestAnimationFrame(() =>"
                      " r(performance.now() - t))); })()")
    print(f"  html in Chromium: loaded and ready {ready:.2f} s, text filter {filtered:.0f} ms,"
          f" first source opened {opened:.0f} ms")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sources", type=int, default=10_000)
    ap.add_argument("--entries", type=int, default=2_000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="om-bench-export-")
    try:
        store = os.path.join(work, "store")
        build(store, args.sources, args.entries, random.Random(12))
        om(store, "view", "--all")  # warm the page cache and the view order, as a user's ledger would be
        times = {name: [] for name in ("view --all", "md", "json", "html")}
        sizes = {}
        for _ in range(args.runs):
            times["view --all"].append(om(store, "view", "--all")[0])
            for fmt in ("md", "json", "html"):
                out = os.path.join(work, "export." + fmt)
                times[fmt].append(om(store, "export", "--format", fmt, "--out", out)[0])
                sizes[fmt] = os.path.getsize(out)
        base = statistics.median(times["view --all"])
        print(f"om export: {args.sources:,} sources, {args.entries:,} entries, median of {args.runs} runs")
        print(f"  view --all (baseline)  {base:7.3f} s")
        for fmt in ("md", "json", "html"):
            t = statistics.median(times[fmt])
            print(f"  export --format {fmt:<5}  {t:7.3f} s   {t / base:5.2f}x view --all   "
                  f"{sizes[fmt] / 1e6:6.1f} MB")
        in_browser(os.path.join(work, "export.html"))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
