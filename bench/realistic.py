"""A store as real use leaves it: words spread as real text spreads them, written as v1 ledgers.

Invariants:
- Deterministic: the store is a function of (sessions, SEED, FORMAT) alone; session n
  draws from its own generator, so the sessions can be written in any order, by any
  number of processes, and come out the same (file times aside, which are set from
  the same values).
- The shape (the issue's): per session 100 sources (a turn is one prompt, three Bash tool
  results in v1's `{"input", "response", "tool"}` shape, one reply: 20% prompts, 60% tool
  results, 20% replies) and 5 observations; words drawn from a Zipf-weighted vocabulary
  of about 2,800 words and identifiers; 5 projects (40/25/15/12/8% of the sessions), 5%
  of the sessions with no project record; activity spread over the year before STAMP.
- Cached outside the checkout: `cached(count)` builds the store once under
  `<dev cache>/bench/` (scripts/dev-cache), in a temporary folder renamed into place when
  complete, and returns it. A caller that changes a store (every `om` call may) works on
  a copy (`copy_of`).

    python3 bench/realistic.py [--sessions 10000]   # build (or find) the cached store, print its path
"""

import argparse
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

#: Changing what a store holds changes this, and so the cached store's name.
FORMAT = "realistic-1"
SEED = 35
#: The newest activity of any session (a fixed moment, so the store does not depend on the day it was built).
STAMP = 1_790_000_000
YEAR = 365 * 24 * 3600
PROJECTS = (("/home/dev/src/shop", 40), ("/home/dev/src/api", 25), ("/home/dev/src/infra", 15),
            ("/home/dev/src/web", 12), ("/home/dev/src/tools", 8))

#: The common words of a coding project's conversations and tool output, most frequent first.
COMMON = """the to a of and in is it for that this with on be not as test error file are we can if at
from run use should so add function tests but an or line fix check code by will failed now have return
parser timeout config build python module import value type self none true false def class data path
need new case first set call change update make output first also like then there one which all it's
passed assert expected got get where what let see just because missing issue still after before when
version error's request response client server cache query table index database connection retry
session token user name list item key string number result status message log debug info warning
default option argument flag command shell script install package dependency lock merge commit branch
review pull push main master origin remote diff patch release tag deploy container image docker
compose kubernetes pod service node worker queue job task schedule cron backup restore migrate
migration schema column row field record model view controller route handler middleware auth login
logout password hash secret key env environment variable setting settings local production staging
dev develop development feature bug crash exception traceback stack frame memory leak cpu thread
process lock mutex async await future promise callback event loop signal socket port host address
network latency throughput benchmark profile slow fast performance optimize refactor rename move
delete remove create write read open close parse format encode decode serialize json yaml toml xml
csv http https url api endpoint get post put header body payload status code ok created bad not
found forbidden unauthorized internal gateway unavailable limit rate retry backoff jitter deadline
context cancel cancelled exit signal kill term interrupt stdout stderr stdin pipe buffer stream
chunk batch page offset cursor scan filter sort order group count sum max min average median
percentile histogram metric trace span logger handler level format template render component
state props hook effect reducer store action dispatch selector query mutation subscription
schema resolver type interface enum struct trait impl generic lifetime borrow owner reference
pointer null undefined nan infinity overflow underflow precision float integer decimal bool
byte bytes char utf encoding unicode ascii regex pattern match replace split join trim strip
upper lower case sensitive insensitive whitespace newline tab indent dedent lint linter ruff
mypy pytest fixture mock patch stub fake spy assert raises skip xfail marker parametrize
coverage report html junit ci pipeline workflow action runner job step artifact cache key
restore save upload download timeout retries flaky intermittent reproduce repro minimal example
""".split()
#: Identifier parts: joined into snake_case, CamelCase and dotted names, as code and tool output name things.
PARTS = """parse config load save read write open close get set make build run check validate render
fetch send recv handle dispatch resolve compile link test mock sync flush reset retry wait lock
user order cart item price stock invoice payment account session token cache queue worker job
event message request response client server router handler store repo model schema table index
file path dir name key value list map dict tree node edge graph loop timer clock date time zone
lexer parser tokenizer scanner emitter visitor walker printer formatter logger tracer profiler""".split()


def vocabulary():
    """About 2,800 words and identifiers, most frequent first (the same list on every call)."""
    rng = random.Random(SEED)
    words = list(dict.fromkeys(COMMON))
    names = set(words)
    while len(words) < 2800:
        a, b = rng.sample(PARTS, 2)
        shape = rng.random()
        name = f"{a}_{b}" if shape < 0.4 else (a.capitalize() + b.capitalize() if shape < 0.7 else
                                               f"{a}{b}{rng.randint(1, 99)}" if shape < 0.85 else f"{a}.{b}")
        if name not in names:
            names.add(name)
            words.append(name)
    return words


def _weights(count):
    """Zipf's cumulative weights (s = 1, offset 2.7 as Mandelbrot fits real text)."""
    total, out = 0.0, []
    for rank in range(count):
        total += 1.0 / (rank + 2.7)
        out.append(total)
    return out


