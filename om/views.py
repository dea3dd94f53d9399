"""The two memory texts, `view` and `prime`, as the CLI and the MCP server print them.

Invariant: one composition for both front ends (ledger reads in one snapshot,
then the pure renderers of om.render), so their outputs cannot drift apart.
"""

from om.render import render_prime, render_ranked


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
