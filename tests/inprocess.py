"""Run `om` inside the test process: `om.cli.main(argv)` with its own stdin, stdout and stderr.

For property tests that make hundreds of calls, and for the steps that arrange a test's
state (the captures and checkpoints before the call the test asserts on, `setup_om`):
what a test proves about the CLI is proven by its own subprocess calls. The entry point, the argument parsing
and the mapping of errors to exit codes and one stderr line are the real ones; only the
interpreter start is skipped. What needs the process boundary itself (exit statuses as
the shell sees them, no traceback ever printed, kill -9, sandboxes) stays proven by the
subprocess tests (`conftest.run_om`). Anything a call raises past `main` propagates
here, so a bug that a subprocess would show as a traceback fails the test loudly.
"""

import io
import os
import sys

from conftest import Result
from om.cli import main

STORE_ENV = "OBSERVATIONAL_MEMORY_STORE"


def run_om_in_process(*args, input=None, env=None, cwd=None):
    """`om ARGS` with `input` (bytes or str) on stdin; a Result like `conftest.run_om`'s.

    `env` (added to this process's environment) and `cwd` hold for the call only, as they
    would for `run_om`'s child.
    """
    if isinstance(input, str):
        input = input.encode("utf-8")
    stdin = io.TextIOWrapper(io.BytesIO(input or b""), encoding="utf-8")
    out, err = io.BytesIO(), io.BytesIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    stderr = io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True)
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_env = {name: os.environ.get(name) for name in {STORE_ENV, *(env or {})}}
    os.environ.pop(STORE_ENV, None)  # as run_om: only --store (or `env`) names the store
    os.environ.update({name: str(value) for name, value in (env or {}).items()})
    saved_cwd = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
    try:
        code = main([str(a) for a in args])
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        os.chdir(saved_cwd)
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    stdout.flush()
    stderr.flush()
    return Result(type("P", (), {
        "returncode": code,
        "stdout": out.getvalue().decode("utf-8", "replace"),
        "stderr": err.getvalue().decode("utf-8", "replace"),
    }))


def setup_om(*args, input=None, env=None, cwd=None):
    """A step that arranges a test's state, in process; it must succeed (exit 0).

    A failing setup step fails the test here, with its stderr line, rather than later
    as a puzzling assertion on the call under test.
    """
    r = run_om_in_process(*args, input=input, env=env, cwd=cwd)
    assert r.returncode == 0, (args, r)
    return r
