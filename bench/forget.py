"""Forget benchmark: one literal forgotten across a store of 1,000 sessions, as ratios to a
baseline measured in the same run.

The store (built in process: 1,000 sessions of --sources sources and three observations
each, their search indexes built) holds the literal in one source of every session, or of
one session in a hundred. Timed, as CLI subprocesses interleaved round by round:

- `om forget --all-sessions --text LITERAL -y` on a fresh copy of the store;
- the baseline: `om sessions --json` on the same store (it opens and reads every ledger).

Then, for one session's ledger, what the forget's compaction (VACUUM) costs and buys: the
file's size before the forget, after the rewrite alone (secure_delete zeroes what it
frees, the file keeps its pages) and after the VACUUM, with the time of each step.

    python3 bench/forget.py [--sessions 1000] [--sources 40] [--runs 5]
"""

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

from om_runs import ROOT, WORDS
from om_runs import om as om_run

sys.path.insert(0, ROOT)

LITERAL = "Wombat-9931-Lantern"


def build(store, sessions, sources, holders, rng, literal=LITERAL, words=(20, 80), fact_words=10, in_memory=True,
          searched=True):
    """The store: `sessions` sessions of `sources` sources of `words` (least, most) words and three
    observations; those in `holders` hold `literal` in one source (and, `in_memory`, in one observation).
    `searched`: each session's search index built, as a searched session has it. bench/sync.py's store too."""
    from om.ledger import Ledger
    from om.search import search

    for n in range(sessions):
        with Ledger.open(store, f"bench-{n}") as ledger:
            ledger.conn.execute("PRAGMA synchronous = OFF")  # building the fixture, not measuring it
            with ledger.transaction():
                ids = []
                for i in range(sources):
                    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(*words)))
                    if n in holders and i == sources // 2:
                        text += f" the password is {literal}"
                    ids.append(ledger.capture(("user", "tool", "assistant")[i % 3], text, f"k{i}"))
            ledger.apply({"through": sources, "observations": [
                {"text": f"fact {j}: " + " ".join(rng.choice(WORDS) for _ in range(fact_words))
                 + (f" ({literal})" if in_memory and n in holders and j == 0 else ""), "source_ids": [ids[j]]}
                for j in range(3)]})
            if searched:
                search(ledger, "deploy", True, False, 10)


def timed_rounds(store, runs, tmp):
    forget, listing = [], []
    for r in range(runs):
        copy = os.path.join(tmp, f"run-{r}")
        shutil.copytree(store, copy)
        listing.append(om_run(copy, "sessions", "--json", session=None)[0])
        forget.append(om_run(copy, "forget", "--all-sessions", "--text", LITERAL, "-y", session=None)[0])
        shutil.rmtree(copy)
    return statistics.median(forget), statistics.median(listing)


def compaction(store, tmp):
    """(sizes, seconds) of one holder's ledger: before, after the rewrite, after the VACUUM."""
    from om.ledger import Ledger
    from om.ledger.forget import Request

    copy = os.path.join(tmp, "one")
    shutil.copytree(store, copy)
    with Ledger.open(copy, "bench-0") as ledger:
        sizes = [os.path.getsize(ledger.path)]
        t = time.perf_counter()
        ledger.forget(Request([LITERAL]))
        rewrite = time.perf_counter() - t
        sizes.append(os.path.getsize(ledger.path))
        t = time.perf_counter()
        ledger.compact()
        vacuum = time.perf_counter() - t
        sizes.append(os.path.getsize(ledger.path))
    shutil.rmtree(copy)
    return sizes, rewrite, vacuum


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--sources", type=int, default=40)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(1)
    with tempfile.TemporaryDirectory() as tmp:
        for label, every in (("in every session", 1), ("in 1 session of 100", 100)):
            store = os.path.join(tmp, f"store-{every}")
            holders = set(range(0, args.sessions, every))
            t = time.perf_counter()
            build(store, args.sessions, args.sources, holders, rng)
            built = time.perf_counter() - t
            forget, listing = timed_rounds(store, args.runs, tmp)
            print(f"{args.sessions} sessions x {args.sources} sources, the literal {label}"
                  f" (fixture built in {built:.1f} s):")
            print(f"  om sessions --json (baseline)            {listing:8.2f} s  1.00")
            print(f"  om forget --all-sessions --text L -y     {forget:8.2f} s  {forget / listing:.2f}")
            sizes, rewrite, vacuum = compaction(store, tmp)
            print(f"  one holder's ledger: {sizes[0]} bytes; after the rewrite {sizes[1]} ({rewrite * 1e3:.1f} ms);"
                  f" after VACUUM {sizes[2]} ({vacuum * 1e3:.1f} ms)")
            shutil.rmtree(store)


if __name__ == "__main__":
    main()
