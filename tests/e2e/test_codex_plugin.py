"""The om plugin inside the real Codex CLI 0.169.0, against a scripted mock model.

Each scenario asserts on the ledger (through the real `om` CLI) and on what the model
received.
"""

import json
import shlex
import sqlite3
import threading

from codex_harness import agent_messages, om, thread_id
from mock_model import say, shell

HOOK_PROMPT = "<hook_prompt"
CHECKPOINT_ENV = {"OM_CHECKPOINT_TURNS": "1"}


def ledger_command_in(text):
    """The ledger command a hook message advertised (the line after 'Ledger command')."""
    for line in text.splitlines():
        if "Ledger command" in line:
            return line.split(":", 1)[1].strip().removeprefix("(run it exactly, from any directory): ")
    raise AssertionError(f"no ledger command in {text[:500]!r}")


def json_in(tool_output):
    """The JSON document a shell tool printed (after Codex's exec header lines)."""
    start = tool_output.index("{")
    return json.JSONDecoder().raw_decode(tool_output[start:])[0]


def items_after_last_hook_prompt(request):
    items = request.items
    marks = [i for i, item in enumerate(items) if item.get("role") == "user" and HOOK_PROMPT in json.dumps(item)]
    return marks, items[marks[-1] + 1:] if marks else []


def outputs_of(items):
    return [item.get("output") if isinstance(item.get("output"), str) else json.dumps(item.get("output"))
            for item in items if item.get("type") == "function_call_output"]


def checkpointing_model(marker_command, observation, final="Printed the marker.", apply_usage=None):
    """A model that runs one command, then answers a checkpoint request with pending + apply."""

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
            pending = json_in(outputs[0])
            cited = [s["id"] for s in pending["sources"] if s["kind"] == "tool" and "marker" in s["text"]]
            checkpoint = {"through": pending["through"],
                          "observations": [{"text": observation, "importance": "high", "source_ids": cited}]}
            return shell(f"{command} apply <<'JSON'\n{json.dumps(checkpoint)}\nJSON", usage=apply_usage)
        return say("Checkpoint done.")

    return script


def ledger(home, session, *args, input=None):
    """Parsed JSON output of a successful ledger command."""
    result = om(home.data_dir, session, *args, input=input)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_a_turn_is_captured_and_one_checkpoint_pass_writes_a_cited_observation(codex):
    home = codex(checkpointing_model("echo marker-7f3a", "Printing the marker works: echo printed marker-7f3a."))
    home.setup(sandbox="danger-full-access")
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
    assert status["pending_sources"] == 1  # the reply after the checkpoint pass

    requests = home.model.turn_requests()
    last = requests[-1]
    assert len(requests) == 5
    assert sum(HOOK_PROMPT in json.dumps(item) for item in last.items if item.get("role") == "user") == 1
    reason = next(item for item in last.items if HOOK_PROMPT in json.dumps(item))["content"][0]["text"]
    assert "&amp;" not in reason and "&lt;" not in reason and "&gt;" not in reason

    # The agent's own ledger calls are not evidence; the user's prompt is.
    texts = [s["text"] for s in _sources(home, session)]
    assert "Print the marker with the shell" in texts
    assert not any(" pending" in t or " apply" in t for t in texts if "--session" in t)


def _sources(home, session):
    """Every captured source, read from the ledger file (its v1 format is part of the contract)."""
    database = ledger(home, session, "status")["database"]
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as conn:
        return [json.loads(body) for (body,) in conn.execute("SELECT body FROM sources ORDER BY seq")]
