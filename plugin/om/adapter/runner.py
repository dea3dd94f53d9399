"""Run one hook event for a client, failing open.

Invariants:
- `run_hook` never raises; its caller always exits 0. A failure becomes an
  advisory `systemMessage` (a field every event of both clients accepts, shown
  to the user, never to the model), one line on stderr and one line in the
  store's `hook-errors.log`; the user's turn goes on.
- "Nothing to say" is the empty string: no stdout at all.
- Events outside the client's table capture nothing, answer nothing and leave
  no receipt; events carrying `agent_id` (sub-agents, Claude Code's compaction
  summariser) are skipped with a receipt.
- Every handled event leaves a capture receipt (om.receipts) with its outcome and
  duration, under the client's name, so `om doctor` can prove the hooks run.
- Import-light: the common path loads only the ledger core.
"""

import os
import time

from om.errors import OmError

LOG_NAME = "hook-errors.log"


def run_hook(store, stdin, stderr, profile, handlers):
    """Handle one event read from the binary stream `stdin`; return what to print."""
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
        path = os.path.join(store, LOG_NAME)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, f"{stamp} {line}\n".encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except Exception:
        pass
