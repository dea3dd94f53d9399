"""Where the end-to-end tests put the CODEX_HOMEs they make: a folder Codex accepts one in.

Invariant: a CODEX_HOME of the tests lies under none of the folders Codex treats as
temporary or as the sandbox's own. Codex (0.169.0 and 0.171.0) refuses to create its helper
aliases, such as the `codex-linux-sandbox` a system bubblewrap executes, in a CODEX_HOME under
its temporary directory (`$TMPDIR`, else `/tmp`: "Refusing to create helper binaries under
temporary dir"); its workspace-write sandbox can write `/tmp` and `$TMPDIR` whatever
`$TMPDIR` is, so a store there would not be read-only to the model's shell as it is for a
user; and the sandbox mounts its own `/dev`, where a home in `/dev/shm` does not exist.

The first choice is the development cache (`<cache>/e2e/`, scripts/dev-cache). Where the
cache lies in one of those folders (HOME, XDG_CACHE_HOME or OM_DEV_CACHE under `/tmp`, as
in many containers and CI runners), the homes go in a folder made for the test process in
`/var/tmp` (on disk, kept over reboots, not a temporary directory to Codex), which
`remove_run_folder` removes with them. Nothing goes in `$HOME` or the checkout. When neither
place will do, `ChoiceError` says which variable to set, and so does `python3
tests/codexhome.py`, which scripts/test runs before anything else.
"""

import os
import sys
import tempfile
from pathlib import Path

#: Where a folder for one test process is made when the development cache will not do.
SYSTEM_FALLBACK = "/var/tmp"
#: The prefix of the per-process folders made in SYSTEM_FALLBACK.
RUN_PREFIX = "om-e2e-"

_made = []


class ChoiceError(RuntimeError):
    """No folder Codex accepts a CODEX_HOME in: the message names the variable to set."""


def refused_roots(environ=None):
    """The folders no CODEX_HOME may lie in (real paths): Codex's temporary directory, /tmp, /dev."""
    environ = os.environ if environ is None else environ
    roots = {"/tmp", "/dev"}
    if environ.get("TMPDIR"):
        roots.add(environ["TMPDIR"])
    roots.add(tempfile.gettempdir())
    return sorted({os.path.realpath(root) for root in roots})


def acceptable(folder, environ=None):
    """Whether a CODEX_HOME may lie in `folder` (which need not exist yet)."""
    real = os.path.realpath(folder)
    return not any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in refused_roots(environ))


def choice(cache, environ=None):
    """(folder, whether it is made per test process) for the CODEX_HOMEs, the development cache `cache` first."""
    preferred = Path(cache) / "e2e"
    if acceptable(preferred, environ):
        return preferred, False
    fallback = Path(SYSTEM_FALLBACK)
    if fallback.is_dir() and os.access(fallback, os.W_OK | os.X_OK) and acceptable(fallback / "x", environ):
        return fallback, True
    raise ChoiceError(
        f"the Codex end-to-end tests need a folder for CODEX_HOME outside {', '.join(refused_roots(environ))}"
        f" (Codex refuses one under its temporary directory), but the development cache {cache} is in one and"
        f" {SYSTEM_FALLBACK} is one too or cannot be written: set OM_DEV_CACHE to a folder outside them"
        f" (OM_DEV_CACHE=/path/to/om-dev scripts/test)")


def new_parent(cache):
    """The folder to make this process's CODEX_HOMEs in, made when needed."""
    folder, per_run = choice(cache)
    if not per_run:
        folder.mkdir(parents=True, exist_ok=True)
        return folder
    if not _made:
        _made.append(Path(tempfile.mkdtemp(prefix=RUN_PREFIX, dir=folder)))
    return _made[0]


def remove_run_folder():
    """Remove the per-process folder of SYSTEM_FALLBACK (after its homes), if one was made."""
    while _made:
        folder = _made.pop()
        try:
            folder.rmdir()
        except OSError:
            import shutil

            shutil.rmtree(folder, ignore_errors=True)


def main():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from devcache import dev_cache

    try:
        folder, per_run = choice(dev_cache())
    except ChoiceError as e:
        print(f"scripts/test: {e}", file=sys.stderr)
        return 64
    where = f"a folder made for each run in {folder}" if per_run else str(folder)
    print(f"scripts/test: the Codex end-to-end tests keep their CODEX_HOMEs in {where}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
