"""The core operations every client's hook events map onto, and the `Profile` they know a client by.

Invariants:
- Capture keys come from the payload's own ids: a user prompt by the turn id the
  profile names; a tool result by `tool_use_id`, else the turn id; a final reply
  by the turn id, else the `prompt_id` meta key (as v1 did). A Stop with neither
  does nothing.
- Meta keys keep v1's meaning, for every client: `prompt_id` is the SOURCE ID of
  the last captured user prompt, `stop_prompt` the EXACT TEXT of the last
  continuation, `stop_turn` the key it was given on (the turn, else that
  `prompt_id`), `notified_cursor` the cursor of the last large-backlog reminder.
  Anything more lives under the profile's state prefix.
- Nothing is captured and nothing requested while the session is paused, except
  that `[om:resume]` resumes and is then captured without its prefix; `[om:pause]`
  pauses before its prompt is stored. om's own continuation, should a client send
  it back as a prompt, is never evidence.
- At most one checkpoint continuation per turn, only when one is due (cadence, below),
  never while `stop_hook_active` is true.
- The agent's own ledger calls of this store (its shell commands parsed without
  executing them, and om's MCP tools) are not evidence, nor is its reply to om's
  continuation: the Stop that ends a continuation (`stop_hook_active`) on the key
  om continued on (`stop_turn`) captures nothing.
- The project record (`om_cwd`, `om_project`, `om_project_id`) is om.project's:
  SessionStart and each captured prompt record the event's `cwd`, and a new
  session's start context may point at the project's earlier memory
  (om.sessions.pointer) and says how many entries its project memory holds
  (never their text: `prime` prints them).
- What an event makes evidence of, and with which kind, key and text, is decided
  by the functions of the "sources" section below, and only there: the handlers
  here and the transcript readers of om.ingest (which rebuild the hooks' sources
  after the fact, so they must get the same ids) both call them.

Prompt switches (`is_pause`, `resumed_text`, `is_continuation`):
- A prompt whose first non-blank characters are `[om:pause]` pauses capture
  before anything of it is stored; `[om:resume]` resumes capture and the rest of
  the prompt (after the prefix and following whitespace) is what gets captured.
- `is_continuation` is true only for om's own last continuation text, verbatim
  (surrounding whitespace aside) or wrapped by a client as
  `<hook_prompt hook_run_id="...">TEXT</hook_prompt>` with `&`, `<`, `>` escaped
  as XML entities. Anything else is the user's and is evidence.

Cadence, the one policy of every client for when a checkpoint is due (`is_due`):
- Due when the pending evidence reaches OM_CHECKPOINT_BYTES UTF-8 bytes (default
  40,000), or when the oldest pending source has waited OM_CHECKPOINT_TURNS
  completed turns (default 3). A setting that is not a positive integer counts as unset.
- A turn end is recorded only by a Stop that completes a turn (not by the Stop
  after a continuation), as the highest source seq at that moment; at most
  MAX_TURN_ENDS are kept, and ends already covered by the cursor are dropped.
- The policy only decides; `stop` owns the transaction and the once-per-turn bookkeeping.

Invariant of `Profile`: it holds no state and reads nothing but the event it is
given; the operations never branch on a client's name, only on what the
profile says.
"""

from om.fastpath import getenv  # os.environ.get without loading os

MAX_TEXT = 1_000_000


class Profile:
    """How one client names things and how it wants to be answered.

    name              the `--client` value, also the receipts' client
    turn_field        payload field naming the current turn (Codex `turn_id`,
                      Claude Code `prompt_id`: one per user prompt, the same on
                      the turn's tool and Stop events)
    state_prefix      prefix of the adapter's own meta keys (`codex_`, `claude_`)
    shell_tools       tool names whose `tool_input` carries a shell command
    own_mcp_prefixes  tool-name prefixes of om's own MCP tools in this client
    mcp_note          why the MCP tools are preferred with this client
    """

    def __init__(self, name, turn_field, state_prefix, shell_tools, own_mcp_prefixes, mcp_note):
        self.name = name
        self.turn_field = turn_field
        self.state_prefix = state_prefix
        self.shell_tools = shell_tools
        self.own_mcp_prefixes = own_mcp_prefixes
        self.mcp_note = mcp_note

    def turn(self, event):
        value = event.get(self.turn_field)
        return value if isinstance(value, str) else ""

    def continuation(self, reason):
        """The Stop output that continues the turn once with `reason`."""
        raise NotImplementedError

    def is_own_mcp_tool(self, tool):
        return isinstance(tool, str) and tool.startswith(self.own_mcp_prefixes)


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
    from om.invocation import ledger_command

    return ledger_command(ledger.store, ledger.session)


