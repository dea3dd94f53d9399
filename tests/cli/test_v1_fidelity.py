"""Where v1's format and contract decide, `om` does exactly what v1 did (issue: fidelity to v1).

Every test drives the real CLI or the registered hook command as a subprocess;
expected IDs are computed here from the documented hashing rule, without om code.
"""

import hashlib
import json
import os
import shlex
import sqlite3
import subprocess

import pytest

import sqlite_probe
from conftest import bytecode_env, run_om
from mcp_client import McpServer
from test_codex_hook import SESSION, Hook, advertised, tool

TRUNCATE_MARKER = "\n[CAPTURE TRUNCATED]\n"
CREDENTIAL = "[REDACTED CREDENTIAL]"
LIMIT = 4_000_000


@pytest.fixture
def hook(tmp_path):
    return Hook(tmp_path / "plugins" / "data" / "om-observational-memory", tmp_path / "om")


def canonical(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def v1_id(prefix, value):
    return prefix + hashlib.sha256(canonical(value).encode("utf-8")).hexdigest()[:24]


def capture(om, text, kind="user", key="k"):
    r = om("capture", input=json.dumps({"kind": kind, "text": text, "key": key}))
    assert r.returncode == 0, r
    return r.json["source_id"]


def one_line_failure(r, code):
    assert r.returncode == code and r.stdout == "", r
    assert len(r.stderr.strip().splitlines()) == 1, r


def unchanged(om):
    return om("view", "--all").stdout, om("status").json


# -- 1. a checkpoint may cite only the sources it covers ----------------------------------------


def test_a_checkpoint_citing_a_source_beyond_its_cursor_rolls_back_with_v1s_message(om):
    s1 = capture(om, "first", key="1")
    s2 = capture(om, "second", key="2")
    before = unchanged(om)
    r = om("apply", input=json.dumps({"through": 1, "observations": [
        {"text": "Covered.", "source_ids": [s1]},
        {"text": "Not covered yet.", "source_ids": [s1, s2]}]}))
    one_line_failure(r, 65)
    assert "source is beyond checkpoint cursor" in r.stderr and s2 in r.stderr
    assert unchanged(om) == before
    # The same citation is fine once the checkpoint covers it.
    assert om("apply", input=json.dumps({"through": 2, "observations": [
        {"text": "Now covered.", "source_ids": [s1, s2]}]})).returncode == 0


# -- 2. truncation layout -------------------------------------------------------------------------


def test_a_source_over_24000_code_points_is_stored_as_v1s_head_marker_and_tail(om):
    text = "é" * 5 + "H" * 11_995 + "M" * 1_000 + "T" * 11_999 + "🚀"
    sid = capture(om, text, kind="tool")
    assert sid == v1_id("s-", ["tool", "k", text])  # hashed before truncation
    source = om("recall", sid).json["sources"][0]
    assert source["truncated"] is True
    assert source["text"] == text[:12_000] + TRUNCATE_MARKER + text[-12_000:]
    (body,) = sqlite3.connect(_database(om)).execute("SELECT body FROM sources").fetchone()
    assert json.loads(body)["text"] == text[:12_000] + TRUNCATE_MARKER + text[-12_000:]


def test_a_source_of_exactly_24000_code_points_is_kept_whole(om):
    sid = capture(om, "x" * 24_000, kind="tool")
    source = om("recall", sid).json["sources"][0]
    assert source["truncated"] is False and source["text"] == "x" * 24_000


def _database(om):
    (session_dir,) = [p for p in om.store.iterdir() if p.name.startswith("session-")]
    return session_dir / "memory.sqlite3"


# -- 3. redaction marker -------------------------------------------------------------------------------


@pytest.mark.parametrize("secret", [
    "sk-abcdefghijklmnopqrstuvwx",                # legacy rule 2
    "ghp_abcdefghijklmnopqrstuvwxyz0123",         # legacy rule 2
    "Bearer abc.def-ghi",                         # legacy rule 3
    "AKIAABCDEFGHIJKLMNOP",                       # an added rule: the same marker
])
def test_every_redacted_secret_becomes_v1s_marker_so_the_source_id_is_v1s(om, secret):
    text = f"deploy with {secret} today"
    sid = capture(om, text)
    stored = f"deploy with {CREDENTIAL} today"
    assert om("recall", sid).json["sources"][0]["text"] == stored
    assert sid == v1_id("s-", ["user", "k", stored])


# The texts where om's versions of v1's patterns once differed from v1's, with what v1 stores.
V1_REDACTION_EDGES = [
    ("Bearer abc=def", f"{CREDENTIAL}def"),
    ("xBearer abc123", "xBearer abc123"),
    ("sk-abcdefghijklmnop-", f"{CREDENTIAL}-"),
    ("see sk-abcdefghijklmnop_- now", f"see {CREDENTIAL}- now"),
    ("-----BEGIN rsa PRIVATE KEY-----\nMIIEow\n-----END rsa PRIVATE KEY-----", CREDENTIAL),
]


@pytest.mark.parametrize("text,stored", V1_REDACTION_EDGES)
@pytest.mark.parametrize("kind", ["user", "tool"])
def test_each_edge_of_v1s_three_patterns_is_stored_as_v1_stores_it_under_v1s_id(om, text, stored, kind):
    sid = capture(om, text, kind=kind)
    assert sid == v1_id("s-", [kind, "k", stored])
    assert om("recall", sid).json["sources"][0]["text"] == stored


@pytest.mark.parametrize("text,stored", V1_REDACTION_EDGES)
def test_each_edge_in_an_observation_gets_v1s_entry_id(om, text, stored):
    sid = capture(om, "evidence")
    receipt = om("apply", input=json.dumps({"through": 1, "observations": [
        {"text": text, "source_ids": [sid]}]})).json
    assert receipt["observations"] == [v1_id("o-", [stored.strip(), [sid], "medium"])]


def test_a_private_key_block_becomes_one_credential_marker(om):
    text = "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAAAA\n-----END RSA PRIVATE KEY-----\nend"
    sid = capture(om, text)
    assert om("recall", sid).json["sources"][0]["text"] == f"key:\n{CREDENTIAL}\nend"


def test_an_observation_with_a_secret_gets_v1s_id(om):
    sid = capture(om, "evidence")
    receipt = om("apply", input=json.dumps({"through": 1, "observations": [
        {"text": "  Use sk-abcdefghijklmnopqrstuvwx here. ", "importance": "high", "source_ids": [sid]}]})).json
    assert receipt["observations"] == [v1_id("o-", [f"Use {CREDENTIAL} here.", [sid], "high"])]


# -- 4. input limit of 4,000,000 bytes -------------------------------------------------------------------


def _padded(value, size):
    data = json.dumps(value).encode()
    return data + b" " * (size - len(data))


@pytest.mark.parametrize("command,value", [
    ("capture", {"kind": "user", "text": "x", "key": "k"}),
    ("apply", {"through": 0}),
])
def test_stdin_of_exactly_4000000_bytes_is_read_and_one_byte_more_is_refused(om, command, value):
    capture(om, "the session exists: only capture and the hooks begin one")
    assert om(command, input=_padded(value, LIMIT)).returncode == 0
    r = om(command, input=_padded(value, LIMIT + 1))
    one_line_failure(r, 65)
    assert "4000000 bytes" in r.stderr


def test_a_hook_event_over_4000000_bytes_fails_open_and_one_at_the_limit_is_captured(hook):
    event = tool("echo big", call="at-limit")
    hook(None, event="PostToolUse", raw=_padded(event, LIMIT))
    assert len(hook.sources()) == 1
    response = hook(None, event="PostToolUse", raw=_padded(dict(event, tool_use_id="over"), LIMIT + 1))
    assert "4000000 bytes" in response["systemMessage"] and len(hook.sources()) == 1


# -- 5. importance "" --------------------------------------------------------------------------------------


def test_an_empty_importance_is_medium_with_the_id_of_an_omitted_one(om):
    sid = capture(om, "evidence")
    receipt = om("apply", input=json.dumps({"through": 1, "observations": [
        {"text": "Empty importance.", "importance": "", "source_ids": [sid]}]})).json
    (oid,) = receipt["observations"]
    assert oid == v1_id("o-", ["Empty importance.", [sid], "medium"])
    assert om("recall", oid).json["entry"]["importance"] == "medium"
    # Leaving it out names the same entry: nothing new.
    again = om("apply", input=json.dumps({"through": 1, "observations": [
        {"text": "Empty importance.", "source_ids": [sid]}]})).json
    assert again["observations"] == [oid] and len(om("view", "--all").json) == 1


@pytest.mark.parametrize("importance", [" ", "Medium", "none", "urgent"])
def test_an_unknown_importance_is_invalid_and_rolls_back_the_whole_checkpoint(om, importance):
    sid = capture(om, "evidence")
    before = unchanged(om)
    r = om("apply", input=json.dumps({"through": 1, "observations": [
        {"text": "Fine.", "source_ids": [sid]},
        {"text": "Unknown importance.", "importance": importance, "source_ids": [sid]}]}))
    one_line_failure(r, 65)
    assert "observations[1] importance" in r.stderr
    assert unchanged(om) == before


def test_an_omitted_importance_is_medium(om):
    sid = capture(om, "evidence")
    receipt = om("apply", input=json.dumps({"through": 1, "observations": [
        {"text": "Defaulted.", "source_ids": [sid]}]})).json
    assert receipt["observations"] == [v1_id("o-", ["Defaulted.", [sid], "medium"])]


# -- 6. --store and --session on either side of the command word --------------------------------------------


def test_store_and_session_may_follow_the_command_word_for_every_command(store, tmp_path):
    def om(*args, input=None):
        return run_om(*args, input=input)

    s = str(store)
    r = om("capture", "--store", s, "--session", "s1", input=json.dumps({"kind": "user", "text": "x", "key": "k"}))
    assert r.returncode == 0, r
    sid = r.json["source_id"]
    assert om("pending", "--session", "s1", "--store", s).json["through"] == 1
    assert om("--store", s, "status", "--session", "s1").json["pending_sources"] == 1
    assert om("--session", "s1", "apply", "--store", s, input='{"through": 1}').json["through"] == 1
    assert om("recall", sid, "--store", s, "--session", "s1").json["sources"][0]["id"] == sid
    assert om("prime", "--store", s, "--session", "s1").stdout.startswith("# om prime")
    assert om("view", "--all", "--store", s, "--session", "s1").json == []
    assert om("search", "x", "--sources", "--store", s, "--session", "s1").returncode == 0
    assert om("pause", "--store", s, "--session", "s1").json["paused"] is True
    assert om("resume", "--store", s, "--session", "s1").json["paused"] is False
    assert om("fork", "--to-session", "s2", "--store", s, "--session", "s1").json["session"] == "s2"
    assert om("doctor", "--json", "--store", s).returncode in (0, 1)
    assert om("capabilities", "--store", s).returncode == 0
    # The same value twice is one value.
    assert om("--store", s, "--session", "s1", "status", "--store", s, "--session", "s1").returncode == 0


@pytest.mark.parametrize("args", [
    ("--store", "A", "status", "--store", "B", "--session", "s1"),
    ("--session", "s1", "status", "--store", "A", "--session", "s2"),
    ("--store", "A", "--store", "B", "--session", "s1", "status"),
    ("status", "--session", "s1", "--session", "s2", "--store", "A"),
])
def test_the_same_option_twice_with_different_values_is_a_usage_error(tmp_path, args):
    args = [str(tmp_path / a) if a in ("A", "B") else a for a in args]
    r = run_om(*args)
    one_line_failure(r, 64)
    assert "given twice with different values" in r.stderr
    assert not (tmp_path / "A").exists() and not (tmp_path / "B").exists()


def test_ledger_calls_with_the_scope_after_the_command_word_are_not_evidence(hook):
    ledger = advertised(hook)
    argv = shlex.split(ledger)
    runtime, store = " ".join(shlex.quote(w) for w in argv[:-4]), argv[-3]
    q = shlex.quote
    rows = [
        (f"om prime --store {q(store)} --session {q(SESSION)}", False),
        (f"om recall s-1 --session {q(SESSION)} --store {q(store)}", False),
        (f"om --store {q(store)} view --session {q(SESSION)}", False),
        (f"{runtime} status --store {q(store)} --session {q(SESSION)}", False),
        (f"{runtime} --session {q(SESSION)} pending --store {q(store)}", False),
        (f"{ledger} status --store {q(store)} --session {q(SESSION)}", False),
        (f"om prime --store {q(store)} --session {q(SESSION)} && om status --store {q(store)} --session {q(SESSION)}",
         False),
        (f"om prime --store {q(store)} --session other", True),
        (f"om prime --store {q(store)}", True),
        (f"om --store {q(store)} --session {q(SESSION)}", True),
        (f"om prime --store {q(store)} --session {q(SESSION)} --store /elsewhere", True),
        (f"{ledger} status --session other", True),
        (f"om --store={q(store)} --session {q(SESSION)} prime", True),
        (f"om prime --store {q(store)} --session {q(SESSION)} > /tmp/out", True),
        (f"om prime --store {q(store)} --session {q(SESSION)}; ls", True),
        (f"scripts/run.sh prime --store {q(store)} --session {q(SESSION)}", True),
    ]
    before = len(hook.sources())
    for i, (command, captured) in enumerate(rows):
        hook(tool(command, call=f"scoped-{i}"))
        count = len(hook.sources())
        assert (count == before + 1) == captured, (command, captured)
        before = count


# -- 7. the command may be in `cmd` -----------------------------------------------------------------------------


def test_a_ledger_call_in_cmd_is_not_evidence_and_other_commands_in_cmd_are(hook):
    ledger = advertised(hook)
    for i, (command, captured) in enumerate([(f"{ledger} pending", False), ("ls -la", True)]):
        event = tool(command, call=f"cmd-{i}")
        event["tool_input"] = {"cmd": command, "workdir": "/home/user/project"}
        before = len(hook.sources())
        hook(event)
        assert (len(hook.sources()) == before + 1) == captured, command


# -- 9. a query of common words -------------------------------------------------------------------------------------


def test_a_query_made_only_of_common_words_searches_for_those_words(om):
    sid = capture(om, "the")
    capture(om, "redis eviction policy", key="other")
    r = om("search", "--sources", "the")
    assert r.returncode == 0, r
    assert [hit["id"] for hit in r.json["results"]] == [sid]
    r = om("search", "a AND")
    assert r.returncode == 0 and r.json["results"] == [], r


# -- JSON numbers keep their literals ------------------------------------------------------------------------------


def test_a_hook_event_with_numbers_no_float_can_hold_is_captured_with_their_literals(hook):
    huge = "9" * 5000
    raw = (
        '{"session_id": "%s", "turn_id": "turn-1", "hook_event_name": "PostToolUse", "cwd": "/w",'
        ' "tool_name": "Bash", "tool_use_id": "call-n", "tool_response": "ok",'
        ' "tool_input": {"command": "sleep 1", "timeout": 1e400, "ratio": 1.50, "zero": -0, "n": %s, "e": 2E-3}}'
        % (SESSION, huge)
    ).encode()
    assert hook(None, event="PostToolUse", raw=raw) is None
    (source,) = hook.sources()
    expected = (
        '{"input":{"command":"sleep 1","e":2E-3,"n":%s,"ratio":1.50,"timeout":1e400,"zero":-0},'
        '"response":"ok","tool":"Bash"}' % huge
    )
    assert source["text"] == expected
    assert source["id"] == v1_id("s-", ["tool", "call-n", expected])


def test_number_literals_are_kept_exactly_in_a_small_event(hook):
    raw = json.dumps(tool("x", call="call-small")).replace('"command": "x"', '"command": "x", "t": 1e400').encode()
    hook(None, event="PostToolUse", raw=raw)
    (source,) = hook.sources()
    assert source["text"] == '{"input":{"command":"x","t":1e400},"response":"ok\\n","tool":"Bash"}'


# -- a session id under which nothing was captured --------------------------------------------------------------


@pytest.mark.parametrize("args", [("prime",), ("view",), ("view", "--all"), ("search", "anything"), ("status",),
                                  ("pending",)])
def test_reading_a_session_with_nothing_captured_says_so_creates_nothing_and_names_the_sessions_command(om, args):
    capture(om, "the store holds another session")
    before = sorted(os.listdir(om.store))
    r = om(*args, session="miscopied-id")
    assert r.returncode == 0, r
    (line,) = r.stderr.splitlines()
    assert line.startswith('om: no ledger for session "miscopied-id" in store ') and "nothing was created" in line
    assert "sessions" in line and "--store" in line
    assert sorted(os.listdir(om.store)) == before
    if args == ("prime",):
        assert "nothing has been captured" in r.stdout.split("\n# om view")[0]
    named = line.split("check the id (", 1)[1].rsplit(" lists the store's sessions)", 1)[0]
    assert named.endswith(" sessions") and os.path.realpath(om.store) in shlex.split(named)


def test_the_sessions_command_a_miscopied_id_notice_names_runs_as_written_where_no_om_is_on_path(om, tmp_path):
    capture(om, "something")
    line = om("prime", session="miscopied-id").stderr
    named = line.split("check the id (", 1)[1].rsplit(" lists the store's sessions)", 1)[0]
    # A plugin user's shell: no `om` on PATH, another working directory.
    listing = subprocess.run(named + " --json", shell=True, cwd=tmp_path, capture_output=True, text=True,
                             env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **bytecode_env()})
    assert listing.returncode == 0, listing.stderr
    assert "s1" in [s["session"] for s in json.loads(listing.stdout)["sessions"]]


