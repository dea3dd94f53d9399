"""The start-context pointer adds at most 1,200 UTF-8 bytes whatever the store holds, and names at
most the three most recently active other sessions of the project that hold active memory."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from om.invocation import ledger_command, quote
from om.sessions.catalogue import recency
from om.sessions.pointer import MAX_BYTES, pointer_text

PROJECT_CHARS = st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\0")
STAMPS = [f"2026-{m:02d}-{d:02d}T{h:02d}:00:00Z" for m in (1, 6, 12) for d in (1, 15, 28) for h in (0, 12)]


@st.composite
def stores(draw):
    """Up to 1,000 session summaries (as the listing makes them), a few with adversarial ids."""
    project = "/" + draw(st.text(PROJECT_CHARS, min_size=1, max_size=120))
    store = "/" + draw(st.text(PROJECT_CHARS, min_size=1, max_size=120))
    current = draw(st.text(min_size=1, max_size=256))
    odd_ids = draw(st.lists(st.text(min_size=1, max_size=256), max_size=6))
    rnd = draw(st.randoms(use_true_random=False))
    count = draw(st.integers(0, 1000))
    rows, seen = [], set()
    for i in range(count):
        session = odd_ids[i] if i < len(odd_ids) else f"019a{rnd.getrandbits(48):012x}" + "-x" * rnd.randint(0, 40)
        if session in seen:
            continue
        seen.add(session)
        stamp = rnd.choice(STAMPS + [None])
        rows.append({
            "session": current if rnd.random() < 0.01 else session,
            "project": project if rnd.random() < 0.6 else rnd.choice([None, project + "/sub", "/elsewhere"]),
            "observations": rnd.choice([0, 0, 1, 7, 10**6]),
            "reflections": rnd.choice([0, 0, 2]),
            "last_checkpoint": stamp,
            "last_activity": stamp or rnd.choice(STAMPS),
        })
    return rows, current, store, project


def named_sessions(text):
    out = []
    for line in text.splitlines():
        if line.startswith("- "):
            quoted = line[2:line.rindex(": last checkpoint ")]
            out.append(json.loads(quoted))
    return out


@settings(max_examples=150, deadline=None)
@given(stores())
def test_the_pointer_is_bounded_and_names_only_the_most_recent_eligible_sessions(data):
    rows, current, store, project = data
    text = pointer_text(rows, current, store, project, lambda session: ledger_command(store, session))
    assert len(text.encode("utf-8")) <= MAX_BYTES
    eligible = sorted(
        (r for r in rows if r["session"] != current and r["project"] == project
         and (r["observations"] or r["reflections"]) and r["session"].isprintable()),
        key=recency,
    )
    if not eligible:
        assert text == ""
        return
    assert text.startswith("\n") and "--all-sessions" in text and "first checkpoint" in text
    named = named_sessions(text)
    assert len(named) <= 3
    assert named == [r["session"] for r in eligible[:len(named)]]
    if named:  # the import command carries the most recent one, and each is looked at with its own prime
        assert f"--from-session {quote(named[0])}\n" in text + "\n"
        assert f"{ledger_command(store, named[0])} prime" in text
