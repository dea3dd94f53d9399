"""A client's differences from the shared adapter, as data.

Invariant: a `Profile` holds no state and reads nothing but the event it is
given; the shared operations never branch on a client's name, only on what the
profile says. Adding a client means adding a profile and an event table.
"""


class Profile:
    """How one client names things and how it wants to be answered.

    name              the `--client` value, also the receipts' client
    turn_field        payload field naming the current turn (Codex `turn_id`,
                      Claude Code `prompt_id`: one per user prompt, the same on
                      the turn's tool and Stop events)
    state_prefix      prefix of the adapter's own meta keys (`codex_`, `claude_`)
    stop_turn_key     meta key remembering the turn that got a continuation
    shell_tools       tool names whose `tool_input` carries a shell command
    own_mcp_prefixes  tool-name prefixes of om's own MCP tools in this client
    mcp_note          why the MCP tools are preferred with this client
    """

    def __init__(self, name, turn_field, state_prefix, stop_turn_key, shell_tools, own_mcp_prefixes, mcp_note):
        self.name = name
        self.turn_field = turn_field
        self.state_prefix = state_prefix
        self.stop_turn_key = stop_turn_key
        self.shell_tools = shell_tools
        self.own_mcp_prefixes = own_mcp_prefixes
        self.mcp_note = mcp_note

    def turn(self, event):
        value = event.get(self.turn_field)
        return value if isinstance(value, str) else ""

    def continuation(self, reason):
        """The Stop output that continues the turn once with `reason`."""
        raise NotImplementedError

    def is_own_mcp_tool(self, tool):
        return isinstance(tool, str) and tool.startswith(self.own_mcp_prefixes)
