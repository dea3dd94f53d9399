"""Who may import what: the fast-path fence, the checksum the builder shares, the release scripts."""

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "om"
# Private stdlib modules om uses only to skip a public module's import cost.
FENCED = {"_json", "_sha256", "_sha2", "_functools"}


def imported(path):
    tree = ast.parse(Path(path).read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield "." * node.level + (node.module or "")


def test_only_the_fast_path_fence_imports_private_stdlib_modules_for_speed():
    fence = PACKAGE / "fastpath.py"
    outside = sorted(
        f"{path.relative_to(ROOT)}: {name}"
        for path in PACKAGE.rglob("*.py") if path != fence
        for name in imported(path) if name.split(".")[0] in FENCED
    )
    assert outside == []
    assert FENCED <= set(imported(fence))


def test_the_checksum_the_builder_runs_imports_no_om_module():
    names = set(imported(PACKAGE / "selfupdate" / "checksum.py"))
    assert names == {"hashlib"}
    assert "om" not in {n.split(".")[0] for n in imported(ROOT / "build" / "zipapp.py")}


def test_the_release_scripts_do_not_import_each_other():
    publish = set(imported(ROOT / "release" / "publish.py"))
    pin = set(imported(ROOT / "release" / "pin_plugin.py"))
    assert "pin_plugin" in publish and "publish" not in pin
    assert "publish" not in set(imported(ROOT / "release" / "github_api.py"))
    assert "pin_plugin" not in set(imported(ROOT / "release" / "github_api.py"))
