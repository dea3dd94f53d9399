"""How the benchmarks run `om` from this tree: one subprocess runner for every script.

Invariants: each call is a fresh `python -m om` of this tree's om/ (or of another
commit's, exported with `export_commit`, when a benchmark compares two), never an
installed om, never the caller's OBSERVATIONAL_MEMORY_STORE, timed from spawn to
exit; a command that fails ends the benchmark with its stderr, since a number for
a failed run would mean nothing.
"""

import io
import json
import os
import subprocess
import sys
import tarfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: The vocabulary the benchmarks' generated evidence is written in.
WORDS = ("build cache deploy retry timeout redis postgres kafka nginx gradle docker image migration table index "
         "query latency error warning failed passed commit branch merge review token auth session memory disk "
         "network socket thread lock queue worker schedule cron backup restore config flag feature").split()


def _env(root=ROOT):
    env = dict(os.environ, PYTHONPATH=root)
    env.pop("OBSERVATIONAL_MEMORY_STORE", None)
    return env


def export_commit(rev, into):
    """Commit `rev` of this repository unpacked under `into` (`git archive`); returns `into`."""
    archive = subprocess.run(["git", "-C", ROOT, "archive", "--format=tar", rev], capture_output=True)
    if archive.returncode != 0:
        raise SystemExit(f"git archive {rev} failed: {archive.stderr.decode().strip()}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into)
    return into


def om(store, *args, session="bench", input=None, root=ROOT):
    """`om --store STORE --session SESSION ARGS` of the tree at `root`: (seconds, stdout bytes)."""
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "om", "--store", store, "--session", session, *args],
                       input=input, capture_output=True, env=_env(root))
    elapsed = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"om {' '.join(args)} failed: {p.stderr.decode()}")
    return elapsed, p.stdout


def hook(store, payload):
    """`om --store STORE hook --client codex` with one event (a dict or its JSON bytes): (seconds, stdout text).

    It must answer, exit 0 and say nothing on stderr.
    """
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "om", "--store", store, "hook", "--client", "codex"],
                       input=data, capture_output=True, env=_env())
    elapsed = time.perf_counter() - t
    if p.returncode != 0 or p.stderr:
        raise SystemExit(f"om hook failed: {p.stderr.decode()}")
    return elapsed, p.stdout.decode()
