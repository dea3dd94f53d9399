"""`om --store DIR hook --client claude`: one Claude Code event in, at most one JSON object out.

The Claude Code profile and event table; the operations, the fail-open runner
and the cadence are shared with every client (om.adapter). Facts this rests on
(Claude Code 2.1.332, observed offline):
- Handled: SessionStart (startup, resume, clear, compact), UserPromptSubmit,
  PostToolUse, PostToolUseFailure (a Bash command exiting nonzero, a missing file:
  its `error` text is evidence too), Stop. Ignored without a word: every other event (PreCompact, whose
  stdout would steer the compaction summary; PostCompact, which rejects
  hookSpecificOutput; SubagentStop, PostToolBatch, MessageDisplay, SessionEnd...)
  and every event carrying `agent_id` (sub-agents, and the compaction summariser,
  whose SubagentStop carries the summary).
- The turn is the payload's `prompt_id`: one per user prompt, the same on that
  turn's tool and Stop events. Capture keys: prompt by `prompt_id`, tool result by
  `tool_use_id`, final reply (`last_assistant_message`) by `prompt_id`.
- Responses use only fields Claude Code accepts for the event:
  `hookSpecificOutput` {hookEventName, additionalContext} on SessionStart,
  UserPromptSubmit, PostToolUse, PostToolUseFailure and Stop; `systemMessage` when failing open.
  Exit status is always 0 (exit 2 would block the prompt or the Stop).
- The continuation is Stop `hookSpecificOutput.additionalContext`: Claude Code
  continues the turn once with the text sent once, verbatim, with no hook
  command line, and the next Stop has `stop_hook_active: true`. (`decision:
  block` would send the reason twice, once quoting the whole hook command line.)
  Claude Code itself does not stop a hook that keeps continuing: the adapter
  alone guarantees one continuation per turn.
- Adapter state: the v1 keys `prompt_id`, `stop_turn`, `stop_prompt`,
  `notified_cursor` with v1's meaning (as the Codex adapter keeps them); Claude's
  own state in keys prefixed `claude_`.
"""

from om.adapter import operations


class _Claude(operations.Profile):
    def continuation(self, reason):
        return {"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": reason}}


#: Claude Code names a plugin's MCP tools `mcp__plugin_<plugin>_<server>__<tool>` (the om
#: plugin and its server are both `om`), and a server added in settings `mcp__<server>__<tool>`.
OWN_MCP_TOOLS = ("mcp__plugin_om_om__", "mcp__om__")

PROFILE = _Claude(
    name="claude",
    turn_field="prompt_id",
    state_prefix="claude_",
    shell_tools=("Bash",),
    own_mcp_prefixes=OWN_MCP_TOOLS,
    mcp_note="They write the store even when Claude Code's sandbox keeps the shell from writing it.",
)


HANDLERS = {
    "SessionStart": operations.session_start,
    "UserPromptSubmit": operations.user_prompt_submit,
    "PostToolUse": operations.post_tool_use,
    "PostToolUseFailure": operations.post_tool_use_failure,
    "Stop": operations.stop,
}
