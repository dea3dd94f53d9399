"""Doctor's runtime checks: which om runs, how it is updated, and which Python the hooks use.

Invariants: read-only; the answers about updates are the ones `om self update`
acts on (its managed marker and its channel file); a plugin copy is named for the
client it runs for (om.doctor.scope).
"""

import os
import shutil
import sys

from om import __version__
from om.doctor.findings import check, quote

SHIM_MARKERS = ("/shims/", "/.pyenv/", "/.asdf/", "/mise/", "/.rtx/")


def checks(scope):
    found = [version_check(scope)]
    launched = [c for c in scope.clients if c.plugin]
    if launched:
        found.append(hook_python_check(launched))
        if found[-1]["status"] == "fail":
            for client in launched:
                client.blocked = client.blocked or "runtime.hook_python"
    found.append(path_check())
    return found


def version_check(scope):
    from om.selfupdate import channel as channels

    return check(
        "runtime.version",
        "ok",
        f"om {__version__} on Python {sys.version.split()[0]} ({sys.executable}), {_kind(scope)},"
        f" update channel {channels.read()}",
    )


def _kind(scope):
    from om.location import display_name
    from om.selfupdate.locations import runtime_root
    from om.selfupdate.ownership import managed_marker

    root = runtime_root()
    if scope.run_for:
        return (f"plugin-managed: the {display_name(scope.run_for)} plugin's copy in {root}"
                " (update the plugin to update it)")
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


def hook_python_check(clients):
    """The interpreter the plugin's launcher records in each client's data folder (`.om-python`)."""
    problems, fixes, using = [], [], []
    for client in clients:
        recorded = os.path.join(client.data, ".om-python")
        try:
            with open(recorded, encoding="utf-8") as f:
                python = f.readline().strip()
        except OSError:
            python = ""
        if not python:
            continue
        if not os.access(python, os.X_OK):
            problems.append(f"{client.title} hooks' recorded interpreter {python} is gone")
        elif is_shim(python):
            problems.append(f"{client.title} hooks run Python through a version-manager shim ({python}),"
                            " tens of ms per event")
        else:
            using.append(f"{client.title} hooks run {python}")
            continue
        # The folder exists (the record was read from it); the command writes the real interpreter.
        fixes.append(f"python3 -c 'import sys; print(sys.executable)' > {quote(recorded)}")
    if problems:
        return check("runtime.hook_python", "warn", "; ".join(problems), " && ".join(fixes))
    if len(using) == len(clients):
        return check("runtime.hook_python", "ok", "; ".join(using))
    found = shutil.which("python3")
    if found is None:
        return check("runtime.hook_python", "fail", "no python3 on PATH: hooks cannot run", "install Python 3.9 or newer")
    pending = "; ".join(using + ["hooks will run " + found + (
        " (a version-manager shim: the hooks record the interpreter behind it on their first run)"
        if is_shim(found) else " (not recorded yet)")])
    return check("runtime.hook_python", "ok", pending)


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
