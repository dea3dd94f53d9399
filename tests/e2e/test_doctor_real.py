"""`om doctor` on installations the real Codex CLI made and ran (each pinned version): every
check a user relies on is ok after one real turn, and a plugin update that makes Codex
skip the hooks is a failure doctor reports, not an ok."""

import json
import shlex

import pytest

import doctor_run
from codex_harness import codex_bin, export_marketplace, marketplace  # noqa: F401 (fixtures)

pytestmark = pytest.mark.e2e

CAPTURED = ("capture.SessionStart", "capture.UserPromptSubmit", "capture.PostToolUse", "capture.Stop")


def by_name(report):
    return {c["check"]: c for c in report["checks"]}


def test_after_one_real_codex_turn_doctor_reports_plugin_hooks_capture_and_mcp_ok(codex_bin, marketplace, tmp_path):
    from om.mcp.tools import listing

    (rc, events, err), report, text, home = doctor_run.run(codex_bin, marketplace, tmp_path / "codex")
    assert rc == 0, err[-2000:]
    assert "checks" in report, report
    status = by_name(report)
    for name in ("codex.plugin", "codex.hooks", "codex.trust", "codex.sandbox", "codex.mcp", "store.exists",
                 "store.integrity", "capture.Interrupt") + CAPTURED:
        assert status[name]["status"] == "ok", status[name]
    assert report["store"] == str(home.store)
    assert "reports all 5 om hooks trusted and enabled" in status["codex.trust"]["finding"]
    assert f"lists {len(listing())} tools" in status["codex.mcp"]["finding"]
    assert str(home.store) in status["codex.mcp"]["finding"]
    assert " ok in " in status["capture.Stop"]["finding"]
    assert "plugin-managed: the Codex plugin's copy in " in status["runtime.version"]["finding"]
    assert report["clients"] == ["codex"] and not [c for c in report["checks"] if c["check"].startswith("claude.")]
    assert "update channel stable" in status["runtime.version"]["finding"]
    assert report["status"] == "ok" and report["exit"] == 0, [c for c in report["checks"] if c["status"] != "ok"]
    assert text.startswith("om doctor: ok (for Codex; ") and "codex.mcp" in text
    assert text.splitlines()[-1] == f"run again: python3 {shlex.quote(str(home.plugin_root / 'bin' / 'om'))} doctor"


def test_a_plugin_update_with_changed_files_makes_doctor_fail_and_a_same_files_reinstall_keeps_trust(
        codex_bin, tmp_path):
    source = export_marketplace(tmp_path / "marketplace")
    seen = {}

    def update_twice(home):
        home.install_plugin()  # the same files again: Codex keeps the trust
        seen["unchanged"] = doctor_run.doctor(home)[0]
        receipts = sorted((home.store / "receipts").glob("*.json"))
        skill = next(source.rglob("SKILL.md"))
        skill.write_text(skill.read_text() + "\nOne more line.\n")
        home.install_plugin()  # changed files: Codex now reports every om hook modified
        seen["listed"] = {h["trustStatus"] for h in home.list_hooks() if h.get("pluginId") == "om@observational-memory"}
        before = {p.name: p.read_text() for p in receipts}
        rc, events, err = home.exec("Print doctor-sample with the shell")
        assert rc == 0, err[-2000:]
        seen["receipts_unchanged"] = before == {p.name: p.read_text() for p in receipts}

    (rc, events, err), report, text, home = doctor_run.run(codex_bin, source, tmp_path / "codex", then=update_twice)
    assert rc == 0, err[-2000:]
    unchanged = by_name(seen["unchanged"])
    assert unchanged["codex.trust"]["status"] == "ok", unchanged["codex.trust"]
    assert seen["listed"] == {"modified"}
    assert seen["receipts_unchanged"], "Codex ran the modified hooks"
    status = by_name(report)
    trust = status["codex.trust"]
    assert trust["status"] == "fail" and "(modified: Interrupt, PostToolUse, SessionStart, Stop, UserPromptSubmit)" \
        in trust["finding"], trust
    assert "/hooks" in trust["fix"]
    # One cause, one verdict: Codex's answer is the only word on trust (codex.hooks says only what
    # is registered), and the receipts, which could only repeat it, are not judged.
    assert status["codex.hooks"]["status"] == "ok"
    assert status["codex.hooks"]["finding"].startswith("hooks/codex.json registers SessionStart, ")
    assert status["capture"]["status"] == "skip" and "codex.trust" in status["capture"]["finding"]
    assert not set(CAPTURED) & set(status)
    # What the untrusted hooks missed is not a verdict on trust but its other remedy: the turn
    # run meanwhile is in Codex's transcript, and the fix is the ingest command that recovers it.
    missed = status["codex.transcripts"]
    assert missed["status"] == "warn" and "hold 1 turn(s)" in missed["finding"], missed
    assert shlex.split(missed["fix"])[-5:] == ["--store", str(home.store), "ingest", "--client", "codex"], missed
    assert [c["check"] for c in report["checks"] if c["status"] != "ok"] == ["codex.trust", "capture",
                                                                              "codex.transcripts"]
    assert report["status"] == "fail" and report["exit"] == 1, json.dumps(report)[:2000]
