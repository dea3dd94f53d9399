"""Compatibility name of the derived full-text index, which lives in om.derived.fts.

Invariant: nothing is defined here; every name is om.derived.fts's own.
"""

from om.derived.fts import *  # noqa: F401,F403
from om.derived.fts import _CJK, _register, _write  # noqa: F401
