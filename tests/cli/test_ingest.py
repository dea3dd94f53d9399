"""`om ingest` on real transcripts kept as fixtures (tests/fixtures/transcripts), through the CLI.

The real clients themselves are driven by tests/e2e/test_ingest_codex.py and test_ingest_claude.py;
here the same transcripts, written once by them, are read back fast and cut, garbled and raced.
"""

import json
import os
import random
import shutil
import sqlite3
import time

import pytest

from conftest import ROOT, run_om, tree_bytes
from ingest_support import (
    CLIENT_OF,
    FIXTURES,
    copy_scenario,
    grow_transcript,
    hook_sources,
    ingest,
    meta,
    scenarios,
    stored,
    stored_ids,
    transcript,
)
from sqlite_probe import database

WITH_HOOKS = [s for s in scenarios() if s[1] != "nohooks"]


def entry_of(report, session):
    (entry,) = [e for e in report["sessions"] if e["session"] == session]
    return entry


@pytest.mark.parametrize("folder, scenario", WITH_HOOKS, ids=[f"{f}-{s}" for f, s in WITH_HOOKS])
def test_a_transcript_ingested_into_an_empty_store_gives_exactly_the_sources_the_hooks_stored(store, folder, scenario):
    report = ingest(store, CLIENT_OF[folder], FIXTURES / folder / scenario)
    assert stored_ids(store) == hook_sources(folder, scenario)
    assert report["captured"] == sum(len(ids) for ids in hook_sources(folder, scenario).values())
    again = ingest(store, CLIENT_OF[folder], FIXTURES / folder / scenario)
    assert again["captured"] == 0
    assert stored_ids(store) == hook_sources(folder, scenario)


def test_each_codex_format_is_read_and_named_in_the_report(store):
    legacy = ingest(store, "codex", FIXTURES / "codex-0.146.0" / "basic")
    paginated = ingest(store, "codex", FIXTURES / "codex-0.169.0" / "basic")
    assert [(e["format"], e["version"], e["verified"]) for e in legacy["sessions"]] == [("legacy", "0.146.0", True)]
    assert [(e["format"], e["version"], e["verified"]) for e in paginated["sessions"]] == [
        ("paginated", "0.169.0", True)]


def test_a_transcript_read_again_after_it_changed_still_adds_nothing_the_ledger_holds(store, tmp_path):
    folder = copy_scenario("codex-0.169.0", "basic", tmp_path)
    first = ingest(store, "codex", folder)
    (path,) = folder.glob("*.jsonl")
    os.utime(path, (time.time() + 5, time.time() + 5))  # no longer the file the marker describes
    second = ingest(store, "codex", folder)
    assert first["sessions"][0]["outcome"] == second["sessions"][0]["outcome"] == "read"
    assert (second["captured"], second["present"]) == (0, first["captured"])
    third = ingest(store, "codex", folder)
    assert third["sessions"][0]["outcome"] == "unchanged"


def test_a_ledger_missing_some_of_the_hooks_sources_gets_exactly_those_back(store, tmp_path):
    folder, scenario = "claude-2.1.332", "basic"
    ingest(store, "claude", FIXTURES / folder / scenario)
    (session, ids), = hook_sources(folder, scenario).items()
    lost = set(random.Random(7).sample(ids, 4))
    conn = sqlite3.connect(database(store, session), isolation_level=None)
    conn.executemany("DELETE FROM sources WHERE id = ?", [(i,) for i in lost])
    conn.execute("DELETE FROM meta WHERE key LIKE 'om_ingest:%'")  # as a ledger the hooks filled
    conn.close()
    report = ingest(store, "claude", FIXTURES / folder / scenario)
    assert (report["captured"], report["present"]) == (4, len(ids) - 4)
    assert set(stored_ids(store)[session]) == set(ids)
    added = [row[1] for row in stored(store)[session]][-4:]
    assert set(added) == lost and added == [i for i in ids if i in lost]  # in transcript order


