"""The om MCP server inside the real Codex CLI 0.169.0, in the default sandbox.

With `--sandbox workspace-write` and no writable_roots (and /tmp excluded, as on
a normal machine), the agent's shell cannot write the plugin data folder, so a
checkpoint through the shell ledger command fails with a read-only file
system. Codex starts the plugin's MCP server itself, outside that sandbox, so
the same checkpoint through the MCP tools lands in the ledger.
"""

import json
import shlex
import sqlite3

import pytest

from agent_moves import json_in, marker_checkpoint
from codex_harness import agent_messages, bwrap, codex, codex_bin, marketplace, om, thread_id  # noqa: F401 (fixtures)
from mock_model import say, shell, tool_call

pytestmark = pytest.mark.e2e

HOOK_PROMPT = "<hook_prompt"
CHECKPOINT_ENV = {"OM_CHECKPOINT_TURNS": "1"}
NAMESPACE = "mcp__om"
# No writable_roots key at all, as after a plain install; /tmp and $TMPDIR (where
# the test's CODEX_HOME lives) are excluded so the data folder is as read-only to
# the shell as under a normal home directory.
NO_WRITABLE_ROOTS = ("\n[sandbox_workspace_write]\n"
                     "exclude_slash_tmp = true\n"
                     "exclude_tmpdir_env_var = true\n")


def hook_prompt_text(request):
    """The text of the latest <hook_prompt> user message, and the items after it."""
    items = request.items
    marks = [i for i, item in enumerate(items) if item.get("role") == "user" and HOOK_PROMPT in json.dumps(item)]
    if not marks:
        return None, []
    content = items[marks[-1]]["content"]
    text = content if isinstance(content, str) else "".join(c.get("text", "") for c in content)
    return text, items[marks[-1] + 1:]


def ledger_command_in(text):
    for line in text.splitlines():
        if line.startswith("Ledger command"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no ledger command in {text[:500]!r}")


def mcp_session_in(text):
    """The session id the hook told the model to pass to the MCP tools."""
    line = next(line for line in text.splitlines() if line.startswith("Preferred: the om MCP tools"))
    after = line.split("with session ", 1)[1]
    return json.JSONDecoder().raw_decode(after)[0]


def output_text(item):
    """What a function_call_output carried, as text (MCP results arrive as content parts)."""
    output = item.get("output")
    if isinstance(output, list):
        return "".join(c.get("text", "") for c in output if isinstance(c, dict))
    if isinstance(output, dict):
        return output.get("content") if isinstance(output.get("content"), str) else json.dumps(output)
    return output or ""


def mcp_then_shell_model(marker, observation, seen):
    """Run one command; on the checkpoint request: MCP pending, shell apply, MCP apply."""

    def script(request):
        if request.is_compaction:
            return say("Summary.")
        prompt, after = hook_prompt_text(request)
        if prompt is None:
            if not request.tool_outputs():
                return shell(f"echo {marker}")
            return say("Printed the marker.")
        seen["tools"] = [t.get("name") for t in request.namespace_tools(NAMESPACE)]
        command = ledger_command_in(prompt)
        session = mcp_session_in(prompt)
        assert session == shlex.split(command)[shlex.split(command).index("--session") + 1]
        outputs = [output_text(i) for i in after if i.get("type") == "function_call_output"]
        if not outputs:
            return tool_call(NAMESPACE, "pending", {"session": session})
        pending = json_in(outputs[0])
        checkpoint = marker_checkpoint(pending, observation, marker)
        if len(outputs) == 1:
            seen["pending"] = pending
            return shell(f"{command} apply <<'JSON'\n{json.dumps(checkpoint)}\nJSON")
        if len(outputs) == 2:
            seen["shell_apply"] = outputs[1]
            return tool_call(NAMESPACE, "apply", {"session": session, "checkpoint": checkpoint})
        seen["mcp_apply"] = outputs[2]
        return say("Checkpoint done.")

    return script


def test_in_the_default_sandbox_the_mcp_tools_checkpoint_where_the_shell_command_cannot(codex, bwrap):
    seen = {}
    observation = "The marker command printed marker-9b1d."
    home = codex(mcp_then_shell_model("marker-9b1d", observation, seen), bwrap=bwrap)
    home.setup(sandbox="workspace-write", top=NO_WRITABLE_ROOTS)
    rc, events, err = home.exec("Print the marker with the shell", "--sandbox", "workspace-write",
                                env=CHECKPOINT_ENV)
    assert rc == 0, err[-3000:]
    session = thread_id(events)
    assert agent_messages(events) == ["Printed the marker.", "Checkpoint done."], (seen, err[-3000:])

    # Codex offered the server's tools to the model under the plugin's namespace.
    assert {"pending", "apply", "prime", "recall", "status"} <= set(seen["tools"])
    # The shell could read nothing wrong but could not write: the sandbox refused.
    # (the hook created the ledger; the sandboxed shell gets SQLite's read-only refusal)
    assert "Process exited with code 74" in seen["shell_apply"], seen
    assert "read-only" in seen["shell_apply"].lower() or "readonly" in seen["shell_apply"].lower(), seen
    # The MCP server wrote the checkpoint into the store.
    receipt = json_in(seen["mcp_apply"])
    assert receipt["through"] == seen["pending"]["through"] and len(receipt["observations"]) == 1

    result = om(home.store, session, "view", "--all")
    assert result.returncode == 0, result.stderr
    (entry,) = json.loads(result.stdout)
    assert entry["text"] == observation and entry["id"] == receipt["observations"][0]
    recalled = json.loads(om(home.store, session, "recall", entry["id"]).stdout)
    assert [s["kind"] for s in recalled["sources"]] == ["tool"]
    assert "marker-9b1d" in recalled["sources"][0]["text"]
    # The model's calls of om's own tools are not captured as new evidence.
    tools = [json.loads(s["text"]).get("tool") for s in _sources(home, session) if s["kind"] == "tool"]
    assert tools == ["Bash"], tools


def _sources(home, session):
    database = json.loads(om(home.store, session, "status").stdout)["database"]
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as conn:
        return [json.loads(body) for (body,) in conn.execute("SELECT body FROM sources ORDER BY seq")]

