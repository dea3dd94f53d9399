"""Receipts: atomic per-event records that never raise."""

import os

from om.receipts import path, read_all, record


def test_receipts_are_written_atomically_and_count_runs(tmp_path):
    assert record(str(tmp_path), "Stop", "ok", 10) is True
    assert record(str(tmp_path), "Stop", "failed", 20) is True
    r = read_all(str(tmp_path))["Stop"]
    assert r["runs"] == 2 and r["failures"] == 1 and r["recent_ms"] == [10.0, 20.0] and r["outcome"] == "failed"
    assert not [p for p in os.listdir(os.path.dirname(path(str(tmp_path), "Stop"))) if p.endswith(".tmp")]
    assert record(str(tmp_path / "missing" / "deeper"), "Stop", "ok", 1) is False