VOCABULARY = vocabulary()
CUMULATIVE = _weights(len(VOCABULARY))


def _words(rng, low, high):
    return " ".join(rng.choices(VOCABULARY, cum_weights=CUMULATIVE, k=rng.randint(low, high)))


def session_name(n):
    return f"real-{n:05d}"


def write_session(store, n):
    """Session n as a v1 implementation's hooks and checkpoints leave it (plain SQL, one transaction)."""
    from om.ids import observation_id, source_id
    from om.jsonio import dumps

    rng = random.Random(SEED * 1_000_003 + n)
    session = session_name(n)
    when = STAMP - rng.randrange(YEAR)
    pick = rng.random() * 100
    project = None
    if rng.random() >= 0.05:
        for root, share in PROJECTS:
            pick -= share
            if pick < 0:
                project = root
                break
        project = project or PROJECTS[-1][0]
    sources, ids = [], []
    for turn in range(20):
        at = when - (20 - turn) * 90
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))
        texts = [("user", _words(rng, 6, 40))]
        for _ in range(3):
            command = rng.choice(("pytest", "git", "make", "grep -rn", "python3", "npm run", "cargo", "ls")) \
                + " " + _words(rng, 1, 6)
            response = {"exit_code": rng.choice((0, 0, 0, 1, 2)), "stderr": _words(rng, 0, 12),
                        "stdout": _words(rng, 10, 140)}
            texts.append(("tool", dumps({"input": {"command": command}, "response": response, "tool": "Bash"},
                                        sort_keys=True)))
        texts.append(("assistant", _words(rng, 15, 90)))
        for kind, text in texts:
            key = f"{session}-{len(sources)}"
            sid = source_id(kind, key, text)
            ids.append(sid)
            sources.append((sid, dumps({"seq": 0, "id": sid, "kind": kind, "timestamp": stamp, "text": text,
                                        "truncated": False})))
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))
    entries = []
    for _ in range(5):
        text = _words(rng, 10, 30)
        support = [ids[rng.randrange(len(ids))]]
        oid = observation_id(text, support, "medium")
        entries.append((oid, dumps({"seq": 0, "id": oid, "kind": "observation", "timestamp": stamp,
                                    "importance": "medium", "text": text, "support": support, "active": True,
                                    "retirement": None})))
    meta = [("session", session), ("version", "1"), ("cursor", str(len(sources))), ("last_checkpoint_at", stamp)]
    if project is not None:
        meta += [("om_cwd", project), ("om_project", project), ("om_created_at", stamp)]
    write_ledger(store, session, sources, entries, meta, when)


def write_ledger(store, session, sources, entries, meta, when):
    """A v1 ledger of (id, body) `sources` and `entries` (all active) and `meta` rows, in one transaction
    without fsync (a fixture, not a measurement), its file last written at `when`."""
    from om.ids import session_hash
    from om.ledger import SCHEMA

    directory = os.path.join(store, "session-" + session_hash(session))
    os.mkdir(directory, 0o700)
    path = os.path.join(directory, "memory.sqlite3")
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA synchronous = OFF")
    conn.execute("BEGIN")
    for statement in SCHEMA:
        conn.execute(statement)
    conn.executemany("INSERT INTO sources(id, body) VALUES (?, ?)", sources)
    conn.executemany("INSERT INTO entries(id, body, active, retirement) VALUES (?, ?, 1, NULL)", entries)
    conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", meta)
    conn.execute("COMMIT")
    conn.close()
    os.utime(path, (when, when))


def build(store, count, processes=None):
    """Write sessions 0 .. count-1 into `store` (which must not exist), shared by forked processes."""
    os.makedirs(store, mode=0o700)
    processes = processes or len(os.sched_getaffinity(0))
    children = []
    for k in range(processes):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - a writer
            code = 1
            try:
                for n in range(k, count, processes):
                    write_session(store, n)
                code = 0
            finally:
                os._exit(code)
        children.append(pid)
    failed = [pid for pid in children if os.waitpid(pid, 0)[1] != 0]
    if failed:
        raise SystemExit(f"writing the realistic store failed in {len(failed)} processes")


def cache_root():
    done = subprocess.run(["sh", os.path.join(ROOT, "scripts", "dev-cache")], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"scripts/dev-cache failed: {done.stderr.strip()}")
    return os.path.join(done.stdout.strip(), "bench")


def cached(count, say=print):
    """The cached store of `count` sessions (built first when missing): never change it, copy it."""
    root = cache_root()
    store = os.path.join(root, f"{FORMAT}-{count}")
    if os.path.isdir(store):
        return store
    os.makedirs(root, exist_ok=True)
    partial = store + f".partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    t = time.perf_counter()
    build(partial, count)
    os.rename(partial, store)
    say(f"built the realistic store of {count} sessions in {time.perf_counter() - t:.1f} s: {store}")
    return store


def copy_of(store, into):
    """A copy of the cached `store` at `into`, file times kept (cp -a: the copy is what the cache is)."""
    subprocess.run(["cp", "-a", store, into], check=True)
    return into


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=10_000)
    print(cached(ap.parse_args().sessions))
