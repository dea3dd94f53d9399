"""Output for a person: JSON indented on a terminal (or with --pretty), one line when piped,
and hints that name `om` when PATH finds this very runtime."""

import json
import os
import pty
import select
import subprocess

import pytest

from conftest import ROOT, RUNTIME_ARGV, bytecode_env, run_om


def on_a_terminal(*args, input=b"", env=None):
    """Run `om ARGS` with stdout on a pseudo-terminal: (exit code, what the terminal showed, stderr)."""
    main, replica = pty.openpty()
    full_env = {k: v for k, v in os.environ.items() if k != "OBSERVATIONAL_MEMORY_STORE"}
    full_env.update(PYTHONPATH=str(ROOT), **(env or {}))
    proc = subprocess.Popen([*RUNTIME_ARGV, *map(str, args)], stdin=subprocess.PIPE, stdout=replica,
                            stderr=subprocess.PIPE, env=full_env)
    os.close(replica)
    proc.stdin.write(input)
    proc.stdin.close()
    shown = b""
    while True:
        ready, _, _ = select.select([main], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the replica side closed: the process is done writing
            break
        if not chunk:
            break
        shown += chunk
    err = proc.stderr.read()
    proc.wait(timeout=60)
    os.close(main)
    return proc.returncode, shown.decode().replace("\r\n", "\n"), err.decode()


@pytest.fixture
def session(om):
    sid = om("capture", input=json.dumps({"kind": "user", "text": "Cache the checkout in process.", "key": "k"}))
    receipt = om("apply", input=json.dumps({"through": 1, "observations": [
        {"text": "Checkout caches in process.", "source_ids": [sid.json["source_id"]]}]}))
    return om, sid.json["source_id"], receipt.json["observations"][0]


def commands(om, source, entry):
    """(argv, stdin) of each command whose JSON a person reads: the reads and the receipts."""
    scope = ["--store", om.store, "--session", "s1"]
    capture = json.dumps({"kind": "user", "text": "Another prompt.", "key": "k2"}).encode()
    return [
        ([*scope, "status"], b""),
        ([*scope, "recall", entry], b""),
        ([*scope, "search", "checkout"], b""),
        (["--store", om.store, "sessions", "--json"], b""),
        ([*scope, "capture"], capture),
        ([*scope, "apply"], json.dumps({"through": 1}).encode()),
        ([*scope, "pause"], b""),
        ([*scope, "resume"], b""),
    ]


def test_json_on_a_terminal_is_indented_and_piped_it_stays_one_line(session):
    om, source, entry = session
    for argv, stdin in commands(om, source, entry):
        piped = run_om(*argv, input=stdin)
        assert piped.returncode == 0, (argv, piped)
        assert piped.stdout.count("\n") == 1 and piped.stdout.endswith("\n"), (argv, piped.stdout[:200])
        code, shown, err = on_a_terminal(*argv, input=stdin)
        assert code == 0, (argv, err)
        assert shown.startswith("{\n  \"") and shown.endswith("}\n"), (argv, shown[:200])
        assert json.loads(shown) == json.loads(piped.stdout), argv


def test_pretty_indents_piped_json_before_or_after_the_command_and_changes_no_value(session):
    om, source, entry = session
    for argv, stdin in commands(om, source, entry):
        plain = run_om(*argv, input=stdin).stdout
        for pretty in (["--pretty", *argv], [*argv, "--pretty"]):
            r = run_om(*pretty, input=stdin)
            assert r.returncode == 0, (pretty, r)
            assert r.stdout.startswith("{\n  \"") and json.loads(r.stdout) == json.loads(plain), pretty


def test_pretty_keeps_numbers_exactly_as_captured(om):
    event = '{"input": {"n": 1e400, "m": 1.50}}'
    om("capture", input=json.dumps({"kind": "tool", "text": event, "key": "k"}))
    r = om("pending", "--pretty")
    assert r.returncode == 0, r
    assert json.loads(r.stdout)["sources"][0]["text"] == event and "\n  " in r.stdout


def test_text_output_and_the_hook_response_are_never_reindented(om, session):
    code, shown, _ = on_a_terminal("--store", om.store, "--session", "s1", "prime")
    assert code == 0 and shown.startswith("# om prime")
    start = json.dumps({"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup", "cwd": "/"})
    code, shown, _ = on_a_terminal("--store", om.store, "hook", "--client", "codex", input=start.encode())
    assert code == 0 and shown.count("\n") == 1 and json.loads(shown)["hookSpecificOutput"]


def _listing(line):
    return line.split("check the id (", 1)[1].rsplit(" lists the store's sessions)", 1)[0]


def test_the_no_ledger_hint_says_om_when_path_finds_this_runtime_and_it_runs_as_written(om, tmp_path):
    om("capture", input=json.dumps({"kind": "user", "text": "the real session", "key": "k"}))
    path = {"PATH": f"{ROOT / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    for argv in (["status"], ["pause"]):
        r = run_om("--store", om.store, "--session", "mistyped", *argv, env=path)
        named = _listing(r.stderr)
        assert named == f"om --store {os.path.realpath(om.store)} sessions", r.stderr
        listing = subprocess.run(named + " --json", shell=True, cwd=tmp_path, capture_output=True, text=True,
                                 env={**path, "HOME": str(tmp_path), **bytecode_env()})
        assert listing.returncode == 0, listing.stderr
        assert [s["session"] for s in json.loads(listing.stdout)["sessions"]] == ["s1"]
    # Where PATH finds no om (or another one), the hint keeps the exact interpreter and runtime.
    r = run_om("--store", om.store, "--session", "mistyped", "status", env={"PATH": "/usr/bin:/bin"})
    assert _listing(r.stderr).startswith(f"{os.path.abspath(RUNTIME_ARGV[0])} {ROOT / 'bin' / 'om'} --store ")
