"""Where the standalone install, the user's settings and the caches live.

Invariant: every location can be overridden from the environment (OM_HOME,
OM_BIN_DIR, XDG_CONFIG_HOME, XDG_CACHE_HOME), so an install can be placed
anywhere and tests never touch the real home directory.
"""

import os

#: File that a plugin (or any other owner) puts beside the runtime to forbid self-update.
MANAGED_MARKER = ".observational-memory-managed"
#: The project's release repository; override with OM_UPDATE_REPO (mirrors, forks, tests).
DEFAULT_REPO = "om-memory/om"
DEFAULT_API_URL = "https://api.github.com"


def _home():
    return os.path.expanduser("~")


def _xdg(var, fallback):
    value = os.environ.get(var)
    if value and os.path.isabs(value):
        return value
    return os.path.join(_home(), *fallback)


def data_home():
    """OM_HOME: versions/, receipt.json and update.lock of the standalone install."""
    if os.environ.get("OM_HOME"):
        return os.path.abspath(os.environ["OM_HOME"])
    if os.name == "nt" and os.environ.get("LOCALAPPDATA"):
        return os.path.join(os.environ["LOCALAPPDATA"], "om")
    return os.path.join(_xdg("XDG_DATA_HOME", (".local", "share")), "om")


def bin_dir():
    """OM_BIN_DIR: where `om self install` puts the launcher (should be on PATH)."""
    if os.environ.get("OM_BIN_DIR"):
        return os.path.abspath(os.environ["OM_BIN_DIR"])
    return os.path.join(_home(), ".local", "bin")


def config_dir():
    return os.path.join(_xdg("XDG_CONFIG_HOME", (".config",)), "om")


def cache_dir():
    return os.path.join(_xdg("XDG_CACHE_HOME", (".cache",)), "om")


def runtime_root():
    """The sys.path entry that holds the running `om` package."""
    import om

    return os.path.dirname(os.path.dirname(os.path.abspath(om.__file__)))

