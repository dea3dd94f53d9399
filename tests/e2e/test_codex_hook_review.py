"""Reviewing and trusting the om hooks with the real Codex CLI: the TUI at start-up, and the routes
docs/codex.md gives for `codex exec` and fleets, run as written.

The TUI runs in a pseudo-terminal (it is only offered a model it never calls); what it draws is
read back as text with the terminal's control sequences dropped.
"""

import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import time
from fcntl import ioctl
from pathlib import Path

import pytest

from codex_harness import PLUGIN_ID, codex, codex_bin, marketplace  # noqa: F401 (fixtures)
from mock_model import say, shell

pytestmark = pytest.mark.e2e

DOCS = Path(__file__).resolve().parents[2] / "docs" / "codex.md"
DOWN, ENTER = b"\x1b[B", b"\r"


def model(request):
    if any(item.get("role") == "user" and "<hook_prompt" in json.dumps(item) for item in request.items):
        return say("Nothing to keep.")
    if not request.tool_outputs():
        return shell("echo review-marker")
    return say("Printed it.")


class Tui:
    """The Codex TUI in a pseudo-terminal of 160x50: keys in, the screen's text out."""

    def __init__(self, home):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: become the TUI
            os.chdir(home.work)
            os.execve(home.codex, [home.codex], dict(home.env(), TERM="xterm-256color"))
        ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
        self.raw = b""

    def read(self, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if not ready:
                continue
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                return
            self.raw += data
            if b"\x1b[6n" in data:  # the TUI asks where the cursor is
                os.write(self.fd, b"\x1b[1;1R")

    def wait_for(self, text, timeout=60):
        deadline = time.monotonic() + timeout
        while text not in self.text():
            assert time.monotonic() < deadline, f"the TUI never showed {text!r}: {self.text()[-1500:]!r}"
            self.read(0.5)

    def press(self, *keys):
        for key in keys:
            os.write(self.fd, key)
            self.read(1.0)

    def text(self):
        screen = self.raw.decode("utf-8", "replace")
        screen = re.sub(r"\x1b\[\d+;\d+H", "\n", screen)  # a cursor move starts a new run of text
        screen = re.sub(r"\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b\[[0-9;?>=]*[A-Za-z]|\x1b[=>()][0-9A-Za-z]?", "", screen)
        return re.sub(r"\s+", " ", screen)

    def close(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)
        os.close(self.fd)


def untrusted_install(home):
    """The plugin installed by the real `codex plugin` commands, its hooks not trusted yet, the work
    folder trusted (so the TUI goes straight to the hooks)."""
    home.write_config(top=f'\n[projects.{json.dumps(str(home.work))}]\ntrust_level = "trusted"\n')
    home.install_plugin()
    return home


def om_trust(home):
    return [h["trustStatus"] for h in home.list_hooks() if h.get("pluginId") == PLUGIN_ID]


def documented_fleet_commands():
    """The two commands docs/codex.md gives to copy the trust tables from one machine to another."""
    section = DOCS.read_text().split("### Trust without the TUI", 1)[1].split("\n## ", 1)[0]
    lines = [line.strip() for line in section.splitlines() if line.startswith("      ")]
    (grep,) = [line for line in lines if line.startswith("grep ")]
    (cat,) = [line for line in lines if line.startswith("cat ")]
    return grep, cat.split("#", 1)[0].strip()


def in_home(command, home):
    """A documented command with `~/.codex` meaning this CODEX_HOME."""
    return command.replace("~/.codex", str(home.home))


def test_the_tui_asks_at_start_up_trusts_all_and_the_documented_copy_trusts_another_machine(codex, tmp_path):
    first = untrusted_install(codex(model))
    assert set(om_trust(first)) == {"untrusted"}
    tui = Tui(first)
    try:
        tui.wait_for("5 hooks are new or changed")
        for choice in ("1. Review hooks", "2. Trust all and continue", "3. Continue without trusting (hooks won't run)"):
            assert choice in tui.text(), choice
        tui.press(ENTER)  # 1. Review hooks
        tui.wait_for("Lifecycle hooks from config and enabled plugins")
        tui.press(ENTER)  # the first event with an om hook
        tui.wait_for("Unnamed hook")
        assert "Plugin - om@observational-memory" in tui.text()
    finally:
        tui.close()
    tui = Tui(first)
    try:
        tui.wait_for("5 hooks are new or changed")
        tui.press(DOWN, ENTER)  # 2. Trust all and continue
        # Until the TUI has written the five trust tables (a loaded machine took more than 3 s), at most 60 s.
        config, deadline = first.home / "config.toml", time.monotonic() + 60
        while time.monotonic() < deadline and (
                not config.exists() or config.read_text().count('[hooks.state."om@observational-memory:') < 5):
            tui.read(0.5)
        tui.read(1.0)
    finally:
        tui.close()
    assert set(om_trust(first)) == {"trusted"}

    # Another machine: its own CODEX_HOME, the same plugin version installed for real.
    second = untrusted_install(codex(model))
    grep, cat = documented_fleet_commands()
    copied = subprocess.run(in_home(grep, first), shell=True, cwd=tmp_path, capture_output=True, text=True)
    assert copied.returncode == 0, copied.stderr
    assert (tmp_path / "om-trust.toml").read_text().count("[hooks.state.") == 5
    appended = subprocess.run(in_home(cat, second), shell=True, cwd=tmp_path, capture_output=True, text=True)
    assert appended.returncode == 0, appended.stderr
    assert set(om_trust(second)) == {"trusted"}
    rc, events, err = second.exec("Print the marker")
    assert rc == 0, err[-2000:]
    assert second.sessions(), "the copied trust did not make Codex run the om hooks"


def test_codex_exec_skips_untrusted_hooks_silently_and_bypassing_trust_runs_them_for_one_run(codex):
    home = untrusted_install(codex(model))
    rc, events, err = home.exec("Print the marker")
    assert rc == 0, err[-2000:]
    assert not home.sessions()
    rc, events, err = home.exec("Print the marker", "--dangerously-bypass-hook-trust")
    assert rc == 0, err[-2000:]
    assert len(home.sessions()) == 1
