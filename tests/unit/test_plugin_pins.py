"""plugin-pins.json: the checked-in file and the stdlib validator plugin launchers use."""

import json

import pytest

from conftest import ROOT
from om.selfupdate import pins

GOOD = {
    "version": "1.2.0-rc.1", "tag": "v1.2.0-rc.1", "protocol": 1, "asset": "om-1.2.0-rc.1.pyz",
    "sha256": "a" * 64, "size": 1234, "repo": "om-memory/om",
}


def test_the_checked_in_pins_file_is_valid():
    data = json.loads((ROOT / "plugin-pins.json").read_text())
    assert data["schema_version"] == pins.SCHEMA_VERSION
    pins.load(ROOT / "plugin-pins.json")  # raises when invalid


def test_a_complete_pin_round_trips_through_dumps_and_load(tmp_path):
    path = tmp_path / "pins.json"
    path.write_text(pins.dumps(GOOD))
    assert pins.load(path) == GOOD


@pytest.mark.parametrize("field,value", [
    ("version", "1.2"), ("version", "v1.2.0"), ("tag", "v1.2.1"), ("asset", "om.pyz"),
    ("protocol", 0), ("protocol", True), ("protocol", "1"), ("sha256", "A" * 64), ("sha256", "a" * 63),
    ("size", 0), ("size", 1.5), ("repo", "om"), ("repo", "a/b/c"),
])
def test_an_inconsistent_or_mistyped_field_is_rejected(field, value):
    with pytest.raises(ValueError, match="plugin pins"):
        pins.validate({"schema_version": 1, "pin": dict(GOOD, **{field: value})})


@pytest.mark.parametrize("doc", [
    [], {"pin": None}, {"schema_version": 2, "pin": None}, {"schema_version": 1, "pin": None, "x": 1},
    {"schema_version": 1, "pin": {k: v for k, v in GOOD.items() if k != "size"}},
    {"schema_version": 1, "pin": dict(GOOD, extra=1)},
])
def test_a_malformed_document_is_rejected(doc):
    with pytest.raises(ValueError, match="plugin pins"):
        pins.validate(doc)
