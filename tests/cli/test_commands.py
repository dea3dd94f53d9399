"""Every command of CLI contract v1, driven as a real subprocess."""

import json
import os
import sqlite3

import pytest

from conftest import run_om


def capture(om, text, kind="user", key="k", **kw):
    r = om("capture", input=json.dumps({"kind": kind, "text": text, "key": key}), **kw)
    assert r.returncode == 0, r
    return r.json["source_id"]


def apply(om, checkpoint, ok=True):
    r = om("apply", input=json.dumps(checkpoint))
    if ok:
        assert r.returncode == 0, r
        return r.json
    assert r.returncode != 0 and r.stdout == "", r
    assert len(r.stderr.strip().splitlines()) == 1, r
    return r


def test_capabilities_prints_version_protocol_schema_and_clients_without_a_store(tmp_path):
    store = tmp_path / "never"
    r = run_om("capabilities", env={"OBSERVATIONAL_MEMORY_STORE": str(store)})
    assert r.returncode == 0
    assert r.json == {"version": r.json["version"], "protocol_version": 1, "ledger_schema": 1,
                      "clients": ["codex", "claude"]}
    assert not store.exists()


def test_check_compatibility_accepts_protocol_1_for_codex_and_claude_only(tmp_path):
    store = tmp_path / "never"
    env = {"OBSERVATIONAL_MEMORY_STORE": str(store)}
    for client in ("codex", "claude"):
        ok = run_om("check-compatibility", "--protocol", "1", "--client", client, env=env)
        assert ok.returncode == 0 and ok.json == {"compatible": True}
    for protocol, client in [("2", "codex"), ("1", "gemini"), ("x", "codex"), ("2", "claude")]:
        bad = run_om("check-compatibility", "--protocol", protocol, "--client", client, env=env)
        assert bad.returncode != 0 and bad.stdout == "" and "incompatible" in bad.stderr
    assert not store.exists()


def test_version_flag_prints_the_version():
    r = run_om("--version")
    assert r.returncode == 0 and r.stdout.startswith("om ")


def test_store_defaults_to_the_environment_variable_and_nothing_else(tmp_path):
    store = tmp_path / "env-store"
    r = run_om("--session", "s", "status", env={"OBSERVATIONAL_MEMORY_STORE": str(store)})
    assert r.returncode == 0 and r.json["database"].startswith(str(store.resolve()))
    missing = run_om("--session", "s", "status", cwd=tmp_path)
    assert missing.returncode != 0 and "--store" in missing.stderr


def test_usage_errors_exit_nonzero_but_never_2(om):
    for args in (["nonsense"], ["view", "--bogus"], ["recall"], []):
        r = om(*args)
        assert r.returncode not in (0, 2), (args, r)
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("before, meant", [
    (["--sesion", "alpha"], "--session"),
    (["--sesion=alpha"], "--session"),
    (["--sotre", "elsewhere", "--session", "alpha"], "--store"),
    (["--Session", "alpha"], "--session"),
    (["--json"], None),
])
def test_a_mistyped_option_before_the_command_is_named_not_the_value_after_it(tmp_path, before, meant):
    store = tmp_path / "store"
    r = run_om("--store", store, *before, "status")
    assert r.returncode == 64 and r.stdout == "", r
    (line,) = r.stderr.splitlines()
    assert line.startswith(f"om: unknown option {before[0].split('=')[0]} before the command"), line
    assert (f"(did you mean {meant}?)" in line) if meant else "did you mean" not in line
    assert "invalid choice" not in line and "alpha" not in line and "options after it" in line
    assert not store.exists()


def test_an_abbreviated_scope_option_before_the_command_still_reads_as_the_option(om):
    r = run_om("--store", om.store, "--sess", "alpha", "status")
    assert r.returncode == 0 and r.json["session"] == "alpha", r


def test_capture_returns_a_source_id_and_identical_captures_are_idempotent(om):
    first = capture(om, "Use pytest, not unittest.")
    assert first.startswith("s-") and len(first) == 26
    assert capture(om, "Use pytest, not unittest.") == first
    assert capture(om, "Use pytest, not unittest.", key="other") != first
    assert capture(om, "Use pytest, not unittest.", kind="assistant") != first
    pending = om("pending").json
    assert [s["id"] for s in pending["sources"]] == [first, pending["sources"][1]["id"], pending["sources"][2]["id"]]
    assert pending["sources"][0]["seq"] == 1


