"""How the benchmarks run `om` from this tree: one subprocess runner for every script.

Invariants: each call is a fresh `python -m om` of this tree's om/ (never an
installed om, never the caller's OBSERVATIONAL_MEMORY_STORE), timed from spawn to
exit; a command that fails ends the benchmark with its stderr, since a number for
a failed run would mean nothing.
"""

import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: The vocabulary the benchmarks' generated evidence is written in.
WORDS = ("build cache deploy retry timeout redis postgres kafka nginx gradle docker image migration table index "
         "query latency error warning failed passed commit branch merge review token auth session memory disk "
         "network socket thread lock queue worker schedule cron backup restore config flag feature").split()


def _env():
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("OBSERVATIONAL_MEMORY_STORE", None)
    return env


def om(store, *args, session="bench", input=None):
    """`om --store STORE --session SESSION ARGS`: (seconds, stdout bytes)."""
    run = measured(store, *args, session=session, input=input)
    return run.seconds, run.stdout


class Run:
    """One finished `om` process: wall seconds, stdout and stderr bytes, peak resident set in MB, exit code."""

    def __init__(self, seconds, stdout, stderr, peak_mb):
        self.seconds, self.stdout, self.stderr, self.peak_mb = seconds, stdout, stderr, peak_mb
        self.code = 0


def measured(store, *args, session="bench", input=None):
    """`om --store STORE --session SESSION ARGS` as a Run; it must exit 0."""
    run = _run(["--store", store, "--session", session, *args], input)
    if run.code != 0:
        raise SystemExit(f"om {' '.join(args)} failed: {run.stderr.decode()}")
    return run


def _run(argv, input):
    """`python -m om ARGV`, timed, its peak RSS read from wait4 for that process alone."""
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "om", *argv],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    stdout, stderr = _communicate(proc, input)
    run = Run(time.perf_counter() - t, stdout, stderr, proc.peak_mb)
    run.code = proc.returncode
    return run


def _communicate(proc, input):
    # Popen.wait would reap the child with waitpid and lose its rusage: reap it with wait4 first.
    import threading

    out, err = [], []
    readers = [threading.Thread(target=lambda: out.append(proc.stdout.read())),
               threading.Thread(target=lambda: err.append(proc.stderr.read()))]
    for reader in readers:
        reader.start()
    if input:
        proc.stdin.write(input)
    proc.stdin.close()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.peak_mb = usage.ru_maxrss / 1024  # kilobytes on Linux
    for reader in readers:
        reader.join()
    return out[0], err[0]


def hook(store, payload):
    """`om --store STORE hook --client codex` with one event (a dict or its JSON bytes): (seconds, stdout text).

    It must answer, exit 0 and say nothing on stderr.
    """
    run = hook_run(store, payload)
    return run.seconds, run.stdout.decode()


def hook_run(store, payload):
    """The hook call of `hook` as a Run."""
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    run = _run(["--store", store, "hook", "--client", "codex"], data)
    if run.code != 0 or run.stderr:
        raise SystemExit(f"om hook failed: {run.stderr.decode()}")
    return run
