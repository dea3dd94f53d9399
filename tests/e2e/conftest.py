"""End-to-end tests keep their per-test directories on disk, not in /dev/shm.

Codex's sandbox mounts a fresh /dev for the agent's shell, so a plugin copy, store or
workspace under /dev/shm (where tests/conftest.py puts throwaway stores) would not exist
inside it. Everything else about `tmp_path` is unchanged: a new empty directory per test.
"""

import re
import shutil
import tempfile
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def _disk_tmp_base(request):
    if not getattr(request.config, "_om_memory_tmp", None):
        yield None
        return
    base = Path(tempfile.mkdtemp(prefix="om-e2e-tests-"))
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def tmp_path(request, tmp_path_factory, _disk_tmp_base):
    name = re.sub(r"[\W]", "_", request.node.name)[:30]
    if _disk_tmp_base is None:
        return tmp_path_factory.mktemp(name, numbered=True)
    return Path(tempfile.mkdtemp(prefix=name + "-", dir=_disk_tmp_base))