def test_capture_rejects_bad_kind_blank_text_and_missing_key(om):
    for payload in (
        {"kind": "system", "text": "x", "key": ""},
        {"kind": "user", "text": " \n\t\u3000", "key": ""},
        {"kind": "user", "text": "x"},
        {"kind": "user", "text": "x", "key": None},
        {"kind": "user", "text": "x", "key": "", "extra": 1},
    ):
        r = om("capture", input=json.dumps(payload))
        assert r.returncode != 0 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1, payload
    assert om("status").json["pending_sources"] == 0


def test_long_sources_keep_a_marked_head_and_tail(om):
    text = "H" * 12_000 + "M" * 10_000 + "T" * 12_000
    sid = capture(om, text, kind="tool")
    src = om("recall", sid).json["sources"][0]
    assert src["truncated"] is True
    assert src["text"].startswith("H" * 12_000) and src["text"].endswith("T" * 12_000)
    assert "M" not in src["text"] and "\n[CAPTURE TRUNCATED]\n" in src["text"]
    assert capture(om, text, kind="tool") == sid  # the ID hashes the full text


def test_capture_redacts_secrets_before_hashing_and_storing(om):
    sid = capture(om, "export KEY=sk-abcdefghijklmnopqrstuvwx done")
    text = om("recall", sid).json["sources"][0]["text"]
    assert "sk-abcdefghijklmnopqrstuvwx" not in text and "done" in text


def test_pending_chunks_at_about_48k_characters_and_always_includes_the_first_source(om):
    for i in range(5):
        capture(om, f"{i}" + "x" * 15_000, kind="tool", key=str(i))
    pending = om("pending").json
    assert [s["seq"] for s in pending["sources"]] == [1, 2, 3]
    assert pending["through"] == 3
    capture(om, "y" * 23_999, kind="tool", key="big")
    apply(om, {"through": 5})
    assert om("pending").json["through"] == 6  # one oversized source still comes alone


def test_pending_through_is_the_cursor_when_nothing_is_pending(om):
    assert om("pending").json == {"through": 0, "sources": []}


def checkpointed(om):
    s1 = capture(om, "The build uses pytest; run it with scripts/test.", kind="user", key="t1")
    s2 = capture(om, "FAILED tests/test_x.py::test_y - AssertionError", kind="tool", key="c1")
    receipt = apply(
        om,
        {
            "through": 2,
            "observations": [
                {"text": "Tests run with scripts/test.", "importance": "high", "source_ids": [s1]},
                {"text": "tests/test_x.py::test_y fails with AssertionError.", "source_ids": [s2, s2]},
            ],
        },
    )
    return s1, s2, receipt


def test_apply_assigns_ids_moves_the_cursor_and_records_the_time(om):
    s1, s2, receipt = checkpointed(om)
    assert receipt["through"] == 2 and receipt["reflections"] == [] and receipt["retired"] == []
    assert [o[:2] for o in receipt["observations"]] == ["o-", "o-"]
    status = om("status").json
    assert status["through"] == 2 and status["pending_sources"] == 0
    assert status["active"] == {"observations": 2, "reflections": 0}
    assert status["last_checkpoint_at"].endswith("Z")
    entries = om("view", "--all").json
    assert entries[1]["support"] == [s2] and entries[1]["importance"] == "medium"


def test_status_fields_come_in_contract_order(om):
    capture(om, "hello")
    # The contract's fields first, in its order; then om's own (the project and its memory's counts).
    assert list(om("status").json) == [
        "session", "database", "paused", "through", "pending_sources", "pending_chars",
        "estimated_pending_tokens", "active", "project_id", "project_memory",
    ]
    status = om("status").json
    assert status["pending_chars"] == 5 and status["estimated_pending_tokens"] == 2