def test_a_session_without_hooks_becomes_a_session_like_any_other(store):
    folder = FIXTURES / "claude-2.1.332" / "nohooks"
    report = ingest(store, "claude", folder)
    (entry,) = report["sessions"]
    assert entry["kinds"] == {"user": 1, "tool": 1, "assistant": 1}
    session = entry["session"]
    assert [(kind, text) for _, _, kind, text in stored(store)[session]][::2] == [
        ("user", "CCPROMPT_NH: no hooks"), ("assistant", "CCREPLY_NH")]
    listed = run_om("--store", store, "sessions", "--json").json["sessions"]
    assert [(r["session"], r["cwd"], r["sources"]) for r in listed] == [
        (session, "/tmp/om-fixture/s/work-claude/nohooks/work", 3)]
    primed = run_om("--store", store, "--session", session, "prime")
    assert primed.returncode == 0 and primed.stderr == ""
    assert "# pending: 3 sources" in primed.stdout


@pytest.mark.parametrize("folder", ["codex-0.146.0", "codex-0.169.0"])
def test_a_codex_sub_agent_rollout_is_skipped_whole(store, folder):
    report = ingest(store, "codex", FIXTURES / folder / "subagent")
    skipped = [e for e in report["sessions"] if e["outcome"] == "skipped"]
    assert [e["reason"] for e in skipped] == ["sub-agent transcript"]
    assert skipped[0]["session"] not in stored_ids(store)
    assert "echo CXCHILD_TOOL" not in json.dumps(stored(store))  # the child's own tool call


def test_a_claude_sub_agent_transcript_is_never_walked_and_skipped_when_named(store):
    scenario = FIXTURES / "claude-2.1.332" / "subagent"
    walked = ingest(store, "claude", scenario)
    assert len(walked["sessions"]) == 1 and walked["sessions"][0]["outcome"] == "read"
    (child,) = scenario.glob("*/*/subagents/*.jsonl")
    named = ingest(store, "claude", child)
    assert [(e["outcome"], e["reason"]) for e in named["sessions"]] == [("skipped", "sub-agent transcript")]
    assert "echo CCSUB_TOOL" not in json.dumps(stored(store))  # the sub-agent's own tool call


def test_the_rows_claude_code_copies_into_a_fork_are_not_the_forks_evidence(store):
    folder, scenario = "claude-2.1.332", "fork"
    report = ingest(store, "claude", FIXTURES / folder / scenario)
    copies = {e["session"]: e["skipped"].get("row copied from the forked session", 0) for e in report["sessions"]}
    assert sorted(copies.values()) == [0, 2]
    texts = {session: [text for _, _, _, text in rows] for session, rows in stored(store).items()}
    assert sorted(texts.values()) == [["CCPROMPT_F1: original", "CCREPLY_F1"], ["CCPROMPT_F2: forked", "CCREPLY_F2"]]


@pytest.mark.parametrize("folder", ["codex-0.146.0", "codex-0.169.0"])
def test_prompts_and_replies_inside_a_pause_are_not_captured_and_resume_drops_its_prefix(store, folder):
    report = ingest(store, "codex", FIXTURES / folder / "pause")
    (entry,) = report["sessions"]
    assert entry["skipped"]["while paused"] == 2
    (rows,) = stored(store).values()
    assert [text for _, _, _, text in rows] == ["CXPROMPT_RESUMED: normal again", "(mock default)"]
    assert "PAUSED" not in json.dumps(rows)


@pytest.mark.parametrize("folder", ["codex-0.146.0", "codex-0.169.0", "claude-2.1.332"])
def test_the_reply_before_oms_continuation_is_captured_and_the_one_ending_it_is_not(store, folder):
    client = CLIENT_OF[folder]
    report = ingest(store, client, FIXTURES / folder / "continuation")
    (rows,) = stored(store).values()
    replies = [text for _, _, kind, text in rows if kind == "assistant"]
    assert len(replies) == 1 and replies[0].endswith("_FIRST")
    assert report["sessions"][0]["skipped"]["reply to om's continuation"] == 1
    assert not any("checkpoint (one pass" in text for _, _, _, text in rows)


