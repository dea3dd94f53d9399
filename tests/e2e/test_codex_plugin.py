"""The om plugin inside the real Codex CLI 0.169.0, against a scripted mock model.

Each scenario asserts on the ledger (through the real `om` CLI) and on what the model
received.
"""

import json
import shlex
import sqlite3
from pathlib import Path

import pytest

from agent_moves import json_in, marker_checkpoint
from broken_stores import BREAKAGES, assert_left_as_broken, break_store
from codex_harness import BWRAP, agent_messages, bwrap, codex, codex_bin, marketplace, om, thread_id  # noqa: F401 (fixtures)
from mock_model import say, shell
from raw_bytes import files_holding

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]

HOOK_PROMPT = "<hook_prompt"
CHECKPOINT_ENV = {"OM_CHECKPOINT_TURNS": "1"}


def ledger_command_in(text):
    """The ledger command a hook message advertised (the line after 'Ledger command')."""
    for line in text.splitlines():
        if "Ledger command" in line:
            return line.split(":", 1)[1].strip().removeprefix("(run it exactly, from any directory): ")
    raise AssertionError(f"no ledger command in {text[:500]!r}")


def items_after_last_hook_prompt(request):
    items = request.items
    marks = [i for i, item in enumerate(items) if item.get("role") == "user" and HOOK_PROMPT in json.dumps(item)]
    return marks, items[marks[-1] + 1:] if marks else []


def outputs_of(items):
    return [item.get("output") if isinstance(item.get("output"), str) else json.dumps(item.get("output"))
            for item in items if item.get("type") == "function_call_output"]


def checkpointing_model(marker_command, observation, final="Printed the marker.", apply_usage=None,
                        checkpoint=marker_checkpoint):
    """A model that runs one command, then answers a checkpoint request with pending + apply
    (the checkpoint `checkpoint(pending, observation)` makes)."""

    def script(request):
        if request.is_compaction:
            return say("Summary: the user asked to print a marker; it was printed.")
        marks, after = items_after_last_hook_prompt(request)
        if not marks:
            if not request.tool_outputs():
                return shell(marker_command)
            return say(final)
        prompt = json.dumps(request.items[marks[-1]])
        command = ledger_command_in(json.loads(prompt)["content"][0]["text"])
        outputs = outputs_of(after)
        if not outputs:
            return shell(f"{command} pending")
        if len(outputs) == 1:
            made = checkpoint(json_in(outputs[0]), observation)
            return shell(f"{command} apply <<'JSON'\n{json.dumps(made)}\nJSON", usage=apply_usage)
        return say("Checkpoint done.")

    return script


SKILL = "om:observational-memory"


def skill_description():
    """The description in the skill's front matter (one line)."""
    text = (ROOT / "skills" / "observational-memory" / "SKILL.md").read_text()
    line = next(line for line in text.split("---")[1].splitlines() if line.startswith("description:"))
    return line.split(":", 1)[1].strip()


def ledger(home, session, *args, input=None):
    """Parsed JSON output of a successful ledger command."""
    result = om(home.store, session, *args, input=input)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def workspace_write(home, writable_store):
    """The sandbox a careful user runs: only the workspace, plus the store when granted."""
    roots = json.dumps([str(home.store)] if writable_store else [])
    return ("\n[sandbox_workspace_write]\n"
            f"writable_roots = {roots}\n"
            "exclude_slash_tmp = true\n"
            "exclude_tmpdir_env_var = true\n")


@pytest.mark.parametrize("sandbox, bwrap", [("workspace-write with the store in writable_roots", b) for b in BWRAP]
                         + [("danger-full-access", None)])