def test_reflections_cite_active_observations_and_retirement_keeps_evidence(om):
    s1, s2, receipt = checkpointed(om)
    o1, o2 = receipt["observations"]
    s3 = capture(om, "Actually run tests with make test now.", key="t2")
    r = apply(
        om,
        {
            "through": 3,
            "observations": [{"text": "Tests now run with make test.", "importance": "high", "source_ids": [s3]}],
        },
    )
    o3 = r["observations"][0]
    r = apply(
        om,
        {
            "through": 3,
            "reflections": [{"text": "The test command changed during the session.", "observation_ids": [o1, o3]}],
            "retire": [{"id": o1, "reason": "Superseded by make test.", "replacement_ids": [o3]}],
        },
    )
    (r1,) = r["reflections"]
    assert r["retired"] == [o1]
    status = om("status").json
    assert status["active"] == {"observations": 2, "reflections": 1}
    recalled = om("recall", r1).json
    assert [o["id"] for o in recalled["observations"]] == [o1, o3]
    assert recalled["observations"][0]["active"] is False
    assert recalled["observations"][0]["retirement"] == {
        "id": o1, "reason": "Superseded by make test.", "replacement_ids": [o3]
    }
    assert [s["id"] for s in recalled["sources"]] == [s1, s3]
    assert om("recall", o1).json["sources"][0]["id"] == s1
    assert "make test" in om("view").stdout and "Tests run with scripts/test." not in om("view").stdout


@pytest.mark.parametrize(
    "bad",
    [
        {"through": 2, "observations": [{"text": "x", "source_ids": ["s-missing"]}]},
        {"through": 2, "observations": [{"text": "x", "source_ids": []}]},
        {"through": 2, "observations": [{"text": "   ", "source_ids": ["S1"]}]},
        {"through": 2, "observations": [{"text": "x" * 2001, "source_ids": ["S1"]}]},
        {"through": 2, "observations": [{"text": "x", "importance": "urgent", "source_ids": ["S1"]}]},
        {"through": 2, "reflections": [{"text": "x", "observation_ids": ["o-missing"]}]},
        {"through": 2, "retire": [{"id": "O1", "reason": "", "replacement_ids": ["O2"]}]},
        {"through": 2, "retire": [{"id": "O2", "reason": "older", "replacement_ids": ["O1"]}]},
        {"through": 2, "retire": [{"id": "O1", "reason": "x", "replacement_ids": ["O1"]}]},
        {"through": 2, "retire": [{"id": "o-missing", "reason": "x", "replacement_ids": ["O2"]}]},
        {"through": 9},
        {"through": 1},
        {"through": 2.0},
        {"through": True},
        {"through": "2"},
        {"observations": []},
        {"through": 2, "unknown": []},
        {"through": 2, "observations": [{"text": "x", "source_ids": ["S1"], "why": "extra"}]},
    ],
)
def test_invalid_checkpoints_roll_back_everything_including_the_cursor(om, bad):
    s1, s2, receipt = checkpointed(om)
    o1, o2 = receipt["observations"]
    s3 = capture(om, "third", key="t3")
    good_observation = {"text": "Valid and new.", "source_ids": [s3]}
    text = json.dumps(bad).replace("S1", s1).replace("O1", o1).replace("O2", o2)
    checkpoint = json.loads(text)
    if type(checkpoint.get("through")) is int and checkpoint["through"] == 2 and "unknown" not in checkpoint:
        checkpoint["through"] = 3
        checkpoint.setdefault("observations", []).insert(0, good_observation)
    before = om("view", "--all").stdout, om("status").json
    apply(om, checkpoint, ok=False)
    assert (om("view", "--all").stdout, om("status").json) == before


def test_identical_observations_at_the_same_cursor_neither_duplicate_nor_reactivate(om):
    s1, s2, receipt = checkpointed(om)
    o1, o2 = receipt["observations"]
    again = apply(om, {"through": 2, "observations": [{"text": "Tests run with scripts/test.", "importance": "high", "source_ids": [s1]}]})
    assert again["observations"] == [o1]
    assert len(om("view", "--all").json) == 2
    newer = apply(om, {"through": 2, "observations": [{"text": "Newer fact.", "source_ids": [s2]}]})["observations"][0]
    apply(om, {"through": 2, "retire": [{"id": o1, "reason": "Replaced.", "replacement_ids": [newer]}]})
    apply(om, {"through": 2, "observations": [{"text": "Tests run with scripts/test.", "importance": "high", "source_ids": [s1]}]})
    assert [e["active"] for e in om("view", "--all").json if e["id"] == o1] == [False]


