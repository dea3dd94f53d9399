"""`om mcp`: the ledger as Model Context Protocol tools, served over stdio.

Codex and Claude Code start MCP servers themselves, outside the sandbox that
confines the model's shell, so these tools can write the store where `om apply`
run by the model cannot. `server` speaks the protocol, `tools` maps tools onto the
same ledger calls as the CLI, `location` finds the client's store without `PLUGIN_*`.
"""


def serve(store, stdin, stdout, stderr=None, client=None, plugin_data=None):
    from om.mcp.server import serve as _serve

    return _serve(store, stdin, stdout, stderr, client, plugin_data)
