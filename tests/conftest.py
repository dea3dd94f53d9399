"""Shared fixtures: run `om` as a real subprocess against throwaway stores."""

import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir

import tree_guard
from devcache import checkout_cache

ROOT = Path(__file__).resolve().parent.parent

# Hypothesis keeps its example database in this checkout's development cache, not in the tree.
set_hypothesis_home_dir(os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY") or checkout_cache() / "hypothesis")

# In CI the property tests replay the same examples on every run, so a red run names a
# change, not a lucky draw; developers' runs keep exploring new examples (and the
# failures they find become explicit regression tests).
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI") == "true":
    settings.load_profile("ci")
MEMORY_TMP = "/dev/shm"


def _python3_without_a_shim(config):
    # Hooks, the MCP server of .mcp.json and doctor find `python3` on PATH. Where that is a
    # version manager's shim (pyenv: a bash script of a dozen processes, about 50 ms of CPU
    # per start), the suite spent much of its time in the shim. Put this interpreter's own
    # binary first, alone in its directory (nothing else of its bin/ joins PATH); tests
    # about shims and missing interpreters build their own PATH.
    real = os.path.realpath(sys._base_executable if hasattr(sys, "_base_executable") else sys.executable)
    if not os.access(real, os.X_OK):
        return
    # Short, like /usr/bin: start contexts spell this path out several times within byte budgets.
    bindir = tempfile.mkdtemp(prefix="om-py-")
    os.symlink(real, os.path.join(bindir, "python3"))
    os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    config._om_python3_dir = bindir


def pytest_configure(config):
    tree_guard.install(config)  # first: its listing must come before anything a test could write
    _python3_without_a_shim(config)
    # Throwaway stores live in memory where the machine has a tmpfs: every ledger commit
    # is fsynced (synchronous=FULL), and on a disk those fsyncs were most of the suite's
    # time. No test depends on fsync reaching the disk: kill -9 durability is the page
    # cache's (the kernel keeps a killed process's writes) and power loss is not tested;
    # that om asks for FULL is asserted directly. `--basetemp` still wins.
    if config.option.basetemp is None and os.path.isdir(MEMORY_TMP) and os.access(MEMORY_TMP, os.W_OK | os.X_OK):
        config.option.basetemp = config._om_memory_tmp = tempfile.mkdtemp(prefix="om-tests-", dir=MEMORY_TMP)
    # The project memory home (om.project.home) defaults to a folder in $HOME, where every
    # hook started in a git repository caches its identity: each run gets its own, which a
    # test about the project memory replaces with one of its own.
    config._om_project_home = tempfile.mkdtemp(prefix="om-projects-", dir=_project_tmp())
    os.environ["OM_PROJECT_HOME"] = config._om_project_home


def _project_tmp():
    return MEMORY_TMP if os.path.isdir(MEMORY_TMP) and os.access(MEMORY_TMP, os.W_OK | os.X_OK) else None


def pytest_unconfigure(config):
    if getattr(config, "_om_project_home", None):
        shutil.rmtree(config._om_project_home, ignore_errors=True)
    if getattr(config, "_om_python3_dir", None):
        shutil.rmtree(config._om_python3_dir, ignore_errors=True)
    base = getattr(config, "_om_memory_tmp", None)
    if base:  # memory is not reclaimed by a reboot-time /tmp cleanup: remove it now
        shutil.rmtree(base, ignore_errors=True)


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


def bytecode_env():
    """The variable that keeps bytecode out of the tree, for an environment a test builds from scratch."""
    prefix = os.environ.get("PYTHONPYCACHEPREFIX")
    return {"PYTHONPYCACHEPREFIX": prefix} if prefix else {}


def isolated(python=sys.executable):
    """`python -I` for code that imports om from the tree, with this process's bytecode cache.

    -I drops PYTHONPYCACHEPREFIX, and bytecode written beside the sources would land in the
    checkout, which is the plugin (bin/om applies the variable itself; `-c` code cannot).
    """
    prefix = getattr(sys, "pycache_prefix", None)
    return [str(python), "-I", *(["-X", f"pycache_prefix={prefix}"] if prefix else [])]


#: The source tree's launcher, run with -S: om imports nothing outside the standard library,
#: and the virtualenv's .pth files (an editable-install finder, setuptools' distutils shim)
#: cost each call about 5 ms. `python -m om` itself has tests of its own.
RUNTIME_ARGV = [sys.executable, "-S", str(ROOT / "bin" / "om")]
MODULE_ARGV = [sys.executable, "-m", "om"]


def run_om(*args, input=None, env=None, cwd=None, timeout=60):
    """Run `om ARGS` from this tree and return its exit code, stdout and stderr."""
    full_env = {k: v for k, v in os.environ.items() if k != "OBSERVATIONAL_MEMORY_STORE"}
    full_env["PYTHONPATH"] = str(ROOT)
    if env:
        full_env.update(env)
    if isinstance(input, str):
        input = input.encode("utf-8")
    proc = subprocess.run(
        # A caller naming its own PYTHONPATH wants the om found there: only `-m om` looks.
        [*(MODULE_ARGV if env and "PYTHONPATH" in env else RUNTIME_ARGV), *[str(a) for a in args]],
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


def tree_bytes(root, mtimes=False):
    """{relative path: bytes} of every file under `root`: proof that nothing was written; with `mtimes`,
    {relative path: (bytes, modification time in ns)}: that nothing was even rewritten the same."""
    found = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                data = f.read()
            found[os.path.relpath(path, root)] = (data, os.stat(path).st_mtime_ns) if mtimes else data
    return found


def run_on_a_terminal(args, answer):
    """Run `om ARGS` with a terminal on stdin that answers `answer`: (exit code, stdout, stderr)."""
    import pty

    main, replica = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "OBSERVATIONAL_MEMORY_STORE"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.Popen([*RUNTIME_ARGV, *[str(a) for a in args]], stdin=replica, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    os.close(replica)
    os.write(main, answer.encode() + b"\n")
    out, err = proc.communicate(timeout=60)
    os.close(main)
    return proc.returncode, out.decode(), err.decode()


@pytest.fixture
def project_home(tmp_path, monkeypatch):
    """A project home of this test's own (om.project.home): the hooks and the CLI it starts inherit it."""
    path = tmp_path / "projects"
    monkeypatch.setenv("OM_PROJECT_HOME", str(path))
    return path


@pytest.fixture
def remote(tmp_path):
    """A bare repository reached by a file:// URL: the remote of the `om sync` tests."""
    from sync_support import bare_remote

    return bare_remote(tmp_path / "remote.git")


@pytest.fixture
def store(tmp_path):
    return tmp_path / "store"


@pytest.fixture
def om(store):
    """`om(*args, input=...)` bound to a throwaway store and session `s1`."""

    def call(*args, session="s1", **kw):
        return run_om("--store", store, "--session", session, *args, **kw)

    def setup(*args, session="s1", **kw):
        """The same call in process, for a step that arranges state (inprocess.setup_om)."""
        from inprocess import setup_om  # it imports this module

        return setup_om("--store", store, "--session", session, *args, **kw)

    call.store = store
    call.setup = setup
    return call


def _no_write_privileges():
    # Root ignores file modes; drop the capabilities that let it, so the
    # subprocess meets the store exactly as a sandboxed non-root shell would.
    if os.geteuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        for cap in (1, 2, 3):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER
            if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def run_read_only(store, *args, session="s1"):
    """Run om on a store it can read but not write, as a sandboxed shell meets it."""
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
            [*RUNTIME_ARGV, "--store", str(store), "--session", session, *args],
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


def make_entry(seq, text, importance="medium", kind="observation"):
    """An active ledger entry as `view --all` prints it (for the pure renderers)."""
    return {
        "seq": seq,
        "id": ("o-" if kind == "observation" else "r-") + f"{seq:024x}",
        "kind": kind,
        "timestamp": "2026-09-06T06:40:53Z",
        "importance": importance,
        "text": text,
        "support": [],
        "active": True,
        "retirement": None,
    }
