"""Which store the MCP server serves, found without any `PLUGIN_*` variable.

Claude Code starts the plugin's server with `--client claude --plugin-data
${CLAUDE_PLUGIN_DATA}` (its manifest can substitute that variable). Codex starts
it with only HOME, PATH and what `.mcp.json` lists, no substitution, and with its
working directory set to the plugin's installed copy,
`CODEX_HOME/plugins/cache/<marketplace>/<plugin>/<version>/`, so the server finds
the plugin data folder Codex hands the hooks, `CODEX_HOME/plugins/data/<plugin>-<marketplace>/`,
from where it runs. Either way the store is the client's own (om.location), the
very store that client's hooks use.

Invariant: a path is only accepted as a plugin root when it sits at that depth
under `plugins/cache` and holds `.codex-plugin/plugin.json`, so a checkout that
merely contains the word "cache" never picks a store.
"""

import os

from om import STORE_ENV
from om.errors import OmError


def plugin_root_of(start):
    """(client home, plugin data folder) of the installed plugin copy at or above `start`, else None."""
    path = os.path.realpath(os.path.abspath(start))
    while True:
        found = _data_dir_of_root(path)
        if found:
            return found
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def _data_dir_of_root(root):
    version_dir = root
    plugin_dir = os.path.dirname(version_dir)
    marketplace_dir = os.path.dirname(plugin_dir)
    cache_dir = os.path.dirname(marketplace_dir)
    plugins_dir = os.path.dirname(cache_dir)
    if os.path.basename(cache_dir) != "cache" or os.path.basename(plugins_dir) != "plugins":
        return None
    if not os.path.isfile(os.path.join(root, ".codex-plugin", "plugin.json")):
        return None
    plugin, marketplace = os.path.basename(plugin_dir), os.path.basename(marketplace_dir)
    if not plugin or not marketplace or not os.path.basename(version_dir):
        return None
    return os.path.dirname(plugins_dir), os.path.join(plugins_dir, "data", f"{plugin}-{marketplace}")


def client_of_home(home):
    """Which client a home holding an installed plugin copy belongs to (Claude Code lists its plugins)."""
    return "claude" if os.path.isfile(os.path.join(home, "plugins", "installed_plugins.json")) else "codex"


def find_store(explicit=None, environ=None, cwd=None, package_dir=None, client=None, plugin_data=None):
    """(store path, how it was found) or (None, why not).

    Order: an explicit `--store`; `--plugin-data` (with `--client`); then
    $OBSERVATIONAL_MEMORY_STORE; then the client's store for the installed plugin
    copy that holds the working directory or this package. A client store is
    made ready (om.location.open_client_store) before it is returned.
    """
    environ = os.environ if environ is None else environ
    if explicit:
        return explicit, "--store"
    if plugin_data:
        return _opened(client or "codex", plugin_data)
    if environ.get(STORE_ENV):
        return environ[STORE_ENV], STORE_ENV
    if package_dir is None:
        package_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    starts = []
    try:
        starts.append(cwd if cwd is not None else os.getcwd())
    except OSError:
        pass
    starts.append(package_dir)
    for start in starts:
        found = plugin_root_of(start)
        if found:
            home, data = found
            return _opened(client or client_of_home(home), data)
    return None, (
        f"om: no store: pass --store, set {STORE_ENV}, or run the server from an installed"
        " Codex plugin (working directory under CODEX_HOME/plugins/cache/<marketplace>/<plugin>/<version>)"
    )


def _opened(client, data):
    from om.location import open_client_store

    try:
        return open_client_store(client, data), "the client's store"
    except OmError as e:
        return None, str(e)
