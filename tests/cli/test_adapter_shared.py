"""What both adapters do alike, through each client's hook command and payload shapes.

v1 fidelity of the adapter state (the meta keys a v1 peer reads), om's own continuation
never coming back as evidence, the first SessionStart of an empty ledger, and the
in-chat `[om:pause]` / `[om:resume]` switches.
"""

import json

import pytest

from hook_drivers import DRIVERS

TURN_EVERY = {"OM_CHECKPOINT_TURNS": "1"}


@pytest.fixture(params=sorted(DRIVERS))
def hook(request, tmp_path):
    return DRIVERS[request.param](tmp_path / "store")


# -- adapter state keeps v1's meaning ------------------------------------------------------


def test_prompt_id_holds_the_source_id_of_the_last_captured_prompt(hook):
    hook(hook.prompt("first prompt", turn="t-1"))
    hook(hook.prompt("second prompt", turn="t-2"))
    first, second = hook.sources()
    assert hook.meta("prompt_id") == second["id"]
    # An uncaptured (blank) prompt leaves it alone.
    hook(hook.prompt("   ", turn="t-3"))
    assert hook.meta("prompt_id") == second["id"]


def test_stop_prompt_holds_the_exact_text_of_the_last_continuation(hook):
    hook(hook.prompt("do it", turn="t-1"))
    text = hook.continuation_text(hook(hook.stop("done", turn="t-1"), env=TURN_EVERY))
    assert hook.meta("stop_prompt") == text


def test_a_stop_without_a_turn_id_keys_the_reply_by_the_last_prompts_source_id(hook):
    hook(hook.prompt("a prompt", turn="t-1"))
    prompt_source = hook.sources()[0]["id"]
    hook(hook.stop("the reply", turn=None))
    reply = hook.sources()[-1]
    same = hook.om("capture", input=json.dumps({"kind": "assistant", "text": "the reply", "key": prompt_source}))
    assert same["source_id"] == reply["id"]


def test_a_stop_without_a_turn_id_continues_at_most_once_per_captured_prompt(hook):
    hook(hook.prompt("a prompt", turn="t-1"))
    assert hook.continuation_text(hook(hook.stop("reply one", turn=None), env=TURN_EVERY))
    assert hook(hook.stop("reply two", turn=None), env=TURN_EVERY) is None
    hook(hook.prompt("a new prompt", turn="t-2"))
    assert hook.continuation_text(hook(hook.stop("reply three", turn=None), env=TURN_EVERY))


def test_stop_turn_holds_the_key_a_continuation_was_given_on_the_turn_else_the_prompt(hook):
    hook(hook.prompt("a prompt", turn="t-1"))
    assert hook.continuation_text(hook(hook.stop("a reply", turn="t-1"), env=TURN_EVERY))
    assert hook.meta("stop_turn") == "t-1"
    hook(hook.prompt("another prompt", turn="t-2"))
    assert hook.continuation_text(hook(hook.stop("another reply", turn=None), env=TURN_EVERY))
    assert hook.meta("stop_turn") == hook.meta("prompt_id") == hook.sources()[-2]["id"]


@pytest.mark.parametrize("with_turn", [True, False])
def test_a_ledger_a_v1_peer_continued_is_not_continued_again_on_the_same_key(hook, with_turn):
    hook(hook.prompt("a prompt", turn="t-1"))
    # What v1 leaves behind after continuing this Stop: stop_turn = the key it continued on.
    hook.set_meta("stop_turn", "t-1" if with_turn else hook.meta("prompt_id"))
    assert hook(hook.stop("a reply", turn="t-1" if with_turn else None), env=TURN_EVERY) is None
    assert hook.texts()[-1] == "a reply"


def test_a_stop_without_a_turn_or_a_captured_prompt_captures_and_requests_nothing(hook):
    hook(hook.start())
    assert hook(hook.stop("a reply to nothing", turn=None), env=TURN_EVERY) is None
    assert hook.sources() == []
    assert hook.meta("stop_turn") is None and hook.meta("stop_prompt") is None
    # The next prompt and its Stop go on as usual.
    hook(hook.prompt("a prompt", turn="t-1"))
    assert hook.continuation_text(hook(hook.stop("a reply", turn="t-1"), env=TURN_EVERY))


def test_the_adapters_own_state_lives_under_its_client_prefix(hook):
    hook(hook.prompt("a prompt", turn="t-1"))
    hook(hook.stop("a reply", turn="t-1"), env=TURN_EVERY)
    assert hook.meta(f"{hook.client}_turn_ends") is not None
    other = "claude" if hook.client == "codex" else "codex"
    assert hook.meta(f"{other}_turn_ends") is None


