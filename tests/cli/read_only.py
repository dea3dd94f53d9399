"""Run `om` against a store it cannot write, as a sandboxed agent shell meets it.

Invariant: the store's directories and files are made read-only for the
duration of one command and restored afterwards, and the command runs without
the capabilities that let root ignore file modes; a probe proves the store was
really unwritable.
"""

import ctypes
import os
import subprocess
import sys

from conftest import ROOT, Result


def _no_write_privileges():
    # Root ignores file modes; drop the capabilities that let it, so the
    # subprocess meets the store exactly as a sandboxed non-root shell would.
    if os.geteuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        for cap in (1, 2, 3):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER
            if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def run_read_only(store, *args):
    session_dirs = [os.path.join(store, d) for d in os.listdir(store)]
    paths = [store] + session_dirs
    for d in session_dirs:
        for f in os.listdir(d):
            os.chmod(os.path.join(d, f), 0o400)
    for p in paths:
        os.chmod(p, 0o500)
    try:
        env = {k: v for k, v in os.environ.items() if k != "OBSERVATIONAL_MEMORY_STORE"}
        env["PYTHONPATH"] = str(ROOT)
        proc = subprocess.run(
            [sys.executable, "-m", "om", "--store", str(store), "--session", "s1", *args],
            capture_output=True, env=env, cwd=ROOT, preexec_fn=_no_write_privileges, timeout=60,
        )
        # Prove the sandbox was real: the subprocess could not have created a file.
        probe = subprocess.run([sys.executable, "-c", f"open({os.path.join(str(store), 'probe')!r}, 'w')"],
                               capture_output=True, preexec_fn=_no_write_privileges)
        assert probe.returncode != 0
    finally:
        for p in paths:
            os.chmod(p, 0o700)
        for d in session_dirs:
            for f in os.listdir(d):
                os.chmod(os.path.join(d, f), 0o600)
    return Result(type("P", (), {"returncode": proc.returncode, "stdout": proc.stdout.decode(), "stderr": proc.stderr.decode()}))
