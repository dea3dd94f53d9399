"""The SessionStart pointer to a project's earlier memory, through the registered Codex hook command."""

import json
import shlex
import sqlite3
import subprocess
import sys
import time

import pytest

from conftest import run_om
from sessions_support import age, database, hook, ledger_path, om_json, session_with_memory, start

MARK = "om: earlier sessions of this project hold memory"


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    return root


def pointer(context):
    """The pointer part of a start context ('' when there is none)."""
    at = context.find("\n" + MARK)
    return context[at:] if at >= 0 else ""


def line_after(text, prefix):
    return next(line for line in text.splitlines() if line.startswith(prefix))[len(prefix):]


def test_a_fresh_session_of_the_project_is_pointed_at_the_earlier_one_with_exact_commands(store, project):
    session_with_memory(store, "earlier", project / "src", "SECRET-BODY: the cache is redis.")
    context = start(store, "fresh", project)
    note = pointer(context)
    assert note and len(note.encode("utf-8")) <= 1200
    assert '- "earlier": last checkpoint 20' in note and "1 observation, 0 reflections" in note
    assert "SECRET-BODY" not in context
    assert "only before this session's first checkpoint" in note

    look = shlex.split(line_after(note, "Look: "))
    assert look[-1] == "prime" and look[look.index("--session") + 1] == "earlier"
    primed = subprocess.run(look, capture_output=True, text=True, timeout=60)
    assert primed.returncode == 0 and "SECRET-BODY" in primed.stdout

    searched = subprocess.run(shlex.split(line_after(note, "Search them all: ").replace("WORDS", "redis")),
                              capture_output=True, text=True, timeout=60)
    assert searched.returncode == 0, searched.stderr
    assert [r["session"] for r in json.loads(searched.stdout)["results"]] == ["earlier"]

    imported = subprocess.run(shlex.split(line_after(note, "Import one (only before this session's first "
                                                     "checkpoint): ")), capture_output=True, text=True, timeout=60)
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["imported_from"]["session"] == "earlier"
    assert "SECRET-BODY" in om_json(store, "fresh", "view", "--all")[0]["text"]
    # Now this session holds memory: no pointer on its next start.
    assert pointer(start(store, "fresh", project, source="clear")) == ""


def test_clear_points_too_but_resume_and_compact_never_do(store, project):
    session_with_memory(store, "earlier", project, "Fact.")
    assert pointer(start(store, "after-clear", project, source="clear"))
    for source in ("resume", "compact"):
        assert pointer(start(store, f"after-{source}", project, source=source)) == ""


def test_sessions_of_other_projects_or_without_active_memory_are_not_pointed_at(store, project, tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()
    session_with_memory(store, "theirs", other, "Their fact.")
    start(store, "empty", project)
    hook(store, "UserPromptSubmit", "empty", project, prompt="evidence but no memory")
    wrong = session_with_memory(store, "retired", project, "Wrong fact.")
    newer = session_with_memory(store, "retired", project, "Right fact.", turn="turn-2")
    om_json(store, "retired", "apply", input=json.dumps({
        "through": om_json(store, "retired", "status")["through"],
        "retire": [{"id": wrong, "reason": "wrong", "replacement_ids": [newer]}]}))
    note = pointer(start(store, "fresh", project))
    assert '- "retired": ' in note and "1 observation, 0 reflections" in note  # active entries only
    assert '"theirs"' not in note and '"empty"' not in note


def test_no_pointer_while_this_session_is_paused(store, project):
    session_with_memory(store, "earlier", project, "Fact.")
    hook(store, "SessionStart", "quiet", "", source="startup")  # begins the session (no usable cwd)
    om_json(store, "quiet", "pause")
    assert pointer(start(store, "quiet", project)) == ""


def test_at_most_the_three_most_recent_sessions_are_named(store, project):
    for i in range(5):
        session_with_memory(store, f"s{i}", project, f"Fact {i}.")
        age(store, f"s{i}", f"2026-0{i + 1}-01T00:00:00Z")
    note = pointer(start(store, "fresh", project))
    named = [line.split('"')[1] for line in note.splitlines() if line.startswith('- "')]
    # The most recent first; as many of the three as the byte bound leaves room for (long paths here).
    assert named and named == ["s4", "s3", "s2"][:len(named)]
    assert line_after(note, "Import one (only before this session's first checkpoint): ").endswith(
        "--from-session s4")


def test_with_sessions_spread_over_time_the_most_recent_are_named(store, project):
    import calendar
    import os

    for i in range(8):
        session_with_memory(store, f"s{i}", project, f"Fact {i}.")
        stamp = f"2026-0{i + 1}-01T00:00:00Z"
        age(store, f"s{i}", stamp)
        # The file was last written when its last checkpoint happened, as a real one would be.
        when = calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))
        os.utime(database(store, f"s{i}"), (when, when))
    note = pointer(start(store, "fresh", project))
    named = [line.split('"')[1] for line in note.splitlines() if line.startswith('- "')]
    assert named and named == ["s7", "s6", "s5"][:len(named)]