def test_every_meta_key_the_hook_writes_is_declared_by_its_adapter_state(hook):
    import importlib
    import sqlite3

    hook(hook.start())
    hook(hook.prompt("a prompt", turn="t-1"))
    hook(hook.tool("cat big", response="x" * 200, call="call-9", turn="t-1"), env={"OM_CHECKPOINT_BYTES": "100"})
    hook(hook.stop("a reply", turn="t-1"), env=TURN_EVERY)
    hook(hook.prompt("another prompt", turn="t-2"))
    hook(hook.stop("another reply", turn=None), env=TURN_EVERY)
    (path,) = hook.store.glob("session-*/memory.sqlite3")
    db = sqlite3.connect(path)
    keys = {key for (key,) in db.execute("SELECT key FROM meta")}
    db.close()
    state = importlib.import_module(f"om.{hook.client}.state").STATE
    # v1's core keys, and om's own records (om_*), belong to no adapter.
    adapter_keys = {k for k in keys - {"session", "version", "cursor", "paused", "last_checkpoint_at"}
                    if not k.startswith("om_")}
    undeclared = {k for k in adapter_keys if k not in state.legacy and not k.startswith(state.prefix)}
    assert adapter_keys and undeclared == set()


# -- om's own continuation is never evidence -------------------------------------------------


def _continued(hook):
    hook(hook.prompt("the user's prompt", turn="t-1"))
    return hook.continuation_text(hook(hook.stop("a reply", turn="t-1"), env=TURN_EVERY))


def test_the_reply_that_ends_oms_continuation_is_not_evidence_so_a_checkpoint_leaves_nothing_pending(hook):
    hook(hook.prompt("print the marker", turn="t-1"))
    hook(hook.tool("echo marker", call="call-1", turn="t-1"))
    assert hook.continuation_text(hook(hook.stop("Printed the marker.", turn="t-1"), env=TURN_EVERY))
    hook.checkpoint_all()
    assert hook(hook.stop("Checkpoint done.", turn="t-1", active=True), env=TURN_EVERY) is None
    assert hook.om("status")["pending_sources"] == 0 and hook.sources() == []


def test_a_reply_after_a_continuation_om_did_not_ask_for_is_still_evidence(hook):
    # stop_hook_active after another hook's continuation: om asked for nothing on this turn.
    hook(hook.prompt("print the marker", turn="t-1"))
    assert hook(hook.stop("First answer.", turn="t-1")) is None
    assert hook(hook.stop("Answer after another hook.", turn="t-1", active=True)) is None
    assert hook.texts()[-2:] == ["First answer.", "Answer after another hook."]


def test_the_continuation_sent_back_verbatim_as_a_prompt_is_not_captured(hook):
    text = _continued(hook)
    before = hook.texts()
    hook(hook.prompt(text, turn="t-2"))
    hook(hook.prompt("\n" + text + "  \n", turn="t-3"))
    assert hook.texts() == before


def test_the_continuation_wrapped_as_a_hook_prompt_is_not_captured(hook):
    text = _continued(hook)
    before = hook.texts()
    hook(hook.prompt(f'<hook_prompt hook_run_id="run-7">{text}</hook_prompt>', turn="t-2"))
    assert hook.texts() == before


def test_a_wrapped_continuation_is_recognised_with_its_xml_specials_escaped(hook):
    _continued(hook)
    # A ledger handed over from a v1 peer whose continuation text held `&`, `<` and `>`.
    hook.set_meta("stop_prompt", "Run: om pending && om apply < checkpoint.json > receipt.json")
    before = hook.texts()
    escaped = "Run: om pending &amp;&amp; om apply &lt; checkpoint.json &gt; receipt.json"
    hook(hook.prompt(f'<hook_prompt hook_run_id="0193">{escaped}</hook_prompt>', turn="t-2"))
    assert hook.texts() == before


def test_a_prompt_that_only_quotes_the_continuation_is_evidence(hook):
    text = _continued(hook)
    hook(hook.prompt("Why did you get this? " + text, turn="t-2"))
    hook(hook.prompt('<hook_prompt hook_run_id="x">something else</hook_prompt>', turn="t-3"))
    assert len(hook.texts()) == 4


# -- SessionStart on an empty ledger -----------------------------------------------------------


@pytest.mark.parametrize("source", ["startup", "resume", "clear"])
def test_an_empty_ledger_gets_what_om_does_and_the_ledger_command_but_no_prime_request(hook, source):
    text = hook.context(hook(hook.start(source)))
    command = hook.advertised()
    assert f"Ledger command (run it exactly, from any directory): {command}" in text
    assert "keeps a ledger of this session's evidence" in text
    assert "prime" not in text.replace("(prime, ", "(")  # the MCP tool list names tools, it does not ask
    assert "Pending sources" not in text


def test_after_compaction_prime_is_asked_for_even_on_an_empty_ledger(hook):
    text = hook.context(hook(hook.start("compact")))
    assert "just compacted" in text and f"`{hook.advertised()} prime`" in text


