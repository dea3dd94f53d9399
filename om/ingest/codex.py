"""Codex rollout files (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-…-<thread>.jsonl`) into the hooks' events.

Facts relied on (Codex 0.146.0 legacy, 0.169.0 and 0.171.0 paginated; the
transcript formats and their mapping to hook payloads are described in
docs/ingest.md):
- Line 0 is `session_meta`; its `payload.id` is the thread id, the hooks'
  `session_id`. A sub-agent's rollout (`source.subagent`, `thread_source:
  "subagent"`, or an id other than its `session_id`) is skipped whole: the
  hooks skip every event carrying `agent_id`. A fork is its own thread whose
  file holds only its own turns.
- `payload.history_mode` chooses the format: "legacy" (or absent: older
  files) keeps per-turn events (`user_message`, `agent_message`,
  `mcp_tool_call_end`); "paginated" keeps `item_completed` items
  (`UserMessage`, `AgentMessage`, `McpToolCall`, `HookPrompt`). Any other
  value is an unknown format and the file is skipped.
- A user prompt is the prompt UserPromptSubmit carries, keyed by its turn.
- Tool results, as PostToolUse reports them, keyed by the call id:
  `exec_command` is tool "Bash" with input `{"command": cmd}` and, as response,
  the text after the first "Output:\n" of the output that says the process
  exited: its own, or that of the `write_stdin` poll that saw a still-running
  process (by "session ID") exit. `apply_patch` (a custom tool) has input
  `{"command": patch}` and the whole output. An MCP call is tool
  `mcp__<server>__<tool>` with the arguments as input and the result object.
  `spawn_agent` has the parsed arguments and the output string. Other tools
  are not known to reach PostToolUse the same way and are skipped, counted.
- The final reply is `task_complete.last_agent_message`, keyed by its turn;
  before a Stop continuation (a `HookPrompt` item, legacy: a user message
  starting `<hook_prompt`) the first Stop reported the turn's last agent
  message, so that one is a reply too.
- Developer messages carry om's own context: the ledger command it advertised.
  Compaction summaries, `<environment_context>`, `<subagent_notification>`,
  reasoning and usage lines are never evidence.
"""

from om.errors import InputError
from om.ingest.lines import items, string
from om.jsonio import loads

NAME = "codex"
#: Codex CLI versions whose rollouts were compared with what the hooks captured.
VERIFIED = ("0.146.0", "0.169.0", "0.171.0")
FORMATS = ("legacy", "paginated")

#: Line types and events that carry nothing a hook captures.
_QUIET_LINES = {"world_state", "token_usage_record", "compacted"}
_QUIET_EVENTS = {
    "token_count", "thread_settings_applied", "context_compacted", "patch_apply_end", "exec_command_begin",
    "exec_command_end", "mcp_tool_call_begin", "patch_apply_begin", "agent_reasoning", "agent_reasoning_delta",
    "turn_aborted", "thread_rolled_back", "entered_review_mode", "exited_review_mode", "item_started",
    "web_search_begin", "web_search_end", "background_event", "stream_error", "error", "warning",
}
_QUIET_ITEMS = {"CommandExecution", "FileChange", "CollabAgentToolCall", "ContextCompaction", "Reasoning",
                "WebSearch", "Plan", "ImageGeneration", "ImageView", "Sleep"}
_QUIET_RESPONSES = {"reasoning", "web_search_call", "image_generation_call", "tool_search_call",
                    "tool_search_output", "local_shell_call"}

#: The biggest lines a rollout holds, none of them evidence (om.ingest.lines: quiet markers).
QUIET = (b'"item":{"type":"CommandExecution"', b'"item":{"type":"FileChange"', b'"type":"world_state"',
         b'"type":"token_usage_record"', b'"payload":{"type":"token_count"', b'"payload":{"type":"reasoning"',
         b'"payload":{"type":"thread_settings_applied"')

UNKNOWN_LINE = "unknown line type"
UNKNOWN_ITEM = "unknown item type"
UNVERIFIED = "item of an unverified shape"
NO_RESULT = "tool call without a result"


def listed(name):
    """Whether a file met while walking a folder is a rollout."""
    return name.startswith("rollout-") and name.endswith(".jsonl")


def compressed(name):
    return name.startswith("rollout-") and name.endswith(".jsonl.zst")


def session_of_name(name):
    """The thread id a rollout's file name ends with (`rollout-<time>-<thread id>.jsonl`), or None."""
    if not listed(name):
        return None
    stem = name[: -len(".jsonl")]
    # The time is YYYY-MM-DDTHH-MM-SS: five dashes after "rollout-", then the thread id.
    parts = stem[len("rollout-"):].split("-", 5)
    return parts[5] if len(parts) == 6 and parts[5] else None


class Header:
    """What the first line says about a rollout: whose it is, how it is written, and whether to read it."""

    def __init__(self, session, cwd, format_, version, skip=None):
        self.session = session
        self.cwd = cwd
        self.format = format_
        self.version = version
        self.skip = skip