def _many_sessions(store, project, count):
    """`count` sessions of one project with memory, written the way the hooks and apply leave them."""
    session_with_memory(store, "seed", project, "Seed fact.")
    _copies(store, "seed", [f"019a2270-{i:04d}-7750-a7d3-" + "x" * 200 for i in range(count - 1)])


def _copies(store, template, sessions):
    """A copy of `template`'s ledger for each of `sessions`, renamed to it as a peer would name it."""
    from om.ids import session_hash  # the documented directory naming, computed like a peer would

    data = ledger_path(store, template).read_bytes()
    for session in sessions:
        directory = store / ("session-" + session_hash(session))
        directory.mkdir(mode=0o700)
        (directory / "memory.sqlite3").write_bytes(data)
        conn = sqlite3.connect(directory / "memory.sqlite3", isolation_level=None)
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("UPDATE meta SET value = ? WHERE key = 'session'", (session,))
        conn.close()


def _named(note):
    return [line.split('"')[1] for line in note.splitlines() if line.startswith('- "')]


def test_without_a_store_index_the_pointer_opens_only_the_most_recently_written_ledgers(store, project, tmp_path):
    import os

    from om.sessions.pointer import MAX_VISITS

    for i in range(3):
        session_with_memory(store, f"ours-{i}", project, f"Our fact {i}.")
        os.utime(ledger_path(store, f"ours-{i}"), (1.6e9 + i, 1.6e9 + i))  # written long ago
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    session_with_memory(store, "theirs", elsewhere, "Their fact.")
    # Written since: as many newer ledgers as the pointer opens.
    _copies(store, "theirs", [f"theirs-{i}" for i in range(MAX_VISITS - 1)])
    assert pointer(start(store, "fresh", project)) == ""  # ours lie beyond the ledgers it opens
    os.utime(ledger_path(store, "ours-1"), (time.time() + 60, time.time() + 60))  # written again since
    assert _named(pointer(start(store, "fresh-2", project))) == ["ours-1"]
    assert not (store / "index").exists()  # the pointer never makes the store index
    # The listing still sees every session.
    assert run_om("--store", store, "sessions", "--project", str(project)).stdout.count("ours-") == 3


def test_with_a_store_index_the_pointer_finds_the_project_behind_any_number_of_newer_ledgers(store, project, tmp_path):
    import os

    from om.sessions.pointer import MAX_VISITS

    for i in range(3):
        session_with_memory(store, f"ours-{i}", project, f"Our fact {i}.")
        age(store, f"ours-{i}", f"2026-0{i + 1}-01T00:00:00Z")
        os.utime(ledger_path(store, f"ours-{i}"), (1.6e9 + i, 1.6e9 + i))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    session_with_memory(store, "theirs", elsewhere, "Their fact.")
    _copies(store, "theirs", [f"theirs-{i}" for i in range(2 * MAX_VISITS)])
    assert run_om("--store", store, "sessions").returncode == 0  # a store-wide read keeps the index
    index = sorted(os.listdir(store / "index"))
    # The most recent first, as many of the three as the byte bound leaves room for (long paths here).
    named = _named(pointer(start(store, "fresh", project)))
    assert len(named) >= 2 and named == ["ours-2", "ours-1", "ours-0"][:len(named)]
    # Changed since the index was written (by hand, as a peer would): checked by its stamp and read again.
    age(store, "ours-0", "2026-05-01T00:00:00Z")
    # (How many fit depends on the length of the paths and ids spelled, which differ between the calls.)
    again = _named(pointer(start(store, "fresh-2", project)))
    assert len(again) >= 2 and again == ["ours-0", "ours-2", "ours-1"][:len(again)]
    # A session the index does not know yet is visited, newest ledger first.
    session_with_memory(store, "ours-new", project, "A newer fact.")
    assert _named(pointer(start(store, "fresh-3", project)))[0] == "ours-new"
    assert sorted(os.listdir(store / "index")) == index  # read, never written: no journal left either


