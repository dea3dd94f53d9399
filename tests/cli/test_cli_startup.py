"""What a command line loads before it runs: the hook no command table, a plain command no argparse.

Each case runs the runtime as the hooks and shells do (`python3 -I -S bin/om ...`)
under `-X importtime` and reads the modules it imported from stderr.
"""

import json
import subprocess
import sys

import pytest

from hook_drivers import RUNTIME, clean_env, recorded

CODEX_PROMPT = {"session_id": "startup", "turn_id": "t1", "cwd": "/", "model": "mock", "transcript_path": None,
                "permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": "Please fix the bug"}
CAPTURE = json.dumps({"kind": "tool", "text": "ls -la\ntotal 0", "key": "k"}).encode()


def loaded_by(*args, input=b""):
    """(the modules `om ARGS` imported, its completed process)."""
    proc = subprocess.run([sys.executable, "-I", "-S", "-X", "importtime", str(RUNTIME), *map(str, args)],
                          input=input, capture_output=True, env=clean_env(), timeout=60)
    lines = proc.stderr.decode("utf-8", "replace").splitlines()
    modules = {line.split("|")[-1].strip() for line in lines if line.startswith("import time:")}
    assert "om.cli" in modules, proc.stderr
    proc.stderr = "\n".join(line for line in lines if not line.startswith("import time:"))
    return modules, proc


@pytest.mark.parametrize("client,payload", [("codex", CODEX_PROMPT), ("claude", recorded("UserPromptSubmit"))],
                         ids=["codex", "claude"])
def test_the_registered_hook_command_loads_neither_argparse_nor_the_command_table(tmp_path, client, payload):
    modules, proc = loaded_by("--store", tmp_path / "store", "hook", "--client", client,
                              input=json.dumps(payload).encode())
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert "om.ledger" in modules  # the event really reached the ledger
    assert not {"argparse", "om.commands"} & modules


@pytest.fixture
def ledger(tmp_path):
    store = tmp_path / "store"
    proc = subprocess.run([sys.executable, "-I", "-S", str(RUNTIME), "--store", store, "--session", "s1", "capture"],
                          input=CAPTURE, capture_output=True, check=True)
    return ["--store", store, "--session", "s1"], json.loads(proc.stdout)["source_id"]


@pytest.mark.parametrize("words,input", [
    (["status"], b""), (["capture"], CAPTURE), (["pending"], b""), (["apply"], b'{"through": 0}'),
    (["prime"], b""), (["view"], b""), (["recall", "{source}"], b""), (["pause"], b""), (["resume"], b""),
    (["search", "total", "zero"], b""), (["sessions"], b""),
], ids=lambda v: v[0] if isinstance(v, list) else None)
def test_a_ledger_command_without_options_of_its_own_runs_without_argparse(ledger, words, input):
    scope, source = ledger
    words = [w.format(source=source) for w in words]
    for args in ([*scope, *words], [words[0], *scope, *words[1:]]):  # the scope options either side
        modules, proc = loaded_by(*args, input=input)
        assert proc.returncode == 0, proc.stderr
        assert "om.commands" in modules and "argparse" not in modules, args


def test_the_version_and_the_store_free_commands_run_without_argparse_and_print_what_argparse_did(tmp_path):
    modules, plain = loaded_by("--version")
    assert plain.returncode == 0 and "argparse" not in modules
    # With a scope option before it, argparse's own version action answers: the same line.
    modules, parsed = loaded_by("--store", tmp_path, "--version")
    assert parsed.returncode == 0 and "argparse" in modules
    assert plain.stdout == parsed.stdout and plain.stdout.startswith(b"om ") and plain.stderr == ""
    modules, proc = loaded_by("capabilities")
    assert proc.returncode == 0 and json.loads(proc.stdout)["clients"] and "argparse" not in modules


@pytest.mark.parametrize("args", [["status", "--help"], ["--help"], ["status", "--sto", "x"], ["view", "--all"],
                                  ["--store", "-x", "status"], ["nope"]])
def test_help_options_and_misplaced_words_still_go_through_argparse(tmp_path, args):
    modules, proc = loaded_by(*args)
    assert "argparse" in modules, args
    assert proc.returncode in (0, 64, 65, 66), (args, proc.returncode)


def test_a_command_line_argparse_reads_does_not_load_shutil_for_the_terminal_width(ledger):
    scope, _ = ledger
    modules, proc = loaded_by(*scope, "search", "--limit", "3", "total")
    assert proc.returncode == 0 and json.loads(proc.stdout)["results"] is not None, proc.stderr
    assert "argparse" in modules and "shutil" not in modules
