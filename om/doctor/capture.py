"""Doctor's capture checks: did each hook run, how did it go, and has it run since the install.

Every hook run leaves a receipt (om.receipts); a failed run also leaves its reason
in `<store>/hook-errors.log`. Invariants:
- A missing receipt says only what is known: the hook has not recorded a run in
  this store. The fix names the likeliest cause found by the other checks (a store
  that is not a directory, hooks Codex will not run), not a guess.
- A receipt older than the installed plugin copy means "not run since the plugin
  was (re)installed": Codex skips hooks whose files changed since they were trusted.
- Interrupt runs only when a turn is interrupted, so never having run is ok for it.
- One reading for every client: what differs (check names, receipts folder, how to get
  the client to run the hooks) is the CLIENTS table, not a second copy of the checks.
"""

import os
import time

from om.doctor.findings import check, quote
from om.invocation import runtime_command

#: p95 hook time above which capture is felt by the user.
HOOK_BUDGET_MS = 250
#: A failure within this window is "recent".
RECENT_FAILURE_S = 24 * 3600
#: File times come from the kernel's coarse clock (a tick behind time.time()) and receipts
#: are rounded to ms: a receipt this much older than the copy may still be a later run.
CLOCK_SLACK_S = 0.05
RARE = ("Interrupt",)
#: Per client: the check-name prefix, and how a user gets that client to run the hooks.
CLIENTS = {
    "codex": {"prefix": "capture", "start": "start a Codex session with the plugin enabled and its hooks trusted (/hooks)"},
    "claude": {"prefix": "claude.capture", "start": "start a Claude Code session (claude)"},
}
LOG_NAME = "hook-errors.log"
TRUST = "run codex, open /hooks, review and trust the om hooks"


def checks(store, events, installation, context, client="codex"):
    """`context`: {"store_is_dir", "store_exists", "hooks_blocked"} from the store and client checks,
    and "rerun", the command that runs doctor again. `installation`: the client's plugin copy
    ({"installed_at"}), when it is known."""
    from om.receipts import read_all

    profile = CLIENTS[client]
    receipts = read_all(store, client) if context.get("store_is_dir") else {}
    log = os.path.join(store, LOG_NAME)
    reasons = _last_errors(log) if context.get("store_is_dir") else {}
    installed = (installation or {}).get("installed_at")
    rerun = context.get("rerun") or f"{runtime_command()} doctor"
    found = []
    now = time.time()
    for event in events:
        name = f"{profile['prefix']}.{event}"
        r = receipts.get(event)
        if r is None:
            found.append(_never(name, event, context, rerun, profile["start"]))
            continue
        last = r.get("last_at") or 0
        recent = sorted(x for x in r.get("recent_ms", []) if isinstance(x, (int, float)))
        p95 = recent[min(len(recent) - 1, int(0.95 * len(recent)))] if recent else 0.0
        summary = f"last {_utc(last)} {r.get('outcome')} in {r.get('duration_ms')} ms; {r.get('runs')} run(s), p95 {p95} ms"
        reason = reasons.get(event)
        read_log = f"the reason is logged: tail -n 20 {quote(log)}"
        if r.get("outcome") == "failed":
            why = f"; logged: {reason}" if reason else ""
            found.append(check(name, "fail", f"last run failed ({summary}){why}", f"{read_log}; after fixing it, rerun {rerun}"))
        elif installed and event not in RARE and last + CLOCK_SLACK_S < installed:
            found.append(
                check(
                    name,
                    "warn",
                    f"no run since the plugin copy was installed at {_utc(installed)} ({summary})",
                    "start a Codex session and run one turn; if this stays, Codex skips the changed hooks: " + TRUST,
                )
            )
        elif r.get("last_failure_at") and now - r["last_failure_at"] < RECENT_FAILURE_S:
            why = f"; logged: {reason}" if reason else ""
            found.append(check(name, "warn", f"failed within the last day ({summary}){why}", read_log))
        elif p95 > HOOK_BUDGET_MS:
            found.append(
                check(name, "warn", f"p95 {p95} ms is over the {HOOK_BUDGET_MS} ms budget ({summary})",
                      "check runtime.hook_python (a shim) and the store's disk")
            )
        else:
            found.append(check(name, "ok", summary))
    return found


def _never(name, event, context, rerun, start):
    if context.get("store_exists") and not context.get("store_is_dir"):
        return check(name, "warn", f"no {event} run recorded: the hooks cannot record anything while the store is not a directory",
                     "fix store.exists first (the hooks show an om message meanwhile)")
    if event in RARE:
        return check(name, "ok", f"no {event} run recorded yet (it runs only when you interrupt a turn)")
    if context.get("hooks_blocked"):
        return check(name, "warn", f"no {event} run recorded in this store: Codex does not run the om hooks (see the codex checks above)",
                     f"{TRUST}, start a session, then rerun {rerun}")
    return check(name, "warn", f"no {event} run recorded in this store", f"{start}, then rerun {rerun}")


def _last_errors(log):
    """{event: the last logged failure's text} from the tail of hook-errors.log."""
    try:
        with open(log, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 65536))
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return {}
    found = {}
    for line in lines:
        stamp, _, text = line.partition(" ")
        head = "om: "
        if text.startswith(head) and " hook failed open: " in text:
            event, _, detail = text[len(head):].partition(" hook failed open: ")
            found[event] = f"{stamp} {detail}"[:300]
    return found


def _utc(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