def capture(ledger, kind, text, key):
    """Capture one source as every hook does: blank text is nothing, a text over MAX_TEXT keeps its two ends."""
    if not isinstance(text, str) or not text.strip():
        return None
    if len(text) > MAX_TEXT:
        text = text[: MAX_TEXT // 2] + text[-(MAX_TEXT // 2):]
    return ledger.capture(kind, text, key)


def _string(event, key):
    value = event.get(key)
    return value if isinstance(value, str) else ""


def _context(event_name, text):
    return {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": text}}


# -- SessionStart ---------------------------------------------------------------


def session_start(profile, store, event):
    from om.adapter import messages

    with _open(store, event) as ledger:
        from om.sessions.pointer import start_note  # records the project; points at earlier memory

        # The pointer, and the project memory's active entries (0 when none, or unreadable now).
        note, project_entries = start_note(ledger, event.get("cwd"), _string(event, "source"), client=profile.name)
        status = ledger.status()
        text = messages.session_context(profile, _command(ledger), status, _string(event, "source"),
                                        ledger.session, project_entries) + note
    return _context("SessionStart", text)


# -- UserPromptSubmit -----------------------------------------------------------


def user_prompt_submit(profile, store, event):
    prompt = _string(event, "prompt")
    turn = profile.turn(event)
    source_id = None
    with _open(store, event) as ledger:
        with ledger.transaction():
            was_paused = ledger.is_paused()
            paused, text = prompt_switch(prompt, was_paused)
            if paused != was_paused:
                ledger.meta_set("paused", "1" if paused else "0")
            if text is not None:
                from om.project import record_project

                record_project(ledger, event.get("cwd"))
                if not is_continuation(text, ledger.meta_get("stop_prompt")):
                    source_id = capture(ledger, "user", text, turn)
                    if source_id is not None:
                        ledger.meta_set("prompt_id", source_id)
        if is_pause(prompt):
            from om.adapter import messages

            return _context("UserPromptSubmit", messages.paused_context(profile, _command(ledger), ledger.session))
    if was_paused and not paused:
        from om.adapter import messages

        return _context("UserPromptSubmit", messages.resumed_context(source_id is not None))
    return None


# -- PostToolUse ----------------------------------------------------------------


def post_tool_use(profile, store, event):
    return _tool_result(profile, store, event, event.get("tool_response"))


def post_tool_use_failure(profile, store, event):
    """A tool call that failed (Claude Code: a Bash command exiting nonzero, a missing file).

    Its error text is evidence like any result; it is stored in the same
    `{"input", "response", "tool"}` shape, the response being `{"error", "is_interrupt"}`.
    """
    return _tool_result(profile, store, event, failure_response(event.get("error"), event.get("is_interrupt")))


def _tool_result(profile, store, event, response):
    tool = event.get("tool_name")
    tool_input = event.get("tool_input")
    with _open(store, event) as ledger:
        if ledger.is_paused():
            return None
        text = tool_text(profile, tool, tool_input, response, lambda own: _is_own_call(ledger, own))
        if text is None:
            return None
        key = tool_key(_string(event, "tool_use_id"), profile.turn(event))
        with ledger.transaction():
            if ledger.is_paused():
                return None
            capture(ledger, "tool", text, key)
            count, size, _, _ = ledger.backlog()
            if size < backlog_bytes():
                return None
            cursor = str(ledger.cursor())
            if ledger.meta_get("notified_cursor") == cursor:
                return None
            ledger.meta_set("notified_cursor", cursor)
        from om.adapter import messages

        text = messages.large_backlog_reminder(profile, _command(ledger), count, size, ledger.session)
    return _context(event["hook_event_name"], text)


def _is_own_call(ledger, tool_input):
    store = ledger.store
    if not any(isinstance(value, str) and store in value for value in tool_input.values()):
        # Most tool calls: decided without loading the parser (a ledger call spells out the store).
        return False
    from om.adapter.selfcapture import command_of, is_ledger_call
    from om.invocation import ledger_argv

    # The command is `tool_input.command`, else `cmd` (exec-style tools), as v1 read it.
    return is_ledger_call(command_of(tool_input), ledger_argv(store, ledger.session), store, ledger.session)


# -- Stop -----------------------------------------------------------------------


def stop(profile, store, event):
    """Capture the final reply; maybe continue the turn once with a checkpoint request.

    The reply's key is the turn, else the last captured prompt's source id (as
    v1 did); with neither there is nothing to key it by, and v1 did nothing at
    all: no capture, no request. Once per key: the key a continuation was given
    on is remembered in `stop_turn`, with v1's meaning, so a ledger handed over
    mid-turn is not continued twice on the same turn or prompt.
    """
    continuing = event.get("stop_hook_active") is True
    ends_key = profile.state_prefix + "turn_ends"
    with _open(store, event) as ledger:
        with ledger.transaction():
            if ledger.is_paused():
                return None
            key = reply_key(profile.turn(event), ledger.meta_get("prompt_id", ""))
            if key is None:
                return None
            if not (continuing and ledger.meta_get("stop_turn") == key):
                # The reply to om's own continuation ("checkpoint done") is no evidence, as the
                # ledger calls it answers are none: captured, it would stay pending after every checkpoint.
                capture(ledger, "assistant", _string(event, "last_assistant_message"), key)
            count, size, oldest, last = ledger.backlog()
            ends = turn_ends(ledger.meta_get(ends_key), ledger.cursor())
            if not continuing:
                # This Stop completes the turn: remember how far the evidence reached.
                ends.append(last)
            ledger.meta_set(ends_key, encode_turn_ends(ends))
            if continuing or not count or ledger.meta_get("stop_turn") == key:
                return None
            if not is_due(size, oldest, ends):
                return None
            from om.adapter import messages

            reason = messages.checkpoint_request(profile, _command(ledger), count, size, ledger.session)
            ledger.meta_set("stop_turn", key)
            ledger.meta_set("stop_prompt", reason)
    return profile.continuation(reason)


# -- sources: what an event makes evidence of (the hooks' and om.ingest's one copy) --


def prompt_switch(prompt, paused):
    """(paused after this prompt, the text it contributes as evidence or None).

    `[om:pause]` pauses and contributes nothing; `[om:resume]` resumes and
    contributes the rest of the prompt; any other prompt contributes itself,
    unless capture is paused. om's own continuation is told apart afterwards
    (`is_continuation`), against the last continuation text.
    """
    if is_pause(prompt):
        return True, None
    resumed = resumed_text(prompt)
    if resumed is not None:
        return False, resumed
    return paused, None if paused else prompt


def tool_text(profile, tool, tool_input, response, is_own_call):
    """The text of a tool result's source, or None when the call is om's own.

    `is_own_call(tool_input)` says whether a shell tool's input is the agent's
    own ledger call (om.adapter.selfcapture). om's own MCP tools (pending,
    prime...) echo the ledger back; capturing them would feed each checkpoint's
    evidence into the next. A failed call's `response` is `failure_response`.
    """
    if tool in profile.shell_tools and isinstance(tool_input, dict) and is_own_call(tool_input):
        return None
    if profile.is_own_mcp_tool(tool):
        return None
    from om.jsonio import dumps

    return dumps({"input": tool_input, "response": response, "tool": tool}, sort_keys=True)


def tool_key(tool_use_id, turn):
    """The key of a tool result: its call's id, else the turn."""
    return tool_use_id or turn


def failure_response(error, is_interrupt):
    """The `response` of a failed tool call (Claude Code's PostToolUseFailure)."""
    return {"error": error, "is_interrupt": is_interrupt}


def reply_key(turn, last_prompt):
    """The key of a final reply: the turn, else the source id of the last captured prompt, else None
    (v1's rule: with neither, a reply is not captured and nothing else happens)."""
    return turn or last_prompt or None


# -- prompt switches ---------------------------------------------------------


PAUSE_PREFIX = "[om:pause]"
RESUME_PREFIX = "[om:resume]"
_WRAP_OPEN = "<hook_prompt"
_WRAP_CLOSE = "</hook_prompt>"


def is_pause(prompt):
    return prompt.lstrip().startswith(PAUSE_PREFIX)


def resumed_text(prompt):
    """The prompt without its `[om:resume]` prefix, or None when it has none."""
    stripped = prompt.lstrip()
    if not stripped.startswith(RESUME_PREFIX):
        return None
    return stripped[len(RESUME_PREFIX):].lstrip()


def is_continuation(prompt, reason):
    if not reason or not prompt:
        return False
    text = prompt.strip()
    if text == reason.strip():
        return True
    if not (text.startswith(_WRAP_OPEN) and text.endswith(_WRAP_CLOSE)):
        return False
    head_end = text.find(">")
    if head_end < 0:
        return False
    head = text[len(_WRAP_OPEN):head_end]
    if head and not head.startswith((" ", "\t", "\n")):
        return False  # another tag, such as <hook_promptx>
    body = text[head_end + 1:-len(_WRAP_CLOSE)]
    body = body.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return body.strip() == reason.strip()


# -- cadence ------------------------------------------------------------------


DEFAULT_CHECKPOINT_BYTES = 40000
DEFAULT_CHECKPOINT_TURNS = 3
MAX_TURN_ENDS = 256


def env_int(name, default):
    value = getenv(name, "").strip()
    if not value:
        return default
    try:
        number = int(value)
    except ValueError:
        return default
    return number if number > 0 else default


def backlog_bytes():
    return env_int("OM_CHECKPOINT_BYTES", DEFAULT_CHECKPOINT_BYTES)


def turn_ends(value, cursor):
    """The remembered turn ends (comma-separated seqs) still beyond the cursor."""
    ends = []
    for part in (value or "").split(","):
        if part.isdigit():
            seq = int(part)
            if seq > cursor:
                ends.append(seq)
    return ends


def encode_turn_ends(ends):
    return ",".join(str(n) for n in ends[-MAX_TURN_ENDS:])


def is_due(size, oldest, ends):
    """Due by size, or by the number of completed turns the oldest pending source has waited."""
    if size >= backlog_bytes():
        return True
    waited = sum(1 for end in ends if oldest is not None and end >= oldest)
    return waited >= env_int("OM_CHECKPOINT_TURNS", DEFAULT_CHECKPOINT_TURNS)
