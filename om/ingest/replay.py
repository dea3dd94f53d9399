"""The hooks' capture rules, replayed over one transcript's items in order.

A transcript reader (om.ingest.codex, om.ingest.claude) turns lines into the
events the hooks would have seen (a prompt, a tool result, a final reply, a
text om gave the agent) and calls `Replay`; `Replay` decides, with the
adapter's own functions (om.adapter.operations, om.adapter.selfcapture),
what a hook would have captured and captures it with the same kind, key and
text, so with the same source id.

Invariants:
- No rule is restated here: prompt switches, om's own continuation (and the
  reply that ends it, which the Stop hook leaves out), the
  agent's own ledger calls and MCP tools, the text layout of a tool result and
  the key of a reply are the adapter's functions. What is here is only the
  state a hook would have found in the ledger, kept as the transcript goes:
  whether capture is paused, the source id of the last captured prompt, the
  last continuation text, and the ledger commands om advertised (an own call
  names those, not the store this ingest writes).
- Pause state follows what the transcript shows: the `[om:pause]` and
  `[om:resume]` prefixes and the agent's own pause and resume calls (shell or
  MCP). A pause made outside the transcript (another terminal) cannot be seen.
- Everything not captured is counted under a reason; nothing raises on odd input.
"""

from om.adapter import operations

PAUSED = "while paused"
OWN_CALL = "own ledger call"
CONTINUATION = "om's own continuation"
CONTINUATION_REPLY = "reply to om's continuation"
EMPTY = "empty text"
#: The MCP tool names (after a client's prefix) that pause and resume capture.
_SWITCH_TOOLS = {"pause": True, "resume": False}


class Replay:
    """One transcript's items into `ledger` (a scratch ledger: om.ingest merges it afterwards)."""

    def __init__(self, profile, ledger, own_scopes, skipped):
        self.profile = profile
        self.ledger = ledger
        self.session = ledger.session
        #: [(argv, store)] of the ledger commands a call of the agent's own may use.
        self.scopes = list(own_scopes)
        self.skipped = skipped
        self.paused = False
        self.last_prompt = ""
        self.reason = None
        #: The key of the last reply, and the key om continued on (its next reply is no evidence).
        self.reply_key = None
        self.continued = None
        self.cwd = None
        self._read_commands = set()

    def skip(self, reason, count=1):
        self.skipped[reason] = self.skipped.get(reason, 0) + count

    # -- what om told the agent -------------------------------------------------

    def om_text(self, text):
        """A context or continuation text om gave the agent: learn the ledger commands it advertised."""
        if not isinstance(text, str) or "Ledger command" not in text:
            return
        import shlex

        from om.adapter.messages import advertised_commands

        for command in advertised_commands(text):
            if command in self._read_commands:
                continue  # every turn repeats the start context: read each command once
            self._read_commands.add(command)
            try:
                argv = shlex.split(command)
            except ValueError:
                continue
            if len(argv) > 4 and argv[-4] == "--store" and argv[-2] == "--session" and argv[-1] == self.session:
                scope = (argv, argv[-3])
                if scope not in self.scopes:
                    self.scopes.append(scope)

    def continuation(self, text):
        """om's Stop continuation reached the agent with this text (a later prompt equal to it is not evidence)."""
        if isinstance(text, str) and text:
            self.reason = text
            self.continued = self.reply_key
        self.om_text(text)

    # -- the three kinds of evidence ----------------------------------------------

    def prompt(self, prompt, turn, cwd=None):
        if not isinstance(prompt, str):
            return self.skip(EMPTY)
        self.paused, text = operations.prompt_switch(prompt, self.paused)
        if text is None:
            return self.skip(PAUSED)
        if isinstance(cwd, str):
            self.cwd = cwd
        if operations.is_continuation(text, self.reason):
            return self.skip(CONTINUATION)
        source_id = self._capture("user", text, turn)
        if source_id is not None:
            self.last_prompt = source_id

    def tool(self, name, tool_input, response, tool_use_id, turn):
        verbs = []

        def own_call(tool_input):
            verbs[:] = self._own_verbs(tool_input) or []
            return bool(verbs)

        # Own calls first, even while paused: the agent's own `resume` ends the pause.
        text = operations.tool_text(self.profile, name, tool_input, response, own_call)
        if text is None:
            self._switch(verbs or self._mcp_verbs(name, tool_input))
            return self.skip(OWN_CALL)
        if self.paused:
            return self.skip(PAUSED)
        self._capture("tool", text, operations.tool_key(tool_use_id, turn))

    def reply(self, text, turn):
        if self.paused:
            return self.skip(PAUSED)
        key = operations.reply_key(turn, self.last_prompt)
        if key is None:
            return self.skip(EMPTY)
        if key == self.continued:  # the Stop that ended om's continuation on this key
            self.continued = None
            return self.skip(CONTINUATION_REPLY)
        self.reply_key = key
        self._capture("assistant", text, key)

    # -- the rest ---------------------------------------------------------------------

    def _capture(self, kind, text, key):
        source_id = operations.capture(self.ledger, kind, text, key)
        if source_id is None:
            self.skip(EMPTY)
        return source_id

    def _own_verbs(self, tool_input):
        from om.adapter.selfcapture import command_of, ledger_words

        command = command_of(tool_input)
        for argv, store in self.scopes:
            words = ledger_words(command, argv, store, self.session)
            if words is not None:
                return words
        return None

    def _mcp_verbs(self, name, tool_input):
        if not isinstance(name, str) or not isinstance(tool_input, dict) or tool_input.get("session") != self.session:
            return []
        return [name.rpartition("__")[2]]

    def _switch(self, verbs):
        """Follow the agent's own pause and resume calls: the last one wins, as in the ledger."""
        for verb in verbs:
            if verb in _SWITCH_TOOLS:
                self.paused = _SWITCH_TOOLS[verb]
