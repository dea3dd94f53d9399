"""A plugin installed from this very checkout is only what git tracks, whatever the suite made.

The marketplace added here is the checkout itself, while the suite runs: its virtualenv,
the Codex and Claude Code CLIs, bytecode and the e2e CODEX_HOMEs all exist by now, in the
development cache outside the tree (scripts/dev-cache). The repository root is the
plugin root, and both clients copy it whole: Codex with `.git` and ignored files
(dropping symlinks), Claude Code without `.git`. So the copy must hold exactly the
files git would commit, with the checkout's bytes.
"""

import os
import subprocess
from pathlib import Path

import pytest

from claude_harness import PLUGIN_ID as CLAUDE_PLUGIN_ID
from claude_harness import claude_bin  # noqa: F401 (fixture)
from codex_harness import PLUGIN_ID, ROOT, _outside_temp_dir, codex_bin  # noqa: F401 (fixture)
from devcache import dev_cache

pytestmark = pytest.mark.e2e


def committable_files():
    """The checkout's files as git sees them: tracked, or new and not ignored (what `git add -A` takes)."""
    listing = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             cwd=ROOT, capture_output=True, timeout=60, check=True)
    names = [n for n in listing.stdout.decode("utf-8").split("\0") if n]
    return {n for n in names if (ROOT / n).is_file() and not (ROOT / n).is_symlink()}


def files_under(copy):
    """Every file and link in `copy`, relative to it, but `.git`."""
    return {str(p.relative_to(copy)) for p in Path(copy).rglob("*")
            if (p.is_file() or p.is_symlink()) and p.relative_to(copy).parts[0] != ".git"}


def assert_only_the_committable_files(copy):
    expected, copied = committable_files(), files_under(copy)
    assert copied - expected == set(), f"the plugin copy holds {len(copied - expected)} file(s) git does not track, " \
                                       f"e.g. {sorted(copied - expected)[:10]}"
    assert expected - copied == set(), sorted(expected - copied)[:10]
    differing = [n for n in sorted(expected) if (Path(copy) / n).read_bytes() != (ROOT / n).read_bytes()]
    assert differing == [], differing[:10]


def test_the_suite_keeps_its_artefacts_in_the_development_cache_not_in_the_checkout():
    cache = dev_cache()
    assert not str(cache.resolve()).startswith(str(ROOT) + os.sep)
    ignored = subprocess.run(["git", "status", "--porcelain", "--ignored", "--untracked-files=all"], cwd=ROOT,
                             capture_output=True, text=True, timeout=60, check=True).stdout.splitlines()
    assert [line for line in ignored if line.startswith("!!")] == []


def test_codex_installs_from_the_checkout_exactly_the_files_git_tracks(codex_bin, tmp_path):
    home = _outside_temp_dir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX_", "OM_", "PLUGIN_"))}
    env.update(CODEX_HOME=str(home), HOME=str(tmp_path / "home"))

    def codex(*args):
        done = subprocess.run([codex_bin, *args], env=env, cwd=ROOT, capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    # A bare `.` is a path to Codex (0.169.0 and 0.171.0), as README.md and docs/codex.md say.
    codex("plugin", "marketplace", "add", ".", "--json")
    codex("plugin", "add", PLUGIN_ID, "--json")
    (copy,) = (home / "plugins" / "cache" / "observational-memory" / "om").iterdir()
    # Codex copies the root whole, `.git` too (a folder, or a file in a git worktree): a clean tree keeps it small.
    assert (copy / ".git").exists()
    assert_only_the_committable_files(copy)


def test_claude_code_installs_from_the_checkout_exactly_the_files_git_tracks(claude_bin, tmp_path):
    config, home = tmp_path / "config", tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "ANTHROPIC_", "OM_", "PLUGIN_"))}
    env.update(HOME=str(home), CLAUDE_CONFIG_DIR=str(config), CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
               DISABLE_AUTOUPDATER="1")

    def claude(*args):
        done = subprocess.run([claude_bin, *args], env=env, cwd=ROOT, capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
        return done.stdout

    # `.` is refused as a marketplace source, as the docs say; `./` is a directory.
    refused = subprocess.run([claude_bin, "plugin", "marketplace", "add", "."], env=env, cwd=ROOT,
                             capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert refused.returncode != 0 and "Invalid marketplace source format" in refused.stdout + refused.stderr, refused
    claude("plugin", "marketplace", "add", "./")
    claude("plugin", "install", CLAUDE_PLUGIN_ID)
    (copy,) = (config / "plugins" / "cache" / "observational-memory" / "om").iterdir()
    assert_only_the_committable_files(copy)
