"""A scriptable stand-in for the Anthropic Messages API that the real Claude Code CLI talks to.

Invariant: every POST /v1/messages the client sends is recorded (parsed body and
headers) before it is answered, and each answer is one complete SSE stream (or, for
a non-streaming request, one message object) built from what the test's script
returned for that request. The script is a function of the request, so a scenario
reads what the client sent (a hook's context, a continuation, a tool result) and
derives its next move from it, the way a model would. Standard library only; binds
127.0.0.1 on an ephemeral port. Requests without tools (side calls such as titles)
never reach the script: they get a fixed short text.

Facts it relies on (Claude Code 2.1.332): the client appends `/v1/messages?beta=true`
to ANTHROPIC_BASE_URL; request `messages` hold `role: "system"` entries besides
user/assistant ones; the compaction request offers tools too and is recognised by
its last *user* message; a summary must be wrapped in <summary></summary> or the
client asks again; the usage the mock reports drives auto-compaction.
"""

import json
import uuid

from scripted_server import RecordedRequest, ScriptedServer

COMPACTION_MARK = "create a detailed summary of the conversation so far"


def say(text, **extra):
    """An assistant text reply (stop_reason end_turn)."""
    return dict(extra, type="text", text=text)


def shell(command, **extra):
    """A reply that calls the Bash tool with one command."""
    return dict(extra, type="tool_use", name="Bash", input={"command": command, "description": "run a command"})


def tool_call(name, arguments, **extra):
    """A reply that calls any tool by its full name (MCP tools: mcp__plugin_<plugin>_<server>__<tool>)."""
    return dict(extra, type="tool_use", name=name, input=arguments)


def text_of(content):
    """The text of a message's content: text blocks and tool results, in order."""
    if isinstance(content, str):
        return content
    out = []
    for block in content or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            out.append(block.get("text", ""))
        elif block.get("type") == "tool_result":
            out.append(text_of(block.get("content")))
    return "\n".join(out)


class Request(RecordedRequest):
    """One Messages API request as Claude Code sent it."""

    @property
    def messages(self):
        return [m for m in self.body.get("messages") or [] if isinstance(m, dict)]

    @property
    def is_side(self):
        return not self.body.get("tools")

    def last_user_text(self):
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return text_of(message.get("content"))
        return ""

    @property
    def is_compaction(self):
        return COMPACTION_MARK in self.last_user_text()

    def texts(self):
        """Every text the model is shown (system prompt, messages, tool results), oldest first."""
        out = []
        system = self.body.get("system")
        if isinstance(system, str):
            out.append(system)
        elif isinstance(system, list):
            out.extend(b.get("text", "") for b in system if isinstance(b, dict))
        for message in self.messages:
            out.append(text_of(message.get("content")))
        return out

    def _blocks(self, role, kind):
        """The content blocks of type `kind` in this history's `role` messages, oldest first."""
        for message in self.messages:
            if message.get("role") == role and isinstance(message.get("content"), list):
                yield from (b for b in message["content"] if isinstance(b, dict) and b.get("type") == kind)

    def tool_uses(self):
        """[(tool_use_id, name, input)] of the assistant's tool calls in this history, oldest first."""
        return [(b.get("id"), b.get("name"), b.get("input")) for b in self._blocks("assistant", "tool_use")]

    def tool_results(self):
        """[(tool_use_id, text)] of the tool results in this history, oldest first."""
        return [(b.get("tool_use_id"), text_of(b.get("content"))) for b in self._blocks("user", "tool_result")]

    def tool_names(self):
        return [t.get("name") for t in self.body.get("tools") or [] if isinstance(t, dict)]


class MockMessages(ScriptedServer):
    """Serve `script(request) -> reply` over SSE; `requests` lists what reached the script."""

    NOT_FOUND = (404, json.dumps({"type": "error", "error": {"type": "not_found_error",
                                                              "message": "not served by the mock"}}))
    HEADERS = (("request-id", lambda: _new_id("req")),)

    @property
    def base_url(self):
        # Origin only: the client appends /v1/messages itself.
        return f"http://127.0.0.1:{self.port}"

    def respond(self, path, raw, body, headers):
        if path.endswith("/messages/count_tokens"):
            return 200, json.dumps({"input_tokens": len(raw) // 4}), "application/json"
        if not path.endswith("/messages"):
            return (*self.NOT_FOUND, "application/json")
        request = Request(body, headers)
        if request.is_side:  # not the agent's turn: answered, never shown to the script
            reply = say("(mock side reply)")
        else:
            self.record(request)
            reply = self.run_script(request, say)
        model = request.body.get("model", "mock-model")
        blocks = _blocks(reply)
        usage = _usage(reply.get("usage"))
        if request.body.get("stream"):
            return 200, _sse(blocks, model, usage), "text/event-stream"
        return 200, json.dumps(_message(blocks, model, usage)), "application/json"


def _new_id(prefix):
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


def _blocks(reply):
    out = []
    for part in reply.get("blocks") or [reply]:
        if part["type"] == "text":
            out.append({"type": "text", "text": part["text"]})
        elif part["type"] == "tool_use":
            out.append({"type": "tool_use", "id": _new_id("toolu"), "name": part["name"], "input": part["input"]})
        else:
            raise ValueError(f"unknown reply type {part['type']!r}")
    return out


def _usage(extra):
    usage = {"input_tokens": 50, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    usage.update(extra or {})
    return usage


def _message(blocks, model, usage):
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    return {"id": _new_id("msg"), "type": "message", "role": "assistant", "model": model, "content": blocks,
            "stop_reason": stop, "stop_sequence": None, "usage": usage}


def _event(obj):
    return f"event: {obj['type']}\ndata: {json.dumps(obj)}\n\n"


def _sse(blocks, model, usage):
    message = _message(blocks, model, usage)
    out = [_event({"type": "message_start",
                   "message": dict(message, content=[], stop_reason=None, usage=dict(usage, output_tokens=1))})]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            out.append(_event({"type": "content_block_start", "index": index,
                               "content_block": {"type": "text", "text": ""}}))
            out.append(_event({"type": "content_block_delta", "index": index,
                               "delta": {"type": "text_delta", "text": block["text"]}}))
        else:
            out.append(_event({"type": "content_block_start", "index": index,
                               "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"],
                                                 "input": {}}}))
            out.append(_event({"type": "content_block_delta", "index": index,
                               "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}}))
        out.append(_event({"type": "content_block_stop", "index": index}))
    out.append(_event({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                       "usage": usage}))
    out.append(_event({"type": "message_stop"}))
    return "".join(out)
