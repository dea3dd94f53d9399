"""The suite leaves the checkout and the real home folder as it found them.

Invariant: before the first test starts, the controlling pytest process lists every
path in the checkout (but `.git`) and in `$HOME` (but the development cache, where the
suite keeps its artefacts on purpose: tests/devcache.py); after the last test it lists
them again, and a path that appeared, disappeared or changed fails the run, named. The
checkout is the plugin root both clients install, so whatever a test leaves there would
ship; the home folder is the user's. Workers of pytest-xdist do not list anything: the
controller's two listings bracket all of them.
"""

import os

import pytest

from devcache import ROOT, dev_cache

#: How many paths of each kind the failure lists (the count is always given).
SHOWN = 20


def listing(top, skip=()):
    """{path: (type, size, mtime_ns)} for everything under `top` but the `skip` paths (no links followed)."""
    found, stack = {}, [str(top)]
    while stack:
        folder = stack.pop()
        try:
            entries = os.scandir(folder)
        except OSError:
            continue
        with entries:
            for entry in entries:
                if entry.path in skip:
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    found[entry.path] = ("dir", 0, 0)  # a folder changes when its entries do: they are listed
                    stack.append(entry.path)
                else:
                    kind = "link" if entry.is_symlink() else "file"
                    found[entry.path] = (kind, st.st_size, st.st_mtime_ns)
    return found


def changes(before, after):
    """(appeared, disappeared, changed): sorted paths."""
    appeared = sorted(set(after) - set(before))
    disappeared = sorted(set(before) - set(after))
    changed = sorted(p for p in set(before) & set(after) if before[p] != after[p])
    return appeared, disappeared, changed


def watched_places():
    """{name: (folder, paths left out)}: the checkout but .git, and $HOME but the development cache."""
    places = {"the checkout": (str(ROOT), {str(ROOT / ".git")})}
    home = os.environ.get("HOME")
    if home and os.path.isdir(home) and os.path.realpath(home) != str(ROOT):
        cache = dev_cache()
        places["$HOME"] = (home, {str(cache), os.path.realpath(cache)})
    return places


class TreeGuard:
    def __init__(self, places):
        self.places = places
        self.before = {name: listing(top, skip) for name, (top, skip) in places.items()}

    def report(self):
        """One line per kind of change found since the first listing."""
        lines = []
        for name, (top, skip) in self.places.items():
            appeared, disappeared, changed = changes(self.before[name], listing(top, skip))
            for what, paths in (("appeared", appeared), ("disappeared", disappeared), ("changed", changed)):
                if paths:
                    shown = ", ".join(os.path.relpath(p, top) for p in paths[:SHOWN])
                    more = f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else ""
                    lines.append(f"{len(paths)} path(s) {what} in {name} ({top}): {shown}{more}")
        return lines

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session):
        report = self.report()
        if report:
            writer = session.config.pluginmanager.get_plugin("terminalreporter")
            text = "the suite must leave the checkout and $HOME as it found them:\n  " + "\n  ".join(report)
            if writer is not None:
                writer.write_sep("=", "tree guard", red=True)
                writer.line(text)
            else:
                print(text)
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def install(config):
    """Register the guard in the controlling process (not in pytest-xdist workers)."""
    if hasattr(config, "workerinput"):
        return
    config.pluginmanager.register(TreeGuard(watched_places()), "om-tree-guard")

