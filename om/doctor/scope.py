"""What one doctor run judges: the client this copy runs for, the clients the user has, their stores.

Invariants:
- The client a runtime runs for is told by where it is (om.mcp.location): a copy in a
  client's plugin cache runs for that client, with that cache's home (so a copy run by
  its path is judged against the home it sits in, whatever the shell's CODEX_HOME).
- A client is judged when this copy runs for it or when om is set up in it (its plugin,
  or for Claude Code the settings hooks), as each client's module answers
  (`presence`); a client the user has no om in is not judged at all.
- Every store is the one om.location names for that client (or the settings hooks'
  `--store`), plus the store doctor was given; each is listed once.
- Read-only: building the scope reads files and creates nothing.
"""

import os

from om import STORE_ENV
from om.location import CLIENTS, client_home, display_name, plugin_data_dir


class Client:
    """One client doctor judges.

    home, data (the plugin's data folder), store (where its hooks write), installed (om
    is set up in it), plugin (its hooks are the plugin's, run by the plugin's launcher,
    rather than settings hooks), blocked (the check that keeps its hooks from running,
    set by the client's checks).
    """

    def __init__(self, name, home, store, installed, plugin):
        self.name, self.home, self.store, self.installed, self.plugin = name, home, store, installed, plugin
        self.data = plugin_data_dir(name, home)
        self.blocked = None

    @property
    def title(self):
        return display_name(self.name)


class Scope:
    """run_for (a client name or None), clients (judged, run_for first), explicit ((store, from) or None),
    stores ([(path, label)] to check), run_as and rerun (how to run doctor again)."""

    def __init__(self, run_for, clients, explicit, run_as, rerun):
        self.run_for, self.clients, self.explicit = run_for, clients, explicit
        self.run_as, self.rerun = run_as, rerun
        self.stores = []
        seen = set()
        candidates = ([(explicit[0], explicit[1])] if explicit else []) + [(c.store, c.title) for c in clients]
        for path, label in candidates:
            real = os.path.realpath(path)
            if real not in seen:
                seen.add(real)
                self.stores.append((real, label))

    def client(self, name):
        return next((c for c in self.clients if c.name == name), None)

    def store_of(self, client):
        return os.path.realpath(client.store)


def run_for():
    """(client, its home) this runtime is the installed plugin copy of, else (None, None)."""
    from om.mcp.location import client_of_home, plugin_root_of
    from om.selfupdate.locations import runtime_root

    found = plugin_root_of(runtime_root())
    if not found:
        return None, None
    return client_of_home(found[0]), found[0]


def build(store=None):
    """The scope of `om doctor [--store STORE]` ($OBSERVATIONAL_MEMORY_STORE when STORE is not given)."""
    from om.claude import doctor as claude
    from om.codex import doctor as codex
    from om.doctor.findings import quote
    from om.invocation import runtime_command

    explicit = None
    if store:
        explicit = (os.path.abspath(os.path.expanduser(store)), "--store")
    elif os.environ.get(STORE_ENV):
        explicit = (os.path.abspath(os.path.expanduser(os.environ[STORE_ENV])), STORE_ENV)
    presence = {"codex": codex.presence, "claude": claude.presence}
    own, own_home = run_for()
    clients = []
    for name in sorted(CLIENTS, key=lambda n: n != own):
        home = own_home if name == own else client_home(name)
        found = presence[name](home)
        if found["installed"] or name == own:
            clients.append(Client(name, home, found["store"], found["installed"], found["plugin"] or name == own))
    run_as = runtime_command()
    rerun = f"{run_as} doctor" + (f" --store {quote(explicit[0])}" if explicit and explicit[1] == "--store" else "")
    return Scope(own, clients, explicit, run_as, rerun)
