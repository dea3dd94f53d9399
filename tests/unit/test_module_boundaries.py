"""Who may import what: no cycle among om's modules, the fast-path fence, the checksum the builder shares,
the release scripts."""

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


def om_imports(path, name):
    """{om module: line of its first import} of the module `name` at `path`, at its top or inside a function.

    `from P import N` imports P.N when that is a module, else P; relative imports count as the
    absolute names they resolve to."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            targets = [f"{base}.{a.name}" if module_path(f"{base}.{a.name}") else base for a in node.names]
        else:
            continue
        for target in targets:
            if target.split(".")[0] == "om" and module_path(target) is not None:
                found.setdefault(target, node.lineno)
    found.pop(name, None)
    return found


def module_path(name):
    path = ROOT.joinpath(*name.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def test_no_module_of_om_imports_itself_through_others_not_even_inside_a_function():
    # Function-level imports count: the hooks import lazily for speed, and a cycle is one
    # whenever its imports run.
    graph = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        graph[name] = om_imports(path, name)
    cycles, done = [], set()

    def visit(name, trail):
        if name in trail:
            loop = trail[trail.index(name):] + [name]
            cycles.append(" -> ".join(f"{a}:{graph[a][b]}" for a, b in zip(loop, loop[1:])) + f" -> {name}")
        elif name not in done:
            for imported in graph[name]:
                visit(imported, trail + [name])
            done.add(name)

    for name in graph:
        visit(name, [])
    assert not cycles, "import cycles:\n" + "\n".join(cycles)
