"""The repository's top level is the design card's, and the repository root is the plugin of both clients."""

import json
import subprocess

from conftest import ROOT

#: The design card's top level, and what makes the root the plugin root of Codex and Claude Code.
CARD = ["pyproject.toml", "om/__init__.py", "om/selfupdate/__init__.py", "om/codex/__init__.py", "build/zipapp.py",
        "release", "tests", "plugin-pins.json"]
PLUGIN_ROOT = [".codex-plugin/plugin.json", ".claude-plugin/plugin.json", ".claude-plugin/marketplace.json",
               ".agents/plugins/marketplace.json", "hooks/hooks.json", "hooks/codex.json", "hooks/om-hook",
               "skills/observational-memory/SKILL.md", ".mcp.json", "bin/om"]


def tree_files():
    listing = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, check=True, timeout=60)
    return [n for n in listing.stdout.decode("utf-8").split("\0") if n]


def test_the_design_cards_top_level_and_the_plugin_files_are_at_the_repository_root():
    missing = [p for p in CARD + PLUGIN_ROOT if not (ROOT / p).exists()]
    assert missing == []
    assert not (ROOT / "plugin").exists()


def test_both_marketplaces_list_the_repository_root_as_the_plugin():
    (codex,) = json.loads((ROOT / ".agents" / "plugins" / "marketplace.json").read_text())["plugins"]
    (claude,) = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())["plugins"]
    assert codex["source"] == {"source": "local", "path": "./"}
    assert claude["source"] == "./"


def test_there_is_one_om_package_in_the_tree():
    others = [n for n in tree_files()
              if (n.endswith("/om/__init__.py") or n == "om.py" or n.endswith("/om.py"))]
    assert others == []
    assert "om/__init__.py" in tree_files()
