"""Shared fixtures: run `om` as a real subprocess against throwaway stores."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


class Result:
    def __init__(self, proc):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr

    @property
    def json(self):
        return json.loads(self.stdout)

    def __repr__(self):
        return f"Result(rc={self.returncode}, stdout={self.stdout[:300]!r}, stderr={self.stderr[:300]!r})"


def run_om(*args, input=None, env=None, cwd=None, timeout=60):
    """Run `python -m om ARGS` and return its exit code, stdout and stderr."""
    full_env = {k: v for k, v in os.environ.items() if k != "OBSERVATIONAL_MEMORY_STORE"}
    full_env["PYTHONPATH"] = str(ROOT)
    if env:
        full_env.update(env)
    if isinstance(input, str):
        input = input.encode("utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "om", *[str(a) for a in args]],
        input=input if input is not None else b"",
        capture_output=True,
        env=full_env,
        cwd=cwd or ROOT,
        timeout=timeout,
    )
    return Result(
        type("P", (), {
            "returncode": proc.returncode,
            "stdout": proc.stdout.decode("utf-8", "replace"),
            "stderr": proc.stderr.decode("utf-8", "replace"),
        })
    )


@pytest.fixture
def store(tmp_path):
    return tmp_path / "store"


@pytest.fixture
def om(store):
    """`om(*args, input=...)` bound to a throwaway store and session `s1`."""

    def call(*args, session="s1", **kw):
        return run_om("--store", store, "--session", session, *args, **kw)

    call.store = store
    return call
