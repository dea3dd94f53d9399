"""om: observational memory for coding agents.

The package is import-light on purpose: hooks import `om` on every client event,
so nothing here may pull in more than the standard library's cheapest modules.
"""

__version__ = "0.1.0"

#: CLI contract version this runtime speaks (``check-compatibility --protocol``).
PROTOCOL_VERSION = 1
#: On-disk ledger schema version (meta key ``version``).
LEDGER_SCHEMA = 1
#: Environment variable naming the store directory when --store is not given.
STORE_ENV = "OBSERVATIONAL_MEMORY_STORE"
#: Clients with an adapter in this runtime.
CLIENTS = ("codex", "claude")
