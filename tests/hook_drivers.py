"""Drive `om hook --client X` as its client does: one payload on stdin, one response checked.

One driver per client, with the same verbs (start, prompt, tool, stop) building payloads
of that client's real shape: Claude Code's from the payloads Claude Code 2.1.332 sent
(tests/fixtures/claude-2.1.332), Codex's from the 0.169.0 shapes. Every response is
checked against what the client accepts for that event; an event the adapter does not
handle must print nothing.
"""

import copy
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import jsonschema

ROOT = Path(__file__).resolve().parent.parent
RUNTIME = ROOT / "bin" / "om"
CLAUDE_FIXTURES = ROOT / "tests" / "fixtures" / "claude-2.1.332"
CODEX_SCHEMAS = ROOT / "tests" / "fixtures" / "codex-0.169.0"
CODEX_SCHEMA_OF = {
    "SessionStart": "session-start", "UserPromptSubmit": "user-prompt-submit",
    "PostToolUse": "post-tool-use", "Stop": "stop", "Interrupt": "interrupt",
}

CLAUDE_PAYLOADS = json.loads((CLAUDE_FIXTURES / "event_payloads.json").read_text())
CLAUDE_SHAPES = json.loads((CLAUDE_FIXTURES / "output-shapes.json").read_text())["events"]


def recorded(event, variant="", scenario="plugin", thread="main"):
    """A deep copy of the payload Claude Code 2.1.332 sent for that (scenario, event, variant, thread)."""
    for example in CLAUDE_PAYLOADS:
        if (example["event"], example["variant"], example["scenario"], example["thread"]) == (
                event, variant, scenario, thread):
            return copy.deepcopy(example["payload"])
    raise KeyError((event, variant, scenario, thread))


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OM_", "PLUGIN_", "CLAUDE_", "OBSERVATIONAL")) or k == "OM_PROJECT_HOME"}
    env.update(extra or {})
    return env


class Driver:
    client = None
    session = None

    def __init__(self, store):
        self.store = Path(store)
        self.stderr = ""

    # -- the hook ---------------------------------------------------------------

    def __call__(self, payload, env=None, raw=None, event=None):
        """Run the hook command on one payload; return the parsed response (None for no output)."""
        event = event or payload["hook_event_name"]
        data = raw if raw is not None else json.dumps(payload).encode()
        proc = subprocess.run(
            [sys.executable, "-I", "-S", str(RUNTIME), "--store", str(self.store), "hook", "--client", self.client],
            input=data, capture_output=True, env=clean_env(env), cwd="/", timeout=60)
        assert proc.returncode == 0, proc
        out = proc.stdout.decode()
        assert out.count("\n") <= 1 and (not out or out.endswith("\n")), out
        self.stderr = proc.stderr.decode()
        response = json.loads(out) if out.strip() else None
        self.check_output(event, response)
        return response

    def check_output(self, event, response):
        raise NotImplementedError

    # -- the ledger, through the CLI ----------------------------------------------

    def om(self, *args, input=None):
        proc = subprocess.run(
            [sys.executable, "-I", "-S", str(RUNTIME), "--store", str(self.store), "--session", self.session, *args],
            input=input, capture_output=True, text=True, env=clean_env(), timeout=60)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    def sources(self):
        return self.om("pending")["sources"]

    def texts(self):
        return [s["text"] for s in self.sources()]

    def meta(self, key):
        """A meta key as a v1 peer reads it from the ledger file."""
        (path,) = self.store.glob("session-*/memory.sqlite3")
        db = sqlite3.connect(path)
        try:
            row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        finally:
            db.close()
        return row[0] if row else None

    def set_meta(self, key, value):
        (path,) = self.store.glob("session-*/memory.sqlite3")
        db = sqlite3.connect(path)
        with db:
            db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))
        db.close()

    def checkpoint_all(self):
        self.om("apply", input=json.dumps({"through": self.om("pending")["through"]}))

    @staticmethod
    def context(response):
        return response["hookSpecificOutput"]["additionalContext"]

    def advertised(self):
        text = self.context(self(self.start()))
        line = next(line for line in text.splitlines() if line.startswith("Ledger command"))
        return line.split(": ", 1)[1]


