"""`om doctor`: prove that memory capture works, or say exactly what to fix.

Invariants:
- Doctor judges the client this copy runs for, every client the user has om set up
  in, and nothing else (om.doctor.scope): a working Codex-only, Claude Code-only or
  two-client installation is all ok, and a user with om in no client gets one line.
- One cause, one verdict: a check that keeps a client's hooks from running marks the
  client blocked, and what only running hooks could show is then `skip`.
- Doctor opens ledgers read-only and never creates, repairs or trusts anything (it
  removes only staging folders no live process owns, as fork and import do); every
  finding that is not ok carries the exact command or edit that fixes it, written so
  that it runs as shown, in the order printed (om.doctor.findings).
- The report's status is the worst of its checks; only "fail" makes the exit status 1.
- The checks are the modules MODULES names, run in order, each `checks(scope) -> [finding]`:
  runtime (om.doctor.runtime), the no-client line (om.doctor.clients), the stores
  (om.doctor.store), the project memory every client shares (om.doctor.project),
  Codex (om.codex.doctor) and Claude Code (om.claude.doctor), each
  client's with its MCP server (om.doctor.mcp) and capture receipts (om.doctor.capture),
  then whether each judged client's newest transcripts hold turns its ledgers lack
  (om.doctor.ingest), then git and the last sync of each store that syncs (om.doctor.sync).
  A new area is one module and one line here.
"""

from om import __version__
from om.doctor.findings import worst

#: The check modules, in the order their findings are printed; a new area adds one line.
MODULES = (
    "om.doctor.runtime",
    "om.doctor.clients",
    "om.doctor.store",
    "om.doctor.project",
    "om.codex.doctor",
    "om.claude.doctor",
    "om.doctor.ingest",
    "om.doctor.sync",
)


def diagnose(store=None):
    """Run every check; returns {"status", "version", "store", "store_from", "stores", "clients", "run_for",
    "run_as", "rerun", "checks": [...]}.

    store: the first store checked (the one given, else the first judged client's), store_from: how it
    was found; stores: every store checked; clients: the clients judged; run_for: the client this copy
    is the plugin copy of (or None); run_as: how a shell runs this runtime; rerun: the command that runs
    this same check again."""
    from importlib import import_module

    from om.doctor import scope as scopes

    scope = scopes.build(store)
    checks = []
    for name in MODULES:
        checks += import_module(name).checks(scope)
    first = scope.stores[0] if scope.stores else (None, None)
    return {"status": worst(checks), "version": __version__, "store": first[0], "store_from": first[1],
            "stores": [path for path, _ in scope.stores], "clients": [c.name for c in scope.clients],
            "run_for": scope.run_for, "run_as": scope.run_as, "rerun": scope.rerun, "checks": checks}


def render(report):
    from om.location import display_name

    judged = ", ".join(display_name(c) for c in report["clients"]) or "no client"
    stores = ", ".join(report["stores"]) or "none"
    lines = [f"om doctor: {report['status']} (for {judged}; store{'s' if len(report['stores']) > 1 else ''} {stores})"]
    width = max(len(c["check"]) for c in report["checks"])
    for c in report["checks"]:
        lines.append(f"{c['status']:<4}  {c['check']:<{width}}  {c['finding']}")
        if c["fix"]:
            lines.append(f"{'':<4}  {'':<{width}}  fix: {c['fix']}")
    lines.append(f"run again: {report['rerun']}")
    return "\n".join(lines) + "\n"
