"""Properties of `om ingest` over real transcripts and garbage (in process: tests/inprocess.py).

- The readers never raise on any content: random bytes, random JSON objects spelled with the
  transcripts' own keys, and real lines with a field removed or replaced, after a real first
  line or not. Every run exits 0 with one JSON report.
- Any prefix of a real transcript (a client still writing it, cut at any byte) ingests to a
  prefix of the hooks' sources, and ingesting the whole file afterwards gives exactly the
  hooks' sources: what a cut file misses is picked up later, and nothing twice.
- A second ingest of the same file captures nothing.
"""

import json
import random
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest_support import CLIENT_OF, hook_sources, stored_ids, transcript
from inprocess import run_om_in_process

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: The keys and values the readers look at, so generated objects reach their branches.
KEYS = ["type", "payload", "item", "content", "message", "role", "call_id", "output", "turn_id", "session_id", "id",
        "history_mode", "text", "arguments", "name", "namespace", "isSidechain", "promptId", "toolUseResult",
        "tool_use_id", "is_error", "stop_reason", "last_agent_message", "result", "Ok", "server", "tool", "input",
        "fragments", "cwd", "timestamp", "attachment", "sessionId", "source", "thread_source", "cli_version"]
WORDS = ["session_meta", "event_msg", "response_item", "item_completed", "UserMessage", "AgentMessage", "HookPrompt",
         "McpToolCall", "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output",
         "exec_command", "write_stdin", "spawn_agent", "apply_patch", "task_complete", "task_started", "user_message",
         "agent_message", "mcp_tool_call_end", "message", "developer", "user", "assistant", "tool_result", "tool_use",
         "text", "end_turn", "queue-operation", "attachment", "hook_additional_context", "legacy", "paginated",
         "Process exited with code 0\nOutput:\nx", "Process running with session ID 7\nOutput:\n", "<hook_prompt x>",
         "[om:pause] p", "[om:resume] r", "Ledger command: om --store S --session X"]

scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 10 ** 20), st.floats(allow_nan=False),
                    st.sampled_from(WORDS), st.text(max_size=20))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)),
                      max_leaves=25)
objects = st.dictionaries(st.sampled_from(KEYS), values, max_size=7)

REAL = {folder: transcript(folder, scenario, next(iter(hook_sources(folder, scenario))))
        for folder, scenario in (("codex-0.146.0", "tools"), ("codex-0.169.0", "bigout"), ("claude-2.1.332", "basic"))}


def mutated(rng, line):
    obj = json.loads(line)
    path = [obj]
    while isinstance(path[-1], dict) and path[-1] and rng.random() < 0.7:
        key = rng.choice(sorted(path[-1]))
        if not isinstance(path[-1][key], (dict, list)) or rng.random() < 0.3:
            break
        path.append(path[-1][key] if isinstance(path[-1][key], dict) else {"_": path[-1][key]})
    target = path[-1]
    if isinstance(target, dict) and target:
        key = rng.choice(sorted(target))
        if rng.random() < 0.5:
            del target[key]
        else:
            target[key] = rng.choice([None, 7, "x", [], {}, True, "Output:\n", {"type": "text"}])
    return json.dumps(obj).encode() + b"\n"


def ingest(store, client, path):
    r = run_om_in_process("--store", store, "ingest", "--client", client, path, "--json")
    assert r.returncode == 0, r
    return json.loads(r.stdout)


@SETTINGS
@given(folder=st.sampled_from(sorted(REAL)), header=st.booleans(), seed=st.integers(0, 2 ** 32),
       junk=st.lists(st.one_of(st.binary(max_size=80), objects.map(lambda o: json.dumps(o).encode()),
                               st.none()), max_size=25))
def test_no_content_makes_a_reader_raise(folder, header, seed, junk):
    rng = random.Random(seed)
    real = REAL[folder].read_bytes().splitlines(True)
    lines = [real[0]] if header else []
    for item in junk:
        lines.append(mutated(rng, rng.choice(real)) if item is None else item.replace(b"\n", b" ") + b"\n")
    work = Path(tempfile.mkdtemp())
    try:
        name = REAL[folder].name
        (work / name).write_bytes(b"".join(lines) + (b'{"cut' if rng.random() < 0.5 else b""))
        report = ingest(work / "store", CLIENT_OF[folder], work / name)
        assert {"sessions", "unreadable", "captured", "present"} <= set(report)
    finally:
        shutil.rmtree(work, ignore_errors=True)


FULL = {folder: (scenario, hook_sources(folder, scenario))
        for folder, scenario in (("codex-0.146.0", "basic"), ("codex-0.169.0", "continuation"),
                                 ("claude-2.1.332", "basic"))}


@SETTINGS
@given(folder=st.sampled_from(sorted(FULL)), fraction=st.floats(0, 1))
def test_any_prefix_ingests_to_a_prefix_of_the_hooks_sources_and_the_whole_file_completes_it(folder, fraction):
    scenario, expected = FULL[folder]
    (session, ids), = expected.items()
    path = transcript(folder, scenario, session)
    whole = path.read_bytes()
    work = Path(tempfile.mkdtemp())
    try:
        copy = work / path.name
        copy.write_bytes(whole[: int(len(whole) * fraction)])
        ingest(work / "store", CLIENT_OF[folder], copy)
        got = stored_ids(work / "store").get(session, [])
        assert got == ids[: len(got)]
        copy.write_bytes(whole)
        ingest(work / "store", CLIENT_OF[folder], copy)
        assert stored_ids(work / "store") == {session: ids}
        assert ingest(work / "store", CLIENT_OF[folder], copy)["captured"] == 0
    finally:
        shutil.rmtree(work, ignore_errors=True)
