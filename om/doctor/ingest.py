"""Doctor's transcript check: do a client's newest sessions hold evidence its ledger lacks?

When the hooks did not run (not trusted yet, not installed, failing), the
client's own transcripts still hold the turns; `om ingest` captures them
with the hooks' ids. Invariants:
- Bounded: per client, at most NEWEST transcripts are read, the most
  recently modified ones (listing the client's transcript folder costs no reads).
- Read-only like all of doctor: it is ingest's dry run, which writes nothing
  in the store (its scratch ledgers live in a private temporary folder).
- A client without a transcript folder gets no finding at all; one whose
  newest sessions hold nothing new gets an ok; otherwise a warning that says
  how many turns and sources, and the exact `ingest` command that captures them.
"""

import os

from om.doctor.findings import check, quote
from om.errors import OmError

NEWEST = 3
NAMES = {"codex": "Codex", "claude": "Claude Code"}


def checks(scope):
    """Findings for each client doctor judges (om.doctor.scope), against the store its hooks write."""
    found = []
    for client in scope.clients:
        found += _client_check(client.name, scope.store_of(client), client.home)
    return found


def _client_check(client, store, client_home):
    from om.ingest import reader_of, run
    from om.ingest.transcripts import home, newest

    top = home(client, store, client_home)
    if not os.path.isdir(top):
        return []
    name = f"{client}.transcripts"
    files = newest(reader_of(client), top, NEWEST)
    if not files:
        return [check(name, "ok", f"no {NAMES[client]} transcripts in {top} yet")]
    try:
        report = run(store, client, files, dry_run=True)
    except OmError as e:
        return [check(name, "warn", f"cannot compare the newest {NAMES[client]} transcripts with {store}: {e}",
                      f"check the store first (store checks above); then {_command(client, store)} --dry-run")]
    holes = [e for e in report["sessions"] if e["captured"]]
    read = len(report["sessions"])
    if not holes:
        return [check(name, "ok", f"the {read} newest {NAMES[client]} session(s) hold nothing the ledgers lack")]
    turns = sum(e["kinds"].get("user", 0) for e in holes)
    sources = sum(e["captured"] for e in holes)
    return [check(name, "warn",
                  f"{len(holes)} of the {read} newest {NAMES[client]} session(s) hold {turns} turn(s), {sources} "
                  f"source(s) in all, that the ledgers in {store} lack: the hooks did not capture them "
                  "(not trusted, not installed or failing)", _command(client, store))]


def _command(client, store):
    from om.invocation import runtime_command

    return f"{runtime_command()} --store {quote(store)} ingest --client {client}"
