"""The user's update channel: {"channel": "stable"|"rc"|"nightly"} in the config directory.

Invariant: a missing or unreadable file means stable; a written file is always valid.
"""

import json
import os

from om.errors import OmError
from om.selfupdate import locations
from om.selfupdate.version import CHANNELS


def path():
    return os.path.join(locations.config_dir(), "channel.json")


def read():
    try:
        with open(path(), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return "stable"
    value = data.get("channel") if isinstance(data, dict) else None
    return value if value in CHANNELS else "stable"


def write(channel):
    from om.store import write_atomically

    if channel not in CHANNELS:
        raise OmError(f"om: unknown channel {channel!r}")
    os.makedirs(locations.config_dir(), exist_ok=True)
    write_atomically(path(), (json.dumps({"channel": channel}) + "\n").encode("utf-8"))
