"""`<private>…</private>` in a user prompt never reaches the ledger (om's extension to v1).

Through both clients' hook commands with their real payload shapes, and `capture`: the
span becomes the marker before the id is hashed, so the id is the one of the text as stored.
"""

import hashlib
import json

import pytest

from hook_drivers import DRIVERS
from raw_bytes import files_holding

PRIVATE = "[PRIVATE]"
HIDDEN = "Marmot-5150-Sextant"


def v1_id(kind, key, text):
    value = json.dumps([kind, key, text], ensure_ascii=False, separators=(",", ":"))
    return "s-" + hashlib.sha256(value.encode("utf-8")).hexdigest()[:24]


@pytest.fixture(params=sorted(DRIVERS))
def hook(request, tmp_path):
    return DRIVERS[request.param](tmp_path / "store")


CASES = [
    (f"deploy with <private>{HIDDEN}</private> today", f"deploy with {PRIVATE} today"),
    (f"a <PRIVATE>{HIDDEN}</Private> b <private>x</private> c", f"a {PRIVATE} b {PRIVATE} c"),
    (f"nested <private>a <private>{HIDDEN}</private> b</private> end", f"nested {PRIVATE} end"),
    (f"never closed <private>{HIDDEN}\nand the rest", f"never closed {PRIVATE}"),
    (f"{HIDDEN} never opened</private> after", f"{PRIVATE} after"),
]


@pytest.mark.parametrize("prompt,stored", CASES)
def test_a_private_span_in_a_prompt_is_replaced_before_it_is_hashed_or_stored(hook, prompt, stored):
    hook(hook.prompt(prompt, turn="t-1"))
    (source,) = hook.sources()
    assert source["text"] == stored
    assert source["id"] == v1_id("user", "t-1", stored) == hook.meta("prompt_id")
    assert files_holding(hook.store, HIDDEN) == []


def test_a_resumed_prompt_with_a_private_span_is_captured_without_it(hook):
    hook(hook.prompt("[om:pause] stop for a bit", turn="t-1"))
    hook(hook.prompt(f"[om:resume] the key is <private>{HIDDEN}</private>", turn="t-2"))
    assert hook.texts() == [f"the key is {PRIVATE}"]


def test_a_private_span_in_a_tool_result_or_a_reply_is_evidence_like_any_text(hook):
    # The convention is the user's: only prompts are stripped.
    hook(hook.prompt("go", turn="t-1"))
    hook(hook.stop("<private>a reply</private>", turn="t-1"))
    assert hook.texts()[-1] == "<private>a reply</private>"


def test_capture_strips_a_users_private_span_and_keeps_other_kinds(om):
    r = om("capture", input=json.dumps({"kind": "user", "text": f"x <private>{HIDDEN}</private>", "key": "k"}))
    assert r.returncode == 0, r
    assert r.json["source_id"] == v1_id("user", "k", f"x {PRIVATE}")
    assert om("recall", r.json["source_id"]).json["sources"][0]["text"] == f"x {PRIVATE}"
    tool = om("capture", input=json.dumps({"kind": "tool", "text": "<private>y</private>", "key": "k"}))
    assert om("recall", tool.json["source_id"]).json["sources"][0]["text"] == "<private>y</private>"
    assert files_holding(om.store, HIDDEN) == []
