"""The meta keys the Codex adapter keeps in a ledger, declared for storage and transfer.

Invariant: the ledger layer names no Codex key; it learns them from this
declaration. The unprefixed keys are the ones earlier implementations wrote
(kept for interop); every key om adds starts with `codex_`. All of it is
transient turn state: a fork drops it all; an import clears the Stop and
reminder part, while the destination's prompt_id stays, since its current
turn goes on.
"""

from om.ledger import AdapterState

STATE = AdapterState(
    prefix="codex_",
    legacy=("prompt_id", "stop_turn", "stop_prompt", "notified_cursor"),
    import_clears=("stop_turn", "stop_prompt", "notified_cursor"),
)
