"""Doctor's MCP check: start the plugin's MCP server as Codex would and list its tools.

Invariant: the only process doctor starts besides `codex app-server`; it is
only asked for its tool list (om.mcp.probe), so probing never writes a store.
"""

import os

from om.doctor.findings import check


def mcp_check(root, install):
    """`root`: the installed plugin copy, or None to use this runtime's own plugin tree."""
    where = "installed plugin"
    if root is None:
        own = _own_plugin_tree()
        if own is None:
            return check(
                "codex.mcp",
                "warn",
                "no plugin copy to start the MCP server from (not installed, and this runtime is not a plugin tree)",
                install,
            )
        root, where = own, "this runtime's plugin tree"
    from om.location import store_for_plugin_data
    from om.mcp.location import plugin_root_of
    from om.mcp.probe import probe

    result = probe(root)
    finding = f"{result['finding']} ({where} {root})"
    if result["status"] == "ok":
        installed = plugin_root_of(result["cwd"]) if result["cwd"] else None
        serves = store_for_plugin_data("codex", installed[1]) if installed else None
        finding += f"; it serves {serves}" if serves else "; it finds no plugin data folder (pass --store)"
    return check("codex.mcp", result["status"], finding, result["fix"])


def _own_plugin_tree():
    from om.selfupdate.locations import runtime_root

    own = runtime_root()
    return own if os.path.isfile(os.path.join(own, ".codex-plugin", "plugin.json")) else None
