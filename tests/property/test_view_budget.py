"""`view` never exceeds 12,000 UTF-8 bytes, whatever the memory holds."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import make_entry
from inprocess import run_om_in_process
from om.render import VIEW_BUDGET, list_oracle, render_prime, render_view

texts = st.text(min_size=1, max_size=2000).filter(lambda t: t.strip())
entries = st.lists(
    st.builds(
        lambda seq, text, importance, kind: make_entry(seq, text, importance, kind),
        st.integers(1, 10**9),
        texts,
        st.sampled_from(["low", "medium", "high", "critical"]),
        st.sampled_from(["observation", "reflection"]),
    ),
    max_size=60,
    unique_by=lambda e: e["seq"],
)


@settings(max_examples=300, deadline=None)
@given(entries)
def test_view_fits_the_budget_for_any_entries(items):
    out = render_view(items)
    assert len(out.encode("utf-8")) <= VIEW_BUDGET
    assert out.endswith("\n")
    shown = [line for line in out.splitlines() if line.startswith("- ")]
    assert f"{len(items) - len(shown)} of {len(items)}" in out or not items


@settings(max_examples=200, deadline=None)
@given(entries, st.text(max_size=256), st.integers(0, 10**6))
def test_prime_fits_the_budget_for_any_entries_and_session(items, session, pending):
    status = {
        "session": session,
        "through": 5,
        "paused": bool(pending % 2),
        "pending_sources": pending,
        "estimated_pending_tokens": pending * 7,
        "active": {"observations": len(items), "reflections": 0},
        "last_checkpoint_at": "2026-09-06T06:40:53Z",
    }
    out = render_prime(status, "/some/store", list_oracle(items), len(items))
    assert len(out.encode("utf-8")) <= VIEW_BUDGET


# The commands run in process (om.cli.main): the budget is a property of what they print.
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(texts, min_size=1, max_size=25))
def test_the_view_command_fits_the_budget_for_any_applied_memory(tmp_path_factory, memory):
    store = tmp_path_factory.mktemp("store")
    om = lambda *a, **kw: run_om_in_process("--store", store, "--session", "p", *a, **kw)
    sid = om("capture", input=json.dumps({"kind": "user", "text": "evidence", "key": ""})).json["source_id"]
    checkpoint = {"through": 1, "observations": [{"text": t, "source_ids": [sid]} for t in memory]}
    assert om("apply", input=json.dumps(checkpoint)).returncode == 0
    for command in ("view", "prime"):
        out = om(command).stdout
        assert 0 < len(out.encode("utf-8")) <= VIEW_BUDGET
