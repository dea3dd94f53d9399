"""How `om` commands scale with the ledger: a large session against an empty one.

Builds, in a temporary store, a session with 100,000 sources and 10,000 entries
(rows written with sqlite3 in the exact v1 formats, IDs from om.ids), its cursor
near the end as after regular checkpoints; a copy of it with 1,000 sources
pending; and an empty session. Then runs each real command as a subprocess,
alternating large and empty, and prints the median wall time of each, the ratio
large/empty (targets: 1.25, view 1.5), the peak RSS of each command (target for
`view` at size: 40 MB), and the import cost of `capture` next to a bare
interpreter.

    python bench/ledger.py [--runs N] [--site] [--keep DIR]

Commands run as `<python> -S -m om ...` with the real interpreter (symlinks
resolved), so the numbers are om's and not those of whatever .pth files the
machine has; `--site` runs them with site-packages as an installed `om` would.
"""

import argparse
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from om import ids  # noqa: E402
from om.jsonio import dumps  # noqa: E402
from om.ledger import ACTIVE_INDEX, SCHEMA  # noqa: E402
from om.store import database_path, ensure_database_file, make_private_dir  # noqa: E402

SOURCES = 100_000
ENTRIES = 10_000
REFLECTIONS = 1_000
RETIRED = 1_500
PENDING_AT_REST = 20
PENDING_BACKLOG = 1_000
TARGETS = {"capture": 1.25, "pending": 1.25, "status": 1.25, "view": 1.5, "prime": 1.25}
VIEW_RSS_TARGET_MB = 40

WORDS = (
    "the build failed because module path config test passes returns error value file line "
    "function cache session ledger import cursor output request header token user assistant "
    "tool migrate schema index query commit branch merge release version docs fix retry timeout"
).split()


def _stamp(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _prose(rng, n_chars):
    out, size = [], 0
    while size < n_chars:
        w = rng.choice(WORDS)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)


