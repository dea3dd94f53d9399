"""The Claude Code adapter: translates Claude Code 2.1.332 hook events into ledger operations.

Nothing in the core depends on this package; it depends on the core and the
shared adapter layer (om.adapter) only.
"""
