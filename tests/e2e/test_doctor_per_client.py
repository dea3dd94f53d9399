"""`om doctor` judges the client its copy runs for and every client the user has om in, with the
real Claude Code and Codex CLIs: a Claude Code-only, a Codex-only and a two-client install that
work are all `ok`, and the copy names the client it belongs to.

Doctor runs exactly as docs/claude.md and docs/codex.md tell users to run it: the runtime of the
plugin's copy in the client's plugin cache, by its path.
"""

import glob
import json
import os
import subprocess
import sys

import pytest

from claude_harness import claude, claude_bin, claude_marketplace  # noqa: F401 (fixtures)
from claude_mock import say as claude_say
from claude_mock import shell as claude_shell
from codex_harness import codex, codex_bin, marketplace  # noqa: F401 (fixtures)
from mock_model import say, shell

pytestmark = pytest.mark.e2e


def claude_model(request):
    if not request.tool_results():
        return claude_shell("echo doctor-sample")
    return claude_say("Printed it.")


def codex_model(request):
    if any(item.get("role") == "user" and "<hook_prompt" in json.dumps(item) for item in request.items):
        return say("Nothing worth keeping yet.")
    if not request.tool_outputs():
        return shell("echo doctor-sample")
    return say("Printed it.")


def doctor(copy_glob, env, *args):
    """(report, text) of the runtime in the plugin copy the documented glob names."""
    (copy,) = glob.glob(copy_glob)
    command = [sys.executable, os.path.join(copy, "bin", "om"), "doctor", *args]
    data = subprocess.run(command + ["--json"], env=env, capture_output=True, text=True, timeout=90)
    assert data.stdout, data.stderr
    text = subprocess.run(command, env=env, capture_output=True, text=True, timeout=90)
    report = json.loads(data.stdout)
    report["exit"] = data.returncode
    return report, text.stdout, copy


def user_env(base, codex_home=None, claude_config=None, codex_bin=None):
    """A user's shell: their HOME, the client homes they have, codex on PATH when they have it."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OM_", "CODEX_", "CLAUDE", "OBSERVATIONAL_MEMORY", "PLUGIN_", "PYTHON"))}
    env.update(HOME=str(base / "user-home"), CODEX_HOME=str(codex_home or base / "no-codex"),
               CLAUDE_CONFIG_DIR=str(claude_config or base / "no-claude"))
    if codex_bin:
        env["PATH"] = os.path.dirname(codex_bin) + os.pathsep + env.get("PATH", "")
    return env


def not_ok(report):
    return [(c["check"], c["status"], c["finding"]) for c in report["checks"] if c["status"] != "ok"]


def test_the_claude_code_copys_doctor_judges_claude_code_alone_and_says_ok(claude, codex_bin):
    home = claude(claude_model)
    home.setup()
    run = home.run("Print doctor-sample with the shell")
    assert run.returncode == 0, run
    # Codex is on PATH, without om in it: nothing about it is judged.
    env = user_env(home.base, claude_config=home.config, codex_bin=codex_bin)
    report, text, copy = doctor(str(home.config / "plugins/cache/observational-memory/om/*"), env)
    assert report["status"] == "ok" and report["exit"] == 0, not_ok(report)
    assert report["clients"] == ["claude"] and report["run_for"] == "claude"
    assert report["stores"] == [str(home.store)]
    names = [c["check"] for c in report["checks"]]
    assert not [n for n in names if n.startswith(("codex.", "capture"))], names
    assert {"claude.plugin", "claude.hooks", "claude.mcp", "claude.capture.Stop"} <= set(names)
    version = next(c for c in report["checks"] if c["check"] == "runtime.version")["finding"]
    assert f"plugin-managed: the Claude Code plugin's copy in {copy}" in version
    assert text.startswith(f"om doctor: ok (for Claude Code; store {home.store})")


def test_with_both_clients_working_either_copys_doctor_judges_both_and_says_ok(claude, codex):
    claude_home = claude(claude_model)
    claude_home.setup()
    assert claude_home.run("Print doctor-sample with the shell").returncode == 0
    codex_home = codex(codex_model)
    codex_home.setup()
    rc, _, err = codex_home.exec("Print doctor-sample with the shell")
    assert rc == 0, err[-2000:]
    env = user_env(claude_home.base, codex_home.home, claude_home.config, codex_home.codex)
    for run_for, copies in (("codex", codex_home.home / "plugins/cache/observational-memory/om/*"),
                            ("claude", claude_home.config / "plugins/cache/observational-memory/om/*")):
        report, text, _ = doctor(str(copies), env)
        assert report["status"] == "ok" and report["exit"] == 0, (run_for, not_ok(report))
        assert text.startswith("om doctor: ok (for ")
        assert report["run_for"] == run_for
        assert sorted(report["clients"]) == ["claude", "codex"]
        assert sorted(report["stores"]) == sorted([str(claude_home.store), str(codex_home.store)])
        names = {c["check"] for c in report["checks"]}
        assert {"codex.trust", "capture.Stop", "claude.plugin", "claude.capture.Stop"} <= names
