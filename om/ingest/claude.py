"""Claude Code transcripts (`$CLAUDE_CONFIG_DIR/projects/<folder>/<session>.jsonl`) into the hooks' events.

Facts relied on (Claude Code 2.1.332; the mapping to hook payloads is described
in docs/ingest.md):
- The file's stem is the session id the hooks get; rows carry it as
  `sessionId`. Sub-agents write their own files under `<session>/subagents/`,
  which are skipped whole, as rows marked `isSidechain` are: the hooks skip
  every event carrying `agent_id`.
- A user prompt is a `user` row whose content is text (a string, or a single
  text block), except Claude Code's own rows (`isMeta`, the compaction
  summary, slash-command wrappers); its key is the row's `promptId`, which is
  also the turn of every later row until the next prompt.
- A tool result is a `tool_result` block in a `user` row, paired by id with
  the `tool_use` block of an earlier assistant row: tool `name`, input `input`,
  response the row's `toolUseResult` (PostToolUse), or for `is_error`
  `{"error": <the block's text>, "is_interrupt": false}` (PostToolUseFailure).
- Assistant rows hold one content block each; the blocks of one API message
  share `message.id`. A message that ends with `stop_reason: "end_turn"` is a
  Stop, whose reply is the message's last text block, keyed by the turn.
- `claude --resume ID --fork-session` starts the new file with copies of the
  parent's rows, written with their old timestamps after the fork's first
  `queue-operation` row: conversation rows older than that row are copies and
  are skipped.
- `attachment` rows of type `hook_additional_context` hold om's own context:
  the ledger command it advertised; right after a message that ended the turn
  (a Stop), that context is om's checkpoint continuation, and the reply that
  follows on the same turn is the continuation's own (no evidence).
"""

from om.ingest.lines import items, string

NAME = "claude"
#: Claude Code versions whose transcripts were compared with what the hooks captured.
VERIFIED = ("2.1.332",)
FORMATS = ("2.1",)
#: Rows read before the session's working directory must be known (it is on every conversation row).
_HEAD_ROWS = 64

_QUIET_ROWS = {"system", "queue-operation", "api-request", "api-request-blob", "api-request-shape", "last-prompt",
               "tools-used", "cost-state", "mode", "atis-latch", "summary", "custom-title", "file-history-snapshot",
               "progress"}
_WRAPPERS = ("<command-name>", "<command-message>", "<local-command-", "<command-args>")

#: The biggest rows a transcript holds, none of them evidence (om.ingest.lines: quiet markers).
QUIET = (b'{"type":"api-request', b'{"type":"last-prompt"', b'{"type":"cost-state"', b'{"type":"tools-used"',
         b'{"type":"atis-latch"', b'{"type":"mode"') + tuple(
    b'"attachment":{"type":"%s"' % kind for kind in (
        b"prompt_snapshot", b"skill_listing", b"agent_listing_delta", b"deferred_tools_delta", b"hook_success",
        b"environment", b"model", b"auto_mode", b"session_context", b"date", b"remote_session_change"))

UNKNOWN_ROW = "unknown row type"
UNVERIFIED = "item of an unverified shape"
SIDECHAIN = "sub-agent row"
FORK_COPY = "row copied from the forked session"
NO_CALL = "tool result without its call"


def listed(name):
    """Whether a file met while walking a folder is a session transcript."""
    return name.endswith(".jsonl")


def compressed(name):
    return False


def session_of_name(name):
    return name[: -len(".jsonl")] if listed(name) else None


class Header:
    def __init__(self, session, cwd, version, skip=None):
        self.session = session
        self.cwd = cwd
        self.format = FORMATS[0]
        self.version = version
        self.skip = skip


def read(records, begin, path):
    """Feed a transcript's records to the Replay `begin(header)` returns (None: the file is not read further)."""
    from om.fastpath import basename, dirname

    head_rows, cwd, version = [], None, None
    for record in records:
        head_rows.append(record)
        if isinstance(record.get("cwd"), str):
            cwd, version = record["cwd"], record.get("version")
            break
        if len(head_rows) >= _HEAD_ROWS:
            break
    session = session_of_name(basename(path))
    skip = None
    if basename(dirname(path)) == "subagents" or any(r.get("isSidechain") is True for r in head_rows[-1:]):
        skip = "sub-agent transcript"
    elif not head_rows:
        return None
    elif not any(isinstance(r.get("type"), str) and "sessionId" in r for r in head_rows):
        skip = "unknown format"
    head = Header(session, cwd, version if isinstance(version, str) else None, skip)
    replay = begin(head)
    if replay is None:
        return head
    transcript = _Transcript(replay, session)
    for record in head_rows:
        transcript.row(record)
    for record in records:
        transcript.row(record)
    transcript.end()
    return head


