"""om/ imports nothing outside the standard library, and the hot path imports little of it."""

import ast
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT

PACKAGE = ROOT / "om"
# CPython 3.12 renamed the C SHA-256 module; om tries both names.
RENAMED_STDLIB = {"_sha256", "_sha2"}

# Nothing a local, offline command needs: network, processes, threads, heavy
# helpers, and the pure-Python wrappers om deliberately bypasses (json -> _json,
# hashlib -> _sha256, sqlite3 -> _sqlite3).
FORBIDDEN_ON_HOT_PATH = {
    "urllib", "http", "ssl", "socket", "email", "subprocess", "threading", "asyncio", "select",
    "dataclasses", "typing", "inspect", "logging", "pathlib", "tempfile", "zipfile", "uuid",
    "random", "datetime", "json", "hashlib", "_hashlib", "sqlite3",
}


def _imports(path):
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.lineno, node.module
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "__import__":
            yield node.lineno, "__import__(...)"
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module":
            yield node.lineno, "importlib.import_module(...)"


def test_om_imports_only_the_standard_library_and_itself():
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 5
    allowed = set(sys.stdlib_module_names) | RENAMED_STDLIB | {"om"}
    foreign = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in files
        for line, name in _imports(path)
        if name.split(".")[0] not in allowed
    ]
    assert foreign == []


def _modules_loaded_by(tmp_path, *args, input=b""):
    env = {k: v for k, v in os.environ.items() if k != "OBSERVATIONAL_MEMORY_STORE"}
    env["PYTHONPATH"] = str(ROOT)
    # -S: only what om itself pulls in, not whatever .pth files this machine has.
    proc = subprocess.run(
        [sys.executable, "-S", "-X", "importtime", "-m", "om", "--store", str(tmp_path / "store"),
         "--session", "s1", *args],
        input=input, capture_output=True, env=env, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.decode().splitlines()
    assert lines and lines[0].startswith("import time:")
    return {line.split("|")[-1].strip() for line in lines[1:] if line.startswith("import time:")}


CAPTURE = json.dumps({"kind": "tool", "text": "ls -la\ntotal 0", "key": "k"}).encode()


@pytest.mark.parametrize(
    "args,input",
    [
        (("capture",), CAPTURE),
        (("apply",), b'{"through": 0}'),
        (("pending",), b""),
        (("status",), b""),
        (("view",), b""),
        (("prime",), b""),
    ],
    ids=["capture", "apply", "pending", "status", "view", "prime"],
)
def test_ledger_commands_do_not_import_what_they_do_not_use(tmp_path, args, input):
    if args == ("apply",):
        _modules_loaded_by(tmp_path, "capture", input=CAPTURE)  # apply needs a session: capture begins it
    loaded = _modules_loaded_by(tmp_path, *args, input=input)
    assert "om.ledger" in loaded  # the command really ran
    assert sorted(m for m in loaded if m.split(".")[0] in FORBIDDEN_ON_HOT_PATH) == []


def test_capture_does_not_load_the_rendering_or_transfer_code(tmp_path):
    loaded = _modules_loaded_by(tmp_path, "capture", input=CAPTURE)
    assert not {"om.render", "om.transfer"} & loaded


@pytest.mark.parametrize("args,input", [(("capture",), CAPTURE), (("prime",), b"")], ids=["capture", "prime"])
def test_the_export_package_stays_off_the_other_commands_paths(tmp_path, args, input):
    loaded = _modules_loaded_by(tmp_path, *args, input=input)
    assert "om.ledger" in loaded and not {m for m in loaded if m.startswith("om.export")}
