"""The development cache as the tests find it: what scripts/dev-cache prints.

Invariant: one rule decides where development artefacts live (scripts/dev-cache);
scripts/test exports its answer as OM_DEV_CACHE, and a suite started some other way
asks the script. Nothing the tests make outside their temporary directories lives
anywhere else, never in the checkout (tests/tree_guard.py checks both).
"""

import functools
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@functools.lru_cache(maxsize=None)
def dev_cache():
    """The cache every checkout shares (CLI installs, bytecode, the e2e CODEX_HOMEs)."""
    named = os.environ.get("OM_DEV_CACHE")
    if named and os.path.isabs(named):
        return Path(named)
    return Path(_ask())


@functools.lru_cache(maxsize=None)
def checkout_cache():
    """This checkout's own part of the cache (its virtualenvs, build output, tool caches)."""
    return Path(_ask("--checkout"))


def _ask(*args):
    done = subprocess.run(["sh", str(ROOT / "scripts" / "dev-cache"), *args], capture_output=True, text=True,
                          timeout=30)
    if done.returncode != 0:
        raise RuntimeError(f"scripts/dev-cache {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()
