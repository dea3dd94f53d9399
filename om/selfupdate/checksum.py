"""SHA-256 of a file, as release manifests and pins record it (lowercase hex).

Invariant: this module imports only the standard library and no `om` module, so
build/zipapp.py can run it from the source tree (runpy) without importing the
package it is building, and both sides checksum artifacts with the same code.
"""

import hashlib


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 16), b""):
            h.update(block)
    return h.hexdigest()
