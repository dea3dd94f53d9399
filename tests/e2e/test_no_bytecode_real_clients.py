"""The real clients run om's hooks and MCP server without leaving bytecode in the plugin.

Claude Code runs a marketplace added from a folder (a clone) in place, and Codex runs the copy
it installed; bytecode written into either is shipped by every later copy. One turn of each,
with an environment that says nothing about bytecode (the suite's PYTHONPYCACHEPREFIX taken
out, as on a user's machine), leaves no `__pycache__` in the clone or in the installed copies:
the bytecode is in the plugin's data folder.
"""

from pathlib import Path

import pytest

from claude_harness import claude, claude_bin, claude_marketplace  # noqa: F401 (fixtures)
from claude_mock import say as claude_say
from claude_mock import shell as claude_shell
from codex_harness import codex, codex_bin, marketplace, thread_id  # noqa: F401 (fixtures)
from mock_model import say, shell

pytestmark = pytest.mark.e2e


def bytecode_in(tree):
    return sorted(str(p.relative_to(tree)) for p in Path(tree).rglob("*") if p.name == "__pycache__" or p.suffix == ".pyc")


@pytest.fixture
def no_bytecode_settings(monkeypatch):
    monkeypatch.delenv("PYTHONPYCACHEPREFIX", raising=False)
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)


def test_a_claude_code_turn_leaves_no_bytecode_in_the_clone_it_runs_the_plugin_from(
        no_bytecode_settings, claude, claude_marketplace):
    def script(request):
        if not request.tool_results():
            return claude_shell("echo marker-7c1d")
        return claude_say("Printed it.")

    home = claude(script).setup()
    run = home.run("Print the marker")
    assert run.returncode == 0, run
    assert run.session_id and home.sessions(), "the hooks captured nothing"
    assert bytecode_in(claude_marketplace) == []
    assert bytecode_in(home.config / "plugins" / "cache") == []
    assert list((home.data_dir / "pycache").rglob("*.pyc"))


def test_a_codex_turn_leaves_no_bytecode_in_the_copy_it_installed(no_bytecode_settings, codex, marketplace):
    def script(request):
        if not request.tool_outputs():
            return shell("echo marker-8e2f")
        return say("Printed it.")

    home = codex(script).setup()
    rc, events, err = home.exec("Print the marker")
    assert rc == 0, err[-2000:]
    assert thread_id(events) and home.sessions(), "the hooks captured nothing"
    assert bytecode_in(home.plugin_root) == [] and bytecode_in(marketplace) == []
    assert list((home.data_dir / "pycache").rglob("*.pyc"))