def header(record):
    if record.get("type") != "session_meta" or not isinstance(record.get("payload"), dict):
        return Header(None, None, None, None, "no session_meta line")
    meta = record["payload"]
    session = meta.get("id")
    version = meta.get("cli_version") if isinstance(meta.get("cli_version"), str) else None
    mode = meta.get("history_mode", "legacy")
    cwd = meta.get("cwd") if isinstance(meta.get("cwd"), str) else None
    if not isinstance(session, str) or not session:
        return Header(None, cwd, mode, version, "no session id")
    source = meta.get("source")
    parent = meta.get("session_id")
    if (isinstance(source, dict) and "subagent" in source) or meta.get("thread_source") == "subagent" \
            or (isinstance(parent, str) and parent != session):
        return Header(session, cwd, mode, version, "sub-agent transcript")
    if mode not in FORMATS:
        return Header(session, cwd, mode, version, "unknown format")
    return Header(session, cwd, mode, version)


def read(records, begin, path=None):
    """Feed a rollout's records to the Replay `begin(header)` returns (None: the file is not read further)."""
    first = next(records, None)
    if first is None:
        return None
    head = header(first)
    replay = begin(head)
    if replay is None:
        return head
    _Rollout(replay, head.format == "legacy", head.cwd).feed(records)
    return head


