#!/usr/bin/env python3
"""Project memory benchmark: a session's start with a 500-entry project memory in a 10,000-session store.

Five commands, timed in one run, in interleaved rounds (each round runs every one once, so
drift in the machine's load hits them alike), medians and p95 of --runs rounds:

    bare          python3 -I -S -c pass, on the real interpreter the hooks run (bench/hook.py's baseline)
    empty         the SessionStart hook of a new session in a git repository, with an empty store
                  and no project memory: the start every other row is read against
    project only  the same, the repository's project memory holding --entries active entries
    store only    the same, in a store of --sessions sessions of that repository (the start-context
                  pointer scans it), no project memory
    loaded        both: --entries entries in a store of --sessions sessions

The hook runs exactly as Codex runs it: hooks/codex.json's command through `sh -c`, with
PLUGIN_ROOT and PLUGIN_DATA set (the data folder at `<home>/plugins/data/om-observational-memory`,
so the store is `<home>/om`), the payload Codex sends, and OM_PROJECT_HOME naming the row's
project home. Each call is a new session; after each call of an empty-store row its session
is removed, so that store stays empty. The output of every row is checked once: `loaded` and
`project only` count the entries ("Project memory: 500 entries"), `loaded` and `store only`
point at earlier sessions, `empty` does neither.

The project memory is made through the real promote path: --entries / 10 sessions of the
repository (Codex and Claude Code in turn, as their hooks record them) capture a prompt and
tool results, and each applies one checkpoint of 10 observations with `"promote": true`
(om.project.memory.apply_checkpoint, what `apply` runs), each citing one to three of its
sources; their clocks are spread over 200 days, so the oldest entries are STALE. The texts are
the decisions, conventions and traps a repository's sessions write down, each one different.

The store is written as bench/sessions.py writes its large one (v1 ledgers of 200 sources and
5 observations each, the last active an hour apart): about 1.5 GB and minutes for 10,000, so it
is kept, with its repository, in --cache (default `<dev cache>/bench/project-<sessions>`, beside
bench/realistic.py's store: scripts/dev-cache, outside any checkout) and reused by the next run; the sessions a run adds
are removed when it ends (and any left by an interrupted run, when the next one starts).
--no-cache writes it in a temporary folder and removes it. Its store index (om.derived.store_index,
which the pointer reads when present) is written by one `om sessions` before the rounds, as a
user's listing leaves it; --without-store-index removes it instead (the hooks never write it),
for a store no store-wide read has seen yet.

    python3 bench/project.py [--runs 30] [--sessions 10000] [--entries 500] [--cache DIR | --no-cache]
                             [--without-store-index]
"""

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from hook import codex_hooks, p95, real_interpreter, registered_argv
from om_runs import ROOT, om
from realistic import cache_root
from sessions import build_v1_store

sys.path.insert(0, ROOT)

PLUGIN_DATA = os.path.join("plugins", "data", "om-observational-memory")
GIT = ["git", "-c", "user.email=dev@example.com", "-c", "user.name=dev", "-c", "init.defaultBranch=main"]
#: A fixed author and commit date: the repository's root commit, hence its project key, is the same in every cache.
GIT_DATES = {"GIT_AUTHOR_DATE": "2026-01-05T09:00:00Z", "GIT_COMMITTER_DATE": "2026-01-05T09:00:00Z"}
DONE = "complete.json"
ENTRIES_PER_SESSION = 10
DAY = 86400

# -- realistic project knowledge ---------------------------------------------------------------------------------

AREAS = ["billing", "checkout", "search", "auth", "notifications", "inventory", "reporting", "the importer",
         "the admin UI", "the public API", "the worker pool", "the scheduler", "migrations", "the CLI", "exports"]
FILES = ["src/billing/invoice.py", "src/checkout/cart.ts", "api/routes/orders.go", "web/src/hooks/useSession.ts",
         "services/search/indexer.rs", "db/migrations/0042_add_ledger.sql", "scripts/release.sh", "Makefile",
         "docker/compose.dev.yml", ".github/workflows/ci.yml", "src/auth/tokens.py", "src/worker/retry.py",
         "config/settings/prod.toml", "tests/conftest.py", "web/vite.config.ts", "pkg/cache/lru.go"]
TOOLS = ["SQLite", "Postgres 15", "Redis", "Kafka", "RabbitMQ", "pnpm", "uv", "poetry", "Gradle", "esbuild", "Vite",
         "pytest-xdist", "Playwright", "sqlc", "Alembic", "ruff", "mypy --strict", "golangci-lint", "cargo nextest"]
REASONS = ["it lost writes under concurrent deploys", "the lock file drifted between machines",
           "cold starts took 9 s on CI", "it needed a second network hop per request",
           "nobody could reproduce its flaky failures locally", "its licence changed",
           "the managed offering was retired in our region", "it doubled the image size",
           "retries amplified the outage in March", "it hid type errors until runtime"]