def test_stale_cursor_fails_and_asks_to_reread_pending(om):
    checkpointed(om)
    r = apply(om, {"through": 1}, ok=False)
    assert "pending" in r.stderr


def test_observation_timestamp_is_the_latest_cited_source_time(om):
    s1, s2, receipt = checkpointed(om)
    sources = {s["id"]: s for s in om("recall", receipt["observations"][1]).json["sources"]}
    assert om("view", "--all").json[1]["timestamp"] == sources[s2]["timestamp"]


def test_recall_of_an_unknown_id_fails_cleanly(om):
    for item in ("s-nope", "o-nope", "r-nope", "garbage"):
        r = om("recall", item)
        assert r.returncode != 0 and r.stdout == "" and item in r.stderr


def test_pause_and_resume_report_status_and_capture_still_works_while_paused(om):
    capture(om, "the session begins with its first capture", key="first")
    assert om("pause").json["paused"] is True
    capture(om, "explicit capture works while paused")
    assert om("status").json["paused"] is True
    assert om("resume").json["paused"] is False
    assert om("status").json["pending_sources"] == 2


def test_prime_shows_session_store_checkpoint_and_backlog(om):
    checkpointed(om)
    capture(om, "not yet distilled", key="later")
    out = om("prime").stdout
    assert str(om.store.resolve()) in out and '"s1"' in out
    assert "1 sources" in out and "does not cover" in out
    assert "Tests run with scripts/test." in out and "not instructions" in out


def test_view_is_plain_text_within_12000_bytes(om):
    s1 = capture(om, "evidence")
    apply(om, {"through": 1, "observations": [{"text": f"fact {i} " + "z" * 1500, "source_ids": [s1]} for i in range(20)]})
    out = om("view").stdout
    assert len(out.encode("utf-8")) <= 12_000 and out.endswith("\n")
    assert "active entries omitted" in out


def test_fork_copies_evidence_and_progress_but_not_adapter_state(om):
    s1, s2, receipt = checkpointed(om)
    db = om("status").json["database"]
    with sqlite3.connect(db) as conn:
        conn.executemany("INSERT INTO meta VALUES (?, ?)", [("stop_turn", "t"), ("prompt_id", "p"), ("codex_x", "1"),
                                                                 ("claude_x", "1")])
    r = om("fork", "--to-session", "child")
    assert r.returncode == 0, r
    child = r.json
    assert child["session"] == "child" and child["through"] == 2
    assert child["imported_from"] == {"store": str(om.store.resolve()), "session": "s1"}
    with sqlite3.connect(child["database"]) as conn:
        meta = dict(conn.execute("SELECT key, value FROM meta"))
    assert set(meta) == {"session", "version", "cursor", "last_checkpoint_at", "forked_from", "forked_from_store"}
    assert om("view", "--all", session="child").stdout == om("view", "--all").stdout
    capture(om, "only in the child", session="child")
    assert om("status").json["pending_sources"] == 0


def test_fork_never_overwrites_an_existing_destination(om):
    checkpointed(om)
    capture(om, "destination's own", session="taken")
    before = om("view", "--all", session="taken").stdout, om("pending", session="taken").stdout
    r = om("fork", "--to-session", "taken")
    assert r.returncode != 0 and "exists" in r.stderr
    assert (om("view", "--all", session="taken").stdout, om("pending", session="taken").stdout) == before
    assert om("fork", "--to-session", "s1").returncode != 0


def test_import_appends_the_destination_pending_sources_after_the_history(om, tmp_path):
    s1, s2, receipt = checkpointed(om)
    other = tmp_path / "other-store"
    dest = lambda *a, **kw: run_om("--store", other, "--session", "new", *a, **kw)
    first = dest("capture", input=json.dumps({"kind": "user", "text": "initial prompt", "key": "turn-1"})).json["source_id"]
    dest("pause")
    r = dest("import", "--from-store", om.store, "--from-session", "s1")
    assert r.returncode == 0, r
    status = r.json
    assert status["through"] == 2 and status["paused"] is True
    assert status["imported_from"] == {"store": str(om.store.resolve()), "session": "s1"}
    pending = dest("pending").json
    assert [s["id"] for s in pending["sources"]] == [first] and pending["sources"][0]["seq"] == 3
    assert dest("view", "--all").stdout == om("view", "--all").stdout
    again = dest("import", "--from-store", om.store, "--from-session", "s1")
    assert again.returncode != 0 and again.stdout == ""


