"""The Codex adapter: translates Codex 0.169.0 hook events into ledger operations.

Nothing in the core depends on this package; it depends on the core only.
"""