COMMANDS = ["make check", "pnpm run typecheck", "uv run pytest -n 4", "go test ./... -race", "cargo clippy -- -D warnings",
            "scripts/release.sh --dry-run", "docker compose -f docker/compose.dev.yml up db",
            "alembic upgrade head", "npx playwright test --project=chromium", "make fixtures"]
ERRORS = ["'database is locked'", "ECONNRESET from the mock gateway", "a 401 with an empty body",
          "`ModuleNotFoundError: No module named 'src'`", "a timeout after exactly 30 s", "duplicate key value",
          "'address already in use' on port 5432", "a snapshot mismatch in the invoice PDF"]
PEOPLE = ["The user", "The maintainer", "The reviewer", "The team lead"]
STYLES = ["small commits with the ticket id in the subject", "early returns over nested conditions",
          "type hints on every public function", "tests named as sentences", "no default exports",
          "feature flags for anything user-visible", "explicit SQL over the ORM in reports",
          "one migration per pull request", "logging through the structured logger only"]

TEMPLATES = [
    "{area} uses {tool}; {other} was dropped because {reason}.",
    "Run `{command}` before pushing: CI runs the same and rejects the branch on {error}.",
    "The tests of {area} need `{command}` first; without it they fail with {error}.",
    "Trap: {file} is generated; edit its template instead, or the next build overwrites the change.",
    "{person} prefers {style} (said while reviewing {area}).",
    "Decision: {area} keeps money as integer cents end to end; floats caused rounding drift in {file}.",
    "Never retry {area} calls inside the request handler: {reason}; the worker pool retries with backoff.",
    "{file} reads its settings at import time, so tests must set the environment before importing it.",
    "Convention: every change to {area} lands with an entry in CHANGELOG.md under Unreleased.",
    "When {error} shows up in {area}, the cause so far was always a stale container: rebuild with `{command}`.",
    "{tool} is pinned in {file}; upgrading it broke {area} once because {reason}.",
    "The staging database is shared: schema changes for {area} must stay backward compatible for one release.",
]

IMPORTANCE = ["critical"] + ["high"] * 3 + ["medium"] * 5 + ["low"]


def fact(rng, n):
    """One piece of project knowledge, as an agent would write it down (n makes each text unique)."""
    tool, other = rng.sample(TOOLS, 2)
    text = rng.choice(TEMPLATES).format(area=rng.choice(AREAS), tool=tool, other=other, reason=rng.choice(REASONS),
                                        command=rng.choice(COMMANDS), error=rng.choice(ERRORS),
                                        file=rng.choice(FILES), person=rng.choice(PEOPLE), style=rng.choice(STYLES))
    return f"{text[0].upper()}{text[1:]} (seen in PR #{1200 + n})"


def evidence(rng, n):
    """(kind, text) of what a session captured around fact n: the prompt, tool output, the reply."""
    command, error, file = rng.choice(COMMANDS), rng.choice(ERRORS), rng.choice(FILES)
    return [
        ("user", f"Fix the failing build in {rng.choice(AREAS)} (ticket OPS-{3000 + n}); check {file} first."),
        ("tool", f"$ {command}\n" + "\n".join(f"{file}:{rng.randint(10, 900)}: {rng.choice(ERRORS)}"
                                             for _ in range(rng.randint(3, 12))) + f"\nFAILED: {error}"),
        ("tool", f"$ git log --oneline -5 -- {file}\n" + "\n".join(
            f"{rng.getrandbits(28):07x} {rng.choice(STYLES)}" for _ in range(5))),
        ("assistant", f"The build failed on {error}; {file} was the cause. Fixed and re-ran `{command}`: green."),
    ]


# -- fixtures ----------------------------------------------------------------------------------------------------


def make_repository(path):
    """A git repository with one commit (fixed dates: the same root commit, the same project key, every time)."""
    os.makedirs(path)
    env = dict(os.environ, **GIT_DATES)
    subprocess.run([*GIT, "init", "-q"], cwd=path, check=True, env=env)
    with open(os.path.join(path, "README.md"), "w") as fh:
        fh.write("# shop\n")
    subprocess.run([*GIT, "add", "README.md"], cwd=path, check=True, env=env)
    subprocess.run([*GIT, "commit", "-q", "-m", "first"], cwd=path, check=True, env=env)