def test_sessions_the_index_does_not_know_yet_are_judged_as_without_one_whatever_their_ledgers_hold(
        store, project, tmp_path):
    import os
    import shutil

    session_with_memory(store, "ours-old", project, "An old fact.")
    age(store, "ours-old", "2026-01-01T00:00:00Z")
    assert run_om("--store", store, "sessions").returncode == 0  # the index knows only ours-old
    # Newer than the index, and never to be named: started without a checkpoint, another
    # project's, a damaged file, a link to a session that holds memory.
    for i in range(3):
        start(store, f"started-{i}", project)
        hook(store, "UserPromptSubmit", f"started-{i}", project, prompt="evidence, no memory yet")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    session_with_memory(store, "theirs", elsewhere, "Their fact.")
    damaged = ledger_path(store, "damaged")
    damaged.parent.mkdir(mode=0o700)
    damaged.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4080)
    linked_to = tmp_path / "outside"
    session_with_memory(linked_to, "linked", project, "A fact behind a link.")
    os.symlink(ledger_path(linked_to, "linked").parent, ledger_path(store, "linked").parent)
    # To be named: a session with memory, and one whose ledger a v1 peer wrote (no om index on entries).
    session_with_memory(store, "ours-new", project, "A newer fact.")
    session_with_memory(store, "ours-v1", project, "A fact in a plain v1 ledger.")
    age(store, "ours-new", "2026-03-01T00:00:00Z")
    age(store, "ours-v1", "2026-02-01T00:00:00Z")
    conn = sqlite3.connect(ledger_path(store, "ours-v1"), isolation_level=None)
    conn.execute("DROP INDEX om_entries_active")
    conn.close()
    with_index = _named(pointer(start(store, "fresh", project)))
    # The most recent first, as many as the byte bound leaves room for (long paths here).
    assert len(with_index) >= 2 and with_index == ["ours-new", "ours-v1", "ours-old"][:len(with_index)]
    shutil.rmtree(store / "index")
    assert _named(pointer(start(store, "fresh-2", project))) == with_index  # the same without the index


def test_a_start_that_points_imports_no_pattern_machinery(store, project, tmp_path):
    # re, functools and collections cost a hook about 15 ms to import here: the store index and
    # the ledgers it checks need SQL and formats, never a compiled pattern.
    import os

    from conftest import ROOT, bytecode_env

    session_with_memory(store, "indexed", project, "An indexed fact.")
    assert run_om("--store", store, "sessions").returncode == 0
    session_with_memory(store, "unindexed", project, "A fact the index does not know yet.")
    start(store, "started", project)
    age(store, "indexed", "2026-01-01T00:00:00Z")  # changed since: read again from its ledger
    payload = {"session_id": "fresh", "hook_event_name": "SessionStart", "source": "startup", "cwd": str(project),
               "transcript_path": "/tmp/rollout.jsonl", "model": "gpt-5", "permission_mode": "bypassPermissions"}
    r = subprocess.run([sys.executable, "-I", "-S", "-X", "importtime", str(ROOT / "bin" / "om"), "--store", str(store),
                        "hook", "--client", "codex"], input=json.dumps(payload), capture_output=True, text=True,
                       env={"PATH": os.environ["PATH"], "OM_PROJECT_HOME": os.environ["OM_PROJECT_HOME"],
                            **bytecode_env()}, timeout=60)
    assert r.returncode == 0 and _named(pointer(json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"])) \
        == ["unindexed", "indexed"]
    imported = {line.split("|")[-1].strip() for line in r.stderr.splitlines() if line.startswith("import time:")}
    assert "om.derived.store_index" in imported and "om.ledger.files" in imported
    assert not imported & {"re", "functools", "collections", "enum"}, sorted(imported)


def test_the_pointer_stays_within_its_bound_with_a_thousand_sessions_of_long_ids(store, project):
    _many_sessions(store, project, 1000)
    note = pointer(start(store, "fresh", project))
    assert note and len(note.encode("utf-8")) <= 1200
    assert sum(line.startswith('- "') for line in note.splitlines()) <= 3
    assert "--all-sessions" in note and "first checkpoint" in note
    # header, the thousand, this one
    assert run_om("--store", store, "sessions", "--project", str(project)).stdout.count("\n") == 1 + 1000 + 1