def test_import_keeps_the_destination_prompt_and_pause_but_clears_stop_and_reminder_state(om, tmp_path):
    checkpointed(om)
    with sqlite3.connect(om("status").json["database"]) as conn:  # the source's own adapter state
        conn.executemany("INSERT INTO meta VALUES (?, ?)", [("prompt_id", "src-turn"), ("stop_turn", "src-turn")])
    other = tmp_path / "other-store"
    dest = lambda *a, **kw: run_om("--store", other, "--session", "new", *a, **kw)
    dest("capture", input=json.dumps({"kind": "user", "text": "initial prompt", "key": "turn-9"}))
    db = dest("pause").json["database"]
    with sqlite3.connect(db) as conn:  # what a SessionStart/UserPromptSubmit hook leaves behind
        conn.executemany(
            "INSERT INTO meta VALUES (?, ?)",
            [("prompt_id", "turn-9"), ("stop_turn", "turn-8"), ("stop_prompt", "turn-8"),
             ("notified_cursor", "0"), ("codex_turn_ends", "1"), ("claude_turn_ends", "1"),
             ("claude_x", "p-8")],
        )
    assert dest("import", "--from-store", om.store, "--from-session", "s1").returncode == 0
    with sqlite3.connect(db) as conn:
        meta = dict(conn.execute("SELECT key, value FROM meta"))
    assert meta == {
        "session": "new", "version": "1", "paused": "1", "prompt_id": "turn-9",
        "cursor": "2", "last_checkpoint_at": meta["last_checkpoint_at"],
        "forked_from": "s1", "forked_from_store": str(om.store.resolve()),
        "om_generation": "1",  # the rows at the destination's seqs were rewritten
    }


def test_import_with_a_typo_creates_nothing(om, tmp_path):
    missing = tmp_path / "typo-store"
    r = om("import", "--from-store", missing, "--from-session", "s1")
    assert r.returncode != 0 and not missing.exists()
    r = om("import", "--from-store", om.store, "--from-session", "typo")
    assert r.returncode != 0
    assert not om.store.exists()  # not even the destination ledger was opened
    capture(om, "destination exists now")
    r = om("import", "--from-store", om.store, "--from-session", "typo")
    assert r.returncode != 0
    assert len(list(om.store.iterdir())) == 1


def test_import_refuses_itself_and_checkpointed_destinations(om):
    checkpointed(om)
    assert om("import", "--from-store", om.store, "--from-session", "s1").returncode != 0
    capture(om, "x", session="b")
    om("apply", input='{"through": 1}', session="b")
    r = om("import", "--from-store", om.store, "--from-session", "s1", session="b")
    assert r.returncode != 0 and "uncheckpointed" in r.stderr


def test_a_session_belongs_to_one_ledger(om):
    capture(om, "x")
    db = om("status").json["database"]
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE meta SET value = 'someone-else' WHERE key = 'session'")
    r = om("status")
    assert r.returncode != 0 and "someone-else" in r.stderr


@pytest.mark.parametrize("session", ["", "   ", "x" * 257])
def test_invalid_sessions_are_rejected(om, session):
    r = om("status", session=session)
    assert r.returncode != 0 and r.stdout == ""
    assert not om.store.exists() or not any(om.store.iterdir())


def test_session_strings_cannot_escape_the_store(om):
    r = om("status", session="../../escape")
    assert r.returncode == 0
    assert os.path.dirname(os.path.dirname(r.json["database"])) == str(om.store.resolve())


def test_repeated_captures_and_observations_do_not_burn_sequence_numbers(om):
    capture(om, "a")
    capture(om, "a")
    capture(om, "b", key="2")
    assert [s["seq"] for s in om("pending").json["sources"]] == [1, 2]
    s1 = om("pending").json["sources"][0]["id"]
    obs = {"through": 2, "observations": [{"text": "same", "source_ids": [s1]}]}
    apply(om, obs)
    apply(om, obs)
    apply(om, {"through": 2, "observations": [{"text": "other", "source_ids": [s1]}]})
    assert [e["seq"] for e in om("view", "--all").json] == [1, 2]


