"""`om sessions`: the listing, the project record behind it, and removing a session, as a subprocess."""

import json
import os
import subprocess

import pytest

from conftest import ROOT, RUNTIME_ARGV, run_om, run_on_a_terminal, run_read_only
from sessions_support import age, database, holding_the_lock, hook, om_json, session_with_memory, start, v1_tables


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "src" / "deep").mkdir(parents=True)
    return root


def listing(store, *args):
    r = run_om("--store", store, "sessions", "--json", *args)
    assert r.returncode == 0, r
    return r.json


def test_sessions_are_listed_most_recent_activity_first_with_their_project_and_counts(store, project, tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()
    session_with_memory(store, "old", project / "src", "The build uses make.")
    session_with_memory(store, "middle", other, "Other work.")
    session_with_memory(store, "new", project, "The tests use pytest.")
    age(store, "old", "2026-01-01T00:00:00Z")
    age(store, "middle", "2026-02-01T00:00:00Z")
    hook(store, "UserPromptSubmit", "new", project, turn_id="turn-2", prompt="more evidence")

    rows = listing(store)["sessions"]
    assert [r["session"] for r in rows] == ["new", "middle", "old"]
    new, middle, old = rows
    assert old["project"] == str(project.resolve()) and old["cwd"] == str(project / "src")
    assert middle["project"] == str(other.resolve())
    assert (new["sources"], new["observations"], new["reflections"], new["pending"]) == (2, 1, 0, 1)
    assert old["last_checkpoint"] == old["created"] == old["last_capture"] == "2026-01-01T00:00:00Z"
    assert new["paused"] is False and new["imported_from"] is None

    text = run_om("--store", store, "sessions")
    assert text.returncode == 0, text
    lines = text.stdout.splitlines()
    assert lines[0].split()[:2] == ["SESSION", "PROJECT"]
    assert [line.split()[0] for line in lines[1:]] == ["new", "middle", "old"]
    # Aligned: every column starts at the same offset on every line.
    assert len({line.index(str(project.resolve())) for line in lines[1:] if str(project.resolve()) in line}) == 1


def test_project_filter_matches_sessions_of_the_repository_holding_the_directory(store, project, tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()
    session_with_memory(store, "here", project / "src" / "deep", "Deep work.")
    session_with_memory(store, "there", other, "Other work.")
    for where in (project, project / "src"):
        found = listing(store, "--project", str(where))
        assert found["project"] == str(project.resolve())
        assert [r["session"] for r in found["sessions"]] == ["here"]
    assert [r["session"] for r in listing(store, "--project", str(other))["sessions"]] == ["there"]


def test_a_project_directory_that_no_longer_exists_still_lists_its_sessions(store, tmp_path):
    gone = tmp_path / "deleted-checkout"
    gone.mkdir()
    session_with_memory(store, "orphan", gone, "Fact.")
    gone.rmdir()
    assert [r["session"] for r in listing(store, "--project", str(gone))["sessions"]] == ["orphan"]
    assert listing(store, "--project", str(tmp_path / "never-existed"))["sessions"] == []
    text = run_om("--store", store, "sessions", "--project", str(tmp_path / "never-existed")).stdout
    assert text == f"No sessions of project {tmp_path / 'never-existed'} in {store}.\n"


def test_v1_ledgers_and_sessions_without_a_hook_show_the_project_as_unknown(store):
    r = run_om("--store", store, "--session", "manual", "capture",
               input=json.dumps({"kind": "user", "text": "typed by hand", "key": "k"}))
    assert r.returncode == 0, r
    (row,) = listing(store)["sessions"]
    assert row["project"] is None and row["cwd"] is None and row["sources"] == 1
    assert row["created"] == row["last_capture"]
    text = run_om("--store", store, "sessions").stdout
    assert "unknown" in text.splitlines()[1]


def test_a_ledger_written_by_a_v1_implementation_is_listed_with_an_unknown_project(tmp_path):
    from test_interop import LEGACY_SESSION, TS1, TS2, legacy_store

    store = tmp_path / "legacy"
    legacy_store(store)
    before = v1_tables(next(store.glob("session-*")) / "memory.sqlite3")
    (row,) = listing(store)["sessions"]
    assert row["session"] == LEGACY_SESSION and row["project"] is None and row["cwd"] is None
    assert (row["sources"], row["observations"], row["reflections"], row["pending"]) == (1, 0, 1, 0)
    assert (row["created"], row["last_capture"], row["last_checkpoint"]) == (TS1, TS1, TS2)
    assert v1_tables(next(store.glob("session-*")) / "memory.sqlite3") == before
    text = run_om("--store", store, "sessions").stdout.splitlines()[1]
    assert "unknown" in text and "\\u2028" in text  # one line: the id's separator is escaped


def test_post_tool_use_alone_never_records_the_project(store, project):
    hook(store, "PostToolUse", "tools-only", project, tool_name="Bash", tool_input={"command": "ls"},
         tool_response="a b", tool_use_id="c1")
    (row,) = listing(store)["sessions"]
    assert row["project"] is None and row["sources"] == 1


def test_a_paused_session_records_no_project_until_it_resumes(store, project):
    hook(store, "SessionStart", "quiet", "", source="startup")  # begins the session, with no usable cwd
    om_json(store, "quiet", "pause")
    start(store, "quiet", project)
    hook(store, "UserPromptSubmit", "quiet", project, prompt="not recorded")
    (row,) = listing(store)["sessions"]
    assert row["project"] is None and row["paused"] is True and row["sources"] == 0
    om_json(store, "quiet", "resume")
    hook(store, "UserPromptSubmit", "quiet", project, prompt="recorded")
    assert listing(store)["sessions"][0]["project"] == str(project.resolve())


def test_listing_works_on_a_read_only_store_and_creates_nothing(store, project):
    session_with_memory(store, "a", project, "Fact A.")
    session_with_memory(store, "b", project, "Fact B.")
    before = sorted(os.listdir(store)), {d: sorted(os.listdir(store / d)) for d in os.listdir(store)}
    r = run_read_only(store, "sessions", "--json")
    assert r.returncode == 0, r
    assert sorted(row["session"] for row in json.loads(r.stdout)["sessions"]) == ["a", "b"]
    assert (sorted(os.listdir(store)), {d: sorted(os.listdir(store / d)) for d in os.listdir(store)}) == before


def test_a_missing_store_is_an_error_and_is_not_created(tmp_path):
    missing = tmp_path / "nope"
    r = run_om("--store", missing, "sessions")
    assert r.returncode == 74 and r.stdout == "" and "does not exist" in r.stderr
    assert len(r.stderr.splitlines()) == 1 and not missing.exists()


def test_an_empty_store_says_so(store):
    store.mkdir()
    assert run_om("--store", store, "sessions").stdout == f"No sessions in {store}.\n"
    assert listing(store)["sessions"] == []


def test_a_corrupt_session_among_good_ones_is_skipped_and_named_on_stderr(store, project):
    session_with_memory(store, "good", project, "Fact.")
    session_with_memory(store, "broken", project, "Other fact.")
    broken = database(store, "broken")
    broken.write_bytes(b"this is not a database" * 100)
    empty = store / ("session-" + "0" * 24)
    empty.mkdir()
    link = store / ("session-" + "1" * 24)
    link.symlink_to(database(store, "good").parent)
    for args in ((), ("--json",)):
        r = run_om("--store", store, "sessions", *args)
        assert r.returncode == 0, r
        assert "good" in r.stdout and "broken" not in r.stdout
        errors = r.stderr.splitlines()
        assert len(errors) == 3
        for named in (broken.parent, empty, link):
            assert sum(str(named) in e for e in errors) == 1, (named, errors)
        assert "symlink" in next(e for e in errors if str(link) in e)
        assert "Traceback" not in r.stderr
    skipped = listing(store)["skipped"]
    assert sorted(s["directory"] for s in skipped) == sorted([str(broken.parent), str(empty), str(link)])


def test_fork_drops_the_project_and_import_keeps_the_destinations_own(store, project, tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()
    session_with_memory(store, "origin", project, "Origin fact.")
    om_json(store, "origin", "fork", "--to-session", "copy")
    start(store, "fresh", other)
    hook(store, "UserPromptSubmit", "fresh", other, prompt="starting here")
    om_json(store, "fresh", "import", "--from-store", str(store), "--from-session", "origin")
    rows = {r["session"]: r for r in listing(store)["sessions"]}
    assert rows["copy"]["project"] is None and rows["copy"]["imported_from"]["session"] == "origin"
    assert rows["fresh"]["project"] == str(other.resolve())
    assert rows["fresh"]["imported_from"] == {"store": str(store), "session": "origin"}
    assert rows["fresh"]["observations"] == 1 and rows["origin"]["project"] == str(project.resolve())
    # The fork records its own place when a client first runs in it.
    start(store, "copy", other)
    assert {r["session"]: r for r in listing(store)["sessions"]}["copy"]["project"] == str(other.resolve())


def test_bad_arguments_are_one_line_usage_errors(store, project):
    session_with_memory(store, "a", project, "Fact.")
    for args, code in ((("sessions", "-y"), 64), (("sessions", "--remove", "a", "--json"), 64),
                       (("sessions", "--project", ""), 65),
                       (("search", "fact", "--project", str(project)), 64)):
        r = run_om("--store", store, *args)
        assert r.returncode == code and r.stdout == "" and len(r.stderr.splitlines()) == 1, (args, r)


# -- removal ----------------------------------------------------------------------------


def test_remove_with_yes_deletes_the_whole_session_and_nothing_else(store, project):
    session_with_memory(store, "keep", project, "Kept.")
    session_with_memory(store, "drop", project, "Dropped.")
    directory = database(store, "drop").parent
    kept = v1_tables(database(store, "keep"))
    r = run_om("--store", store, "sessions", "--remove", "drop", "-y")
    assert r.returncode == 0, r
    assert r.json == {"removed": "drop", "store": str(store), "directory": str(directory)}
    assert not directory.exists()
    assert sorted(os.listdir(store)) == sorted(p for p in os.listdir(store) if not p.startswith(".om-removed-"))
    assert [row["session"] for row in listing(store)["sessions"]] == ["keep"]
    assert v1_tables(database(store, "keep")) == kept
    again = run_om("--store", store, "sessions", "--remove", "drop", "-y")
    assert again.returncode == 66 and len(again.stderr.splitlines()) == 1


def test_remove_without_a_terminal_needs_yes_and_changes_nothing(store, project):
    session_with_memory(store, "drop", project, "Dropped.")
    r = run_om("--store", store, "sessions", "--remove", "drop")
    assert r.returncode == 64 and "-y" in r.stderr
    assert database(store, "drop").exists()


def _remove_on_a_terminal(store, session, answer):
    return run_on_a_terminal(("--store", store, "sessions", "--remove", session), answer)


def test_remove_on_a_terminal_asks_and_only_yes_removes(store, project):
    session_with_memory(store, "drop", project, "Dropped.")
    code, out, err = _remove_on_a_terminal(store, "drop", "n")
    assert code == 1 and out == "" and "1 observations" in err and "cancelled" in err
    assert database(store, "drop").exists()
    code, out, err = _remove_on_a_terminal(store, "drop", "y")
    assert code == 0 and json.loads(out)["removed"] == "drop"
    assert listing(store)["sessions"] == []


def test_remove_refuses_while_another_process_holds_the_ledger_lock(store, project):
    session_with_memory(store, "busy", project, "In use.")
    path = database(store, "busy")
    with holding_the_lock(path):
        before = v1_tables(path)
        r = run_om("--store", store, "sessions", "--remove", "busy", "-y")
        assert r.returncode == 67 and "in use" in r.stderr and len(r.stderr.splitlines()) == 1
        assert path.exists() and v1_tables(path) == before
    assert run_om("--store", store, "sessions", "--remove", "busy", "-y").returncode == 0


def test_a_removal_cut_short_after_its_rename_leaves_no_session_and_is_swept_later(store, project):
    session_with_memory(store, "first", project, "First.")
    session_with_memory(store, "second", project, "Second.")
    directory = database(store, "first").parent
    # What a removal killed between its one rename and its cleanup leaves behind.
    os.rename(directory, store / (".om-removed-" + directory.name[len("session-"):] + "-deadbeef"))
    assert [r["session"] for r in listing(store)["sessions"]] == ["second"]
    assert run_om("--store", store, "sessions", "--remove", "second", "-y").returncode == 0
    assert os.listdir(store) == [] or all(not n.startswith((".om-removed-", "session-")) for n in os.listdir(store))


def test_a_damaged_session_can_still_be_removed(store, project):
    session_with_memory(store, "damaged", project, "Fact.")
    path = database(store, "damaged")
    path.write_bytes(b"garbage" * 1000)
    r = run_om("--store", store, "sessions", "--remove", "damaged", "-y")
    assert r.returncode == 0, r
    assert not path.parent.exists()


# -- retention: --prune --inactive-for DAYS ------------------------------------------------------


def _prune(store, *args):
    return run_om("--store", store, "sessions", "--prune", *args)


def _aged_store(store, project, tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir(exist_ok=True)
    for session, cwd in (("old", project), ("old-elsewhere", other), ("recent", project)):
        session_with_memory(store, session, cwd, f"Fact of {session}.")
    age(store, "old", "2020-01-01T00:00:00Z")
    age(store, "old-elsewhere", "2020-02-01T00:00:00Z")


def test_prune_removes_exactly_the_sessions_inactive_for_longer_and_nothing_else(store, project, tmp_path):
    _aged_store(store, project, tmp_path)
    recent = v1_tables(database(store, "recent"))
    directories = {s: database(store, s).parent for s in ("old", "old-elsewhere")}
    r = _prune(store, "--inactive-for", "30", "-y")
    assert r.returncode == 0, r
    assert sorted(row["session"] for row in r.json["pruned"]) == ["old", "old-elsewhere"]
    assert r.json["in_use"] == [] and "2020-02-01T00:00:00Z" < r.json["before"] and r.json["before"].endswith("Z")
    assert not any(d.exists() for d in directories.values())
    assert [row["session"] for row in listing(store)["sessions"]] == ["recent"]
    assert v1_tables(database(store, "recent")) == recent
    assert not [n for n in os.listdir(store) if n.startswith(".om-removed-")]


def test_prune_with_a_project_keeps_the_other_projects_sessions(store, project, tmp_path):
    _aged_store(store, project, tmp_path)
    r = _prune(store, "--inactive-for", "30", "--project", str(project / "src"), "-y")
    assert r.returncode == 0, r
    assert [row["session"] for row in r.json["pruned"]] == ["old"]
    assert sorted(row["session"] for row in listing(store)["sessions"]) == ["old-elsewhere", "recent"]


def test_a_prune_dry_run_lists_and_a_prune_without_yes_off_a_terminal_refuses(store, project, tmp_path):
    _aged_store(store, project, tmp_path)
    before = {s: v1_tables(database(store, s)) for s in ("old", "old-elsewhere", "recent")}
    dry = _prune(store, "--inactive-for", "30", "--dry-run")
    assert dry.returncode == 0 and dry.json["dry_run"] is True, dry
    assert sorted(row["session"] for row in dry.json["pruned"]) == ["old", "old-elsewhere"]
    refused = _prune(store, "--inactive-for", "30")
    assert refused.returncode == 64 and "-y" in refused.stderr and refused.stdout == ""
    assert {s: v1_tables(database(store, s)) for s in before} == before
    # Nothing that old: nothing to ask about.
    assert _prune(store, "--inactive-for", "10000").json["pruned"] == []


def test_prune_leaves_a_session_another_process_holds_and_removes_the_rest(store, project, tmp_path):
    _aged_store(store, project, tmp_path)
    path = database(store, "old")
    with holding_the_lock(path):
        r = _prune(store, "--inactive-for", "30", "-y")
        assert r.returncode == 0, r
        assert r.json["in_use"] == ["old"] and [row["session"] for row in r.json["pruned"]] == ["old-elsewhere"]
        assert "kept old: in use" in r.stderr and path.exists()
    assert [row["session"] for row in _prune(store, "--inactive-for", "30", "-y").json["pruned"]] == ["old"]


@pytest.mark.parametrize("args,code", [
    (("--prune",), 64), (("--prune", "--inactive-for", "0"), 65), (("--inactive-for", "3"), 64),
    (("--prune", "--inactive-for", "3", "--remove", "x"), 64), (("--dry-run",), 64),
    (("--prune", "--inactive-for", "3", "--json"), 64),
])
def test_bad_prune_arguments_are_one_line_errors(store, project, args, code):
    session_with_memory(store, "a", project, "Fact.")
    r = run_om("--store", store, "sessions", *args)
    assert r.returncode == code and r.stdout == "" and len(r.stderr.splitlines()) == 1, (args, r)


@pytest.mark.parametrize("days", ["0", "-1", "abc", "1.5", "", " 7", "7d", "\u0663", "99999999999999999999"])
def test_every_bad_inactive_for_value_gets_the_same_exit_code_and_the_om_prefix(store, project, days):
    session_with_memory(store, "a", project, "Fact.")
    r = run_om("--store", store, "sessions", "--prune", "--inactive-for", days, "--dry-run")
    if days == "99999999999999999999":  # a whole number of days: nothing is that old
        assert r.returncode == 0 and r.json["pruned"] == [] and r.stderr == "", r
        return
    assert r.returncode == 65 and r.stdout == "", r
    assert r.stderr == "om: --inactive-for takes a whole number of days, at least 1\n"


@pytest.mark.slow
def test_prune_killed_at_random_moments_leaves_each_session_whole_or_gone(store, project, tmp_path):
    import random
    import shutil
    import signal
    import time

    template = tmp_path / "template"
    for i in range(12):
        session_with_memory(template, f"old-{i}", project, f"Fact {i}.")
        age(template, f"old-{i}", "2020-01-01T00:00:00Z")
    whole = {f"old-{i}": v1_tables(database(template, f"old-{i}")) for i in range(12)}
    argv = [*RUNTIME_ARGV, "--store", str(store), "sessions", "--prune", "--inactive-for", "30", "-y"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    shutil.copytree(template, store)
    started = time.monotonic()
    assert subprocess.run(argv, env=env, capture_output=True).returncode == 0
    duration = time.monotonic() - started
    rng = random.Random(3)
    seen = set()
    # At least 20 kills; more (up to 60) while they have all landed at the same point, since
    # where a kill lands depends on the machine's load, not on om.
    for attempt in range(60):
        if attempt >= 20 and len(seen) > 1:
            break
        shutil.rmtree(store)
        shutil.copytree(template, store)
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0, duration * 1.2))
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        left = {row["session"] for row in listing(store)["sessions"]}
        assert listing(store)["skipped"] == []
        for session in left:
            assert v1_tables(database(store, session)) == whole[session]
        seen.add(len(left))
        # The next prune finishes the job, leftovers of the killed one included.
        assert subprocess.run(argv, env=env, capture_output=True).returncode == 0
        assert os.listdir(store) == [] or not [n for n in os.listdir(store) if n.startswith(("session-", ".om-"))]
    assert len(seen) > 1, seen  # the kills landed at different points of the run