def test_a_turn_is_captured_and_one_checkpoint_pass_writes_a_cited_observation(codex, sandbox, bwrap):
    home = codex(checkpointing_model("echo marker-7f3a", "Printing the marker works: echo printed marker-7f3a."),
                 bwrap=bwrap)
    if sandbox == "danger-full-access":
        home.setup(sandbox="danger-full-access")
    else:
        home.setup(sandbox="workspace-write", top=workspace_write(home, writable_store=True))
    rc, events, err = home.exec("Print the marker with the shell", env=CHECKPOINT_ENV)
    assert rc == 0, err[-2000:]
    session = thread_id(events)
    assert agent_messages(events) == ["Printed the marker.", "Checkpoint done."]

    entries = ledger(home, session, "view", "--all")
    assert [e["text"] for e in entries] == ["Printing the marker works: echo printed marker-7f3a."]
    observation = entries[0]
    assert observation["importance"] == "high"
    (cited,) = ledger(home, session, "recall", observation["id"])["sources"]
    assert cited["kind"] == "tool" and "marker-7f3a" in cited["text"]
    status = ledger(home, session, "status")
    assert status["through"] >= 3  # prompt, tool result, first reply
    assert status["pending_sources"] == 0  # the reply that ends the checkpoint pass is no evidence

    requests = home.model.turn_requests()
    last = requests[-1]
    assert len(requests) == 5
    # The skill that teaches the checkpoint workflow is offered to the model by name and description.
    skills = "\n".join(m for m in requests[0].messages("developer") if "<skills_instructions>" in m)
    assert f"- {SKILL}: {skill_description()} (file: " in skills
    assert sum(HOOK_PROMPT in json.dumps(item) for item in last.items if item.get("role") == "user") == 1
    reason = next(item for item in last.items if HOOK_PROMPT in json.dumps(item))["content"][0]["text"]
    assert "&amp;" not in reason and "&lt;" not in reason and "&gt;" not in reason

    # The agent's own ledger calls are not evidence; the user's prompt is.
    texts = [s["text"] for s in _sources(home, session)]
    assert "Print the marker with the shell" in texts
    assert not any(" pending" in t or " apply" in t for t in texts if "--session" in t)


def test_without_the_store_in_writable_roots_the_sandboxed_agent_cannot_apply(codex, bwrap):
    home = codex(checkpointing_model("echo marker-5e1f", "This observation cannot be written."), bwrap=bwrap)
    home.setup(sandbox="workspace-write", top=workspace_write(home, writable_store=False))
    rc, events, err = home.exec("Print the marker with the shell", env=CHECKPOINT_ENV)
    assert rc == 0, err[-2000:]
    session = thread_id(events)
    assert ledger(home, session, "view", "--all") == []
    apply_output = home.model.requests[-1].tool_outputs()[-1][1]
    assert "om:" in apply_output and ("read-only" in apply_output.lower() or "readonly" in apply_output.lower())


def _sources(home, session):
    """Every captured source, read from the ledger file (its v1 format is part of the contract)."""
    database = ledger(home, session, "status")["database"]
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as conn:
        return [json.loads(body) for (body,) in conn.execute("SELECT body FROM sources ORDER BY seq")]


def test_after_auto_compaction_the_session_start_context_alone_leads_the_model_back_to_its_memory(codex):
    observation = "The marker command printed marker-c0de; keep using echo for markers."
    checkpointing = checkpointing_model("echo marker-c0de", observation,
                                        apply_usage={"input_tokens": 90000, "total_tokens": 90000})

    def script(request):
        compacted = [m for m in request.messages("developer") if "just compacted" in m]
        if request.is_compaction or not compacted:
            return checkpointing(request)
        command = ledger_command_in(compacted[-1])
        if not [out for _, out in request.tool_outputs() if "# om prime" in out]:
            return shell(f"{command} prime")
        return say("Memory recovered after compaction.")

    home = codex(script)
    home.setup(top="model_auto_compact_token_limit = 1000\nmodel_context_window = 100000\n")
    rc, events, err = home.exec("Print the marker with the shell", env=CHECKPOINT_ENV)
    assert rc == 0, err[-2000:]
    session = thread_id(events)
    assert ledger(home, session, "view", "--all")[0]["text"] == observation

    requests = home.model.requests
    compaction = next(i for i, r in enumerate(requests) if r.is_compaction)
    first_after = requests[compaction + 1]
    (context,) = [m for m in first_after.messages("developer") if "Ledger command" in m]
    assert "just compacted" in context and " prime" in context
    assert not any(HOOK_PROMPT in json.dumps(item) for item in first_after.items)  # Codex dropped it
    command = ledger_command_in(context)
    assert shlex.split(command)[-1] == session
    prime_output = [out for _, out in requests[-1].tool_outputs() if "# om prime" in out][-1]
    assert observation in prime_output
    assert agent_messages(events)[-1] == "Memory recovered after compaction."