def test_a_session_whose_ledger_is_paused_is_left_alone(store):
    folder, scenario = "codex-0.169.0", "basic"
    (session,) = hook_sources(folder, scenario)
    start = {"session_id": session, "hook_event_name": "SessionStart", "source": "startup", "cwd": "/tmp"}
    assert run_om("--store", store, "hook", "--client", "codex", input=json.dumps(start)).returncode == 0
    assert run_om("--store", store, "--session", session, "pause").returncode == 0
    report = ingest(store, "codex", FIXTURES / folder / scenario)
    assert [(e["outcome"], e["reason"]) for e in report["sessions"]] == [("skipped", "the session's ledger is paused")]
    assert stored_ids(store) == {}


def test_a_transcript_cut_in_its_last_line_is_read_up_to_the_last_newline_and_completed_later(store, tmp_path):
    folder, scenario = "codex-0.169.0", "basic"
    copy = copy_scenario(folder, scenario, tmp_path)
    (path,) = copy.glob("*.jsonl")
    whole = path.read_bytes()
    lines = whole.splitlines(True)
    cut = sum(len(line) for line in lines[: len(lines) // 2]) + len(lines[len(lines) // 2]) // 2
    path.write_bytes(whole[:cut])
    first = ingest(store, "codex", copy)
    assert first["sessions"][0]["skipped"]["unfinished last line"] == 1
    (session, expected), = hook_sources(folder, scenario).items()
    got = stored_ids(store)[session]
    assert 0 < len(got) < len(expected) and got == expected[: len(got)]
    path.write_bytes(whole)  # the client finished writing
    second = ingest(store, "codex", copy)
    assert second["captured"] == len(expected) - len(got)
    assert stored_ids(store)[session] == expected


@pytest.mark.parametrize("client", ["codex", "claude"])
@pytest.mark.parametrize("content, reason", [
    (random.Random(34).randbytes(4096) + b"\n", "not a transcript"),
    (b"", "empty transcript"),
    (b"\n\n", "empty transcript"),
    (b'{"type": "user", "sessionId": "s", "cwd": "/tm', "no complete line yet"),
])
def test_a_file_that_holds_no_transcript_says_which_of_random_bytes_empty_or_unfinished(
        store, tmp_path, client, content, reason):
    path = tmp_path / "transcripts" / "bytes.jsonl"
    path.parent.mkdir()
    path.write_bytes(content)
    r = run_om("--store", store, "ingest", "--client", client, path)
    assert r.returncode == 0, r
    assert f"skipped: {reason}" in r.stdout
    (entry,) = ingest(store, client, path)["sessions"]
    assert (entry["outcome"], entry["reason"]) == ("skipped", reason)


def test_garbage_lines_are_skipped_and_counted_and_the_rest_gives_the_hooks_ids(store, tmp_path):
    folder, scenario = "claude-2.1.332", "basic"
    copy = copy_scenario(folder, scenario, tmp_path)
    (path,) = copy.glob("*/*.jsonl")
    lines = path.read_bytes().splitlines(True)
    garbage = [b"{not json\n", b"\xff\xfe not utf-8\n", b"[1, 2, 3]\n", b"\n", b'{"type": "hologram", "x": 1}\n',
               b'{"type": "user", "message": 7}\n', b'{"type": "assistant", "message": {"content": "oops"}}\n',
               b'{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"nobody"}]}}\n',
               b"x" * (9 * 1024 * 1024) + b"\n"]
    mixed = []
    for i, line in enumerate(lines):
        mixed.append(line)
        mixed.append(garbage[i % len(garbage)])
    path.write_bytes(b"".join(mixed))
    report = ingest(store, "claude", copy)
    assert stored_ids(store) == hook_sources(folder, scenario)
    skipped = report["sessions"][0]["skipped"]
    assert skipped["not a JSON object line"] >= 3 and skipped["line over 8 MB"] >= 1
    assert skipped["unknown row type"] >= 1 and skipped["tool result without its call"] >= 1


def test_a_secret_in_a_transcript_is_redacted_before_it_is_hashed_or_stored(store):
    for folder in ("codex-0.146.0", "codex-0.169.0", "claude-2.1.332"):
        ingest(store, CLIENT_OF[folder], FIXTURES / folder / "bigout")
        assert b"abcd1234efgh5678" in b"".join(p.read_bytes() for p in (FIXTURES / folder / "bigout").rglob("*.jsonl"))
    everything = b"".join(tree_bytes(store).values())
    assert b"abcd1234efgh5678" not in everything
    assert everything.count(b"API_TOKEN=[REDACTED CREDENTIAL]") >= 3


def test_a_dry_run_writes_nothing_at_all_and_reports_what_a_real_run_captures(store, tmp_path):
    scenario = FIXTURES / "codex-0.169.0"
    dry = ingest(store, "codex", scenario, "--dry-run")
    assert not os.path.exists(store)
    assert dry["dry_run"] is True and dry["captured"] > 0
    real = ingest(store, "codex", scenario)
    before = tree_bytes(store)
    dry_again = ingest(store, "codex", scenario, "--dry-run")
    assert tree_bytes(store) == before
    assert [(e["session"], e["captured"], e["kinds"]) for e in dry["sessions"]] == [
        (e["session"], e["captured"], e["kinds"]) for e in real["sessions"]]
    assert dry_again["captured"] == 0
    text = run_om("--store", store, "ingest", "--client", "codex", scenario, "--dry-run")
    assert text.returncode == 0 and "would capture 0" in text.stdout


def test_one_unreadable_transcript_is_reported_and_the_others_are_ingested(store, tmp_path):
    folder = copy_scenario("codex-0.169.0", "basic", tmp_path)
    (folder / "rollout-2026-12-02T05-00-00-01a23536-0000-7000-8000-000000000000.jsonl").symlink_to(tmp_path / "gone")
    r = run_om("--store", store, "ingest", "--client", "codex", folder, "--json")
    assert r.returncode == 0, r
    assert [u["transcript"].endswith("000000000000.jsonl") for u in r.json["unreadable"]] == [True]
    # One line for the unreadable transcript (the store this first ingest made is announced on another).
    assert [line for line in r.stderr.splitlines() if not line.startswith("om: created a new store")] == [
        line for line in r.stderr.splitlines() if line.startswith("om: could not read ")] != []
    assert stored_ids(store) == hook_sources("codex-0.169.0", "basic")


def test_session_since_and_project_narrow_what_is_read(store, tmp_path):
    everything = FIXTURES / "codex-0.169.0"
    (session,) = hook_sources("codex-0.169.0", "tools")
    one = ingest(store, "codex", everything, "--session", session)
    assert [e["session"] for e in one["sessions"]] == [session]
    future = time.strftime("%Y-%m-%d", time.localtime(time.time() + 2 * 86400))
    assert ingest(store, "codex", everything, "--since", future)["sessions"] == []
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert ingest(store, "codex", everything, "--project", elsewhere)["sessions"] == []
    mine = ingest(store, "codex", everything, "--project", "/tmp/om-fixture/s/work-codex-0.169.0/pause/work")
    assert [e["session"] for e in mine["sessions"]] == list(hook_sources("codex-0.169.0", "pause"))


def test_bad_arguments_fail_with_one_line_and_the_documented_codes(store, tmp_path):
    cases = [
        (("--since", "yesterday"), 65, "--since wants a date as YYYY-MM-DD"),
        (("--session", "no-such-session", FIXTURES / "codex-0.169.0"), 66, "no codex transcript of session"),
        ((tmp_path / "missing",), 66, "no transcript or folder at"),
    ]
    for args, code, message in cases:
        r = run_om("--store", store, "ingest", "--client", "codex", *map(str, args))
        assert r.returncode == code and message in r.stderr and r.stderr.count("\n") == 1, r
    r = run_om("--store", store, "ingest", "--client", "gemini", FIXTURES)
    assert r.returncode == 64
    r = run_om("--store", store, "ingest", "--client", "codex", env={"CODEX_HOME": str(tmp_path / "no-codex")})
    assert r.returncode == 66 and "no codex transcripts at" in r.stderr
    assert not os.path.exists(store) or os.listdir(store) == []


def test_the_client_home_is_the_default_and_the_text_report_names_each_transcript(store, tmp_path):
    home = tmp_path / "codex-home"
    shutil.copytree(FIXTURES / "codex-0.169.0" / "basic", home / "sessions" / "2026" / "12" / "02")
    r = run_om("--store", store, "ingest", "--client", "codex", env={"CODEX_HOME": str(home)})
    assert r.returncode == 0, r
    (session,) = hook_sources("codex-0.169.0", "basic")
    first, total = r.stdout.splitlines()
    assert first.startswith(f"{session}  captured 6, already present 0  {home / 'sessions'}")
    assert total.startswith("om ingest (codex): 1 transcript, captured 6, already present 0")
    claude = tmp_path / "claude-config"
    shutil.copytree(FIXTURES / "claude-2.1.332" / "basic", claude / "projects")
    r = run_om("--store", store, "ingest", "--client", "claude", env={"CLAUDE_CONFIG_DIR": str(claude)})
    assert r.returncode == 0 and "captured 9" in r.stdout, r


def test_a_killed_ingest_leaves_the_ledger_as_it_was_or_as_it_is_after(store, tmp_path):
    import signal
    import subprocess

    from conftest import RUNTIME_ARGV

    src = transcript("codex-0.169.0", "basic", next(iter(hook_sources("codex-0.169.0", "basic"))))
    big = tmp_path / "rollouts" / src.name
    big.parent.mkdir()
    (session,) = hook_sources("codex-0.169.0", "basic")
    copies = grow_transcript(src, big, 12 * 1024 * 1024, session)
    total = 6 * copies
    env = {k: v for k, v in os.environ.items() if k != "OBSERVATIONAL_MEMORY_STORE"}
    env["PYTHONPATH"] = str(ROOT)
    t0 = time.perf_counter()
    full = subprocess.run([*RUNTIME_ARGV, "--store", str(tmp_path / "timing"), "ingest", "--client", "codex", str(big)],
                          env=env, capture_output=True, timeout=300)
    assert full.returncode == 0, full.stderr
    duration = time.perf_counter() - t0
    rng = random.Random(22)
    counts = set()
    for _ in range(8):
        proc = subprocess.Popen([*RUNTIME_ARGV, "--store", str(store), "ingest", "--client", "codex", str(big)],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.3, 1.0) * duration)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        count = len(stored_ids(store).get(session, []))
        assert count in (0, total)
        counts.add(count)
        if count:
            break
        shutil.rmtree(store, ignore_errors=True)
    done = ingest(store, "codex", big)
    assert len(stored_ids(store)[session]) == total
    assert done["captured"] in (0, total)
    assert not [p for p in os.listdir(store) if p.startswith(".om-tmp-")]  # the staging folder was swept


def test_a_transcript_marker_is_kept_per_file_in_the_ledger(store):
    folder, scenario = "codex-0.169.0", "basic"
    ingest(store, "codex", FIXTURES / folder / scenario)
    (session,) = hook_sources(folder, scenario)
    keys = [k for k in meta(store, database(store, session)) if k.startswith("om_ingest:")]
    (path,) = (FIXTURES / folder / scenario).glob("*.jsonl")
    assert keys == [f"om_ingest:{os.path.realpath(path)}"]


def test_the_mcp_tool_ingests_the_calling_sessions_own_transcript_only(store, tmp_path):
    from mcp_client import McpServer

    home = tmp_path / "codex-home"
    for scenario in ("basic", "tools"):
        shutil.copytree(FIXTURES / "codex-0.169.0" / scenario, home / "sessions" / scenario)
    (basic,) = hook_sources("codex-0.169.0", "basic")
    with McpServer(store=store, env={"CODEX_HOME": str(home)}) as srv:
        srv.initialize()
        dry = json.loads(srv.ok("ingest", session=basic, dry_run=True))
        assert not os.path.exists(store)
        report = json.loads(srv.ok("ingest", session=basic))
        missing = srv.fail("ingest", session="somebody-else")
    assert dry["captured"] == report["captured"] == 6 and dry["dry_run"] is True
    assert [e["session"] for e in report["sessions"]] == [basic]
    assert stored_ids(store) == hook_sources("codex-0.169.0", "basic")
    assert missing.startswith("om: no transcript of session 'somebody-else' in ")
    cli = run_om("--store", store, "--session", basic, "ingest", "--client", "codex", home / "sessions", "--json")
    assert cli.json["captured"] == 0  # the session's transcript is unchanged: nothing to read again


def test_a_claude_plugin_servers_store_finds_the_transcripts_of_its_own_configuration(tmp_path):
    from mcp_client import McpServer

    config = tmp_path / "claude-config"
    shutil.copytree(FIXTURES / "claude-2.1.332" / "basic", config / "projects")
    data = config / "plugins" / "data" / "om-observational-memory"
    (session,) = hook_sources("claude-2.1.332", "basic")
    env = {"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": "", "CODEX_HOME": str(tmp_path / "no-codex")}
    with McpServer(store=data, env=env) as srv:
        srv.initialize()
        report = json.loads(srv.ok("ingest", session=session))
    assert report["captured"] == 9 and stored_ids(data) == hook_sources("claude-2.1.332", "basic")


def test_doctor_counts_the_turns_the_newest_transcripts_hold_and_prints_the_command_that_captures_them(tmp_path):
    import shlex
    import subprocess
    import sys

    # The om plugin is installed in this Codex home, but its hooks never ran (never trusted):
    # the transcripts hold the turns and the plugin's store does not exist yet.
    home = tmp_path / "codex-home"
    shutil.copytree(FIXTURES / "codex-0.169.0" / "basic", home / "sessions" / "2026" / "12" / "02")
    (home / "config.toml").write_text('[plugins."om@observational-memory"]\nenabled = true\n')
    store = home / "om"
    env = {"CODEX_HOME": str(home), "CLAUDE_CONFIG_DIR": str(tmp_path / "no-claude")}
    r = run_om("doctor", "--json", env=env)
    (finding,) = [c for c in r.json["checks"] if c["check"] == "codex.transcripts"]
    assert finding["status"] == "warn"
    assert "1 of the 1 newest Codex session(s) hold 2 turn(s), 6 source(s)" in finding["finding"]
    assert not os.path.exists(store)  # doctor's look is a dry run
    argv = shlex.split(finding["fix"])
    assert argv[argv.index("--store") + 1] == str(store) and argv[-3:] == ["ingest", "--client", "codex"]
    full_env = dict(os.environ, **env, PYTHONPATH=str(ROOT))
    fixed = subprocess.run([sys.executable if argv[0] == "python3" else argv[0], *argv[1:]], env=full_env,
                           capture_output=True, text=True, timeout=120)
    assert fixed.returncode == 0, fixed.stderr
    assert stored_ids(store) == hook_sources("codex-0.169.0", "basic")
    again = run_om("doctor", "--json", env=env)
    (finding,) = [c for c in again.json["checks"] if c["check"] == "codex.transcripts"]
    assert finding["status"] == "ok" and finding["fix"] == ""
