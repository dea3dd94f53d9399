"""What the CLI and the MCP server share: the two memory texts, and the ledger a write needs.

Invariants:
- One composition of `view` and `prime` for both front ends (ledger reads in
  one snapshot, then the pure renderers of om.render), so their outputs cannot
  drift apart.
- `existing` is the one way a command that writes to a session without
  beginning it (apply, pause, resume, fork's source) opens its ledger: only
  `capture` and the hooks begin a session, so a mistyped id is refused with
  the reads' line and creates nothing. (Import checks its source itself, in
  another store perhaps, with the same line.)
"""

from om.render import no_ledger_notice, render_prime, render_ranked


def view_text(ledger):
    ledger.refresh_view_order()
    with ledger.reading():
        next_fitting, total = ledger.view_oracle()
        return render_ranked(next_fitting, total)


def prime_text(ledger):
    """The session's prime, then its project's memory (om.project.block), all within VIEW_BUDGET bytes."""
    from om.render import VIEW_BUDGET

    project = _project_block(ledger, VIEW_BUDGET // 2)
    ledger.refresh_view_order()
    with ledger.reading():
        next_fitting, total = ledger.view_oracle()
        own = render_prime(ledger.status(), ledger.store, next_fitting, total, VIEW_BUDGET - len(project.encode()))
    return own + project


def _project_block(ledger, most):
    """The project block, or '' (no project memory, turned off, or unreadable: the session's prime comes first)."""
    if ledger.absent:
        return ""
    from om.errors import OmError
    from om.project import block
    from om.project.memory import block_for_session

    try:
        return block_for_session(ledger, min(block.budget(), most))
    except OmError:
        return ""


def existing(store, session):
    """The open ledger of `session`; NotFound (the reads' no-ledger line) when the store holds none.

    Nothing is created: no ledger, no session directory, no store.
    """
    from om.errors import NotFound
    from om.fastpath import isdir
    from om.ledger import Ledger

    ledger = Ledger.read(store, session)
    if ledger.absent:
        ledger.close()
        raise NotFound(no_ledger_notice(session, ledger.store, isdir(ledger.store)))
    return ledger
