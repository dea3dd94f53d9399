"""Doctor's Codex MCP check: start the installed plugin's MCP server as Codex would and list its tools.

Invariant: besides `codex app-server`, the only process doctor starts for Codex; it is
only asked for its tool list (om.mcp.probe), and the server finds no store before a
tool call, so probing creates, moves and writes nothing.
"""

from om.doctor.findings import check


def mcp_check(root):
    """`root`: the installed plugin copy Codex starts the server from."""
    from om.location import store_for_plugin_data
    from om.mcp.location import plugin_root_of
    from om.mcp.probe import probe

    result = probe(root)
    finding = f"{result['finding']} (installed plugin {root})"
    if result["status"] == "ok":
        installed = plugin_root_of(result["cwd"]) if result["cwd"] else None
        serves = store_for_plugin_data("codex", installed[1]) if installed else None
        finding += f"; it serves {serves}" if serves else "; it finds no plugin data folder (pass --store)"
    return check("codex.mcp", result["status"], finding, result["fix"])
