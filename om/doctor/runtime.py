"""Doctor's runtime checks: which om runs, how it is updated, and which Python the hooks use.

Invariant: read-only; the answers about updates are the ones `om self update`
acts on (its managed marker and its channel file).
"""

import os
import shutil
import sys

from om import __version__
from om.doctor.findings import check, quote

SHIM_MARKERS = ("/shims/", "/.pyenv/", "/.asdf/", "/mise/", "/.rtx/")


def checks(store):
    return [version_check(), hook_python_check(store), path_check()]


def version_check():
    from om.selfupdate import channel as channels

    return check(
        "runtime.version",
        "ok",
        f"om {__version__} on Python {sys.version.split()[0]} ({sys.executable}), {_kind()},"
        f" update channel {channels.read()}",
    )


def _kind():
    from om.location import display_name
    from om.mcp.location import client_of_home, plugin_root_of
    from om.selfupdate.locations import runtime_root
    from om.selfupdate.ownership import managed_marker

    root = runtime_root()
    installed = plugin_root_of(root)
    if installed:
        client = display_name(client_of_home(installed[0]))
        return f"plugin-managed: the {client} plugin's copy in {root} (update the plugin to update it)"
    if _in_git_checkout(root):
        # The checkout carries the plugin's managed marker, but nothing installed it: git updates it.
        return f"a source checkout in {root} (update it with git pull)"
    if managed_marker() is not None:
        return "plugin-managed (update the plugin to update it)"
    return "standalone"


def _in_git_checkout(root):
    path = root
    for _ in range(3):
        if os.path.exists(os.path.join(path, ".git")):
            return True
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return False


def hook_python_check(store):
    recorded = os.path.join(store, ".om-python")
    fix_cmd = f"python3 -c 'import sys; print(sys.executable)' > {quote(recorded)}"
    try:
        with open(recorded, encoding="utf-8") as f:
            python = f.readline().strip()
    except OSError:
        python = ""
    if python:
        if not os.access(python, os.X_OK):
            return check("runtime.hook_python", "warn", f"hooks' recorded interpreter {python} is gone", fix_cmd)
        if is_shim(python):
            return check(
                "runtime.hook_python",
                "warn",
                f"hooks run Python through a version-manager shim ({python}), tens of ms per event",
                fix_cmd,
            )
        return check("runtime.hook_python", "ok", f"hooks run {python}")
    found = shutil.which("python3")
    if found is None:
        return check("runtime.hook_python", "fail", "no python3 on PATH: hooks cannot run", "install Python 3.9 or newer")
    if is_shim(found):
        return check(
            "runtime.hook_python",
            "warn",
            f"python3 on PATH is a version-manager shim ({found}); hooks pay its start-up until they record the real one",
            fix_cmd,
        )
    return check("runtime.hook_python", "ok", f"hooks will run {found} (not recorded yet)")


def is_shim(path):
    return any(m in path for m in SHIM_MARKERS) and "/versions/" not in path


def path_check():
    first = shutil.which("om")
    if first is None:
        return check("runtime.path", "ok", "no om on PATH; hooks call the runtime by absolute path")
    if _is_this_runtime(first):
        return check("runtime.path", "ok", f"om on PATH is this runtime ({first})")
    return check(
        "runtime.path",
        "warn",
        f"another om earlier on PATH ({first}) shadows this runtime (the observational-memory PyPI package installs one)",
        f"pip uninstall observational-memory  # or remove {quote(first)}, or put this runtime's directory first on PATH",
    )


def _is_this_runtime(path):
    real = os.path.realpath(path)
    if sys.argv and os.path.realpath(sys.argv[0]) == real:
        return True
    try:
        with open(real, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    if head.startswith(b"PK"):  # a zipapp: this project ships one
        return True
    return b"om.cli" in head and b"observational_memory" not in head
