"""Memory survives uninstalling, reinstalling and updating the plugin, with the real clients.

`claude plugin uninstall` deletes the plugin's data folder (Claude Code 2.1.332 keeps it
only with --keep-data) but keeps its cache copy, marked orphaned, and `codex plugin remove`
deletes the plugin's cache copy; the
store lives beside both, in the client's home. A store that an earlier version kept in
the data folder is moved there by the first hook, and so survives the next uninstall too.
"""

import json
import stat

import pytest

from claude_harness import PLUGIN_ID, claude, claude_bin, claude_marketplace, ledger  # noqa: F401 (fixtures)
from claude_mock import say as claude_say
from claude_mock import shell as claude_shell
from codex_harness import codex, codex_bin, marketplace, thread_id  # noqa: F401 (fixtures)
from inprocess import setup_om
from mock_model import say, shell

pytestmark = pytest.mark.e2e

OLD_NOTE = "Chose SQLite for the ledger, before the plugin was updated."


def claude_model(request):
    if not request.tool_results():
        return claude_shell("echo marker-1f0a")
    return claude_say("Printed the marker.")


def codex_model(request):
    if not request.tool_outputs():
        return shell("echo marker-2b9c")
    return say("Printed the marker.")


def earlier_versions_store(data):
    """A session ledger with one checkpointed observation, where earlier versions kept it: the data folder."""
    base = ["--store", data, "--session", "old-session"]
    source = json.loads(setup_om(*base, "capture", input=json.dumps(
        {"kind": "user", "text": "Use SQLite for the ledger.", "key": "p1"})).stdout)["source_id"]
    setup_om(*base, "apply", input=json.dumps(
        {"through": 1, "observations": [{"text": OLD_NOTE, "importance": "high", "source_ids": [source]}]}))


def memory(store, session):
    return [e["text"] for e in ledger(store, session, "view", "--all")]


def texts(store, session):
    return [s["text"] for s in ledger(store, session, "pending")["sources"]]


def test_claude_code_uninstall_and_reinstall_keep_every_session_and_the_old_store_moves_first(claude):
    home = claude(claude_model)
    home.setup()
    earlier_versions_store(home.data_dir)
    home.data_dir.chmod(0o755)  # as Claude Code makes it
    first = home.run("Print the marker")
    assert first.returncode == 0, first
    session = first.session_id
    assert memory(home.store, "old-session") == [OLD_NOTE]  # moved by the first hook
    assert "Print the marker" in texts(home.store, session)
    # om keeps both folders it stores in private.
    assert stat.S_IMODE(home.data_dir.stat().st_mode) == stat.S_IMODE(home.store.stat().st_mode) == 0o700

    (copy,) = (home.config / "plugins" / "cache" / "observational-memory" / "om").iterdir()
    home.cli("plugin", "uninstall", PLUGIN_ID)
    assert home.installed() is None and not home.data_dir.exists()  # Claude Code deleted its data folder
    assert (copy / ".orphaned_at").is_file()  # and kept its copy, marked orphaned (docs/claude.md#uninstall)
    assert memory(home.store, "old-session") == [OLD_NOTE]
    assert "Print the marker" in texts(home.store, session)

    home.cli("plugin", "install", PLUGIN_ID)
    again = home.run("Print it once more", resume=session)
    assert again.returncode == 0, again
    captured = texts(home.store, session)
    assert "Print the marker" in captured and "Print it once more" in captured
    assert memory(home.store, "old-session") == [OLD_NOTE]


def test_codex_remove_and_add_keep_every_session_and_the_old_store_moves_first(codex):
    home = codex(codex_model)
    home.setup()
    home.data_dir.mkdir(parents=True)
    earlier_versions_store(home.data_dir)
    rc, events, err = home.exec("Print the marker")
    assert rc == 0, err[-2000:]
    session = thread_id(events)
    assert memory(home.store, "old-session") == [OLD_NOTE]
    assert "Print the marker" in texts(home.store, session)

    home.codex_cli("plugin", "remove", PLUGIN_ID)
    assert not list(home.home.glob("plugins/cache/*/om"))
    assert memory(home.store, "old-session") == [OLD_NOTE]

    home.install_plugin()  # the same files again: Codex keeps their trust
    rc, events, err = home.exec("Print it once more", resume=session)
    assert rc == 0, err[-2000:]
    captured = texts(home.store, session)
    assert "Print the marker" in captured and "Print it once more" in captured
    assert memory(home.store, "old-session") == [OLD_NOTE]