def test_recall_on_a_session_with_nothing_captured_fails_with_the_notice_on_its_one_line(om):
    r = om("recall", "o-123", session="miscopied-id")
    one_line_failure(r, 66)
    assert "no entry o-123" in r.stderr and "no ledger for session" in r.stderr
    assert not om.store.exists()


def test_exporting_a_session_with_no_ledger_fails_and_creates_nothing(om):
    capture(om, "another session")
    before = sorted(os.listdir(om.store))
    one_line_failure(om("export", "--format", "md", session="miscopied-id"), 66)
    assert sorted(os.listdir(om.store)) == before


V1_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sources (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL, body TEXT NOT NULL);
CREATE TABLE entries (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL, body TEXT NOT NULL,
                      active INTEGER NOT NULL DEFAULT 1, retirement TEXT);
"""


def test_an_empty_ledger_another_implementation_made_still_gets_the_nothing_captured_notice(om):
    # v1 opened (so created) a ledger for every command: a `pause` there leaves one with no source.
    directory = sqlite_probe.session_dir(om.store, "s1")
    os.makedirs(directory, mode=0o700)
    with sqlite3.connect(sqlite_probe.database(om.store, "s1")) as conn:
        conn.executescript(V1_SCHEMA)
        conn.executemany("INSERT INTO meta VALUES (?, ?)", [("session", "s1"), ("version", "1"), ("paused", "0")])
    conn.close()
    r = om("prime")
    assert r.returncode == 0 and "nothing has been captured" in r.stderr and "nothing has been captured" in r.stdout


def test_a_session_with_evidence_gets_no_such_notice(om):
    capture(om, "something")
    for args in (("prime",), ("view",), ("search", "something")):
        r = om(*args)
        assert r.returncode == 0 and r.stderr == "", (args, r)
        assert "nothing has been captured" not in r.stdout


# -- one description of the checkpoint ---------------------------------------------------------------------------


def test_the_advertised_checkpoint_schema_and_the_cli_agree_on_every_field(store):
    with McpServer(store=store) as srv:
        srv.initialize()
        tools = {t["name"]: t for t in srv.request("tools/list")["result"]["tools"]}
    schema = tools["apply"]["inputSchema"]["properties"]["checkpoint"]
    assert schema["required"] == ["through"] and schema["additionalProperties"] is False

    def cli(*args, input=None):
        return run_om("--store", store, "--session", "s1", *args, input=input)

    sid = capture(cli, "evidence")
    o1, o2 = cli("apply", input=json.dumps({"through": 1, "observations": [
        {"text": "Older.", "source_ids": [sid]}, {"text": "Newer.", "source_ids": [sid]}]})).json["observations"]
    valid = {
        "observations": {"text": "A fact.", "importance": "high", "source_ids": [sid], "promote": False},
        "reflections": {"text": "A conclusion.", "observation_ids": [o1], "promote": False},
        "retire": {"id": o1, "reason": "Superseded.", "replacement_ids": [o2]},
    }
    for kind, item in valid.items():
        spec = schema["properties"][kind]["items"]
        assert set(spec["properties"]) == set(item) and spec["additionalProperties"] is False
        for field in item:
            partial = {k: v for k, v in item.items() if k != field}
            for value in (partial, dict(partial, **{field: None})):
                r = cli("apply", input=json.dumps({"through": 1, kind: [value]}))
                if field in spec["required"]:
                    one_line_failure(r, 65)
                else:
                    assert r.returncode == 0, (kind, field, r)
