"""`om doctor` on an installation the real Codex CLI 0.169.0 made and ran: every check a user
relies on (plugin, hooks, capture receipts, MCP server) is ok after one real turn."""

import pytest

import doctor_run
from codex_harness import codex_bin, marketplace  # noqa: F401 (fixtures)

pytestmark = pytest.mark.e2e


def test_after_one_real_codex_turn_doctor_reports_plugin_hooks_capture_and_mcp_ok(codex_bin, marketplace, tmp_path):
    (rc, events, err), report, text, home = doctor_run.run(codex_bin, marketplace, tmp_path / "codex")
    assert rc == 0, err[-2000:]
    assert "checks" in report, report
    status = {c["check"]: c for c in report["checks"]}
    for name in ("codex.plugin", "codex.hooks", "codex.sandbox", "codex.mcp", "store.exists", "store.integrity",
                 "capture.SessionStart", "capture.UserPromptSubmit", "capture.PostToolUse", "capture.Stop"):
        assert status[name]["status"] == "ok", status[name]
    assert report["store"] == str(home.data_dir)
    from om.mcp.tools import catalogue

    assert f"lists {len(catalogue())} tools" in status["codex.mcp"]["finding"]
    assert str(home.data_dir) in status["codex.mcp"]["finding"]
    assert " ok in " in status["capture.Stop"]["finding"]
    assert "plugin-managed" in status["runtime.version"]["finding"]
    assert "update channel stable" in status["runtime.version"]["finding"]
    assert not [c for c in report["checks"] if c["status"] == "fail"]
    assert text.startswith("om doctor: ") and "codex.mcp" in text
