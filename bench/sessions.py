"""Sessions benchmark: every figure is a ratio to a baseline measured in the same run.

- `om sessions` on stores of 10, 100 and 1,000 sessions / `om status` of one session
  of the same store (goal: under 2x at 100 sessions);
- the SessionStart hook of a fresh session whose project has earlier sessions (the
  start-context pointer scans the store) / the same hook on a store holding only it;
- `om search --all-sessions` over 10 and 100 sessions of 1,000 sources each / `om search`
  of one of those sessions, indexes warm, memory alone and with --sources;
- two large stores: --realistic sessions (default 10,000) as real use leaves them
  (bench/realistic.py: 100 sources, a fifth prompts, three fifths Bash tool results in v1's
  `{"input", "response", "tool"}` shape, a fifth replies, and 5 observations each, words of a
  Zipf-weighted vocabulary of 2,800 words and identifiers, 5 projects; built once, in
  parallel, into the development cache, and copied for each run), queried for "parser
  timeout"; and --large sessions (default 10,000) of 200 sources and 5 observations each over
  50 words, written as v1 ledgers (plain SQL on the v1 schema, in process), queried for "redis
  timeout". For each: the first `om sessions` and the first `search --all-sessions` after the
  store index is deleted (seconds, and the progress lines they print), and the next search;
  `om sessions` / `om status`, `search --all-sessions` / one session's search (warm: once the
  ledgers the first search rewrote have settled), and the SessionStart of a new session / the
  same in an empty store; every call's peak RSS (wait4: the largest of the process and its
  workers), the largest printed per measurement;
- beside each large-store ratio, its least possible value under the design's rule that a
  store-wide read stats every ledger once (so a ledger any program wrote is seen on the
  next read): a bare Python that only lists the store and lstats each ledger, against
  `om status`; a SessionStart that only adds a listing of the store to the empty store's;
  one session's search plus that listing and those stats.

All are CLI subprocesses, calls interleaved with their baseline so drift in the
machine's load hits both sides alike. Medians of --runs calls.

    python3 bench/sessions.py [--runs 15] [--search-sessions 10,100] [--realistic 10000] [--large 10000] [--only-large]
"""

import argparse
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time

from om_runs import ROOT, WORDS, hook, hook_run, measured, python_run, timed_peak
from om_runs import om as om_run

sys.path.insert(0, ROOT)


def om(store, *args, session="bench-0", input=None):
    return om_run(store, *args, session=session, input=input)[0]



def build_session(store, session, project, rng, sources, entries=3):
    """One session as the hooks and a checkpoint leave it: sources, a few observations, the project."""
    from om.ledger import Ledger
    from om.project import record_project

    with Ledger.open(store, session) as ledger:
        ledger.conn.execute("PRAGMA synchronous = OFF")  # building the fixture, not measuring it
        with ledger.transaction():
            record_project(ledger, project)
            ids = []
            for i in range(sources):
                text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 80))) + f" item{i}"
                ids.append(ledger.capture(("user", "tool", "assistant")[i % 3], text, f"{session}-{i}"))
        ledger.apply({"through": sources, "observations": [
            {"text": f"{session} learned that " + " ".join(rng.choice(WORDS) for _ in range(12)),
             "importance": "medium", "source_ids": [ids[j]]} for j in range(min(entries, sources))]})


def clone_sessions(store, template, count, start=1):
    """`count` more sessions copied from a template ledger (fast; listing cost does not depend on content)."""
    from om.ids import session_hash

    path = os.path.join(store, "session-" + session_hash(template), "memory.sqlite3")
    with open(path, "rb") as fh:
        data = fh.read()
    for i in range(start, start + count):
        session = f"bench-{i}"
        directory = os.path.join(store, "session-" + session_hash(session))
        os.mkdir(directory, 0o700)
        target = os.path.join(directory, "memory.sqlite3")
        with open(target, "wb") as fh:
            fh.write(data)
        conn = sqlite3.connect(target, isolation_level=None)
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("UPDATE meta SET value = ? WHERE key = 'session'", (session,))
        conn.close()


def spread_over_hours(store, count):
    """Make session i's last activity (and its file's last write) i hours ago, as days of use leave them."""
    from om.ids import session_hash

    now = time.time()
    for i in range(count):
        when = now - 3600 * (i + 1)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))
        path = os.path.join(store, "session-" + session_hash(f"bench-{i}"), "memory.sqlite3")
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("BEGIN")
        for table in ("sources", "entries"):
            conn.execute(f"UPDATE {table} SET body = json_set(body, '$.timestamp', ?)", (stamp,))
        conn.execute("UPDATE meta SET value = ? WHERE key IN ('last_checkpoint_at', 'om_created_at')", (stamp,))
        conn.execute("COMMIT")
        conn.close()
        os.utime(path, (when, when))


