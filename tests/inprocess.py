"""Run `om` inside the test process: `om.cli.main(argv)` with its own stdin, stdout and stderr.

For property tests that make hundreds of calls. The entry point, the argument parsing
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


def run_om_in_process(*args, input=None):
    """`om ARGS` with `input` (bytes or str) on stdin; a Result like `conftest.run_om`'s."""
    if isinstance(input, str):
        input = input.encode("utf-8")
    stdin = io.TextIOWrapper(io.BytesIO(input or b""), encoding="utf-8")
    out, err = io.BytesIO(), io.BytesIO()
    stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    stderr = io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True)
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_store = os.environ.pop(STORE_ENV, None)  # as run_om: only --store names the store
    sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
    try:
        code = main([str(a) for a in args])
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        if saved_store is not None:
            os.environ[STORE_ENV] = saved_store
    stdout.flush()
    stderr.flush()
    return Result(type("P", (), {
        "returncode": code,
        "stdout": out.getvalue().decode("utf-8", "replace"),
        "stderr": err.getvalue().decode("utf-8", "replace"),
    }))
