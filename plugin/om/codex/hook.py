"""`om --store DIR hook --client codex`: one Codex event in, at most one JSON object out.

Invariants:
- Fails open: `run_hook` never raises and its caller always exits 0. A failure
  becomes an advisory `systemMessage`, one line on stderr and one line in the
  store's hook log; the user's turn goes on.
- Every response is valid against the Codex 0.169.0 output schema of its event;
  "nothing to say" is the empty string (no stdout at all).
- Sub-agent events (`agent_id`), unknown events and Interrupt capture nothing and
  request nothing; neither does any event while the session is paused.
- At most one checkpoint continuation per turn, only when one is due, never when
  `stop_hook_active` is true; its reason holds no `&`, `<` or `>` because Codex
  XML-escapes it on the way to the model.
- Adapter state lives in the legacy transient keys (`prompt_id`, `stop_turn`,
  `stop_prompt`, `notified_cursor`) with their earlier meaning, plus keys
  prefixed `codex_`; the project record (`om_cwd`, `om_project`) is om.sessions.project's.
- Import-light: the common path loads only the ledger core (`_sqlite3`,
  `_json`); shlex is imported only for shell commands that name this store.
"""

import os
import time

from om.errors import OmError

PAUSE_PREFIX = "[om:pause]"
DEFAULT_CHECKPOINT_BYTES = 40000
DEFAULT_CHECKPOINT_TURNS = 3
LOG_NAME = "hook-errors.log"
MAX_TEXT = 1_000_000
# Completed turns remembered for the turn-based trigger (highest source seq at each turn end).
TURN_ENDS_KEY = "codex_turn_ends"
MAX_TURN_ENDS = 256


def run_hook(store, stdin, stderr):
    """Handle one event read from the binary stream `stdin`; return what to print.

    Every event om handles leaves a capture receipt (om.receipts) with its
    outcome and duration, so `om doctor` can prove the hooks run.
    """
    started = time.perf_counter()
    event_name = "event"
    outcome = None
    try:
        from om.jsonio import decode_input, read_stdin_limited

        event = decode_input(read_stdin_limited(stdin))
        event_name = str(event.get("hook_event_name") or "event")
        handler = _HANDLERS.get(event_name)
        if handler is None:
            return ""
        if event.get("agent_id"):
            outcome = "skipped"
            return ""
        outcome = "failed"
        response = handler(store, event)
        outcome = "ok"
        if not response:
            return ""
        from om.jsonio import dumps

        return dumps(response) + "\n"
    except Exception as e:  # fail open, always
        outcome = "failed" if event_name in _HANDLERS else None
        return _advise(store, event_name, e, stderr)
    finally:
        if outcome is not None:
            from om.receipts import record

            record(store, event_name, outcome, round((time.perf_counter() - started) * 1000, 1))


def _advise(store, event_name, error, stderr):
    if isinstance(error, OmError):
        detail = str(error)
    else:
        detail = f"internal error: {type(error).__name__}: {error}"
    detail = " ".join(detail.split()) or type(error).__name__
    line = f"om: {event_name} hook failed open: {detail}"
    try:
        stderr.write(line + "\n")
        stderr.flush()
    except Exception:
        pass
    _log(store, line)
    from om.jsonio import dumps

    message = f"{line}. Memory capture skipped for this event; your task continues."
    return dumps({"systemMessage": message}) + "\n"


def _log(store, line):
    import time

    try:
        path = os.path.join(store, LOG_NAME)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, f"{stamp} {line}\n".encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except Exception:
        pass


def _env_int(name, default):
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        number = int(value)
    except ValueError:
        return default
    return number if number > 0 else default


def _session(event):
    session = event.get("session_id")
    if not isinstance(session, str):
        from om.errors import InputError

        raise InputError("om: the event has no session_id")
    return session


def _open(store, event):
    from om.ledger import Ledger  # loads SQLite without functools (see om.sqlite)

    return Ledger.open(store, _session(event))


def _command(ledger):
    from om.codex.command import ledger_command

    return ledger_command(ledger.store, ledger.session)


def _capture(ledger, kind, text, key):
    if not isinstance(text, str) or not text.strip():
        return None
    if len(text) > MAX_TEXT:
        text = text[: MAX_TEXT // 2] + text[-(MAX_TEXT // 2):]
    return ledger.capture(kind, text, key)


def _string(event, key):
    value = event.get(key)
    return value if isinstance(value, str) else ""


# -- SessionStart ---------------------------------------------------------------


def session_start(store, event):
    from om.codex import messages

    with _open(store, event) as ledger:
        from om.sessions.pointer import start_note  # records the project; points at earlier memory

        note = start_note(ledger, event.get("cwd"), _string(event, "source"))
        status = ledger.status()
        text = messages.session_context(_command(ledger), status, _string(event, "source"), ledger.session) + note
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}


# -- UserPromptSubmit -----------------------------------------------------------


