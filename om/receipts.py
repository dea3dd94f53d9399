"""Capture receipts: a cheap record, per hook event, that the hook ran and how it went.

Invariants:
- One small JSON file per client and event: `<store>/receipts/<Event>.json` for
  Codex (where receipts have always been), `<store>/receipts/<client>/<Event>.json`
  for every other client, so two clients sharing a store never mix. Replaced
  atomically (write a private temp file, then rename), so a reader never sees
  a torn receipt and a crashed writer leaves the previous one intact.
- Only om.fastpath's `posix` and `om.jsonio`: recording costs a read, a write and a rename, and
  never raises (a hook must not fail because its receipt could not be written).
- Concurrent hooks of one event may race; the last writer wins. Receipts are
  evidence that capture works, not an audit log.

File format (compact JSON):
  {"event": "Stop", "client": "codex", "last_at": 1767200000.123, "outcome": "ok",
   "duration_ms": 41.7, "runs": 12, "failures": 1, "last_failure_at": 1767100000.0,
   "recent_ms": [39.0, 44.2, ...]}        # the last RECENT durations, oldest first
"""


from om.fastpath import join, posix  # not os: see om.fastpath
from om.jsonio import dumps, loads

DIR = "receipts"
RECENT = 50
OUTCOMES = ("ok", "skipped", "failed")
#: The client whose receipts sit directly in receipts/ (the first one om had).
FIRST_CLIENT = "codex"


def directory(store, client=FIRST_CLIENT):
    if client == FIRST_CLIENT:
        return join(store, DIR)
    return join(store, DIR, _safe(client))


def path(store, event, client=FIRST_CLIENT):
    return join(directory(store, client), _safe(event) + ".json")


def record(store, event, outcome, duration_ms, now=None, client=FIRST_CLIENT):
    """Record one hook run. outcome: "ok", "skipped" (paused, ignored event) or "failed"."""
    try:
        import time

        at = time.time() if now is None else now
        folder = directory(store, client)
        target = path(store, event, client)
        try:
            with open(target, "rb") as f:
                previous = loads(f.read().decode("utf-8"))
            if not isinstance(previous, dict):
                previous = {}
        except Exception:
            previous = {}
        recent = [x for x in previous.get("recent_ms", []) if isinstance(x, (int, float))][-(RECENT - 1):]
        recent.append(round(float(duration_ms), 1))
        failed = outcome == "failed"
        receipt = {
            "event": str(event),
            "client": str(client),
            "last_at": round(at, 3),
            "outcome": outcome if outcome in OUTCOMES else "failed",
            "duration_ms": round(float(duration_ms), 1),
            "runs": int(previous.get("runs", 0)) + 1,
            "failures": int(previous.get("failures", 0)) + (1 if failed else 0),
            "last_failure_at": round(at, 3) if failed else previous.get("last_failure_at"),
            "recent_ms": recent,
        }
        for level in (folder,) if client == FIRST_CLIENT else (join(store, DIR), folder):
            try:
                posix.mkdir(level, 0o700)
            except FileExistsError:
                pass
        temp = f"{target}.{posix.getpid()}.tmp"
        fd = posix.open(temp, posix.O_WRONLY | posix.O_CREAT | posix.O_TRUNC, 0o600)
        try:
            posix.write(fd, dumps(receipt).encode("utf-8"))
        finally:
            posix.close(fd)
        posix.replace(temp, target)
        return True
    except Exception:
        return False


def read_all(store, client=FIRST_CLIENT):
    """{event: receipt} of every readable receipt of one client in the store."""
    found = {}
    folder = directory(store, client)
    try:
        names = posix.listdir(folder)
    except OSError:
        return found
    for name in names:
        if not name.endswith(".json"):
            continue
        try:
            with open(join(folder, name), "rb") as f:
                receipt = loads(f.read().decode("utf-8"))
        except Exception:
            continue
        if isinstance(receipt, dict) and isinstance(receipt.get("event"), str):
            found[receipt["event"]] = receipt
    return found


def _safe(event):
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in str(event))[:64] or "unknown"
