"""Doctor's capture checks: did each hook run, how did it go, and has it run since the install.

Every hook run leaves a receipt (om.receipts); a failed run also leaves its reason
in `<store>/hook-errors.log`. Invariants:
- A missing receipt says only what is known: the hook has not recorded a run in
  this store. When an earlier check already names why the hooks cannot run (the
  client's `blocked`), the receipts are not judged at all: one `skip` line points at
  that check, so one cause gets one verdict.
- A receipt older than the installed plugin copy means "not run since the plugin
  was (re)installed": Codex skips hooks whose files changed since they were trusted.
- Interrupt runs only when a turn is interrupted, so never having run is ok for it.
- Hook time is judged on enough runs to mean something: a p95 (nearest rank) from
  P95_RUNS durations or more; below that, a warning only when every one of at least
  FEW_RUNS runs was over the budget; one or two runs get no verdict on time. The first
  run after an install compiles bytecode and reads a cold disk, so one slow run says
  nothing about the next.
- One reading for every client: what differs (check names, receipts folder, how to get
  the client to run the hooks) is the CLIENTS table, not a second copy of the checks.
"""

import math
import os
import time

from om.doctor.findings import check, quote, skipped

#: p95 hook time above which capture is felt by the user.
HOOK_BUDGET_MS = 250
#: Durations needed before a p95 is a p95 and not the slowest run.
P95_RUNS = 20
#: Below P95_RUNS, this many runs all over the budget still make a warning.
FEW_RUNS = 3
#: A failure within this window is "recent".
RECENT_FAILURE_S = 24 * 3600
#: File times come from the kernel's coarse clock (a tick behind time.time()) and receipts
#: are rounded to ms: a receipt this much older than the copy may still be a later run.
CLOCK_SLACK_S = 0.05
RARE = ("Interrupt",)
#: Per client: the check-name prefix, and how a user gets that client to run the hooks.
CLIENTS = {
    "codex": {"prefix": "capture", "start": "start a Codex session with the plugin enabled and its hooks trusted (/hooks)",
              "again": "start a Codex session and run one turn (if this stays, Codex skips the changed hooks:"
                       " trust them when codex asks, or in /hooks)"},
    "claude": {"prefix": "claude.capture", "start": "start a Claude Code session (claude)",
               "again": "start a Claude Code session and run one turn"},
}
LOG_NAME = "hook-errors.log"


def checks(client, scope, events, installed=None):
    """The capture findings of `client` (om.doctor.scope.Client) from the receipts in its store.

    `installed`: when the client's plugin copy was installed, if known."""
    from om.receipts import read_all

    profile = CLIENTS[client.name]
    if client.blocked:
        return [skipped(profile["prefix"], client.blocked)]
    store = scope.store_of(client)
    is_dir = os.path.isdir(store)
    receipts = read_all(store, client.name) if is_dir else {}
    log = os.path.join(store, LOG_NAME)
    reasons = _last_errors(log) if is_dir else {}
    found = []
    now = time.time()
    for event in events:
        name = f"{profile['prefix']}.{event}"
        r = receipts.get(event)
        if r is None:
            found.append(_never(name, event, scope.rerun, profile["start"]))
            continue
        last = r.get("last_at") or 0
        recent = sorted(x for x in r.get("recent_ms", []) if isinstance(x, (int, float)))
        slow, timing = _timing(recent)
        summary = f"last {_utc(last)} {r.get('outcome')} in {r.get('duration_ms')} ms; {r.get('runs')} run(s), {timing}"
        reason = reasons.get(event)
        read_log = f"the reason is logged: tail -n 20 {quote(log)}"
        if r.get("outcome") == "failed":
            why = f"; logged: {reason}" if reason else ""
            found.append(check(name, "fail", f"last run failed ({summary}){why}",
                               f"{read_log}; after fixing it, rerun {scope.rerun}"))
        elif installed and event not in RARE and last + CLOCK_SLACK_S < installed:
            found.append(
                check(
                    name,
                    "warn",
                    f"no run since the plugin copy was installed at {_utc(installed)} ({summary})",
                    f"{profile['again']}, then rerun {scope.rerun}",
                )
            )
        elif r.get("last_failure_at") and now - r["last_failure_at"] < RECENT_FAILURE_S:
            why = f"; logged: {reason}" if reason else ""
            found.append(check(name, "warn", f"failed within the last day ({summary}){why}", read_log))
        elif slow:
            found.append(
                check(name, "warn", f"{slow} ({summary})", "check runtime.hook_python (a shim) and the store's disk")
            )
        else:
            found.append(check(name, "ok", summary))
    return found


def _timing(recent):
    """(what is too slow, or "", the summary's timing part) of the sorted recent durations."""
    n = len(recent)
    if n >= P95_RUNS:
        p95 = recent[math.ceil(0.95 * n) - 1]
        over = f"p95 {p95} ms is over the {HOOK_BUDGET_MS} ms budget" if p95 > HOOK_BUDGET_MS else ""
        return over, f"p95 {p95} ms"
    if not recent:
        return "", "no durations kept"
    fastest, slowest = recent[0], recent[-1]
    spread = f"{fastest} ms" if n == 1 else f"fastest {fastest} ms, slowest {slowest} ms"
    timing = f"{spread} (a p95 needs {P95_RUNS} runs)"
    if n >= FEW_RUNS and fastest > HOOK_BUDGET_MS:
        return f"each of the last {n} runs took over the {HOOK_BUDGET_MS} ms budget", timing
    return "", timing


def _never(name, event, rerun, start):
    if event in RARE:
        return check(name, "ok", f"no {event} run recorded yet (it runs only when you interrupt a turn)")
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
