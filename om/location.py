"""Where each client's store lives: the one answer for the hooks, the MCP server and doctor.

A client's store is the folder `om` beside the client's own plugin folders, in the
client's home: `$CODEX_HOME/om` (default `~/.codex/om`) for Codex and
`$CLAUDE_CONFIG_DIR/om` (default `~/.claude/om`) for Claude Code. Not the plugin's
data folder (`<home>/plugins/data/om-observational-memory`, what the client hands
the hooks as PLUGIN_DATA or CLAUDE_PLUGIN_DATA): `claude plugin uninstall` deletes
that folder (Claude Code 2.1.332 keeps it only with --keep-data), so memory kept
there went with the plugin. The data folder keeps what belongs to one installation
of the plugin: the interpreter the hooks found (`.om-python`) and an installed
pinned runtime (`runtime/`).

Invariants:
- `client_store` is the only place that says where a client's store is: the hooks
  (through `open_client_store`), the MCP server (om.mcp.location), doctor and the
  CLI's messages all ask it, never a path of their own.
- From a plugin data folder the client's home is found by the folder's place alone
  (`<home>/plugins/data/<name>`), with no file system access; a data folder at any
  other place is its own store, as before.
- `open_client_store` returns a store that exists and is 0700 (it tightens a looser
  one it owns), after moving there what earlier versions kept in the data folder
  (om.relocation), or raises StoreError, never returning a store a session might be
  missing from.
- Import-light: the hook path runs it, so it uses om.fastpath, never `os`.
"""

from om.errors import StoreError
from om.fastpath import basename, dirname, expanduser, getenv, join, posix

CLIENTS = {
    # client: (the variable naming its home, the default home, its name for people)
    "codex": ("CODEX_HOME", "~/.codex", "Codex"),
    "claude": ("CLAUDE_CONFIG_DIR", "~/.claude", "Claude Code"),
}
#: The store's folder in a client's home.
STORE_NAME = "om"
#: The plugin's data folder name in both clients: <plugin>-<marketplace>.
PLUGIN_DATA_NAME = "om-observational-memory"


def client_home(client):
    """The client's home: its variable ($CODEX_HOME, $CLAUDE_CONFIG_DIR) when set, else its default."""
    variable, default, _ = CLIENTS[client]
    return expanduser(getenv(variable) or default)


def client_store(client, home=None):
    """The store of `client` whose home is `home` (default: the client's home now)."""
    return join(home if home is not None else client_home(client), STORE_NAME)


def plugin_data_dir(client, home=None):
    """The data folder the client gives the om plugin (it may not exist yet)."""
    return join(home if home is not None else client_home(client), "plugins", "data", PLUGIN_DATA_NAME)


def home_of_plugin_data(data):
    """The client home holding the plugin data folder `data` (`<home>/plugins/data/<name>`), else None."""
    data = data.rstrip("/")
    folder = dirname(data)
    if not basename(data) or basename(folder) != "data" or basename(dirname(folder)) != "plugins":
        return None
    return dirname(dirname(folder)) or None


def store_for_plugin_data(client, data):
    """The store of the client whose plugin data folder is `data`."""
    home = home_of_plugin_data(data)
    return data if home is None else client_store(client, home)


def display_name(client):
    return CLIENTS[client][2]


def open_client_store(client, data):
    """The store the client's hooks and MCP server use, given its plugin data folder `data`.

    Ready to use: it exists, is 0700, and holds every session the data folder held
    when om kept memory there (om.relocation moves them, once). StoreError when
    that cannot be made sure of now (another process is moving the store, a file
    system refuses the move): nothing is opened then, and the next call tries again.
    """
    store = store_for_plugin_data(client, data)
    if store == data:
        return data
    try:
        st = posix.stat(store)
    except OSError:
        st = None
    if st is not None and st.st_mode & 0o170000 != 0o040000:
        return store  # not a directory: the ledger layer refuses it, and a hook fails open saying so
    if st is not None:
        if st.st_mode & 0o077 and st.st_uid == posix.geteuid():
            try:
                posix.chmod(store, 0o700)  # a store is private, whatever made it
            except OSError:
                pass
        if not has_sessions(data):
            return store
    from om import relocation

    try:
        return relocation.move(data, store)
    except OSError as e:
        raise StoreError(f"om: cannot move the store from {data} to {store}: {e.strerror or e}") from None


def has_sessions(folder):
    """Whether `folder` holds a session directory (one listing; False when it cannot be read)."""
    try:
        return any(name.startswith("session-") for name in posix.listdir(folder))
    except OSError:
        return False