def build_large(store, session, cursor):
    """A v1 ledger at size, written directly in the documented row formats."""
    rng = random.Random(42)
    path = database_path(store, session)
    ensure_database_file(path)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    for statement in SCHEMA:
        conn.execute(statement)
    conn.execute(ACTIVE_INDEX)  # as om creates every ledger (a v1 peer's gets it on om's first write)
    start = 1_780_000_000
    source_rows, source_ids, stamps = [], [], []
    for i in range(SOURCES):
        kind = ("user", "assistant", "tool", "tool")[i % 4]
        # Mostly short messages, some long tool outputs (mean about 700 characters).
        size = rng.choice((80, 200, 400, 600, 1500, 2500))
        text = f"{kind} {i}: " + _prose(rng, size)
        sid = ids.source_id(kind, f"key-{i % 50}", text)
        stamp = _stamp(start + i * 3)
        body = dumps({"seq": 0, "id": sid, "kind": kind, "timestamp": stamp, "text": text, "truncated": False})
        source_rows.append((sid, body))
        source_ids.append(sid)
        stamps.append(stamp)
    conn.executemany("INSERT INTO sources(id, body) VALUES (?, ?)", source_rows)

    entry_rows, observations = [], []
    importance = ("low", "medium", "medium", "medium", "high", "high", "critical")
    for j in range(ENTRIES - REFLECTIONS):
        first = min(SOURCES - 5, j * (SOURCES // (ENTRIES - REFLECTIONS)))
        support = sorted(set(source_ids[first:first + rng.randint(1, 5)]))
        level = rng.choice(importance)
        text = f"observation {j}: " + _prose(rng, rng.choice((60, 120, 200, 300)))
        oid = ids.observation_id(text, support, level)
        observations.append((oid, stamps[first]))
        entry_rows.append((oid, "observation", stamps[first], level, text, support))
    for k in range(REFLECTIONS):
        picked = observations[k * 9:k * 9 + 4]
        support = sorted(o for o, _ in picked)
        text = f"reflection {k}: " + _prose(rng, 250)
        rid = ids.reflection_id(text, support)
        entry_rows.append((rid, "reflection", max(s for _, s in picked), "medium", text, support))
    # Entries are appended in checkpoint order: reflections follow the observations they cite.
    entry_rows.sort(key=lambda r: (r[2], r[1] == "reflection"))
    conn.executemany(
        "INSERT INTO entries(id, body, active, retirement) VALUES (?, ?, 1, NULL)",
        [
            (eid, dumps({"seq": 0, "id": eid, "kind": kind, "timestamp": stamp, "importance": level,
                         "text": text, "support": support, "active": True, "retirement": None}))
            for eid, kind, stamp, level, text, support in entry_rows
        ],
    )
    retired = rng.sample([r[0] for r in entry_rows if r[1] == "observation"][:-1000], RETIRED)
    newer = [r[0] for r in entry_rows if r[1] == "observation"][-1000:]
    conn.executemany(
        "UPDATE entries SET active = 0, retirement = ? WHERE id = ?",
        [(dumps({"id": old, "reason": "superseded by a later finding", "replacement_ids": [rng.choice(newer)]}), old)
         for old in retired],
    )
    conn.executemany(
        "INSERT INTO meta(key, value) VALUES (?, ?)",
        [("session", session), ("version", "1"), ("cursor", str(cursor)),
         ("last_checkpoint_at", stamps[cursor - 1])],
    )
    conn.execute("COMMIT")
    conn.close()
    return path


def copy_session(store, session, to_session, cursor):
    target = database_path(store, to_session)
    make_private_dir(os.path.dirname(target))
    shutil.copyfile(database_path(store, session), target)
    os.chmod(target, 0o600)
    conn = sqlite3.connect(target, isolation_level=None)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'session'", (to_session,))
    conn.execute("UPDATE meta SET value = ? WHERE key = 'cursor'", (str(cursor),))
    conn.close()


_LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
code = os.waitstatus_to_exitcode(status)
if code:
    sys.exit(f"exit {code}")
print(usage.ru_maxrss)
"""


class Runner:
    def __init__(self, python, site, pycache):
        self.python = python
        self.flags = [] if site else ["-S"]
        self.env = {k: v for k, v in os.environ.items() if k != "OBSERVATIONAL_MEMORY_STORE"}
        self.env["PYTHONPATH"] = ROOT
        # An installed om runs from compiled bytecode; without this, a machine with
        # PYTHONDONTWRITEBYTECODE would recompile every om module on every run.
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        self.env["PYTHONPYCACHEPREFIX"] = pycache

    def run(self, argv, stdin=b""):
        """(wall seconds, peak RSS MB, stdout bytes) of one child process."""
        started = time.perf_counter()
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=self.env)
        out, err = proc.communicate(stdin)
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed: {err.decode(errors='replace')}")
        return wall, out

    def peak_rss_mb(self, argv, stdin=b""):
        """Peak RSS of one run of `argv`, started by a minimal forking launcher.

        A child's ru_maxrss starts from the high-water mark of the process that
        forked it (vfork included), so this benchmark, big after building the
        ledger, must not be that process: the launcher is a bare interpreter
        (about 8 MB), a floor well below any `om` command.
        """
        proc = subprocess.run([self.python, "-S", "-c", _LAUNCHER, *argv], input=stdin,
                              capture_output=True, env=self.env)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.decode(errors='replace')}")
        return int(proc.stdout) / 1024  # KiB on Linux

    def om(self, store, session, *args):
        return [self.python, *self.flags, "-m", "om", "--store", store, "--session", session, *args]


def _import_total_us(runner, argv, stdin=b""):
    proc = subprocess.run(argv, input=stdin, capture_output=True, env=runner.env)
    total = 0
    for line in proc.stderr.decode().splitlines()[1:]:
        if line.startswith("import time:"):
            total += int(line.split("|")[0].split(":")[1])
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs per command and ledger (median)")
    parser.add_argument("--site", action="store_true", help="run om with site-packages enabled")
    parser.add_argument("--keep", help="build the store in DIR and keep it")
    parser.add_argument("--build-into", help=argparse.SUPPRESS)
    opts = parser.parse_args()

    python = os.path.realpath(sys.executable)
    if opts.build_into:
        build_large(opts.build_into, "large", cursor=SOURCES - PENDING_AT_REST)
        copy_session(opts.build_into, "large", "backlog", cursor=SOURCES - PENDING_BACKLOG)
        return
    base = opts.keep or tempfile.mkdtemp(prefix="om-bench-")
    runner = Runner(python, opts.site, os.path.join(base, "pycache"))
    store = os.path.join(base, "store")
    try:
        make_private_dir(store, parents=True)
        started = time.perf_counter()
        subprocess.run([python, os.path.abspath(__file__), "--build-into", store], check=True)
        runner.run(runner.om(store, "empty", "status"))  # creates the empty ledger
        size_mb = os.path.getsize(database_path(store, "large")) / 1e6
        print(f"python: {python} {' '.join(runner.flags)}")
        print(f"built: {SOURCES:,} sources, {ENTRIES:,} entries ({RETIRED:,} retired, {REFLECTIONS:,} reflections),"
              f" {size_mb:.0f} MB, in {time.perf_counter() - started:.1f} s")
        print(f"large: cursor at {SOURCES - PENDING_AT_REST:,} ({PENDING_AT_REST} pending);"
              f" backlog: same ledger, {PENDING_BACKLOG:,} pending; empty: no rows\n")

        counter = [0]

        def capture_input():
            counter[0] += 1
            return dumps({"kind": "tool", "text": f"bench capture {counter[0]} {time.time_ns()}", "key": "bench"}).encode()

        cases = [(name, (name,)) for name in ("capture", "pending", "status", "view", "prime")]
        rows = []
        for name, args in cases:
            samples = {"large": [], "empty": []}
            for session in ("large", "empty"):  # warm the page cache
                runner.run(runner.om(store, session, *args), capture_input() if name == "capture" else b"")
            for _ in range(opts.runs):
                for session in ("large", "empty"):
                    stdin = capture_input() if name == "capture" else b""
                    wall, _ = runner.run(runner.om(store, session, *args), stdin)
                    samples[session].append(wall)
            rss = {s: runner.peak_rss_mb(runner.om(store, s, *args), capture_input() if name == "capture" else b"")
                   for s in ("large", "empty")}
            rows.append((name, statistics.median(samples["large"]), statistics.median(samples["empty"]), rss,
                         TARGETS[name]))

        backlog_rows = []
        for name in ("pending", "status", "prime"):
            samples = {"backlog": [], "empty": []}
            for _ in range(opts.runs):
                for session in ("backlog", "empty"):
                    wall, _ = runner.run(runner.om(store, session, name))
                    samples[session].append(wall)
            backlog_rows.append((name, statistics.median(samples["backlog"]), statistics.median(samples["empty"])))

        print(f"{'command':<10}{'large ms':>10}{'empty ms':>10}{'ratio':>8}{'target':>8}  "
              f"{'RSS large':>10}{'RSS empty':>10}  verdict")
        for name, large, empty, rss, target in rows:
            ratio = large / empty
            verdict = "ok" if ratio <= target else "MISSED"
            if name == "view" and rss["large"] > VIEW_RSS_TARGET_MB:
                verdict += f", RSS over {VIEW_RSS_TARGET_MB} MB"
            print(f"{name:<10}{large * 1000:>10.1f}{empty * 1000:>10.1f}{ratio:>8.2f}{target:>8.2f}  "
                  f"{rss['large']:>8.1f}MB{rss['empty']:>8.1f}MB  {verdict}")
        print(f"\nwith {PENDING_BACKLOG:,} sources pending (output grows with the pending chunk, up to 48,000 chars):")
        print(f"{'command':<10}{'backlog ms':>11}{'empty ms':>10}{'ratio':>8}")
        for name, backlog, empty in backlog_rows:
            print(f"{name:<10}{backlog * 1000:>11.1f}{empty * 1000:>10.1f}{backlog / empty:>8.2f}")

        bare = [python, "-I", "-S", "-X", "importtime", "-c", "pass"]
        capture = [python, "-S", "-X", "importtime", "-m", "om", "--store", store, "--session", "empty", "capture"]
        bare_us = statistics.median(_import_total_us(runner, bare) for _ in range(opts.runs))
        capture_us = statistics.median(_import_total_us(runner, capture, capture_input()) for _ in range(opts.runs))
        bare_wall = statistics.median(runner.run([python, "-I", "-S", "-c", "pass"])[0] for _ in range(opts.runs))
        print("\nimport cost (python -X importtime, sum of self times, median):")
        print(f"  python3 -I -S -c pass       {bare_us / 1000:>7.1f} ms imports, {bare_wall * 1000:>6.1f} ms wall")
        capture_wall = next(r[2] for r in rows if r[0] == "capture")
        print(f"  om capture (empty ledger)   {capture_us / 1000:>7.1f} ms imports, {capture_wall * 1000:>6.1f} ms wall")
    finally:
        if not opts.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