def build_v1_store(store, count, project, rng, sources=200, entries=5):
    """`count` sessions as a v1 implementation's hooks and checkpoints leave them, fast.

    Plain SQL on the documented v1 schema with v1's ids and canonical bodies
    (om.ids, om.jsonio), one transaction per ledger without fsync, plus om's
    project record; session i was last active i hours ago, and its file was
    last written then. Texts are drawn from a pool, so sessions differ.
    """
    from realistic import write_ledger

    from om.ids import observation_id, source_id
    from om.jsonio import dumps

    os.makedirs(store, mode=0o700, exist_ok=True)
    pool = [" ".join(rng.choices(WORDS, k=rng.randint(20, 80))) for _ in range(5000)]
    now = time.time()
    for n in range(count):
        session = f"bench-{n}"
        when = now - 3600 * (n + 1)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))
        rows, ids = [], []
        for i, text in enumerate(rng.sample(pool, sources)):
            kind = ("user", "tool", "assistant")[i % 3]
            text += f" item{i}"
            ids.append(source_id(kind, f"{session}-{i}", text))
            rows.append((ids[-1], dumps({"seq": 0, "id": ids[-1], "kind": kind, "timestamp": stamp, "text": text,
                                         "truncated": False})))
        memory = []
        for j in range(entries):
            text = f"{session} learned that " + " ".join(rng.choices(WORDS, k=12))
            oid = observation_id(text, [ids[j]], "medium")
            memory.append((oid, dumps({"seq": 0, "id": oid, "kind": "observation", "timestamp": stamp,
                                       "importance": "medium", "text": text, "support": [ids[j]], "active": True,
                                       "retirement": None})))
        write_ledger(store, session, rows, memory, [
            ("session", session), ("version", "1"), ("cursor", str(sources)), ("last_checkpoint_at", stamp),
            ("om_cwd", project), ("om_project", project), ("om_created_at", stamp)], when)


def paired(a, b, runs):
    """`a(peak)` and `b(peak)` (each returning a Run) interleaved, then once more each for its peak RSS:
    (median seconds of a, of b, peak MB of a, of b)."""
    xs, ys = [], []
    for _ in range(runs):
        xs.append(a(False))
        ys.append(b(False))
    return (statistics.median(r.seconds for r in xs), statistics.median(r.seconds for r in ys),
            a(True).peak_mb, b(True).peak_mb)


def settle(store):
    """Wait until the ledgers the first search rewrote (it builds the searched sessions' own indexes)
    have settled, then let one listing read them again and the next keep its snapshot: what follows
    measures warm calls, not the seconds after a write (om.sessions.index.SETTLE_NS)."""
    from om.sessions.index import SETTLE_NS

    time.sleep(SETTLE_NS / 1e9 + 0.5)
    for _ in range(2):
        measured(store, "sessions")