class _Rollout:
    def __init__(self, replay, legacy, cwd):
        self.replay = replay
        self.legacy = legacy
        self.turn = ""
        self.cwd = cwd
        self.message = None  # the turn's last agent message since the last tool call
        self.calls = {}  # call id -> (tool, input), waiting for its output
        self.running = {}  # unified exec session id (as text) -> the exec_command call whose process runs on
        self.execs = {}  # that call's id -> its input

    def feed(self, records):
        for record in records:
            kind = string(record, "type")
            payload = record.get("payload")
            if not isinstance(payload, dict):
                if kind not in _QUIET_LINES:
                    self.replay.skip(UNKNOWN_LINE)
                continue
            if kind == "event_msg":
                self._event(payload)
            elif kind == "response_item":
                self._response(payload)
            elif kind == "turn_context":
                self._turn(payload.get("turn_id"))
                if isinstance(payload.get("cwd"), str):
                    self.cwd = payload["cwd"]
            elif kind not in _QUIET_LINES and kind != "session_meta":
                self.replay.skip(UNKNOWN_LINE)
        if self.calls or self.execs:
            self.replay.skip(NO_RESULT, len(self.calls) + len(self.execs))

    def _turn(self, turn):
        if isinstance(turn, str) and turn != self.turn:
            self.turn = turn
            self.message = None

    # -- event_msg ----------------------------------------------------------------

    def _event(self, event):
        kind = string(event, "type")
        turn = event.get("turn_id") if isinstance(event.get("turn_id"), str) else self.turn
        if kind == "task_started":
            self._turn(event.get("turn_id"))
        elif kind == "task_complete":
            self.replay.reply(event.get("last_agent_message"), turn)
            self.message = None
        elif kind == "item_completed" and not self.legacy:
            self._item(event.get("item"), turn)
        elif kind == "user_message" and self.legacy:
            if event.get("images") or event.get("local_images"):
                return self.replay.skip(UNVERIFIED)
            self.replay.prompt(event.get("message"), turn, self.cwd)
        elif kind == "agent_message" and self.legacy:
            self.message = event.get("message")
        elif kind == "mcp_tool_call_end" and self.legacy:
            self._mcp_end(event, turn)
        elif kind not in _QUIET_EVENTS and kind not in ("item_completed", "user_message", "agent_message",
                                                          "mcp_tool_call_end"):
            self.replay.skip(UNKNOWN_LINE)

    def _item(self, item, turn):
        if not isinstance(item, dict):
            return self.replay.skip(UNKNOWN_ITEM)
        kind = string(item, "type")
        if kind == "UserMessage":
            text = _only_text(item.get("content"), "text")
            if text is None:
                return self.replay.skip(UNVERIFIED)
            self.replay.prompt(text, turn, self.cwd)
        elif kind == "AgentMessage":
            self.message = _only_text(item.get("content"), "Text")
        elif kind == "HookPrompt":
            self._continued(turn, _fragments(items(item, "fragments")))
        elif kind == "McpToolCall":
            self.calls.pop(string(item, "id"), None)
            result, server, tool = item.get("result"), item.get("server"), item.get("tool")
            if not (isinstance(result, dict) and isinstance(server, str) and isinstance(tool, str)):
                return self.replay.skip(UNVERIFIED)
            self.replay.tool(f"mcp__{server}__{tool}", item.get("arguments"), result, string(item, "id"), turn)
        elif kind not in _QUIET_ITEMS:
            self.replay.skip(UNKNOWN_ITEM)

    def _mcp_end(self, event, turn):
        self.calls.pop(string(event, "call_id"), None)
        invocation, result = event.get("invocation"), event.get("result")
        ok = result.get("Ok") if isinstance(result, dict) else None
        if not (isinstance(invocation, dict) and isinstance(ok, dict)
                and isinstance(invocation.get("server"), str) and isinstance(invocation.get("tool"), str)):
            return self.replay.skip(UNVERIFIED)
        name = f"mcp__{invocation['server']}__{invocation['tool']}"
        self.replay.tool(name, invocation.get("arguments"), ok, string(event, "call_id"), turn)

    def _continued(self, turn, reason):
        # The Stop that asked for the continuation had captured the turn's last message.
        self.replay.reply(self.message, turn)
        self.message = None
        self.replay.continuation(reason)

    # -- response_item ------------------------------------------------------------------

    def _response(self, item):
        kind = string(item, "type")
        turn = self._item_turn(item)
        if kind == "message":
            self._message(item, turn)
        elif kind == "function_call":
            self.message = None
            self._call(item)
        elif kind == "custom_tool_call":
            self.message = None
            if item.get("name") == "apply_patch" and isinstance(item.get("input"), str):
                self.calls[string(item, "call_id")] = ("apply_patch", {"command": item["input"]})
            else:
                self.replay.skip(f"unverified tool {str(item.get('name'))[:60]}")
        elif kind == "function_call_output":
            self._output(item, turn)
        elif kind == "custom_tool_call_output":
            call = self.calls.pop(string(item, "call_id"), None)
            if call is not None:
                self.replay.tool(call[0], call[1], item.get("output"), string(item, "call_id"), turn)
        elif kind not in _QUIET_RESPONSES:
            self.replay.skip(UNKNOWN_ITEM)

    def _item_turn(self, item):
        meta = item.get("internal_chat_message_metadata_passthrough")
        turn = meta.get("turn_id") if isinstance(meta, dict) else None
        return turn if isinstance(turn, str) else self.turn

    def _message(self, item, turn):
        role = item.get("role")
        texts = [c["text"] for c in items(item, "content") if isinstance(c, dict) and isinstance(c.get("text"), str)]
        if role == "developer":
            for text in texts:
                self.replay.om_text(text)
        elif role == "user" and self.legacy and texts and texts[0].startswith("<hook_prompt"):
            self._continued(turn, texts[0])

    def _call(self, item):
        name, namespace, call_id = string(item, "name"), string(item, "namespace"), string(item, "call_id")
        if isinstance(namespace, str) and namespace.startswith("mcp__"):
            self.calls[call_id] = ("mcp", None)  # its result comes as an McpToolCall item or mcp_tool_call_end
            return
        if name not in ("exec_command", "write_stdin", "spawn_agent"):
            return self.replay.skip(f"unverified tool {str(name)[:60]}")
        try:
            arguments = loads(string(item, "arguments") or "", literal_numbers=True)
        except InputError:
            arguments = None
        if not isinstance(arguments, dict):
            return self.replay.skip(UNVERIFIED)
        if name == "exec_command":
            if not isinstance(arguments.get("cmd"), str):
                return self.replay.skip(UNVERIFIED)
            self.calls[call_id] = ("Bash", {"command": arguments["cmd"]})
        elif name == "write_stdin":
            self.calls[call_id] = ("write_stdin", str(arguments.get("session_id")))
        else:
            self.calls[call_id] = ("spawn_agent", arguments)

    def _output(self, item, turn):
        call_id = string(item, "call_id")
        call = self.calls.pop(call_id, None)
        if call is None or call[0] == "mcp":
            return None
        tool, tool_input = call
        output = item.get("output")
        if tool == "spawn_agent":
            return self.replay.tool(tool, tool_input, output, call_id, turn)
        head, marker, text = output.partition("Output:\n") if isinstance(output, str) else ("", "", "")
        if not marker:
            return self.replay.skip(UNVERIFIED)
        if tool == "write_stdin":
            # A poll: it reports on the exec_command that left a process running (by its session id).
            exec_id = self.running.get(tool_input)
            if exec_id is None:
                return None
            call_id, tool_input = exec_id, self.execs[exec_id]
        if "Process exited with code" in head:
            if tool == "write_stdin":
                del self.running[call[1]], self.execs[call_id]
            return self.replay.tool("Bash", tool_input, text, call_id, turn)
        session = _running_session(head)
        if session is None:
            return self.replay.skip(UNVERIFIED)
        if tool == "Bash":
            self.running[session] = call_id
            self.execs[call_id] = tool_input
        return None


def _running_session(head):
    mark = "Process running with session ID "
    start = head.find(mark)
    if start < 0:
        return None
    digits = head[start + len(mark):].split("\n", 1)[0].strip()
    return digits if digits.isdigit() else None


def _only_text(content, kind):
    """The text of content parts that are one text part (the only shape compared with the hooks), else None."""
    if not isinstance(content, list) or len(content) != 1:
        return None
    part = content[0]
    if not isinstance(part, dict) or part.get("type") != kind or not isinstance(part.get("text"), str):
        return None
    return part["text"]


def _fragments(fragments):
    texts = [f["text"] for f in fragments if isinstance(f, dict) and isinstance(f.get("text"), str)]
    return "".join(texts) if texts else None
