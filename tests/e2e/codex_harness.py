"""Drive the real Codex CLI against the mock model with this repository's plugin.

Invariant: every test that drives the real Codex CLI runs once per version pinned in
scripts/codex-versions (or once, against $OM_CODEX_BIN); each `CodexHome` is a throwaway
CODEX_HOME in a folder Codex accepts one in, wherever the development cache is
(tests/codexhome.py: never under the temporary directory), whose only provider is the mock
on 127.0.0.1, whose plugin was installed by the real `codex plugin marketplace add`
and `codex plugin add` commands from a clean copy of this repository (the in-repo
marketplace), and whose hook trust entries were written the way the hook review
writes them: the hook identity hash computed with the documented recipe (and checked
against what the client reports), the plugin bundle fingerprint taken from the
client's own `hooks/list`.
"""

import atexit
import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

import codexhome
from conftest import RUNTIME_ARGV
from devcache import dev_cache
from mock_model import MockModel

ROOT = Path(__file__).resolve().parents[2]
MARKETPLACE = "observational-memory"
PLUGIN = "om"
PLUGIN_ID = f"{PLUGIN}@{MARKETPLACE}"
EVENT_SNAKE = {
    "SessionStart": "session_start", "UserPromptSubmit": "user_prompt_submit",
    "PostToolUse": "post_tool_use", "Stop": "stop", "Interrupt": "interrupt",
    "PreToolUse": "pre_tool_use", "SessionEnd": "session_end",
}
# Codex ignores a matcher on these events and clamps their timeouts (observed on 0.169.0).
MATCHERLESS = {"UserPromptSubmit", "Stop", "Interrupt", "SessionEnd"}
CLAMPED_TIMEOUT = {"SessionEnd": 3, "Interrupt": 3}


def pinned_versions():
    """The Codex CLI versions of scripts/codex-versions, in order."""
    lines = (ROOT / "scripts" / "codex-versions").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


def codex_versions():
    """What the Codex fixtures are parametrized over: the pinned versions, or $OM_CODEX_BIN alone."""
    return ["OM_CODEX_BIN"] if os.environ.get("OM_CODEX_BIN") else pinned_versions()


def codex_binary(version=None):
    """The Codex CLI binary: $OM_CODEX_BIN, else `version` (default the first pinned) as
    scripts/install-codex caches it."""
    explicit = os.environ.get("OM_CODEX_BIN")
    if explicit:
        return explicit
    version = version or pinned_versions()[0]
    out = subprocess.run(["bash", str(ROOT / "scripts" / "install-codex"), version], capture_output=True, text=True,
                         timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"scripts/install-codex failed: {out.stderr.strip()}")
    return out.stdout.strip().splitlines()[-1]


def system_bwrap_dir():
    """The directory of a system bubblewrap: the host's on PATH, else one scripts/install-bubblewrap
    unpacked; None when there is neither."""
    found = shutil.which("bwrap")
    if found:
        return Path(found).parent
    unpacked = dev_cache() / "bubblewrap" / "usr" / "bin"
    return unpacked if (unpacked / "bwrap").is_file() else None


def path_without_bwrap(path):
    """`path` as a host without bubblewrap has it: directories holding a `bwrap` are replaced by
    one directory of links to every other command they offer (the first on PATH wins)."""
    dirs = [d for d in path.split(os.pathsep) if d]
    if not any(os.path.isfile(os.path.join(d, "bwrap")) for d in dirs):
        return path
    masked = dev_cache() / "path-without-bwrap" / hashlib.sha256(path.encode()).hexdigest()[:16]
    if not masked.is_dir():
        staging = Path(tempfile.mkdtemp(prefix="staging-", dir=masked.parent if masked.parent.is_dir()
                                        else _mkdir(masked.parent)))
        seen = set()
        for d in dirs:
            if not os.path.isfile(os.path.join(d, "bwrap")):
                continue
            for name in sorted(os.listdir(d)):
                target = os.path.join(d, name)
                if name == "bwrap" or name in seen or not os.access(target, os.X_OK) or os.path.isdir(target):
                    continue
                seen.add(name)
                os.symlink(target, staging / name)
        try:
            os.rename(staging, masked)
        except OSError:  # another test process made it first
            shutil.rmtree(staging, ignore_errors=True)
    return os.pathsep.join(str(masked) if os.path.isfile(os.path.join(d, "bwrap")) else d for d in dirs)


def _mkdir(path):
    path.mkdir(parents=True, exist_ok=True)
    return path


#: The sandbox configurations the workspace-write tests run in: Codex's bundled bwrap (no
#: bwrap on PATH) and, when one is installed or could be unpacked, a system bwrap on PATH,
#: which Codex prefers and which needs the helper alias Codex creates in CODEX_HOME.
BWRAP = ["bundled bwrap"] + (["system bwrap"] if system_bwrap_dir() else [])

