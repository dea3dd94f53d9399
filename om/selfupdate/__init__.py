"""Standalone distribution: `om self update|channel|rollback|install`.

Invariant: nothing outside `om self ...` imports this package; importing it
imports nothing but this docstring, so the modules below (which pull in
urllib, ssl, zipfile, hashlib) are paid for only by the command that needs them.
"""
