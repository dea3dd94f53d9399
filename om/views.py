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
    ledger.refresh_view_order()
    with ledger.reading():
        next_fitting, total = ledger.view_oracle()
        return render_prime(ledger.status(), ledger.store, next_fitting, total)