_HOMES = []
#: (codex binary, marketplace) -> (a copy of a CODEX_HOME with the plugin installed and
#: its hooks trusted, the plugin root inside it, the lines the install and trust added
#: to config.toml): see CodexHome.setup.
_INSTALLED = {}


def remove_home(home):
    """Remove a CODEX_HOME, first stopping what Codex left running from inside it.

    Codex's TUI starts a managed app-server daemon from `<home>/packages/` that outlives the
    CLI (0.169.0 and 0.171.0): left alone, it would run on after the suite, in a removed folder.
    """
    home = os.path.realpath(home)
    running = []
    for pid in os.listdir("/proc") if os.path.isdir("/proc") else ():
        try:
            if pid.isdigit() and os.readlink(f"/proc/{pid}/exe").startswith(home + os.sep):
                running.append(int(pid))
        except OSError:
            continue
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in running:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + 3
        while running and time.monotonic() < deadline:
            running = [pid for pid in running if os.path.exists(f"/proc/{pid}")]
            time.sleep(0.05)
    shutil.rmtree(home, ignore_errors=True)


def _outside_temp_dir():
    """A fresh directory for a CODEX_HOME where Codex accepts one (tests/codexhome.py), removed at exit."""
    # Short, like a real ~/.codex: the start context spells store paths out within a byte budget.
    made = Path(tempfile.mkdtemp(prefix="", dir=codexhome.new_parent(dev_cache())))
    if not _HOMES:
        atexit.register(_remove_homes)
    _HOMES.append(made)
    return made


def _remove_homes():
    while _HOMES:
        remove_home(_HOMES.pop())
    codexhome.remove_run_folder()


def export_marketplace(dest):
    """Copy the repository's own files (tracked and untracked, never ignored) to `dest`.

    The marketplace is the repository root, which is also its plugin; copying only
    what git knows keeps a developer's virtualenv and caches out of the export.
    """
    dest = Path(dest)
    listing = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             cwd=ROOT, capture_output=True, timeout=60)
    if listing.returncode != 0:
        raise RuntimeError("the end-to-end tests need the repository's git metadata to export the plugin")
    for name in listing.stdout.decode("utf-8").split("\0"):
        src = ROOT / name
        if not name or not src.is_file():
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
    return dest


def hook_identity_hash(event, group, handler):
    """The documented trust hash of one command hook (before ${PLUGIN_ROOT} substitution)."""
    timeout = max(1, int(handler.get("timeout", 600)))
    if event in CLAMPED_TIMEOUT:
        timeout = min(timeout, CLAMPED_TIMEOUT[event])
    normalized = {"type": "command", "command": handler["command"], "timeout": timeout,
                  "async": bool(handler.get("async", False))}
    if handler.get("statusMessage") is not None:
        normalized["statusMessage"] = handler["statusMessage"]
    identity = {"event_name": EVENT_SNAKE[event], "hooks": [normalized]}
    if event not in MATCHERLESS and group.get("matcher") is not None:
        identity["matcher"] = group["matcher"]
    blob = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _toml_string(s):
    return json.dumps(s, ensure_ascii=False)