class _Transcript:
    def __init__(self, replay, session):
        self.replay = replay
        self.session = session
        self.turn = ""
        self.forked_at = None  # the timestamp of the first queue-operation row
        self.uses = {}  # tool_use id -> (name, input), waiting for the result
        self.message = None  # [id, stop_reason, last text] of the assistant message being read

    def row(self, row):
        kind = string(row, "type")
        if kind == "queue-operation":
            if self.forked_at is None and isinstance(row.get("timestamp"), str):
                self.forked_at = row["timestamp"]
            return
        if kind == "attachment":
            attachment = row.get("attachment")
            if isinstance(attachment, dict) and attachment.get("type") == "hook_additional_context":
                # Right after a message that ended the turn, a context is a Stop hook's: om's
                # (it advertises the ledger) is its continuation, and that reply is over.
                stop = self.message is not None and self.message[1] == "end_turn"
                for text in items(attachment, "content"):
                    if stop and isinstance(text, str) and "Ledger command" in text:
                        self._stopped()
                        self.replay.continuation(text)
                    else:
                        self.replay.om_text(text)
            return
        if kind not in ("user", "assistant"):
            if kind not in _QUIET_ROWS:
                self.replay.skip(UNKNOWN_ROW)
            return
        if row.get("isSidechain") is True:
            return self.replay.skip(SIDECHAIN)
        stamp = row.get("timestamp")
        if self.forked_at is not None and isinstance(stamp, str) and stamp < self.forked_at:
            return self.replay.skip(FORK_COPY)
        message = row.get("message")
        if not isinstance(message, dict):
            return self.replay.skip(UNVERIFIED)
        if kind == "assistant":
            return self._assistant(message)
        self._stopped()
        self._user(row, message)

    def end(self):
        self._stopped()
        if self.uses:
            self.replay.skip("tool call without a result", len(self.uses))

    # -- assistant rows -------------------------------------------------------------

    def _assistant(self, message):
        if self.message is not None and self.message[0] != message.get("id"):
            self._stopped()
        if self.message is None:
            self.message = [message.get("id"), None, None]
        self.message[1] = message.get("stop_reason")
        for block in items(message, "content"):
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                self.message[2] = block["text"]
            elif block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                self.uses[block["id"]] = (string(block, "name"), block.get("input"))

    def _stopped(self):
        """The assistant message being read is over: a turn that ended there was a Stop."""
        message, self.message = self.message, None
        if message is not None and message[1] == "end_turn" and message[2] is not None:
            self.replay.reply(message[2], self.turn)

    # -- user rows ------------------------------------------------------------------------

    def _user(self, row, message):
        if isinstance(row.get("promptId"), str):
            self.turn = row["promptId"]
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        if results:
            if len(results) != 1 or len(blocks) != 1:
                return self.replay.skip(UNVERIFIED, len(results))
            return self._result(row, results[0])
        if row.get("isMeta") or row.get("isCompactSummary") or row.get("isVisibleInTranscriptOnly"):
            return None
        text = content if isinstance(content, str) else _single_text(blocks)
        if text is None:
            return self.replay.skip(UNVERIFIED)
        if text.lstrip().startswith(_WRAPPERS):
            return None
        self.replay.prompt(text, self.turn, row.get("cwd"))

    def _result(self, row, block):
        use_id = string(block, "tool_use_id")
        use = self.uses.pop(use_id, None)
        if use is None:
            return self.replay.skip(NO_CALL)
        name, tool_input = use
        if block.get("is_error") is True:
            error = block.get("content")
            if not isinstance(error, str):
                return self.replay.skip(UNVERIFIED)
            from om.adapter.operations import failure_response

            response = failure_response(error, False)
        elif "toolUseResult" in row:
            response = row["toolUseResult"]
        else:
            return self.replay.skip(UNVERIFIED)
        self.replay.tool(name, tool_input, response, use_id, self.turn)


def _single_text(blocks):
    if len(blocks) == 1 and isinstance(blocks[0], dict) and blocks[0].get("type") == "text":
        text = blocks[0].get("text")
        return text if isinstance(text, str) else None
    return None