def test_pending_evidence_without_memory_is_reported_without_asking_for_prime(hook):
    hook(hook.prompt("captured but not checkpointed"))
    text = hook.context(hook(hook.start("resume")))
    assert "Pending sources: 1 " in text and "load memory" not in text


def test_memory_to_load_gets_the_prime_request(hook):
    hook(hook.prompt("We use SQLite."))
    (source,) = hook.sources()
    hook.om("apply", input=json.dumps({"through": source["seq"], "observations": [
        {"text": "The project uses SQLite.", "source_ids": [source["id"]]}]}))
    text = hook.context(hook(hook.start("startup")))
    assert f"`{hook.advertised()} prime`" in text and "load memory" in text


# -- [om:pause] and [om:resume] ---------------------------------------------------------------


def test_the_pause_message_names_the_resume_tool_among_its_tools_and_the_resume_prefix(hook):
    text = hook.context(hook(hook.prompt("[om:pause] keep this private")))
    assert "the resume tool" in text and "om MCP tools (resume, " in text
    assert f"{hook.advertised()} resume" in text and "[om:resume]" in text
    assert hook.om("status")["paused"] is True and hook.sources() == []


def test_a_resume_prefix_resumes_capture_with_that_prompt_stored_without_the_prefix(hook):
    hook(hook.prompt("[om:pause] keep this private", turn="t-1"))
    hook(hook.tool("cat secrets", call="call-private", turn="t-1"))
    hook(hook.prompt("still private", turn="t-2"))
    response = hook(hook.prompt("  [om:resume]  carry on with the parser", turn="t-3"))
    assert "resumed" in hook.context(response) and "was recorded" in hook.context(response)
    assert hook.om("status")["paused"] is False
    hook(hook.stop("parser done", turn="t-3"))
    assert hook.texts() == ["carry on with the parser", "parser done"]
    assert hook.meta("prompt_id") == hook.sources()[0]["id"]


def test_a_resume_prefix_while_capturing_only_drops_the_prefix(hook):
    assert hook(hook.prompt("[om:resume] nothing was paused")) is None
    assert hook.texts() == ["nothing was paused"]


def test_a_bare_resume_prefix_resumes_and_captures_nothing(hook):
    hook(hook.prompt("[om:pause]", turn="t-1"))
    text = hook.context(hook(hook.prompt("[om:resume]", turn="t-2")))
    assert "resumed" in text and "recorded" not in text
    assert hook.sources() == [] and hook.om("status")["paused"] is False


# -- the hook path stays cheap ------------------------------------------------------------------

HEAVY = {"argparse", "re", "shlex", "json", "hashlib", "_hashlib", "sqlite3", "enum", "functools", "datetime", "os",
         "posixpath", "_collections_abc",
         "typing", "subprocess", "threading", "pathlib", "tempfile", "logging"}


def test_the_hook_path_loads_no_heavy_module_for_any_event(hook):
    import subprocess
    import sys

    from hook_drivers import RUNTIME, clean_env

    hook(hook.start())
    # A fresh start (startup, clear) may scan the store for the project's earlier
    # sessions; a resumed or compacted one never does.
    for payload in (hook.start("resume"), hook.start("compact"), hook.prompt("fix the bug"),
                    hook.tool("grep -rn bug src"), hook.stop("Fixed it.")):
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", "-I", "-S", str(RUNTIME), "--store", str(hook.store), "hook",
             "--client", hook.client],
            input=json.dumps(payload).encode(), capture_output=True, env=clean_env(), timeout=60)
        assert proc.returncode == 0
        loaded = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.decode().splitlines()
                  if line.startswith("import time:")}
        assert "om.ledger" in loaded and not loaded & HEAVY, (payload["hook_event_name"], loaded & HEAVY)


def test_the_session_start_records_the_project_of_the_events_cwd(hook, tmp_path):
    import subprocess
    import sys

    from hook_drivers import RUNTIME, clean_env

    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    hook(dict(hook.start(), cwd=str(project / "src")))
    proc = subprocess.run([sys.executable, "-I", "-S", str(RUNTIME), "--store", str(hook.store), "sessions", "--json"],
                          capture_output=True, text=True, env=clean_env(), timeout=60)
    (listed,) = json.loads(proc.stdout)["sessions"]
    assert listed["session"] == hook.session and listed["project"] == str(project)


def test_a_ledger_call_given_as_cmd_or_with_the_options_after_the_command_is_not_evidence(hook):
    command = hook.advertised()
    payload = hook.tool("", call="call-cmd")
    payload["tool_input"] = {"cmd": f"{command} pending"}
    hook(payload)
    store, session = str(hook.store.resolve()), hook.session
    hook(hook.tool(f"om prime --store {store} --session {session}", call="call-after"))
    assert hook.sources() == []
    hook(hook.tool("ls", call="call-ls"))
    assert len(hook.sources()) == 1
