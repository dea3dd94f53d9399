"""Drive the real Claude Code CLI against the mock Messages API with this repository's plugin.

Invariant: each `ClaudeHome` is a throwaway CLAUDE_CONFIG_DIR and HOME whose only
model endpoint is the mock on 127.0.0.1 (ANTHROPIC_BASE_URL), with nonessential
traffic and the autoupdater off, and whose plugin was installed by the real
`claude plugin marketplace add` and `claude plugin install` commands from a clean
copy of this repository (the in-repo marketplace), or copied from such an installation
(see ClaudeHome.setup). Runs are `claude -p` with
stream-json output and bypassed permissions (root needs IS_SANDBOX=1 for that).
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from claude_mock import MockMessages
from codex_harness import export_marketplace
from conftest import RUNTIME_ARGV

ROOT = Path(__file__).resolve().parents[2]
MARKETPLACE = "observational-memory"
PLUGIN = "om"
PLUGIN_ID = f"{PLUGIN}@{MARKETPLACE}"
#: Claude Code names a plugin's MCP tools mcp__plugin_<plugin>_<server>__<tool>.
MCP_PREFIX = f"mcp__plugin_{PLUGIN}_om__"
#: How a hook's additionalContext reaches the model (a system message of the request).
STOP_CONTEXT = "Stop hook additional context: "


#: (claude binary, marketplace) -> (a copy of the configuration directory right after the
#: plugin was installed, the configuration directory it was installed in): ClaudeHome.setup.
_INSTALLED = {}


def claude_binary():
    """The pinned Claude Code CLI: $OM_CLAUDE_BIN, else the one scripts/install-claude caches."""
    explicit = os.environ.get("OM_CLAUDE_BIN")
    if explicit:
        return explicit
    out = subprocess.run(["bash", str(ROOT / "scripts" / "install-claude")], capture_output=True, text=True,
                         timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"scripts/install-claude failed: {out.stderr.strip()}")
    return out.stdout.strip().splitlines()[-1]


class Run:
    """One `claude -p` run: exit status, stream-json events, stderr."""

    def __init__(self, returncode, events, stderr):
        self.returncode = returncode
        self.events = events
        self.stderr = stderr

    @property
    def init(self):
        return next((e for e in self.events if e.get("type") == "system" and e.get("subtype") == "init"), {})

    @property
    def session_id(self):
        for e in self.events:
            if e.get("session_id"):
                return e["session_id"]
        raise AssertionError(f"no session_id in {self.events[:3]}")

    @property
    def result(self):
        return next((e for e in self.events if e.get("type") == "result"), {})

    def assistant_texts(self):
        out = []
        for e in self.events:
            if e.get("type") == "assistant":
                out += [b.get("text", "") for b in e["message"].get("content", []) if b.get("type") == "text"]
        return out

    def __repr__(self):
        return f"Run(rc={self.returncode}, result={self.result.get('result')!r}, stderr={self.stderr[-1500:]!r})"


class ClaudeHome:
    """One throwaway Claude Code installation: config dir, plugin, and `claude -p` runs."""

    def __init__(self, claude, base, marketplace_dir, mock):
        self.claude = claude
        self.base = Path(base)
        self.config = self.base / "config"
        self.home = self.base / "home"
        self.work = self.base / "work"
        for d in (self.config, self.home, self.work):
            d.mkdir(parents=True)
        self.marketplace_dir = marketplace_dir
        self.mock = mock
        # The folder Claude Code hands the plugin (CLAUDE_PLUGIN_DATA, deleted with it), and the
        # store beside the plugin folders where the hooks and the MCP server keep the memory.
        self.data_dir = self.config / "plugins" / "data" / f"{PLUGIN}-{MARKETPLACE}"
        self.store = self.config / "om"

    def env(self, extra=None):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OM_", "CLAUDE", "ANTHROPIC_", "OBSERVATIONAL_MEMORY", "PLUGIN_", "CODEX_"))}
        env.update(HOME=str(self.home), CLAUDE_CONFIG_DIR=str(self.config), ANTHROPIC_BASE_URL=self.mock.base_url,
                   ANTHROPIC_API_KEY="sk-ant-mock-key", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                   DISABLE_AUTOUPDATER="1", LANG="C.UTF-8")
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            env["IS_SANDBOX"] = "1"  # else bypassed permissions are refused to root
        env.update(extra or {})
        return env

    def cli(self, *args, timeout=120):
        proc = subprocess.run([self.claude, *args], env=self.env(), cwd=self.work, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            raise RuntimeError(f"claude {' '.join(args)} failed: {proc.stdout[-800:]} {proc.stderr[-800:]}")
        return proc.stdout

    def install_plugin(self):
        self.cli("plugin", "marketplace", "add", str(self.marketplace_dir))
        self.cli("plugin", "install", PLUGIN_ID)
        return self.installed()

    def installed(self):
        """This plugin's entry in `claude plugin list --json`, or None."""
        listed = json.loads(self.cli("plugin", "list", "--json"))
        entries = listed if isinstance(listed, list) else listed.get("plugins", listed.get("installed", []))
        return next((p for p in entries if isinstance(p, dict) and p.get("id", p.get("name")) == PLUGIN_ID), None)

    def setup(self):
        """The plugin installed by `claude plugin marketplace add` and `claude plugin install`.

        The first setup of a binary and marketplace in a test process runs both commands
        and keeps a copy of the configuration directory they left; later setups copy it
        into their own CLAUDE_CONFIG_DIR, moving the one absolute path Claude Code records
        there (each plugin's installPath). Tests about installing call install_plugin().
        """
        key = (self.claude, str(self.marketplace_dir))
        cached = _INSTALLED.get(key)
        if cached is None:
            self.install_plugin()
            copy = self.base.parent / f"installed-{len(_INSTALLED)}"
            shutil.copytree(self.config, copy, symlinks=True)
            _INSTALLED[key] = (copy, str(self.config))
            return self
        copy, recorded = cached
        shutil.copytree(copy, self.config, symlinks=True, dirs_exist_ok=True)
        listing = self.config / "plugins" / "installed_plugins.json"
        text = listing.read_text()
        assert recorded in text, "Claude Code no longer records the installPath there"
        listing.write_text(text.replace(json.dumps(recorded)[1:-1], json.dumps(str(self.config))[1:-1]))
        return self

    def run(self, prompt, *args, env=None, resume=None, timeout=120):
        cmd = [self.claude, "-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"]
        if resume:
            cmd += ["--resume", resume]
        cmd += [*args, prompt]
        try:
            proc = subprocess.run(cmd, env=self.env(env), cwd=self.work, capture_output=True, text=True,
                                  timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as e:
            raise AssertionError(f"claude -p timed out after {timeout}s; stderr: {e.stderr}") from None
        events = []
        for line in proc.stdout.splitlines():
            try:
                events.append(json.loads(line))
            except ValueError:
                pass
        return Run(proc.returncode, events, proc.stderr)

    def sessions(self):
        return sorted(self.store.glob("session-*")) if self.store.is_dir() else []


def om(store, session, *args, input=None):
    """Run this repository's `om` against a store, as the agent would; return the process."""
    env = {k: v for k, v in os.environ.items() if k != "OBSERVATIONAL_MEMORY_STORE"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([*RUNTIME_ARGV, "--store", str(store), "--session", session, *args],
                          input=input, capture_output=True, text=True, env=env, timeout=60)


def ledger(store, session, *args, input=None):
    """Parsed JSON output of a successful ledger command."""
    result = om(store, session, *args, input=input)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def ledger_command_in(text):
    """The ledger command a hook message advertised (the line with 'Ledger command')."""
    for line in text.splitlines():
        if "Ledger command" in line:
            return line.split(":", 1)[1].strip().removeprefix("(run it exactly, from any directory): ")
    raise AssertionError(f"no ledger command in {text[:500]!r}")


def session_in(text):
    """The session id the hook message gives for the MCP tools (`with session "..."`)."""
    marker = 'with session "'
    start = text.index(marker) + len(marker)
    return json.loads('"' + text[start:text.index('"', start)] + '"')


# -- pytest fixtures (imported by the e2e test modules) ---------------------------------


@pytest.fixture(scope="session")
def claude_bin():
    return claude_binary()


@pytest.fixture(scope="session")
def claude_marketplace(tmp_path_factory):
    return export_marketplace(tmp_path_factory.mktemp("claude-marketplace"))


@pytest.fixture
def claude(claude_bin, claude_marketplace, tmp_path):
    """`claude(script)` -> a ClaudeHome wired to a MockMessages serving `script`."""
    mocks = []

    def make(script):
        mock = MockMessages(script).start()
        mocks.append(mock)
        return ClaudeHome(claude_bin, tmp_path / f"claude{len(mocks)}", claude_marketplace, mock)

    yield make
    for mock in mocks:
        mock.stop()
        assert not mock.errors, mock.errors