def user_prompt_submit(store, event):
    prompt = _string(event, "prompt")
    turn = _string(event, "turn_id")
    with _open(store, event) as ledger:
        if prompt.lstrip().startswith(PAUSE_PREFIX):
            with ledger.transaction():
                ledger.meta_set("paused", "1")
            from om.codex import messages

            return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                           "additionalContext": messages.paused_context(_command(ledger), ledger.session)}}
        with ledger.transaction():
            if ledger.is_paused():
                return None
            from om.sessions.project import record_project

            record_project(ledger, event.get("cwd"))
            _capture(ledger, "user", prompt, turn)
            if turn:
                ledger.meta_set("prompt_id", turn)
    return None


# -- PostToolUse ----------------------------------------------------------------

#: Codex names MCP tools `mcp__<server>__<tool>`; the plugin's .mcp.json names its server `om`.
OWN_MCP_TOOLS = "mcp__om__"


def post_tool_use(store, event):
    tool = event.get("tool_name")
    tool_input = event.get("tool_input")
    with _open(store, event) as ledger:
        if ledger.is_paused():
            return None
        if tool == "Bash" and isinstance(tool_input, dict) and _is_own_call(ledger, tool_input):
            return None
        if isinstance(tool, str) and tool.startswith(OWN_MCP_TOOLS):
            # The plugin's own MCP tools (pending, prime...) echo the ledger back;
            # capturing them would feed each checkpoint's evidence into the next.
            return None
        from om.jsonio import dumps

        text = dumps({"input": tool_input, "response": event.get("tool_response"), "tool": tool}, sort_keys=True)
        key = _string(event, "tool_use_id") or _string(event, "turn_id")
        with ledger.transaction():
            if ledger.is_paused():
                return None
            _capture(ledger, "tool", text, key)
            count, size, _, _ = ledger.backlog()
            if size < _env_int("OM_CHECKPOINT_BYTES", DEFAULT_CHECKPOINT_BYTES):
                return None
            cursor = str(ledger.cursor())
            if ledger.meta_get("notified_cursor") == cursor:
                return None
            ledger.meta_set("notified_cursor", cursor)
        from om.codex import messages

        text = messages.large_backlog_reminder(_command(ledger), count, size, ledger.session)
    return {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": text}}


def _is_own_call(ledger, tool_input):
    store = ledger.store
    if not any(isinstance(value, str) and store in value for value in tool_input.values()):
        # Most tool calls: decided without loading the parser (a ledger call spells out the store).
        return False
    from om.codex.command import ledger_argv
    from om.codex.selfcapture import command_of, is_ledger_call

    return is_ledger_call(command_of(tool_input), ledger_argv(store, ledger.session), store, ledger.session)


# -- Stop -----------------------------------------------------------------------


def stop(store, event):
    turn = _string(event, "turn_id")
    continuing = event.get("stop_hook_active") is True
    with _open(store, event) as ledger:
        with ledger.transaction():
            if ledger.is_paused():
                return None
            key = turn or ledger.meta_get("prompt_id", "")
            _capture(ledger, "assistant", _string(event, "last_assistant_message"), key)
            count, size, oldest, last = ledger.backlog()
            cursor = ledger.cursor()
            ends = _turn_ends(ledger.meta_get(TURN_ENDS_KEY), cursor)
            if not continuing:
                # This Stop completes the turn: remember how far the evidence reached.
                ends.append(last)
            ledger.meta_set(TURN_ENDS_KEY, ",".join(str(n) for n in ends[-MAX_TURN_ENDS:]))
            if continuing or not count:
                return None
            if turn and ledger.meta_get("stop_turn") == turn:
                return None
            if not turn and ledger.meta_get("stop_prompt") == ledger.meta_get("prompt_id"):
                return None
            waited = sum(1 for end in ends if oldest is not None and end >= oldest)
            due = size >= _env_int("OM_CHECKPOINT_BYTES", DEFAULT_CHECKPOINT_BYTES) or waited >= _env_int(
                "OM_CHECKPOINT_TURNS", DEFAULT_CHECKPOINT_TURNS
            )
            if not due:
                return None
            if turn:
                ledger.meta_set("stop_turn", turn)
            ledger.meta_set("stop_prompt", ledger.meta_get("prompt_id", ""))
        from om.codex import messages

        reason = messages.checkpoint_request(_command(ledger), count, size, ledger.session)
    return {"decision": "block", "reason": reason}


def _turn_ends(value, cursor):
    ends = []
    for part in (value or "").split(","):
        if part.isdigit():
            seq = int(part)
            if seq > cursor:
                ends.append(seq)
    return ends


def interrupt(store, event):
    # The interrupted turn's evidence stays pending; no model work is started.
    return None


_HANDLERS = {
    "SessionStart": session_start,
    "UserPromptSubmit": user_prompt_submit,
    "PostToolUse": post_tool_use,
    "Stop": stop,
    "Interrupt": interrupt,
}