def test_output_is_utf8_whatever_the_terminal_encoding(om):
    ascii_terminal = {"PYTHONIOENCODING": "ascii", "LC_ALL": "C"}
    sid = capture(om, "café \U0001F600 \u2028", env=ascii_terminal)
    for args in (("pending",), ("recall", sid), ("view", "--all"), ("view",), ("prime",)):
        r = om(*args, env=ascii_terminal)
        assert r.returncode == 0 and r.stderr == "", (args, r)
    assert om("pending", env=ascii_terminal).json["sources"][0]["text"] == "café \U0001F600 \u2028"
    r = om("recall", "s-\u00e9\U0001F600", env=ascii_terminal)
    assert r.returncode == 66 and r.stderr.count("\n") == 1 and "s-\u00e9\U0001F600" in r.stderr


SOURCE_FIELDS = ["seq", "id", "kind", "timestamp", "text", "truncated"]
ENTRY_FIELDS = ["seq", "id", "kind", "timestamp", "importance", "text", "support", "active", "retirement"]


def test_every_json_shape_has_the_documented_fields_in_order(om):
    s1, s2, receipt = checkpointed(om)
    o1, o2 = receipt["observations"]
    r = apply(om, {"through": 2, "reflections": [{"text": "Both facts matter.", "observation_ids": [o2, o1]}]})
    assert list(r) == ["through", "observations", "reflections", "retired"]
    (r1,) = r["reflections"]
    capture(om, "pending naïve \U0001F600", key="later")
    assert list(om("pending").json) == ["through", "sources"]
    assert list(om("pending").json["sources"][0]) == SOURCE_FIELDS
    assert [list(e) for e in om("view", "--all").json] == [ENTRY_FIELDS] * 3
    assert list(om("recall", s1).json) == ["sources"]
    assert list(om("recall", o1).json) == ["entry", "sources"]
    recalled = om("recall", r1).json
    assert list(recalled) == ["entry", "observations", "sources"]
    assert list(recalled["entry"]) == ENTRY_FIELDS and recalled["entry"]["support"] == sorted([o1, o2])
    assert [list(o) for o in recalled["observations"]] == [ENTRY_FIELDS] * 2
    assert [list(s) for s in recalled["sources"]] == [SOURCE_FIELDS] * 2
    child = om("fork", "--to-session", "child").json
    assert list(child) == [
        "session", "database", "paused", "through", "pending_sources", "pending_chars",
        "estimated_pending_tokens", "last_checkpoint_at", "imported_from", "active",
    ]
    assert list(child["imported_from"]) == ["store", "session"]
    assert list(child["active"]) == ["observations", "reflections"]
    # pending_chars counts code points of the stored text, not bytes
    assert child["pending_chars"] == len("pending naïve \U0001F600") and child["estimated_pending_tokens"] == 4


@pytest.mark.parametrize("extra, through", [(0, 3), (1, 2)])
def test_pending_stops_before_the_running_code_point_total_would_exceed_48000(om, extra, through):
    first = capture(om, "é" * 16_000, kind="tool", key="a")
    cost = len(json.dumps(om("pending").json["sources"][0], ensure_ascii=False, separators=(",", ":")))
    overhead = cost - 16_000  # sources with the same kind and key length cost the same around their text
    capture(om, "é" * 16_000, kind="tool", key="b")
    capture(om, "é" * (48_000 - 2 * cost - overhead + extra), kind="tool", key="c")
    capture(om, "x", kind="tool", key="d")
    pending = om("pending").json
    assert pending["through"] == through and pending["sources"][0]["id"] == first
    assert not any(s["truncated"] for s in pending["sources"])


def test_errors_that_echo_an_id_stay_short_and_on_one_line(om):
    sid = capture(om, "evidence")
    r = om("recall", "o-" + "x" * 100_000)
    assert r.returncode != 0 and len(r.stderr) < 200 and r.stderr.count("\n") == 1
    r = om("apply", input=json.dumps({"through": 1, "observations": [
        {"text": "x", "source_ids": [sid, "s-\n" + "y" * 100_000]}]}))
    assert r.returncode != 0 and len(r.stderr) < 300 and r.stderr.count("\n") == 1
