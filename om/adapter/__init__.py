"""What every client adapter shares: one event in, the same core operations, fail open.

A client adapter (om.codex.hook, om.claude.hook) is a `Profile` (om.adapter.operations)
plus the table of the events it handles, and imports nothing of this module. Here are
`client_hook`, the one place that maps a `--client` name to its adapter module,
`run_client_hook`, which finds the event's store and runs the event through the
adapter (for om.cli and om.commands), and `run_hook`, the fail-open runner. The rest
lives in this package, once:

- operations: the `Profile` every client gives, and SessionStart, UserPromptSubmit,
  PostToolUse and Stop mapped onto the ledger (capture, pause/resume, self-capture
  suppression, reminders), with the two policies they apply: the `[om:pause]` / `[om:resume]` prefixes and recognition
  of om's own continuation text, and when a checkpoint is due (OM_CHECKPOINT_BYTES /
  OM_CHECKPOINT_TURNS);
- selfcapture: recognise the agent's own ledger calls among its shell commands
  (never captured as evidence);
- messages: what om says to the agent, with the client's own wording.

Invariants of the package: nothing here reads a client's payload field by a name
the profile did not give it, and the core (om.ledger and below) knows no client at all.

Invariants of `run_hook`:
- It never raises; its caller always exits 0. A failure becomes an advisory
  `systemMessage` (a field every event of both clients accepts, shown to the user,
  never to the model), one line on stderr and one line in the store's
  `hook-errors.log`; the user's turn goes on.
- "Nothing to say" is the empty string: no stdout at all.
- Events outside the client's table capture nothing, answer nothing and leave no
  receipt; events carrying `agent_id` (sub-agents, Claude Code's compaction
  summariser) are skipped with a receipt.
- Every handled event leaves a capture receipt (om.receipts) with its outcome and
  duration, under the client's name, so `om doctor` can prove the hooks run.
- Import-light: of the adapter layer, an event loads only this module and
  operations (messages only when there is something to say), beside the
  client's profile and the ledger core with the few modules it needs: each
  module costs a hook event about 0.1 ms to load.

Adding a client means adding a profile and an event table, and naming its module
in `client_hook`.
"""

import time

from om.errors import OmError
from om.fastpath import join, posix  # not os: see om.fastpath

LOG_NAME = "hook-errors.log"


def client_hook(client):
    """The adapter module of one of om.CLIENTS (om.codex.hook, om.claude.hook): its `PROFILE` and `HANDLERS`."""
    if client == "claude":
        from om.claude import hook as claude

        return claude
    from om.codex import hook as codex

    return codex


def run_client_hook(client, stdin, stderr, store=None, plugin_data=None):
    """Handle one event of `client`; its store is `store`, else the client's store found from
    `plugin_data`, the data folder the client gave the plugin (om.location)."""
    problem = None
    if store is None:
        from om.location import open_client_store

        try:
            store = open_client_store(client, plugin_data)
        except OmError as e:  # the event fails open with it, its receipt and log in the data folder
            store, problem = plugin_data, e
    adapter = client_hook(client)
    return run_hook(store, stdin, stderr, adapter.PROFILE, adapter.HANDLERS, problem)


def run_hook(store, stdin, stderr, profile, handlers, problem=None):
    """Handle one event read from the binary stream `stdin`; return what to print.

    `problem`: an OmError that keeps this event from being handled (the store could
    not be opened safely); the event then fails open with it, receipt and log
    going to `store`."""
    started = time.perf_counter()
    event_name = "event"
    outcome = None
    try:
        from om.jsonio import decode_input, read_stdin_limited

        event = decode_input(read_stdin_limited(stdin))
        event_name = str(event.get("hook_event_name") or "event")
        handler = handlers.get(event_name)
        if handler is None:
            return ""
        if event.get("agent_id"):
            outcome = "skipped"
            return ""
        outcome = "failed"
        if problem is not None:
            raise problem
        response = handler(profile, store, event)
        outcome = "ok"
        if not response:
            return ""
        from om.jsonio import dumps

        return dumps(response) + "\n"
    except Exception as e:  # fail open, always
        outcome = "failed" if event_name in handlers else None
        return _advise(store, event_name, e, stderr)
    finally:
        if outcome is not None:
            from om.receipts import record

            record(store, event_name, outcome, round((time.perf_counter() - started) * 1000, 1),
                   client=profile.name)


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
    try:
        path = join(store, LOG_NAME)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        fd = posix.open(path, posix.O_WRONLY | posix.O_CREAT | posix.O_APPEND, 0o600)
        try:
            posix.write(fd, f"{stamp} {line}\n".encode("utf-8", "replace"))
        finally:
            posix.close(fd)
    except Exception:
        pass
