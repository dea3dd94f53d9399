"""What every client adapter shares: one event in, the same core operations, fail open.

A client adapter (om.codex, om.claude) is a `Profile` (om.adapter.profile) plus
the table of the events it handles. Everything else lives here, once:

- runner: read the event, dispatch, fail open (exit 0, advisory JSON, one stderr
  line, one log line), capture receipts;
- operations: SessionStart, UserPromptSubmit, PostToolUse and Stop mapped onto
  the ledger (capture, pause/resume, self-capture suppression, reminders);
- selfcapture: recognise the agent's own ledger calls among its shell commands
  (never captured as evidence);
- cadence: when a checkpoint is due (OM_CHECKPOINT_BYTES / OM_CHECKPOINT_TURNS);
- prompts: the `[om:pause]` / `[om:resume]` prefixes and recognition of om's own
  continuation text;
- messages: what om says to the agent, with the client's own wording.

Invariant: nothing here reads a client's payload field by a name the profile did
not give it, and the core (om.ledger and below) knows no client at all.
"""
