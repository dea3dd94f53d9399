"""`om ingest` meets `<private>` and `om forget`: a backfill never brings back what capture kept out or the user took out."""

import json

import pytest

from conftest import run_om
from ingest_support import FIXTURES, copy_scenario, ingest, stored
from raw_bytes import files_holding

SECRET = "hunter2-db-password"
#: One prompt of each client's `basic` fixture, and the turn (Codex) it was typed in.
PROMPTS = {"codex-0.169.0": ("codex", "CXPROMPT_ONE: say it with the shell"),
           "claude-2.1.332": ("claude", "CCPROMPT_ONE: echo and read, café ✓")}


def with_private_span(folder, tmp_path):
    """A copy of the `basic` scenario whose first prompt carries a private span, everywhere the transcript holds it."""
    copy = copy_scenario(folder, "basic", tmp_path)
    prompt = PROMPTS[folder][1]
    private = prompt + f" <private>the {SECRET} is here</private> thanks"
    for path in copy.rglob("*.jsonl"):
        text = path.read_text(encoding="utf-8")
        escaped = json.dumps(prompt, ensure_ascii=False)[1:-1]
        assert escaped in text or path.parent.name == "subagents"
        path.write_text(text.replace(escaped, json.dumps(private, ensure_ascii=False)[1:-1]), encoding="utf-8")
    return copy, private


def user_sources(store):
    return [(sid, text) for rows in stored(store).values() for _, sid, kind, text in rows if kind == "user"]


@pytest.mark.parametrize("folder", sorted(PROMPTS))
def test_a_private_span_in_a_transcripts_prompt_is_kept_out_exactly_as_the_hooks_keep_it_out(store, tmp_path, folder):
    client, _ = PROMPTS[folder]
    copy, private = with_private_span(folder, tmp_path)
    ingest(store, client, copy)
    assert files_holding(store, SECRET) == []
    (kept,) = [(sid, text) for sid, text in user_sources(store) if "CXPROMPT_ONE" in text or "CCPROMPT_ONE" in text]
    assert kept[1].endswith("[PRIVATE] thanks") and SECRET not in kept[1]
    # The id was hashed from the kept text (_key_of finds the key that gives it), and it is the
    # id the hooks give the same prompt: `capture` takes the one path every capture takes.
    (session,) = [s for s, rows in stored(store).items() if any(sid == kept[0] for _, sid, _, _ in rows)]
    again = run_om("--store", tmp_path / "other", "--session", session, "capture",
                   input=json.dumps({"kind": "user", "text": private, "key": _key_of(store, session, kept[0])}))
    assert again.json["source_id"] == kept[0]


def _key_of(store, session, source_id):
    """The key the ingest captured a source under: the one key whose capture gives its id again."""
    import hashlib

    (row,) = [r for r in stored(store)[session] if r[1] == source_id]
    for candidate in _candidate_keys(store, session):
        body = json.dumps([row[2], candidate, row[3]], ensure_ascii=False, separators=(",", ":"))
        if "s-" + hashlib.sha256(body.encode()).hexdigest()[:24] == source_id:
            return candidate
    raise AssertionError("no key gives the source's id")


def _candidate_keys(store, session):
    """Turn ids and prompt ids the fixture's transcripts name (the keys a prompt can be captured under)."""
    import re

    text = "".join(p.read_text(encoding="utf-8") for folder in PROMPTS for p in (FIXTURES / folder / "basic").rglob("*.jsonl"))
    return set(re.findall(r'"(?:turn_id|promptId|prompt_id)": ?"([^"]+)"', text))


@pytest.mark.parametrize("folder", sorted(PROMPTS))
def test_a_transcript_ingested_again_after_a_forget_adds_nothing_and_brings_no_text_back(store, tmp_path, folder):
    client, prompt = PROMPTS[folder]
    copy = copy_scenario(folder, "basic", tmp_path)
    first = ingest(store, client, copy)
    assert first["captured"] > 0 and files_holding(store, prompt)
    (session,) = {s["session"] for s in first["sessions"] if s.get("captured")}
    r = run_om("--store", store, "forget", "--session", session, "--text", prompt, "-y")
    assert r.returncode == 0, r
    assert files_holding(store, prompt) == []
    # The transcript is unchanged, and changed: either way no source comes back.
    again = ingest(store, client, copy)
    for path in copy.rglob("*.jsonl"):
        path.write_text(path.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    once_more = ingest(store, client, copy)
    assert again["captured"] == once_more["captured"] == 0
    assert files_holding(store, prompt) == []
    assert any("[FORGOTTEN]" in text for _, text in user_sources(store))
