"""`om --store DIR hook --client codex`: one Codex event in, at most one JSON object out.

The Codex profile and event table; the operations, the fail-open runner and the
cadence are shared with every client (om.adapter). Invariants of this client:
- Every response is valid against the Codex 0.169.0 output schema of its event;
  "nothing to say" is the empty string (no stdout at all).
- Handles SessionStart, UserPromptSubmit, PostToolUse, Stop and Interrupt; sub-agent
  events (`agent_id`) and unknown events capture nothing and request nothing.
- The turn is Codex's `turn_id`; the continuation is Stop `{"decision": "block",
  "reason": ...}`, whose reason holds no `&`, `<` or `>` because Codex
  XML-escapes it on the way to the model.
- Adapter state: the v1 keys (`prompt_id`, `stop_turn`, `stop_prompt`,
  `notified_cursor`) with v1's meaning, plus keys prefixed `codex_`.
"""

from om.adapter import operations


class _Codex(operations.Profile):
    def continuation(self, reason):
        return {"decision": "block", "reason": reason}


#: Codex names MCP tools `mcp__<server>__<tool>`; the plugin's .mcp.json names its server `om`.
OWN_MCP_TOOLS = "mcp__om__"

PROFILE = _Codex(
    name="codex",
    turn_field="turn_id",
    state_prefix="codex_",
    shell_tools=("Bash",),
    own_mcp_prefixes=(OWN_MCP_TOOLS,),
    mcp_note="Codex runs them outside the sandbox, so they work where the shell cannot write the store.",
)


def interrupt(profile, store, event):
    # The interrupted turn's evidence stays pending; no model work is started.
    return None


HANDLERS = {
    "SessionStart": operations.session_start,
    "UserPromptSubmit": operations.user_prompt_submit,
    "PostToolUse": operations.post_tool_use,
    "Stop": operations.stop,
    "Interrupt": interrupt,
}