def test_a_pause_prompt_stops_capture_but_explicit_capture_still_works(codex):
    def script(request):
        if not request.tool_outputs():
            return shell("echo secret-9d1e")
        return say("Done quietly.")

    home = codex(script)
    home.setup()
    rc, events, err = home.exec("[om:pause] print the secret with the shell", env=CHECKPOINT_ENV)
    assert rc == 0, err[-2000:]
    session = thread_id(events)
    assert any("paused" in m for m in home.model.requests[0].messages("developer"))

    rc, events, err = home.exec("and print it once more", env=CHECKPOINT_ENV, resume=session)
    assert rc == 0, err[-2000:]
    status = ledger(home, session, "status")
    assert status["paused"] is True and status["pending_sources"] == 0 and status["through"] == 0
    assert not any(HOOK_PROMPT in r.raw for r in home.model.requests)

    note = json.dumps({"kind": "user", "text": "Remember: explicit note while paused.", "key": "manual"})
    source_id = ledger(home, session, "capture", input=note)["source_id"]
    assert [s["id"] for s in ledger(home, session, "pending")["sources"]] == [source_id]


def test_an_interrupted_turn_leaves_its_evidence_pending_for_the_next_session(codex):
    def script(request):
        if "resumed-after-interrupt" in request.raw:
            return say("Resumed.")
        return say("too late", delay_s=8)

    home = codex(script)
    home.setup()
    rc, events, err = home.exec("Take your time with this", env=CHECKPOINT_ENV, timeout=60,
                                interrupt_after=lambda: len(home.model.requests) >= 1)
    assert rc != 0  # codex exec reports the interrupted turn as a failure
    session = thread_id(events)
    status = ledger(home, session, "status")
    assert status["pending_sources"] == 1 and status["through"] == 0
    (source,) = ledger(home, session, "pending")["sources"]
    assert source["kind"] == "user" and source["text"] == "Take your time with this"

    rc, events, err = home.exec("resumed-after-interrupt", resume=session)
    assert rc == 0, err[-2000:]
    resumed = [r for r in home.model.requests if "resumed-after-interrupt" in r.raw][0]
    (context,) = [m for m in resumed.messages("developer") if "Ledger command" in m and "Pending sources: 1 " in m]
    assert "prime" in context


def test_a_broken_store_never_breaks_the_codex_turn(codex):
    for how in BREAKAGES:
        def script(request):
            if not request.tool_outputs():
                return shell("echo still-working")
            return say("Finished despite the memory store.")

        home = codex(script)
        home.setup()
        break_store(home, how)
        rc, events, err = home.exec("Print still-working with the shell", env=CHECKPOINT_ENV)
        assert rc == 0, (how, err[-2000:])
        assert agent_messages(events) == ["Finished despite the memory store."], how
        requests = home.model.requests
        assert len(requests) == 2, how
        assert "Print still-working with the shell" in requests[0].raw, how
        assert "still-working" in json.dumps(requests[1].tool_outputs()), how
        assert not any(HOOK_PROMPT in r.raw for r in requests), how
        assert_left_as_broken(home, how)


def test_a_private_span_never_reaches_the_ledger_and_forgotten_tool_output_leaves_no_byte(codex):
    def script(request):
        if not request.tool_outputs():
            return shell("echo token-Kestrel-2207")
        return say("Printed the token.")

    home = codex(script)
    home.setup()
    rc, events, err = home.exec("Print the token with the shell <private>my pin is Heron-8812</private> and say so")
    assert rc == 0, err[-2000:]
    session = thread_id(events)
    captured = ledger(home, session, "pending")["sources"]
    assert captured[0]["text"] == "Print the token with the shell [PRIVATE] and say so"
    assert any("token-Kestrel-2207" in s["text"] for s in captured if s["kind"] == "tool")
    assert files_holding(home.store, "Heron-8812") == []

    report = ledger(home, session, "forget", "--text", "token-Kestrel-2207", "-y")
    assert report["sessions"][0]["occurrences"] >= 1 and report["remaining"] == []
    assert files_holding(home.store, "token-Kestrel-2207") == []
