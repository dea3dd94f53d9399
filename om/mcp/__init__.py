"""`om mcp`: the ledger as Model Context Protocol tools, served over stdio.

Codex starts MCP servers itself, outside the sandbox that confines the model's
shell, so these tools can write the plugin data folder where `om apply` run by
the model cannot. `server` speaks the protocol, `tools` maps tools onto the
same ledger calls as the CLI, `location` finds the store without `PLUGIN_*`.
"""


def serve(store, stdin, stdout, stderr=None):
    from om.mcp.server import serve as _serve

    return _serve(store, stdin, stdout, stderr)