def build_project_memory(project_home, scratch, repo, entries, rng):
    """`entries` active project entries for `repo`, promoted by checkpoints of entries/10 sessions (module docstring)."""
    import om.ledger
    from om.ledger import Ledger
    from om.project import record_project
    from om.project.memory import apply_checkpoint

    os.environ["OM_PROJECT_HOME"] = project_home  # read by om.project.home at each call
    real_now = om.ledger.now  # the module's function and Ledger.now, its static alias: both are the clock
    start = time.time() - 200 * DAY
    sessions = -(-entries // ENTRIES_PER_SESSION)
    made = 0
    try:
        for s in range(sessions):
            when = start + (200 * DAY) * s / max(1, sessions - 1) - 3600
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))
            om.ledger.now = lambda stamp=stamp: stamp  # this session's clock: its captures and its promotion
            Ledger.now = staticmethod(om.ledger.now)
            with Ledger.open(scratch, f"promoter-{s}") as ledger:
                ledger.conn.execute("PRAGMA synchronous = OFF")  # building the fixture, not measuring it
                record_project(ledger, repo, 5, ("codex", "claude")[s % 2])
                count = min(ENTRIES_PER_SESSION, entries - made)
                observations = []
                for i in range(count):
                    n = made + i
                    cited = [ledger.capture(kind, text, f"s{s}-{n}-{k}") for k, (kind, text) in enumerate(evidence(rng, n))]
                    observations.append({"text": fact(rng, n), "importance": rng.choice(IMPORTANCE),
                                         "source_ids": rng.sample(cited, rng.randint(1, 3)), "promote": True})
                through = ledger.conn.execute("SELECT max(seq) FROM sources").fetchone()[0]
                receipt = apply_checkpoint(ledger, {"through": through, "observations": observations})
                assert len(receipt["promoted"]) == count, receipt
                made += count
    finally:
        om.ledger.now, Ledger.now = real_now, staticmethod(real_now)
        os.environ.pop("OM_PROJECT_HOME", None)
    return made


def session_dir(store, session):
    from om.ids import session_hash

    return os.path.join(store, "session-" + session_hash(session))


def prepare_store(cache, sessions, rng):
    """(the cached repository, the cached store of `sessions` sessions), written when missing or incomplete."""
    repo, home = os.path.join(cache, "repo"), os.path.join(cache, "home")
    store = os.path.join(home, "om")
    done = os.path.join(cache, DONE)
    try:
        with open(done) as fh:
            ready = json.load(fh) == {"sessions": sessions, "repo": repo}
    except (OSError, ValueError):
        ready = False
    if not ready:
        shutil.rmtree(cache, ignore_errors=True)
        os.makedirs(cache, mode=0o700)
        make_repository(repo)
        t = time.perf_counter()
        build_v1_store(store, sessions, os.path.realpath(repo), rng)
        print(f"wrote {sessions} sessions of 200 sources and 5 observations in {time.perf_counter() - t:.0f} s"
              f" into {store}")
        with open(done, "w") as fh:
            json.dump({"sessions": sessions, "repo": repo}, fh)
    else:
        print(f"reusing the store of {sessions} sessions in {store}")
    remove_added(store, sessions)
    return repo, home


def store_index(store, wanted):
    """Make the store index present (`om sessions` writes it, as a user's listing does) or absent (`wanted` False)."""
    from om.derived.store_index import FOLDER

    folder = os.path.join(store, FOLDER)
    if not wanted:
        shutil.rmtree(folder, ignore_errors=True)
    elif not os.path.isdir(folder):
        t = time.perf_counter()
        om(store, "sessions", session=None)
        print(f"wrote the store index (om sessions) in {time.perf_counter() - t:.1f} s")
    return os.path.isdir(folder)


def remove_added(store, sessions):
    """Remove every session of `store` but the `sessions` it was written with (what earlier runs added)."""
    from om.ids import session_hash

    kept = {"session-" + session_hash(f"bench-{n}") for n in range(sessions)}
    for name in os.listdir(store):
        if name.startswith("session-") and name not in kept:
            shutil.rmtree(os.path.join(store, name))


# -- measuring ---------------------------------------------------------------------------------------------------