class ClaudeDriver(Driver):
    """Claude Code 2.1.332: payloads recorded from the plugin scenario (SessionStart, prompt, tools, Stop)."""

    client = "claude"
    session = recorded("SessionStart", "startup")["session_id"]
    handled = ("SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUseFailure", "Stop")

    def check_output(self, event, response):
        if event not in self.handled:
            assert response is None, (event, response)
            return
        if response is not None:
            jsonschema.validate(response, CLAUDE_SHAPES[event])

    def start(self, source="startup"):
        return dict(recorded("SessionStart", "startup"), source=source)

    def prompt(self, text, turn="p-1"):
        return dict(recorded("UserPromptSubmit"), prompt=text, prompt_id=turn)

    def tool(self, command, response=None, turn="p-1", call="toolu_1", name="Bash"):
        payload = recorded("PostToolUse", "Bash")
        payload.update(prompt_id=turn, tool_name=name)
        payload["tool_input"]["command"] = command
        if response is not None:
            payload["tool_response"] = response
        if call:
            payload["tool_use_id"] = call
        else:
            del payload["tool_use_id"]
        return payload

    def failure(self, command, error, turn="p-1", call="toolu_f1"):
        payload = recorded("PostToolUseFailure", "Bash", scenario="tool_failure")
        payload.update(session_id=self.session, prompt_id=turn, tool_use_id=call, error=error)
        payload["tool_input"]["command"] = command
        return payload

    def stop(self, message="Done.", turn="p-1", active=False):
        payload = dict(recorded("Stop"), last_assistant_message=message, stop_hook_active=active)
        if turn:
            payload["prompt_id"] = turn
        else:
            del payload["prompt_id"]
        return payload

    def continuation_text(self, response):
        assert set(response) == {"hookSpecificOutput"}, response
        assert response["hookSpecificOutput"]["hookEventName"] == "Stop"
        return response["hookSpecificOutput"]["additionalContext"]


class CodexDriver(Driver):
    """Codex 0.169.0: payloads of the shapes its hook input schemas define."""

    client = "codex"
    session = "019a2270-2bd1-7750-a7d3-2fcc10ef7544"

    def check_output(self, event, response):
        if response is not None and event in CODEX_SCHEMA_OF:
            schema = json.loads((CODEX_SCHEMAS / f"{CODEX_SCHEMA_OF[event]}.command.output.schema.json").read_text())
            jsonschema.validate(response, schema)

    def _base(self, event, turn):
        payload = {"session_id": self.session, "transcript_path": "/home/user/.codex/sessions/rollout.jsonl",
                   "cwd": "/home/user/project", "hook_event_name": event, "model": "gpt-5",
                   "permission_mode": "bypassPermissions"}
        if turn:
            payload["turn_id"] = turn
        return payload

    def start(self, source="startup"):
        return dict(self._base("SessionStart", None), source=source)

    def prompt(self, text, turn="p-1"):
        return dict(self._base("UserPromptSubmit", turn), prompt=text)

    def tool(self, command, response="ok\n", turn="p-1", call="call-1", name="Bash"):
        payload = dict(self._base("PostToolUse", turn), tool_name=name, tool_input={"command": command},
                       tool_response=response)
        if call:
            payload["tool_use_id"] = call
        return payload

    def stop(self, message="Done.", turn="p-1", active=False):
        return dict(self._base("Stop", turn), stop_hook_active=active, last_assistant_message=message)

    def continuation_text(self, response):
        assert response["decision"] == "block", response
        return response["reason"]


DRIVERS = {"claude": ClaudeDriver, "codex": CodexDriver}
