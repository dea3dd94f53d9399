"""Standalone distribution: `om self update|channel|rollback|install`.

Invariant: nothing outside `om self ...` imports this package, except `om doctor`
for the channel and managed marker it reports; importing it imports nothing but
this docstring, so the modules below (which pull in
urllib, ssl, zipfile, hashlib) are paid for only by the command that needs them.
"""
