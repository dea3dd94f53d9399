"""Sync benchmark: `om sync` of a 1,000-session store to a bare repository reached by a file:// URL.

The store (built in process: --sessions sessions of --sources sources of about 1 KB each and
three observations each; one session holds a literal) is published, then:

- the first publish (every session's projection, one fast-import, the first push);
- a sync with nothing new (every ledger only stat'ed);
- an incremental publish after ten new sources (in ten sessions);
- a forget's republish: `om forget --all-sessions --text LITERAL -y`, then the sync that
  republishes without history and purges om's repository;
- a second machine's first sync (fetch, and a mirror for each session).

For each: wall seconds, the bytes the remote's object folder grew by (what was pushed, as
stored there), and the peak RSS of the `om sync` process. `--share entries` measures the
distilled share level instead.

    python3 bench/sync.py [--sessions 1000] [--sources 50] [--share all|entries]
"""

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time

import forget
from om_runs import ROOT, WORDS, timed_peak

sys.path.insert(0, ROOT)

LITERAL = "Heron-5512-Quartz"


def build(store, sessions, sources, rng):
    """The store: bench/forget.py's, of sources of about 1 KB, LITERAL in one source of the first session."""
    forget.build(store, sessions, sources, {0}, rng, literal=LITERAL, words=(130, 170), fact_words=12,
                 in_memory=False, searched=False)


def folder_bytes(path):
    total = 0
    for folder, _, names in os.walk(path):
        for name in names:
            try:
                total += os.path.getsize(os.path.join(folder, name))
            except OSError:
                pass
    return total


def om_sync(store, remote_objects, label):
    before = folder_bytes(remote_objects)
    run = timed_peak(["--store", store, "sync"])
    grew = folder_bytes(remote_objects) - before
    print(f"  {label:<44} {run.seconds:7.2f} s  {grew / 1024:10.1f} KiB  {run.peak_mb:6.1f} MB")
    return run


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--sources", type=int, default=50)
    parser.add_argument("--share", choices=["all", "entries"], default="all")
    args = parser.parse_args()
    rng = random.Random(1)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["OM_PROJECT_HOME"] = os.path.join(tmp, "projects")  # no project memory of this machine
        store, reader = os.path.join(tmp, "store"), os.path.join(tmp, "reader")
        remote = os.path.join(tmp, "remote.git")
        subprocess.run(["git", "init", "-q", "--bare", remote], check=True)
        t = time.perf_counter()
        build(store, args.sessions, args.sources, rng)
        built = time.perf_counter() - t
        url = "file://" + remote
        for where in (store, reader):
            timed_peak(["--store", where, "sync", "init", "--remote", url, "--share", args.share, "-y"])
        ledgers = folder_bytes(store)
        print(f"{args.sessions} sessions x {args.sources} sources, share {args.share}: ledgers {ledgers / 2**20:.1f} MiB"
              f" (fixture built in {built:.1f} s)")
        print(f"  {'step':<44} {'seconds':>9}  {'pushed':>14}  {'peak RSS':>9}")
        objects = os.path.join(remote, "objects")
        om_sync(store, objects, "first publish")
        om_sync(store, objects, "sync with nothing new")
        from om.ledger import Ledger

        for n in range(10):
            with Ledger.open(store, f"bench-{n * (args.sessions // 10)}") as ledger:
                ledger.capture("tool", " ".join(rng.choice(WORDS) for _ in range(150)), f"new-{n}")
        om_sync(store, objects, "incremental: ten new sources")
        t = time.perf_counter()
        timed_peak(["--store", store, "forget", "--all-sessions", "--text", LITERAL, "-y"])
        print(f"  {'(om forget --all-sessions itself)':<44} {time.perf_counter() - t:7.2f} s")
        om_sync(store, objects, "a forget's republish (no history) + purge")
        om_sync(reader, objects, "second machine: first sync, every mirror")
        print(f"  om's repository after the purge: {folder_bytes(os.path.join(store, 'sync', 'repo.git')) / 2**20:.1f}"
              f" MiB; the reader's mirrors: {folder_bytes(os.path.join(reader, 'sync', 'mirrors')) / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
