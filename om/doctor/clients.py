"""Doctor's one line for a user with om in no client: a standalone om and no plugin.

Invariant: it speaks only when no client is judged (om.doctor.scope); then it is the
only finding about clients, with the commands that install the plugin into each.
"""

from om.doctor.findings import check, install_command
from om.location import CLIENTS, client_home, display_name


def checks(scope):
    if scope.clients:
        return []
    where = " or ".join(f"{display_name(c)} ({client_home(c)})" for c in CLIENTS)
    return [check("clients", "warn",
                  f"om is set up in no client: no om plugin in {where}, no om hooks in Claude Code's settings;"
                  " nothing is captured automatically",
                  f"{install_command('codex')}  # or, for Claude Code: {install_command('claude')}")]
