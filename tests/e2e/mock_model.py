"""A scriptable stand-in for the Responses API that the real Codex CLI talks to.

Invariant: every POST .../responses the client sends is recorded (parsed body and
headers) before it is answered, and each answer is one complete SSE stream built
from what the test's script returned for that request. The script is a function of
the request, so a scenario can read what the client sent (a hook's developer
message, a continuation prompt, a tool's output) and derive its next move from it,
the way a model would. Standard library only; binds 127.0.0.1 on an ephemeral port.
"""

import json
import uuid

from scripted_server import RecordedRequest, ScriptedServer


def say(text, **extra):
    """An assistant message reply."""
    return dict(extra, type="message", text=text)


def shell(command, **extra):
    """A reply that calls the shell tool the request offers with one command."""
    return dict(extra, type="shell", command=command)


def tool_call(namespace, name, arguments, **extra):
    """A reply that calls a namespaced tool (an MCP server's tools are `mcp__<server>`)."""
    return dict(extra, type="function", namespace=namespace, name=name, arguments=arguments)


class Request(RecordedRequest):
    """One model request as Codex sent it."""

    @property
    def is_compaction(self):
        return '"request_kind":"compaction"' in self.headers.get("x-codex-turn-metadata", "")

    @property
    def items(self):
        return [i for i in self.body.get("input") or [] if isinstance(i, dict)]

    def messages(self, role):
        """Texts of the input messages with this role, oldest first."""
        out = []
        for item in self.items:
            if item.get("type", "message") == "message" and item.get("role") == role:
                content = item.get("content")
                if isinstance(content, str):
                    out.append(content)
                else:
                    out.append("".join(c.get("text", "") for c in content or [] if isinstance(c, dict)))
        return out

    def tool_outputs(self):
        """Outputs of shell calls in this request's history, oldest first, by call id."""
        out = []
        for item in self.items:
            if item.get("type") == "function_call_output":
                output = item.get("output")
                if isinstance(output, dict):
                    output = output.get("content") or json.dumps(output)
                elif isinstance(output, list):
                    output = "".join(c.get("text", "") for c in output if isinstance(c, dict))
                out.append((item.get("call_id"), output or ""))
        return out

    def last_item(self):
        return self.items[-1] if self.items else {}

    def tool_names(self):
        return [t.get("name") or t.get("type") for t in self.body.get("tools") or [] if isinstance(t, dict)]

    def namespace_tools(self, namespace):
        """The tools offered inside a namespace tool (how Codex offers an MCP server's tools)."""
        for tool in self.body.get("tools") or []:
            if isinstance(tool, dict) and tool.get("type") == "namespace" and tool.get("name") == namespace:
                return tool.get("tools") or []
        return []


class MockModel(ScriptedServer):
    """Serve `script(request) -> reply` over SSE; `requests` lists what arrived."""

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.port}/v1"

    def respond(self, path, raw, body, headers):
        if not path.endswith("/responses"):
            return (*self.NOT_FOUND, "application/json")
        request = Request(body, headers)
        self.record(request)
        reply = self.run_script(request, say)
        return 200, _sse(_items(reply, request), request.body.get("model", "mock"), reply.get("usage")), \
            "text/event-stream"


def _new_id(prefix):
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


def _items(reply, request):
    items = []
    for part in reply.get("items") or [reply]:
        if part["type"] == "message":
            items.append({"type": "message", "role": "assistant", "id": _new_id("msg"), "status": "completed",
                          "content": [{"type": "output_text", "text": part["text"], "annotations": []}]})
        elif part["type"] == "shell":
            items.append(_shell_call(part["command"], request))
        elif part["type"] == "function":
            items.append({"type": "function_call", "namespace": part["namespace"], "name": part["name"],
                          "call_id": _new_id("call"), "id": _new_id("fc"), "arguments": json.dumps(part["arguments"])})
        else:
            raise ValueError(f"unknown reply type {part['type']!r}")
    return items


def _shell_call(command, request):
    # Codex 0.169.0 without a model catalogue offers unified exec (`exec_command`).
    names = request.tool_names()
    call_id = _new_id("call")
    if "exec_command" in names:
        name, args = "exec_command", {"cmd": command}
    elif "shell_command" in names:
        name, args = "shell_command", {"command": command}
    else:
        name, args = "shell", {"command": ["bash", "-lc", command]}
    return {"type": "function_call", "name": name, "call_id": call_id, "id": _new_id("fc"),
            "arguments": json.dumps(args)}


def _event(obj):
    return f"event: {obj['type']}\ndata: {json.dumps(obj)}\n\n"


def _sse(items, model, usage):
    rid = _new_id("resp")
    out = [_event({"type": "response.created",
                   "response": {"id": rid, "object": "response", "status": "in_progress", "model": model,
                                "output": []}})]
    for index, item in enumerate(items):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            out.append(_event({"type": "response.output_item.added", "output_index": index,
                               "item": dict(item, content=[], status="in_progress")}))
            out.append(_event({"type": "response.content_part.added", "output_index": index, "item_id": item["id"],
                               "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}))
            out.append(_event({"type": "response.output_text.delta", "output_index": index, "item_id": item["id"],
                               "content_index": 0, "delta": text}))
            out.append(_event({"type": "response.output_text.done", "output_index": index, "item_id": item["id"],
                               "content_index": 0, "text": text}))
        else:
            out.append(_event({"type": "response.output_item.added", "output_index": index, "item": item}))
        out.append(_event({"type": "response.output_item.done", "output_index": index, "item": item}))
    totals = {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
              "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}
    totals.update(usage or {})
    out.append(_event({"type": "response.completed",
                       "response": {"id": rid, "object": "response", "status": "completed", "model": model,
                                    "output": items, "usage": totals}}))
    return "".join(out)
