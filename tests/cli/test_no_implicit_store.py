"""There is no implicit store (the contract), but the error names the stores that exist, as arguments."""

import shlex

import pytest

from conftest import run_om


def without_store(home, *args, **env):
    return run_om(*args, env={"HOME": str(home), "CODEX_HOME": "", "CLAUDE_CONFIG_DIR": "", **env})


@pytest.mark.parametrize("command", [("sessions",), ("--session", "s1", "status"), ("search", "x", "--all-sessions")])
def test_without_a_store_the_error_names_each_clients_existing_store_with_the_exact_argument(tmp_path, command):
    home = tmp_path / "home"
    (home / ".codex" / "om").mkdir(parents=True)
    (home / ".claude" / "om").mkdir(parents=True)
    r = without_store(home, *command)
    assert r.returncode == 64 and r.stdout == ""
    assert r.stderr == ("om: --store is required (or set OBSERVATIONAL_MEMORY_STORE=DIR); the stores here: "
                        f"--store {home}/.codex/om (Codex), --store {home}/.claude/om (Claude Code)\n")
    # The arguments it names work as written.
    for argument in r.stderr.split("the stores here: ", 1)[1].strip().split(", "):
        words = shlex.split(argument.split(" (")[0])
        assert run_om(*words, "sessions").returncode == 0


def test_a_store_an_earlier_version_kept_in_the_plugin_data_folder_is_named_until_it_moves(tmp_path):
    home = tmp_path / "home"
    data = home / ".claude" / "plugins" / "data" / "om-observational-memory"
    (data / "session-0123").mkdir(parents=True)
    r = without_store(home, "sessions")
    assert r.returncode == 64
    assert f"--store {data} (Claude Code, where an earlier version kept it; its next hook moves it)" in r.stderr


def test_with_no_store_anywhere_it_says_where_each_clients_would_be_and_still_guesses_none(tmp_path):
    home = tmp_path / "home"
    r = without_store(home, "sessions", CODEX_HOME=str(tmp_path / "codex"))
    assert r.returncode == 64
    assert r.stderr == ("om: --store is required (or set OBSERVATIONAL_MEMORY_STORE=DIR); no client store exists yet "
                        f"(Codex's would be {tmp_path}/codex/om; Claude Code's would be {home}/.claude/om)\n")
    assert not (home / ".claude").exists() and not (tmp_path / "codex").exists()
