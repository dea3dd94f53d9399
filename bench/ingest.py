"""Ingest benchmark: throughput, peak memory, and what a second run costs, for each client's transcripts.

Builds, per client, one large transcript from a real one of tests/fixtures/transcripts (Codex
0.169.0's `bigout` rollout: large outputs, a long-running command, a secret; Claude Code's `basic`
transcript), its lines repeated with fresh turn, prompt and call ids until it reaches --mb
megabytes, then times `om ingest` on it as a CLI subprocess:

- first run into an empty store: MB/s, peak RSS of the process, sources captured;
- baseline: reading the same file line by line with `json.loads` in a fresh interpreter
  (ratio: ingest time / baseline time);
- re-run, file unchanged (ratio to the first run; the per-transcript marker skips it);
- re-run after the file changed (its modification time moved): everything is read again and
  every source is found present (ratio to the first run).

Goals (docs/ingest.md): at least 20 MB/s, peak RSS under 100 MB, an unchanged re-run under a
third of the first run.

    python3 bench/ingest.py [--mb 200] [--client codex|claude|both]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from om_runs import ROOT

sys.path.insert(0, os.path.join(ROOT, "tests"))

from ingest_support import grow_transcript, hook_sources, transcript  # noqa: E402

#: CPU seconds (user + system) of each timed subprocess, in order: on a loaded machine wall time
#: stretches, CPU time much less.
CPU = []
SOURCES = {"codex": ("codex-0.169.0", "bigout"), "claude": ("claude-2.1.332", "basic")}


def timed(argv):
    """(seconds, peak RSS in MB, stdout) of one subprocess; CPU seconds go to CPU[argv[-1] or the path]."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("OBSERVATIONAL_MEMORY_STORE", None)
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    CPU.append(usage.ru_utime + usage.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {err.decode()}")
    return elapsed, usage.ru_maxrss / 1024, out


def ingest(store, client, path):
    return timed([sys.executable, "-m", "om", "--store", store, "ingest", "--client", client, path, "--json"])


BASELINE = "import json, sys\nfor line in open(sys.argv[1], 'rb'):\n    json.loads(line)\n"


def bench(client, mb, work):
    folder, scenario = SOURCES[client]
    (session,) = hook_sources(folder, scenario)
    src = transcript(folder, scenario, session)
    path = os.path.join(work, client, src.name)
    os.makedirs(os.path.dirname(path))
    copies = grow_transcript(src, path, mb * 1024 * 1024, session)
    size = os.path.getsize(path) / 1024 / 1024
    store = os.path.join(work, client + "-store")
    first, rss, out = ingest(store, client, path)
    first_cpu = CPU[-1]
    captured = json.loads(out)["captured"]
    base, base_rss, _ = timed([sys.executable, "-c", BASELINE, path])
    base_cpu = CPU[-1]
    unchanged, rss2, out2 = ingest(store, client, path)
    unchanged_cpu = CPU[-1]
    later = time.time() + 10
    os.utime(path, (later, later))
    changed, rss3, out3 = ingest(store, client, path)
    changed_cpu = CPU[-1]
    assert json.loads(out2)["sessions"][0]["outcome"] == "unchanged"
    assert json.loads(out3)["captured"] == 0 and json.loads(out3)["present"] == captured
    print(f"{client}: {size:.0f} MB transcript ({copies} copies of {folder}/{scenario}), {captured} sources")
    print(f"  first run        {first:7.2f} s  {size / first:6.1f} MB/s  ({first_cpu:.2f} CPU s: "
          f"{size / first_cpu:.1f} MB per CPU second)  peak RSS {rss:5.1f} MB")
    print(f"  baseline         {base:7.2f} s  json.loads of every line ({base_cpu:.2f} CPU s, {base_rss:.0f} MB);"
          f" ingest / baseline: {first / base:.2f}x wall, {first_cpu / base_cpu:.2f}x CPU")
    print(f"  re-run unchanged {unchanged:7.2f} s  {unchanged / first:6.3f}x the first run"
          f" ({unchanged_cpu / first_cpu:.3f}x its CPU)  peak RSS {rss2:5.1f} MB")
    print(f"  re-run changed   {changed:7.2f} s  {changed / first:6.3f}x the first run"
          f" ({changed_cpu / first_cpu:.3f}x its CPU)  peak RSS {rss3:5.1f} MB")
    return {"mb_per_s": size / first, "mb_per_cpu_s": size / first_cpu, "rss": max(rss, rss2, rss3),
            "rerun": unchanged / first}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=200, help="size of each generated transcript (default 200)")
    parser.add_argument("--client", choices=["codex", "claude", "both"], default="both")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="om-bench-ingest-")
    try:
        results = {c: bench(c, args.mb, work) for c in (["codex", "claude"] if args.client == "both" else [args.client])}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ok = all(r["mb_per_s"] >= 20 and r["rss"] < 100 and r["rerun"] < 1 / 3 for r in results.values())
    print("goals (>= 20 MB/s, < 100 MB RSS, unchanged re-run < 1/3 of the first):", "met" if ok else "NOT met",
          "(in wall time; per CPU second: "
          + ", ".join(f"{c} {r['mb_per_cpu_s']:.1f} MB/s" for c, r in results.items()) + ")")


if __name__ == "__main__":
    main()
