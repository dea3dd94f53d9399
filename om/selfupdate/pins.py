"""plugin-pins.json: the exact release a plugin ships, read by plugin launchers.

Written only by the release tooling (release/pin_plugin.py, also run by
release/publish.py --pin), next to the asset it names. Schema version 1:

    {"schema_version": 1,
     "pin": null | {"version": "1.2.3", "tag": "v1.2.3", "protocol": 1,
                    "asset": "om-1.2.3.pyz", "sha256": "<64 hex>", "size": 12345,
                    "repo": "owner/name"}}

Invariant: `load`/`validate` return a pin only when every field is present, typed and
consistent (tag = "v" + version, asset = om-<version>.pyz, version in the release
grammar); anything else raises ValueError naming the field. Standard library only, so
a plugin launcher can vendor or import this module alone.
"""

import json
import re

SCHEMA_VERSION = 1
_FIELDS = ("version", "tag", "protocol", "asset", "sha256", "size", "repo")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*")


def validate(data):
    """Return the pin dict (or None when unpinned) of a parsed pins document."""
    from om.selfupdate.version import try_parse

    if not isinstance(data, dict):
        raise ValueError("plugin pins: the document must be a JSON object")
    if set(data) != {"schema_version", "pin"}:
        raise ValueError(f"plugin pins: expected keys schema_version and pin, got {sorted(data)}")
    if data["schema_version"] != SCHEMA_VERSION or isinstance(data["schema_version"], bool):
        raise ValueError(f"plugin pins: unsupported schema_version {data['schema_version']!r}")
    pin = data["pin"]
    if pin is None:
        return None
    if not isinstance(pin, dict) or set(pin) != set(_FIELDS):
        raise ValueError(f"plugin pins: pin must have exactly the fields {', '.join(_FIELDS)}")
    version = pin["version"]
    if not isinstance(version, str) or try_parse(version) is None or version.startswith("v"):
        raise ValueError(f"plugin pins: version {version!r} is not a release version")
    if pin["tag"] != "v" + version:
        raise ValueError(f"plugin pins: tag {pin['tag']!r} does not match version {version}")
    if pin["asset"] != f"om-{version}.pyz":
        raise ValueError(f"plugin pins: asset {pin['asset']!r} does not match version {version}")
    if not isinstance(pin["protocol"], int) or isinstance(pin["protocol"], bool) or pin["protocol"] < 1:
        raise ValueError("plugin pins: protocol must be a positive integer")
    if not isinstance(pin["sha256"], str) or not _HEX64.fullmatch(pin["sha256"]):
        raise ValueError("plugin pins: sha256 must be 64 lowercase hex digits")
    if not isinstance(pin["size"], int) or isinstance(pin["size"], bool) or pin["size"] <= 0:
        raise ValueError("plugin pins: size must be a positive integer")
    if not isinstance(pin["repo"], str) or not _REPO.fullmatch(pin["repo"]):
        raise ValueError("plugin pins: repo must be OWNER/NAME")
    return dict(pin)


def load(path):
    with open(path, encoding="utf-8") as f:
        try:
            data = json.load(f)
        except ValueError as e:
            raise ValueError(f"plugin pins: {path} is not JSON: {e}") from None
    return validate(data)


def dumps(pin):
    """The canonical text of a pins document (validated first)."""
    doc = {"schema_version": SCHEMA_VERSION, "pin": pin}
    validate(doc)
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"
