"""The meta keys the Claude Code adapter keeps in a ledger, declared for storage and transfer.

Invariant: the ledger layer names no Claude key; it learns them from this
declaration. The unprefixed keys are v1's, with v1's meaning (om.adapter.operations;
the same keys as the Codex adapter's);
every key only this adapter uses starts with `claude_` (the profile in
om.claude.hook names the same ones). All of it is transient turn state: a fork
drops it all; an import clears the Stop and reminder part, while the
destination's prompt_id stays, since its current turn goes on.
"""

from om.ledger import AdapterState

STATE = AdapterState(
    prefix="claude_",
    legacy=("prompt_id", "stop_turn", "stop_prompt", "notified_cursor"),
    import_clears=("stop_turn", "stop_prompt", "notified_cursor"),
)
