"""A store's sessions seen together: the listing (by the project each works in, as
om.project records it), search across them, and the start-context pointer to earlier memory.

Invariant: nothing here writes another session's ledger except that session's
own derived search index (om.derived.fts, under the same locking as a search
of that session alone); the one write to a session's v1 tables is the project
record (om.project), made by that session's own adapter. What the store-wide
reads learn is kept in the store index beside the sessions (om.sessions.index,
om.sessions.searchindex; derived, disposable), and cross-session search ranks
the store from it at once (om.sessions.storerank). No SQL here: ledgers are read
and written through om.ledger and om.search, the store index through
om.derived.store_index and om.derived.store_index.docs.
Importing this package costs nothing: each module is imported where it is used.
"""
