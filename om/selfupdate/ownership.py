"""Who owns the running `om`: a plugin, a package manager, a source checkout, or itself.

Invariant: deciding this reads only the local file system, never the network, so
a refusal to self-update happens before any request is made.
"""

import json
import os

from om import invocation
from om.errors import Conflict
from om.selfupdate import locations

PACKAGE_DIST = "om_memory"


def managed_marker():
    """Path of the managed marker beside the runtime, or None."""
    root = locations.runtime_root()
    places = [root, os.path.dirname(root)]
    entry = invocation.entry_path()
    if entry:
        places.append(os.path.dirname(entry))
        places.append(os.path.dirname(os.path.realpath(entry)))
    for place in places:
        marker = os.path.join(place, locations.MANAGED_MARKER)
        if os.path.lexists(marker):
            return marker
    return None


def package_installer():
    """(installer, hint) when a package manager installed the running package, else None."""
    root = locations.runtime_root()
    if os.path.basename(root) not in ("site-packages", "dist-packages"):
        return None
    try:
        names = os.listdir(root)
    except OSError:
        return None
    for name in sorted(names):
        if name.startswith(PACKAGE_DIST + "-") and name.endswith(".dist-info"):
            try:
                with open(os.path.join(root, name, "INSTALLER"), encoding="utf-8") as f:
                    installer = f.read().strip() or "pip"
            except OSError:
                installer = "pip"
            break
    else:
        return None
    parts = root.replace("\\", "/").split("/")
    if "pipx" in parts:
        return "pipx", "pipx upgrade om-memory"
    if installer == "uv":
        if "tools" in parts:
            return "uv", "uv tool upgrade om-memory"
        return "uv", "uv pip install --upgrade om-memory"
    return installer, f"{installer} install --upgrade om-memory"


def refuse_if_foreign():
    """Raise Conflict, naming how to update instead, unless self-update may touch this runtime."""
    marker = managed_marker()
    if marker:
        manager = "its plugin"
        try:
            with open(marker, encoding="utf-8") as f:
                data = json.load(f)
            if isinstance(data, dict) and isinstance(data.get("manager"), str):
                manager = data["manager"]
        except (OSError, ValueError):
            pass
        raise Conflict(
            f"om: this om is managed by {manager} (marker {marker}); "
            f"update it through {manager}, not `om self`"
        )
    pm = package_installer()
    if pm:
        raise Conflict(
            f"om: this om was installed by {pm[0]} ({locations.runtime_root()}); "
            f"update it with `{pm[1]}`"
        )


def standalone_home():
    """The data home of the standalone install this runtime runs from; Conflict otherwise.

    A standalone runtime lives at <home>/versions/<version>/lib/om and <home>/receipt.json
    names the installer; everything else (a bare pyz, a source checkout) must be installed
    first with `om self install`.
    """
    root = locations.runtime_root()
    home = os.path.dirname(os.path.dirname(os.path.dirname(root)))
    receipt = os.path.join(home, "receipt.json")
    if (
        os.path.basename(root) == "lib"
        and os.path.basename(os.path.dirname(os.path.dirname(root))) == "versions"
        and os.path.isfile(receipt)
    ):
        return home
    if os.path.exists(os.path.join(root, ".git")) or os.path.isfile(os.path.join(root, "pyproject.toml")):
        raise Conflict(f"om: this om runs from a source checkout ({root}); update it with git")
    raise Conflict(
        "om: this om is not a standalone install; run `python3 om-<version>.pyz self install` "
        "to set one up, then use `om self update`"
    )