class Row:
    """One measured command: a SessionStart in `home` with `project_home`, or the bare interpreter."""

    def __init__(self, name, argv, home=None, project_home=None, repo=None, empties=False):
        self.name, self.argv, self.home, self.project_home, self.repo = name, argv, home, project_home, repo
        self.empties = empties  # remove each call's session: the store stays empty
        self.times = []
        self.added = []
        if home is not None:
            data = os.path.join(home, PLUGIN_DATA)
            clean = {k: v for k, v in os.environ.items() if not k.startswith(("OM_", "PLUGIN_", "CLAUDE_"))}
            self.env = dict(clean, PLUGIN_ROOT=ROOT, PLUGIN_DATA=data, CLAUDE_PLUGIN_ROOT=ROOT,
                            CLAUDE_PLUGIN_DATA=data, OM_PROJECT_HOME=project_home)
            os.makedirs(data, exist_ok=True)
            with open(os.path.join(data, ".om-python"), "w") as fh:  # as bench/hook.py: the real interpreter
                fh.write(real_interpreter() + "\n")

    def call(self, n):
        """One call, timed; its stdout."""
        payload = b""
        if self.home is not None:
            session = f"bench-start-{self.name.replace(' ', '-')}-{n}"
            payload = json.dumps({"session_id": session, "hook_event_name": "SessionStart", "cwd": self.repo,
                                  "source": "startup", "transcript_path": "/tmp/t.jsonl", "model": "mock",
                                  "permission_mode": "bypassPermissions"}).encode()
        t = time.perf_counter()
        proc = subprocess.run(self.argv, input=payload, capture_output=True, env=getattr(self, "env", None))
        elapsed = time.perf_counter() - t
        if proc.returncode != 0 or proc.stderr:
            raise SystemExit(f"{self.name}: rc={proc.returncode} {proc.stderr[-500:]!r}")
        if self.home is not None:
            self.added.append(session_dir(os.path.join(self.home, "om"), session))
            if self.empties:
                self.cleanup()
        return elapsed, proc.stdout.decode()

    def cleanup(self):
        while self.added:
            shutil.rmtree(self.added.pop(), ignore_errors=True)


def check(row, out, entries):
    """The row's start context says what its fixture holds, and only that."""
    if row.home is None:
        return
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    counted = f"Project memory: {entries} entries" in context
    pointed = "earlier sessions of this project" in context
    wants = {"empty": (False, False), "project only": (True, False), "store only": (False, True),
             "loaded": (True, True)}[row.name]
    if (counted, pointed) != wants:
        raise SystemExit(f"{row.name}: the start context counts the project memory: {counted}, points at earlier"
                         f" sessions: {pointed}; expected {wants}:\n{context}")


def default_cache(sessions):
    return os.path.join(cache_root(), f"project-{sessions}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--sessions", type=int, default=10_000, help="sessions in the large store")
    ap.add_argument("--entries", type=int, default=500, help="active entries in the project memory")
    ap.add_argument("--cache", help="where the large store is kept between runs (default: see the docstring)")
    ap.add_argument("--no-cache", action="store_true", help="write the large store in a temporary folder")
    ap.add_argument("--without-store-index", action="store_true",
                    help="measure the large store without its store index (as before any store-wide read)")
    args = ap.parse_args()
    rng = random.Random(32)
    python = real_interpreter()
    work = tempfile.mkdtemp(prefix="om-bench-project-")
    cache = os.path.join(work, "cache") if args.no_cache else (args.cache or default_cache(args.sessions))
    rows = []
    try:
        repo, big_home = prepare_store(cache, args.sessions, rng)
        repo = os.path.realpath(repo)
        indexed = store_index(os.path.join(big_home, "om"), not args.without_store_index)
        memory, none = os.path.join(work, "projects-memory"), os.path.join(work, "projects-none")
        t = time.perf_counter()
        made = build_project_memory(memory, os.path.join(work, "promoters"), repo, args.entries, rng)
        print(f"promoted {made} entries through {-(-made // ENTRIES_PER_SESSION)} checkpoints in"
              f" {time.perf_counter() - t:.1f} s")
        empty_home = os.path.join(work, "empty")
        hook = registered_argv(codex_hooks(ROOT), "SessionStart")
        rows = [
            Row("bare", [python, "-I", "-S", "-c", "pass"]),
            Row("empty", hook, empty_home, none, repo, empties=True),
            Row("project only", hook, empty_home, memory, repo, empties=True),
            Row("store only", hook, big_home, none, repo),
            Row("loaded", hook, big_home, memory, repo),
        ]
        print(f"interpreter: {python}\nhook: {' '.join(hook)}\nrepository: {repo}")
        for n in range(3):  # warm up: bytecode, identity caches, the store index, the page cache
            for row in rows:
                _, out = row.call(-1 - n)
                check(row, out, made)
        for n in range(args.runs):
            for row in rows:
                row.times.append(row.call(n)[0])
    finally:
        for row in rows:
            row.cleanup()
        shutil.rmtree(work, ignore_errors=True)
    med = {row.name: statistics.median(row.times) for row in rows}
    print(f"\nSessionStart, {args.runs} interleaved rounds ({args.sessions} sessions, {made} project entries,"
          f" {'with' if indexed else 'without'} the store index):")
    for row in rows:
        print(f"  {row.name:13} median {med[row.name] * 1000:6.1f} ms  p95 {p95(row.times) * 1000:6.1f} ms"
              f"  x{med[row.name] / med['bare']:.2f} of bare  x{med[row.name] / med['empty']:.2f} of empty")
    return 0


if __name__ == "__main__":
    sys.exit(main())
