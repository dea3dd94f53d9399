"""Seconds of the whole test suite against another commit's suite, both run in this one run.

The other commit (REV) is checked out into a temporary git worktree and its suite runs
the way its README's test command ran it: its own `scripts/test`, which makes its own
virtualenv and fetches its own pinned Codex CLI. Then this tree's `scripts/test` runs twice:
  - on the whole suite;
  - on the test functions REV already had, with every parametrization this tree gives
    them (each real-Codex test now runs on two Codex versions): the same proofs.
Prints each run's test count, pytest's own seconds and the wall time with setup, and each
of this tree's runs as a ratio of REV's pytest seconds: below 1.00 is faster.

It takes minutes (REV's setup alone fetches its dependencies) and needs a quiet machine;
both sides run with the same environment.

    python3 bench/suite.py --compare REV
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: pytest's last line: counts ("3 failed, 880 passed, 2 errors") then "in 67.42s".
SUMMARY = re.compile(r"^=*\s*((?:\d+ \w+(?:, )?)+) in ([\d.]+)s", re.MULTILINE)


def run_suite(tree, args=()):
    """Run TREE's scripts/test; return (passed, failed or in error, pytest seconds, wall seconds)."""
    started = time.perf_counter()
    proc = subprocess.run(["bash", os.path.join(tree, "scripts", "test"), "-q", "-p", "no:cacheprovider",
                           "--color=no", *args], cwd=tree, capture_output=True, text=True)
    wall = time.perf_counter() - started
    found = SUMMARY.findall(proc.stdout)
    if not found:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-15:]
        raise SystemExit(f"bench/suite.py: no pytest summary from {tree}/scripts/test:\n" + "\n".join(tail))
    counts, seconds = found[-1]
    count = {word.rstrip("s"): int(n) for n, word in re.findall(r"(\d+) (\w+)", counts)}
    # Errors (a fixture or collection that broke) count as failures: the run did not pass.
    return count.get("passed", 0), count.get("failed", 0) + count.get("error", 0), float(seconds), wall


def test_functions(tree, python):
    """The node ids of TREE's collected tests, without their parameters, in collection order."""
    proc = subprocess.run([python, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
                          cwd=tree, capture_output=True, text=True)
    ids = [line.split("[", 1)[0] for line in proc.stdout.splitlines() if "::" in line]
    if not ids:
        raise SystemExit(f"bench/suite.py: collecting {tree}'s tests found none: {proc.stderr.strip()[-400:]}")
    return list(dict.fromkeys(ids))


def report(name, result, baseline=None):
    passed, failed, seconds, wall = result
    line = f"  {name:36} {passed:5d} passed"
    line += f", {failed} failed or in error" if failed else ""
    line += f"  pytest {seconds:6.1f} s  wall {wall:6.1f} s"
    if baseline:
        line += f"  ratio {seconds / baseline[2]:4.2f}x"
    print(line, flush=True)


def venv_python(tree):
    """The interpreter of the virtualenv `tree`'s scripts/test made: in the development cache
    (scripts/dev-cache), or `.venv` in the tree for commits before the cache existed."""
    finder = os.path.join(tree, "scripts", "dev-cache")
    if not os.path.isfile(finder):
        return os.path.join(tree, ".venv", "bin", "python")
    checkout = subprocess.run(["sh", finder, "--checkout"], capture_output=True, text=True, check=True).stdout.strip()
    return os.path.join(checkout, "venv", "bin", "python")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", metavar="REV", required=True, help="the commit whose suite is the baseline")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="om-bench-suite-") as tmp:
        other = os.path.join(tmp, "tree")
        added = subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", other, args.compare],
                               capture_output=True, text=True)
        if added.returncode != 0:
            raise SystemExit(f"bench/suite.py: git worktree add {args.compare} failed: {added.stderr.strip()}")
        try:
            print(f"suite @{args.compare} (its own scripts/test), then this tree's scripts/test", flush=True)
            before = run_suite(other)
            report(f"@{args.compare}", before)
            report("this tree, whole suite", run_suite(ROOT), before)
            # Collected after a run of each, when both trees have their virtualenv.
            then = set(test_functions(other, venv_python(other)))
            same = [t for t in test_functions(ROOT, venv_python(ROOT)) if t in then]
            report(f"this tree, same {len(same)}/{len(then)} functions", run_suite(ROOT, same), before)
        finally:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", other], capture_output=True)
            subprocess.run(["git", "-C", ROOT, "worktree", "prune"], capture_output=True)


if __name__ == "__main__":
    sys.exit(main())
