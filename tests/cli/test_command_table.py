"""The command table: every command `om --help` lists is reachable and takes the scope options,
but `om self`, which reads no store or session."""

import re

from conftest import run_om


def listed_commands():
    r = run_om("--help")
    assert r.returncode == 0, r
    # argparse lists each command indented by four spaces under COMMAND.
    return re.findall(r"^    ([a-z][a-z-]*)", r.stdout, re.M)


def test_every_listed_command_answers_its_own_help_and_all_but_self_accept_store_and_session_after_it():
    commands = listed_commands()
    assert {"capture", "apply", "prime", "search", "doctor", "mcp", "hook", "self"} <= set(commands)
    for command in commands:
        r = run_om(command, "--help")
        assert r.returncode == 0 and r.stderr == "", (command, r)
        offered = "--store" in r.stdout and "--session" in r.stdout
        assert offered == (command != "self"), command


def test_a_missing_command_is_a_usage_error_and_never_exit_2(tmp_path):
    r = run_om("--store", tmp_path / "s", "--session", "x")
    assert r.returncode == 64 and r.stdout == "" and len(r.stderr.splitlines()) == 1, r
    r = run_om("no-such-command")
    assert r.returncode == 64 and len(r.stderr.splitlines()) == 1, r