class CodexHome:
    """One throwaway Codex installation: config, plugin, trust, and `codex exec` runs."""

    def __init__(self, codex, base, marketplace_dir, model, bwrap=None):
        self.codex = codex
        self.base = Path(base)
        self.home = _outside_temp_dir()
        self.work = self.base / "work"
        self.work.mkdir(parents=True)
        self.bwrap = bwrap
        self.marketplace_dir = marketplace_dir
        self.model = model
        # The folder Codex hands the plugin (PLUGIN_DATA), and the store beside the plugin
        # folders where the hooks and the MCP server keep the memory.
        self.data_dir = self.home / "plugins" / "data" / f"{PLUGIN}-{MARKETPLACE}"
        self.store = self.home / "om"

    def env(self, extra=None):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OM_", "CODEX_", "OBSERVATIONAL_MEMORY", "PLUGIN_"))}
        # A throwaway HOME, as for Claude Code: Codex snapshots the user's login shell
        # (`bash -l`) every run, and this machine's dotfiles (a version manager's init
        # and rehash) would be part of every test, at about 0.4 s a run.
        home = self.base / "home"
        home.mkdir(exist_ok=True)
        env.update(CODEX_HOME=str(self.home), MOCK_API_KEY="dummy-key", HOME=str(home))
        if self.bwrap == "bundled bwrap":
            env["PATH"] = path_without_bwrap(env.get("PATH", ""))
        elif self.bwrap == "system bwrap":
            env["PATH"] = f"{system_bwrap_dir()}{os.pathsep}{env.get('PATH', '')}"
        env.update(extra or {})
        return env

    def write_config(self, sandbox="danger-full-access", top=""):
        text = (
            'model = "mock-model"\n'
            'model_provider = "mock"\n'
            'approval_policy = "never"\n'
            f'sandbox_mode = "{sandbox}"\n'
            f"{top}"
            "\n[model_providers.mock]\n"
            'name = "Mock Responses API"\n'
            f'base_url = "{self.model.base_url}"\n'
            'wire_api = "responses"\n'
            'env_key = "MOCK_API_KEY"\n'
            "request_max_retries = 0\n"
            "stream_max_retries = 0\n"
            "\n[features]\n"
            "unbounded_connection_retries = false\n"
        )
        (self.home / "config.toml").write_text(text)

    def codex_cli(self, *args, timeout=120):
        proc = subprocess.run([self.codex, *args], env=self.env(), cwd=self.work, capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            raise RuntimeError(f"codex {' '.join(args)} failed: {proc.stderr.strip()[-800:]}")
        return proc.stdout

    def install_plugin(self):
        added = json.loads(self.codex_cli("plugin", "marketplace", "add", str(self.marketplace_dir), "--json"))
        assert added["marketplaceName"] == MARKETPLACE, added
        installed = json.loads(self.codex_cli("plugin", "add", PLUGIN_ID, "--json"))
        self.plugin_root = Path(installed["installedPath"])
        return installed

    def list_hooks(self):
        """The client's own view of the discovered hooks (`codex app-server`, hooks/list)."""
        proc = subprocess.Popen([self.codex, "app-server"], env=self.env(), cwd=self.work, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            def send(msg):
                proc.stdin.write(json.dumps(msg) + "\n")
                proc.stdin.flush()

            def receive(want):
                while True:
                    line = proc.stdout.readline()
                    if not line:
                        raise RuntimeError("codex app-server closed its output")
                    msg = json.loads(line)
                    if msg.get("id") == want:
                        if "error" in msg:
                            raise RuntimeError(f"app-server: {msg['error']}")
                        return msg["result"]

            send({"id": 1, "method": "initialize",
                  "params": {"clientInfo": {"name": "om-tests", "title": "om tests", "version": "1"}}})
            receive(1)
            send({"method": "initialized"})
            send({"id": 2, "method": "hooks/list", "params": {"cwds": [str(self.work)]}})
            result = receive(2)
        finally:
            proc.stdin.close()
            proc.terminate()
            proc.wait(timeout=10)
        return [hook for entry in result.get("data", []) for hook in entry.get("hooks", [])]

    def trust_plugin_hooks(self):
        """Write the trust entries the hook review would write; return the listed hooks."""
        spec = json.loads((self.plugin_root / "hooks" / "codex.json").read_text())
        expected = {}
        for event, groups in spec["hooks"].items():
            for gi, group in enumerate(groups):
                for hi, handler in enumerate(group["hooks"]):
                    key = f"{PLUGIN_ID}:hooks/codex.json:{EVENT_SNAKE[event]}:{gi}:{hi}"
                    expected[key] = hook_identity_hash(event, group, handler)
        listed = [h for h in self.list_hooks() if h.get("pluginId") == PLUGIN_ID]
        entries = []
        for hook in listed:
            identity, _, bundle = hook["currentHash"].partition("/")
            if expected.get(hook["key"]) != identity:
                raise AssertionError(f"trust recipe disagrees with the client for {hook['key']}: "
                                     f"{expected.get(hook['key'])} != {identity}")
            entries.append(f"\n[hooks.state.{_toml_string(hook['key'])}]\n"
                           f"trusted_hash = {_toml_string(identity)}\n"
                           f"trusted_content_hash = {_toml_string(bundle)}\n")
        if sorted(h["key"] for h in listed) != sorted(expected):
            raise AssertionError(f"hooks/list shows {[h['key'] for h in listed]}, hooks/codex.json has {sorted(expected)}")
        with open(self.home / "config.toml", "a") as fh:
            fh.write("".join(entries))
        return listed

    def setup(self, sandbox="danger-full-access", top=""):
        """Config, the plugin installed by `codex plugin add`, its hooks trusted.

        The first setup of a Codex binary and marketplace in a test process installs and
        trusts for real (checking the trust recipe against `hooks/list`) and keeps a copy
        of the result; later setups copy that installation into their own CODEX_HOME
        (Codex keeps no absolute CODEX_HOME path in it) and append the same trust
        entries. Tests about installing or trusting call those steps themselves.
        """
        self.write_config(sandbox=sandbox, top=top)
        key = (self.codex, str(self.marketplace_dir))
        cached = _INSTALLED.get(key)
        if cached is None:
            before = (self.home / "config.toml").read_text()
            self.install_plugin()
            self.trust_plugin_hooks()
            after = (self.home / "config.toml").read_text()
            if after.startswith(before) and self.plugin_root.is_relative_to(self.home):
                copy = Path(tempfile.mkdtemp(prefix="installed-", dir=self.home.parent))
                _HOMES.append(copy)
                shutil.copytree(self.home, copy, dirs_exist_ok=True, symlinks=True)
                (copy / "config.toml").unlink()
                _INSTALLED[key] = (copy, self.plugin_root.relative_to(self.home), after[len(before):])
            return self
        copy, plugin_root, config_added = cached
        shutil.copytree(copy, self.home, dirs_exist_ok=True, symlinks=True)
        with open(self.home / "config.toml", "a") as fh:
            fh.write(config_added)
        self.plugin_root = self.home / plugin_root
        return self

    def exec(self, prompt, *args, env=None, timeout=120, interrupt_after=None, resume=None, fork=None):
        """Run one `codex exec` turn (of a resumed or forked thread); return (returncode, --json events, stderr)."""
        cmd = [self.codex, "exec"]
        if resume:
            cmd += ["resume", resume]
        if fork:
            cmd += ["fork", fork]
        cmd += ["--skip-git-repo-check", "--json", *args, prompt]
        proc = subprocess.Popen(cmd, env=self.env(env), cwd=self.work, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if interrupt_after is not None:
            deadline = time.monotonic() + timeout
            while not interrupt_after() and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError(f"codex exec timed out after {timeout}s; stderr: {err[-2000:]}") from None
        events = []
        for line in out.splitlines():
            try:
                events.append(json.loads(line))
            except ValueError:
                pass
        return proc.returncode, events, err

    def untrust_hooks(self):
        """Take the hook trust entries out of config.toml (as before the user's hook review); return them."""
        kept, dropped, into = [], [], None
        for line in (self.home / "config.toml").read_text().splitlines(True):
            if line.startswith("["):
                into = dropped if line.startswith("[hooks.state.") else kept
            (into if into is not None else kept).append(line)
        (self.home / "config.toml").write_text("".join(kept))
        return "".join(dropped)

    def trust_again(self, entries):
        """Put back what untrust_hooks took out."""
        with open(self.home / "config.toml", "a") as fh:
            fh.write("\n" + entries)

    def sessions(self):
        """Session directories the plugin's hooks created in their store."""
        return sorted(self.store.glob("session-*")) if self.store.is_dir() else []


def agent_messages(events):
    return [e["item"]["text"] for e in events
            if e.get("type") == "item.completed" and e.get("item", {}).get("type") == "agent_message"]


def thread_id(events):
    for e in events:
        if e.get("type") == "thread.started":
            return e["thread_id"]
    raise AssertionError(f"no thread.started event in {events[:5]}")


def om(store, session, *args, input=None):
    """Run this repository's `om` against a store, as the agent would; return the process."""
    env = {k: v for k, v in os.environ.items() if k != "OBSERVATIONAL_MEMORY_STORE"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([*RUNTIME_ARGV, "--store", str(store), "--session", session, *args],
                          input=input, capture_output=True, text=True, env=env, timeout=60)


# -- pytest fixtures (imported by the e2e test modules; a conftest.py here would shadow
#    the root conftest module that other tests import from) --------------------------


@pytest.fixture(scope="session", params=codex_versions(), ids=lambda v: f"codex-{v}")
def codex_bin(request):
    yield codex_binary(None if request.param == "OM_CODEX_BIN" else request.param)
    # Every CodexHome hangs off this fixture; pytest-xdist workers end without atexit.
    _INSTALLED.clear()
    _remove_homes()


@pytest.fixture(params=BWRAP)
def bwrap(request):
    """For workspace-write tests: the sandbox configuration (see BWRAP); other tests run as the host is."""
    return request.param


@pytest.fixture(scope="session")
def marketplace(tmp_path_factory):
    return export_marketplace(tmp_path_factory.mktemp("marketplace"))


@pytest.fixture
def codex(codex_bin, marketplace):
    """`codex(script)` -> a CodexHome wired to a MockModel serving `script`."""
    models = []
    # On disk, not in the suite's tmp_path: that may be in /dev/shm, and Codex's sandbox
    # mounts its own /dev, where the plugin copy and the store would not exist.
    base = Path(tempfile.mkdtemp(prefix="om-codex-"))

    def make(script, bwrap=None):
        model = MockModel(script).start()
        models.append(model)
        return CodexHome(codex_bin, base / f"codex{len(models)}", marketplace, model, bwrap=bwrap)

    yield make
    for model in models:
        model.stop()
    shutil.rmtree(base, ignore_errors=True)
    for model in models:
        assert not model.errors, model.errors
