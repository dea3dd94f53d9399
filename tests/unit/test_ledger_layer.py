"""The ledger layer's boundaries, read from the sources of om/.

Only om.sqlite talks to SQLite's modules (loaded for it by om.fastpath); storage (the ledger layer and the
store) imports neither rendering nor an adapter; every derived table follows
the one protocol of om.derived.
"""

import ast
import importlib

from conftest import ROOT

PACKAGE = ROOT / "om"
SQLITE_MODULES = {"sqlite3", "_sqlite3"}
# om.sqlite, and the fast-path fence that loads `_sqlite3` for it (without functools).
LEDGER_LAYER = {"om/sqlite.py", "om/fastpath.py"}
STORAGE = [
    "om/sqlite.py",
    *(f"om/ledger/{p.name}" for p in (PACKAGE / "ledger").glob("*.py")),
    "om/store.py",
    *(str(p.relative_to(ROOT)) for p in (PACKAGE / "derived").rglob("*.py")),
]
PRESENTATION_AND_ADAPTERS = ("om.render", "om.views", "om.codex", "om.claude", "om.adapter", "om.mcp", "om.cli",
                             "om.commands", "om.doctor")


def _imported(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module
            yield from (f"{node.module}.{alias.name}" for alias in node.names)


def test_only_the_ledger_layer_imports_sqlite3_or_its_c_module():
    importers = sorted(
        str(path.relative_to(ROOT))
        for path in PACKAGE.rglob("*.py")
        if SQLITE_MODULES & {name.split(".")[0] for name in _imported(path)}
    )
    assert importers and set(importers) <= LEDGER_LAYER, importers


def test_storage_imports_no_rendering_and_no_adapter():
    leaks = [
        f"{rel}: {name}"
        for rel in STORAGE
        for name in _imported(ROOT / rel)
        if name.startswith(PRESENTATION_AND_ADAPTERS)
    ]
    assert leaks == []


def test_storage_names_no_adapter_meta_key():
    from om.claude.state import STATE as CLAUDE
    from om.codex.state import STATE as CODEX

    keys = {key for state in (CODEX, CLAUDE) for key in (*state.legacy, state.prefix)}
    mentions = [
        f"{rel}: {key}"
        for rel in STORAGE
        for key in keys
        if f'"{key}' in (ROOT / rel).read_text(encoding="utf-8")
    ]
    assert mentions == []


def test_every_derived_table_has_a_versioned_name_a_catch_up_and_an_invalidate():
    # A table is a module of om/derived, or a package there (its parts are its own business).
    for path in sorted((PACKAGE / "derived").glob("*.py")) + sorted((PACKAGE / "derived").glob("*/__init__.py")):
        if path.name == "__init__.py" and path.parent.name == "derived":
            continue
        module = importlib.import_module(f"om.derived.{path.stem if path.name != '__init__.py' else path.parent.name}")
        assert module.NAME.startswith("om_"), path.name
        assert callable(module.catch_up) and callable(module.invalidate), path.name


def test_no_derived_table_decodes_an_entry_body_of_its_own_but_reads_it_through_the_ledger():
    decoders = [
        path.name
        for path in sorted((PACKAGE / "derived").rglob("*.py"))
        if "om.jsonio.loads" in set(_imported(path))
    ]
    assert decoders == []
    from om.ledger.recall import entry_fields

    body = '{"kind": "observation", "timestamp": "2026-01-01T00:00:00Z", "text": "t", "support": ["s-1"]}'
    assert entry_fields(7, "o-1", body) == {"seq": 7, "id": "o-1", "kind": "observation", "importance": "medium",
                                          "timestamp": "2026-01-01T00:00:00Z", "text": "t", "support": ["s-1"]}
