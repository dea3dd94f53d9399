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
    # A hook or command run in a repository caches its project identity in the project home: a
    # benchmark's own, so that no run leaves anything in the user's.
    env.setdefault("OM_PROJECT_HOME", project_home())
    # An installed om runs from compiled bytecode; with PYTHONDONTWRITEBYTECODE (some machines set it)
    # every call would compile every module again (a 40 ms start took 150). Cached outside the tree.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.setdefault("PYTHONPYCACHEPREFIX", pycache())
    return env


_folders: dict = {}


def _folder(prefix):
    """A temporary folder of this benchmark process named by `prefix`, made once, removed when it ends."""
    if prefix not in _folders:
        import atexit
        import shutil
        import tempfile

        _folders[prefix] = tempfile.mkdtemp(prefix=prefix)
        atexit.register(shutil.rmtree, _folders[prefix], True)
    return _folders[prefix]


def pycache():
    """A bytecode cache of this benchmark process (outside the tree), removed when it ends."""
    return _folder("om-bench-pycache-")


def project_home():
    """A project home (om.project.home) of this benchmark process, removed when it ends."""
    return _folder("om-bench-projects-")


def export_commit(rev, into):
    """Commit `rev` of this repository unpacked under `into` (`git archive`); returns `into`."""
    archive = subprocess.run(["git", "-C", ROOT, "archive", "--format=tar", rev], capture_output=True)
    if archive.returncode != 0:
        raise SystemExit(f"git archive {rev} failed: {archive.stderr.decode().strip()}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into)
    return into


def om(store, *args, session="bench", input=None, root=ROOT):
    """`om --store STORE --session SESSION ARGS` of the tree at `root` (no --session when it is
    None): (seconds, stdout bytes)."""
    scope = ("--session", session) if session is not None else ()
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "om", "--store", store, *scope, *args],
                       input=input, capture_output=True, env=_env(root))
    elapsed = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"om {' '.join(args)} failed: {p.stderr.decode()}")
    return elapsed, p.stdout


class Run:
    """One finished `om` process: wall seconds, stdout and stderr bytes, exit code (peak_mb: when measured)."""

    def __init__(self, seconds, stdout, stderr, peak_mb):
        self.seconds, self.stdout, self.stderr, self.peak_mb = seconds, stdout, stderr, peak_mb
        self.code = 0


def measured(store, *args, session="bench", input=None, peak=False):
    """`om --store STORE --session SESSION ARGS` as a Run; it must exit 0. With `peak`, its peak RSS too."""
    argv = ["--store", store, "--session", session, *args]
    run = _run(argv, input)
    if run.code != 0:
        raise SystemExit(f"om {' '.join(args)} failed: {run.stderr.decode()}")
    if peak:
        run.peak_mb = peak_mb(argv, input)
    return run


#: Runs `python -m om ARGV` and writes its peak RSS in KB to stderr's last line. A child of this
#: small process: a child of the benchmark would report the benchmark's own size (fork copies it).
PEAK = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:]);"
        " sys.stderr.write('\\n%d\\n' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(p.returncode)")


def _run(argv, input):
    """`python -m om ARGV`, timed."""
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "om", *argv], input=input, capture_output=True, env=_env())
    run = Run(time.perf_counter() - t, proc.stdout, proc.stderr, None)
    run.code = proc.returncode
    return run


def python_run(code, *args):
    """`python -c CODE ARGS` in the environment every `om` call here gets, timed as `_run` times them: what
    the least work a command must do costs, with nothing of om's around it. It must exit 0."""
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, env=_env())
    run = Run(time.perf_counter() - t, proc.stdout, proc.stderr, None)
    if proc.returncode != 0:
        raise SystemExit(f"python -c failed: {proc.stderr.decode()}")
    return run


def peak_mb(argv, input=None):
    """The peak resident set of `python -m om ARGV`, in MB (one more run of it, not timed)."""
    return timed_peak(argv, input).peak_mb


def timed_peak(argv, input=None):
    """`python -m om ARGV` as a Run with its peak RSS, timed through the small process that reads it
    (which adds that process's start to the time: for long calls only)."""
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-S", "-c", PEAK, sys.executable, "-m", "om", *argv], input=input,
                          capture_output=True, env=_env())
    if proc.returncode != 0:
        raise SystemExit(f"om {' '.join(argv)} failed: {proc.stderr.decode()}")
    stderr, peak = proc.stderr.rsplit(b"\n", 2)[:2]
    return Run(time.perf_counter() - t, proc.stdout, stderr, int(peak) / 1024)


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


def hook_run(store, payload, peak=False):
    """The hook call of `hook` as a Run (with `peak`, its peak RSS too)."""
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    argv = ["--store", store, "hook", "--client", "codex"]
    run = _run(argv, data)
    if run.code != 0 or run.stderr:
        raise SystemExit(f"om hook failed: {run.stderr.decode()}")
    if peak:
        run.peak_mb = peak_mb(argv, data)
    return run