def large(work, project, count, runs, rng, realistic=False):
    from om.derived.store_index import FOLDER

    lonely = os.path.join(work, "lonely-large")
    if realistic:
        import realistic as real

        store = real.copy_of(real.cached(count), os.path.join(work, f"realistic-{count}"))
        project, bench, words = real.PROJECTS[0][0], real.session_name(0), ["parser", "timeout"]
        print(f"{count} sessions as real use leaves them (bench/realistic.py: 100 sources, 5 observations, a"
              f" vocabulary of {len(real.VOCABULARY)} words; copied from the cache): {store}")
    else:
        store = os.path.join(work, f"large-{count}")
        bench, words = "bench-0", ["redis", "timeout"]
        t = time.perf_counter()
        build_v1_store(store, count, project, rng)
        print(f"{count} sessions of 200 sources and 5 observations, written as v1 ledgers in"
              f" {time.perf_counter() - t:.1f} s ({store}):")

    def first(*args):
        shutil.rmtree(os.path.join(store, FOLDER), ignore_errors=True)
        run = timed_peak(["--store", store, "--session", "bench", *args])
        said = [line for line in run.stderr.decode().splitlines() if line.startswith("om: ")]
        print(f"  first {' '.join(args)!r} without the store index: {run.seconds:.1f} s, peak {run.peak_mb:.0f} MB;"
              f" stderr: {said}")

    first("sessions")
    first("search", *words, "--all-sessions")  # the catalogue and the search part, both from scratch
    run = timed_peak(["--store", store, "--session", "bench", "search", *words, "--all-sessions"])
    print(f"  the next search: {run.seconds:.2f} s, peak {run.peak_mb:.0f} MB")
    settle(store)
    listing, status, rss_a, rss_b = paired(lambda p: measured(store, "sessions", peak=p),
                                           lambda p: measured(store, "status", session=bench, peak=p), runs)
    print(f"  sessions {listing * 1000:7.1f} ms (peak {rss_a:.0f} MB), status {status * 1000:6.1f} ms"
          f" (peak {rss_b:.0f} MB), ratio {listing / status:5.2f}x")
    bare, listed, checked, status = least(store, runs, bench)
    print(f"  the least a store-wide read can do, in a bare Python ({bare * 1000:.1f} ms): list the store"
          f" (+{(listed - bare) * 1000:.1f} ms) and lstat every ledger once: {checked * 1000:.1f} ms, ratio to"
          f" status ({status * 1000:.1f} ms) {checked / status:5.2f}x")
    listing, status, rss_a, _ = paired(lambda p: measured(store, "sessions", "--json", peak=p),
                                       lambda p: measured(store, "status", session=bench, peak=p), runs)
    print(f"  sessions --json {listing * 1000:7.1f} ms (peak {rss_a:.0f} MB), ratio {listing / status:5.2f}x")
    queries = (words, ["--sources", *words], ["--sources", "item42"] if not realistic else ["--sources", "lexer"])
    # Warm: a session's first search builds its own index, rewriting its ledger, which every store-wide
    # read then reads again for three seconds; so each call is made once, then the store settles.
    for query in queries:
        measured(store, "search", *query, session=bench)
        measured(store, "search", *query, "--all-sessions")
    settle(store)
    for query in queries:
        measured(store, "search", *query, "--all-sessions")
    for query in queries:
        every, one, rss_a, rss_b = paired(lambda p: measured(store, "search", *query, "--all-sessions", peak=p),
                                          lambda p: measured(store, "search", *query, session=bench, peak=p),
                                          runs)
        print(f"  search {' '.join(query)!r:28} all {every * 1000:7.1f} ms (peak {rss_a:.0f} MB),"
              f" one {one * 1000:6.1f} ms (peak {rss_b:.0f} MB), ratio {every / one:5.2f}x; least ratio (one"
              f" session's search plus the least store-wide read) {(one + checked - bare) / one:5.2f}x")
    # Last: each start adds a session, which every store-wide read reads again until it settles.
    n = iter(range(10**9))

    def start(where, peak):
        payload = {"session_id": f"fresh-{next(n)}", "hook_event_name": "SessionStart", "cwd": project,
                   "source": "startup", "transcript_path": "/tmp/t.jsonl", "model": "mock",
                   "permission_mode": "bypassPermissions"}
        run = hook_run(where, payload, peak)
        if where == store:
            assert "earlier sessions of this project" in run.stdout.decode(), run.stdout[:300]
        return run

    pointed, alone, rss_a, rss_b = paired(lambda p: start(store, p), lambda p: start(lonely, p), runs)
    print(f"  SessionStart of a new session {pointed * 1000:7.1f} ms (peak {rss_a:.0f} MB), in an empty store"
          f" {alone * 1000:6.1f} ms (peak {rss_b:.0f} MB), ratio {pointed / alone:5.2f}x; least ratio (the empty"
          f" store's start plus a listing of this one) {(alone + listed - bare) / alone:5.2f}x")
    shutil.rmtree(store, ignore_errors=True)
    shutil.rmtree(lonely, ignore_errors=True)


#: The least work that tells a store-wide read which ledgers changed, as om.sessions.index.stamps does it
#: (one lstat per ledger, relative to the store) and nothing else: no om import, no SQLite, no output.
CHECK = """import os, sys
folder = os.open(sys.argv[1], os.O_RDONLY)
with os.scandir(folder) as entries:
    names = [e.name for e in entries if e.name.startswith("session-") and e.is_dir(follow_symlinks=False)]
for name in names:
    os.lstat(name + "/memory.sqlite3", dir_fd=folder)
"""
LIST = "import os, sys; os.listdir(sys.argv[1])"


