"""The plugin Codex installs is only itself, whatever was built or installed in the checkout.

The marketplace added here is this very checkout, after the suite has set it up: a `.venv`
with the dev dependencies, the Codex CLIs under `.cache/`, and whatever the build left.
Codex copies the plugin folder whole (ignored files included), so the plugin root
`plugin/` must hold only what the plugin ships.
"""

import os
import re
import subprocess
from pathlib import Path

import pytest

from codex_harness import PLUGIN_ID, ROOT, _outside_temp_dir, codex_bin  # noqa: F401 (fixtures)

pytestmark = pytest.mark.e2e

LIMIT = 2_000_000
#: Bytecode Python writes beside a package's modules when the checkout's own runtime runs.
BYTECODE = re.compile(r"^(?P<dir>(?:.*/)?)__pycache__/(?P<module>[^/.]+)\.[a-z]+-\d+(?:\.opt-\d)?\.pyc$")


def shipped_files():
    """plugin/'s files as git sees them (tracked, or new and not ignored), relative to plugin/."""
    listing = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "plugin"],
                             cwd=ROOT, capture_output=True, timeout=60, check=True)
    names = [n for n in listing.stdout.decode("utf-8").split("\0") if n]
    return {n[len("plugin/"):] for n in names if (ROOT / n).is_file()}


def size_of(path):
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file() and not f.is_symlink())


def test_installing_from_a_checkout_that_ran_the_suite_copies_only_the_shipped_plugin_files(codex_bin, tmp_path):
    artefacts = sum(size_of(ROOT / d) for d in (".venv", ".cache", "dist", "build") if (ROOT / d).is_dir())
    assert artefacts > 50 * LIMIT, f"the checkout holds only {artefacts} bytes of artefacts: run the suite via scripts/test"
    home = _outside_temp_dir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX_", "OM_", "PLUGIN_"))}
    env["CODEX_HOME"] = str(home)

    def codex(*args):
        done = subprocess.run([codex_bin, *args], env=env, cwd=tmp_path, capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    codex("plugin", "marketplace", "add", str(ROOT), "--json")
    codex("plugin", "add", PLUGIN_ID, "--json")
    (copy,) = (home / "plugins" / "cache" / "observational-memory" / "om").iterdir()
    copied = {str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file() or p.is_symlink()}
    shipped = shipped_files()
    assert shipped <= copied, sorted(shipped - copied)
    extra = sorted(copied - shipped)
    # Bytecode Python wrote beside the package's modules (of this or an earlier checkout) is
    # the one thing a run leaves inside plugin/; anything else would be a shipped artefact.
    packages = {name.rsplit("/", 1)[0] + "/" for name in shipped if name.endswith("/__init__.py")}
    unexplained = [name for name in extra
                   if not (BYTECODE.match(name) and BYTECODE.match(name)["dir"] in packages)]
    assert unexplained == [], f"{len(unexplained)} file(s) the plugin does not ship, e.g. {unexplained[:10]}"
    total = size_of(copy)
    assert total < LIMIT, f"the plugin copy holds {total} bytes"
    assert size_of(copy) - sum((copy / n).stat().st_size for n in extra) == sum((ROOT / "plugin" / n).stat().st_size
                                                                                 for n in shipped)
