"""A store's sessions seen together: the listing (by the project each works in, as
om.project records it), search across them, and the start-context pointer to earlier memory.

Invariant: nothing here writes another session's ledger except that session's
own derived search index (om.derived.fts, under the same locking as a search
of that session); the one write to a session's v1 tables is the project
record (om.project), made by that session's own adapter. No SQL here: ledgers are read and
written through om.ledger. Importing this package costs nothing: each module
is imported where it is used.
"""
