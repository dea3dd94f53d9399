"""Which store the MCP server serves, found without any `PLUGIN_*` variable.

Codex starts a plugin's MCP server with only HOME, PATH and what `.mcp.json`
lists, and with its working directory set to the plugin's installed copy,
`CODEX_HOME/plugins/cache/<marketplace>/<plugin>/<version>/`. The data folder
Codex hands the plugin's hooks is `CODEX_HOME/plugins/data/<plugin>-<marketplace>/`
(version-free, so memory survives plugin updates). Invariant: the derived store
is exactly that folder, and a path is only accepted as a plugin root when it
sits at that depth under `plugins/cache` and holds `.codex-plugin/plugin.json`,
so a checkout that merely contains the word "cache" never picks a store.
"""

import os

from om import STORE_ENV


def plugin_data_dir(start):
    """The plugin data folder for a plugin root at or above `start`, else None."""
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
    return os.path.join(plugins_dir, "data", f"{plugin}-{marketplace}")


def find_store(explicit=None, environ=None, cwd=None, package_dir=None):
    """(store path, how it was found) or (None, why not).

    Order: an explicit `--store`, then $OBSERVATIONAL_MEMORY_STORE, then the
    plugin data folder of the installed plugin that holds the working directory
    or this package.
    """
    environ = os.environ if environ is None else environ
    if explicit:
        return explicit, "--store"
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
        found = plugin_data_dir(start)
        if found:
            return found, "plugin data folder"
    return None, (
        f"om: no store: pass --store, set {STORE_ENV}, or run the server from an installed"
        " Codex plugin (working directory under CODEX_HOME/plugins/cache/<marketplace>/<plugin>/<version>)"
    )