def least(store, runs, bench="bench-0"):
    """Medians of a bare Python, one that lists `store`, one that also lstats every ledger (CHECK), and
    `om status` (the goals' baseline), interleaved: the floor under any design that stats each ledger."""
    calls = (lambda: python_run("pass"), lambda: python_run(LIST, store), lambda: python_run(CHECK, store),
             lambda: measured(store, "status", session=bench))
    times = [[] for _ in calls]
    for _ in range(runs):
        for call, seen in zip(calls, times):
            seen.append(call().seconds)
    return tuple(statistics.median(seen) for seen in times)


def interleaved(a, b, runs):
    xs, ys = [], []
    for _ in range(runs):
        xs.append(a())
        ys.append(b())
    return statistics.median(xs), statistics.median(ys)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--search-sessions", default="10,100")
    ap.add_argument("--large", type=int, default=10_000, help="sessions in the large store (0: skip it)")
    ap.add_argument("--only-large", action="store_true", help="measure the large stores alone")
    ap.add_argument("--realistic", type=int, default=10_000,
                    help="sessions in the realistic store (bench/realistic.py, cached; 0: skip it)")
    args = ap.parse_args()
    rng = random.Random(11)
    work = tempfile.mkdtemp(prefix="om-bench-sessions-")
    project = os.path.join(work, "repo")
    os.makedirs(os.path.join(project, ".git"))
    try:
        if args.realistic:
            large(work, project, args.realistic, args.runs, rng, realistic=True)
        if args.large:
            large(work, project, args.large, args.runs, rng)
        if args.only_large:
            return
        print("om sessions / om status (same store), and the SessionStart pointer scan:")
        for count in (10, 100, 1000):
            store = os.path.join(work, f"list-{count}")
            build_session(store, "bench-0", project, rng, sources=50)
            clone_sessions(store, "bench-0", count - 1)
            listing, status = interleaved(lambda: om(store, "sessions"), lambda: om(store, "status"), args.runs)
            lonely = os.path.join(work, f"lonely-{count}")
            n = iter(range(10**9))

            def start(where):
                payload = {"session_id": f"fresh-{next(n)}", "hook_event_name": "SessionStart", "cwd": project,
                           "source": "startup", "transcript_path": "/tmp/t.jsonl", "model": "mock",
                           "permission_mode": "bypassPermissions"}
                elapsed, out = hook(where, payload)
                if where == store:
                    assert "earlier sessions of this project" in out, out[:300]
                return elapsed

            pointed, alone = interleaved(lambda: start(store), lambda: start(lonely), args.runs)
            print(f"  {count:>5} sessions: sessions {listing * 1000:7.1f} ms, status {status * 1000:6.1f} ms,"
                  f" ratio {listing / status:5.2f}x | SessionStart with pointer {pointed * 1000:7.1f} ms,"
                  f" alone {alone * 1000:6.1f} ms, ratio {pointed / alone:5.2f}x")
            spread_over_hours(store, count)
            pointed, alone = interleaved(lambda: start(store), lambda: start(lonely), args.runs)
            print(f"  {'':>5} the same, last written an hour apart: SessionStart with pointer"
                  f" {pointed * 1000:7.1f} ms, alone {alone * 1000:6.1f} ms, ratio {pointed / alone:5.2f}x")
            shutil.rmtree(store, ignore_errors=True)
            shutil.rmtree(lonely, ignore_errors=True)

        print("om search --all-sessions / om search of one session (1,000 sources each, indexes warm):")
        for count in [int(c) for c in args.search_sessions.split(",")]:
            store = os.path.join(work, f"search-{count}")
            t = time.perf_counter()
            for i in range(count):
                build_session(store, f"bench-{i}", project, rng, sources=1000)
            built = time.perf_counter() - t
            t = time.perf_counter()
            om(store, "search", "warm", "--all-sessions", "--sources")
            warm = time.perf_counter() - t
            print(f"  {count:>5} sessions built in {built:.1f} s; first search (every index built) {warm:.2f} s")
            for query in (["redis", "timeout"], ["--sources", "redis", "timeout"], ["--sources", "item42"]):
                every, one = interleaved(lambda: om(store, "search", *query, "--all-sessions"),
                                         lambda: om(store, "search", *query), args.runs)
                print(f"    {' '.join(query)!r:32} all {every * 1000:7.1f} ms, one {one * 1000:6.1f} ms,"
                      f" ratio {every / one:5.2f}x")
            shutil.rmtree(store, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
