"""`om doctor`: prove that memory capture works, or say exactly what to fix.

Invariants:
- Doctor opens ledgers read-only and never creates, repairs or trusts anything (it
  removes only staging folders no live process owns, as fork and import do); every
  finding that is not ok carries the exact command or edit that fixes it, written so
  that it runs as shown (om.doctor.findings).
- The report's status is the worst of its checks; only "fail" makes the exit status 1.
- One module per area, run in this order: runtime (om.doctor.runtime), store
  (om.doctor.store), the Codex installation (om.codex.doctor: plugin, hooks,
  Codex's own trust verdict, sandbox), the MCP server (om.doctor.mcp), and the
  capture receipts (om.doctor.capture), which are read in the light of the others,
  then whether the clients' newest transcripts hold turns the ledgers lack
  (om.doctor.ingest).
- Which store a client's hooks write is `client_store`'s answer, and only its.
"""

import os

from om import CLIENTS, STORE_ENV, __version__
from om.doctor import capture, ingest, runtime
from om.doctor import store as store_checks
from om.doctor.findings import quote, worst
from om.invocation import runtime_command


def diagnose(store=None):
    """Run every check; returns {"status", "version", "store", "store_from", "run_as", "rerun", "checks": [...]}.

    run_as: how a shell runs this runtime; rerun: the command that runs this same check again."""
    from om.codex import doctor as codex

    source = "--store"
    if not store:
        store, source = os.environ.get(STORE_ENV), STORE_ENV
    if not store:
        store, source = client_store("codex"), "Codex plugin data"
    store = os.path.realpath(os.path.abspath(os.path.expanduser(store)))
    home = codex.codex_home(store)
    checks = runtime.checks(store)
    checks += store_checks.checks(store, source)
    found, installation = codex.checks(home, store)
    checks += found
    from om.doctor.mcp import mcp_check

    checks.append(mcp_check(installation["root"] if installation else None, codex.INSTALL))
    blocked = any(c["check"] in ("codex.plugin", "codex.hooks", "codex.trust") and c["status"] == "fail" for c in checks)
    run_as = runtime_command()
    rerun = f"{run_as} doctor" + (f" --store {quote(store)}" if source == "--store" else "")
    context = {"store_is_dir": os.path.isdir(store), "store_exists": os.path.exists(store), "hooks_blocked": blocked,
               "rerun": rerun}
    checks += capture.checks(store, codex.EVENTS, installation, context)
    from om.claude.doctor import checks as claude_checks

    # Claude Code keeps its own store (its plugin data folder) unless one was named.
    checks += claude_checks(None if source == "Codex plugin data" else store, rerun=rerun)
    checks += ingest.checks({client: client_store(client, store, source) for client in CLIENTS})
    return {"status": worst(checks), "version": __version__, "store": store, "store_from": source,
            "run_as": run_as, "rerun": rerun, "checks": checks}


def client_store(client, store=None, source=None):
    """The store `client`'s hooks write: the one doctor was pointed at, else the client's plugin data folder."""
    if store and source in ("--store", STORE_ENV):
        return store
    if client == "claude":
        from om.claude.doctor import plugin_data_dir

        return plugin_data_dir()
    from om.codex import doctor as codex

    return codex.plugin_data_dir(codex.codex_home())


def render(report):
    lines = [f"om doctor: {report['status']} (store {report['store']}, from {report['store_from']})"]
    width = max(len(c["check"]) for c in report["checks"])
    for c in report["checks"]:
        lines.append(f"{c['status']:<4}  {c['check']:<{width}}  {c['finding']}")
        if c["fix"]:
            lines.append(f"{'':<4}  {'':<{width}}  fix: {c['fix']}")
    lines.append(f"run again: {report['rerun']}")
    return "\n".join(lines) + "\n"
