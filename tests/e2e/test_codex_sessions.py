"""Two Codex sessions in one workspace: the second is pointed at the first and carries its memory on.

Real Codex CLI 0.169.0, the plugin installed and trusted as a user would, a scripted mock model.
"""

import json
import shlex
import shutil
import tempfile

import pytest

from codex_harness import CodexHome, agent_messages, codex_bin, marketplace, om, thread_id  # noqa: F401 (fixtures)
from mock_model import MockModel, say, shell
from test_codex_plugin import CHECKPOINT_ENV, checkpointing_model, ledger, ledger_command_in

pytestmark = pytest.mark.e2e


@pytest.fixture
def short_codex(codex_bin, marketplace):
    """Like the `codex` fixture, in a short temporary directory: the pointer's bound counts the
    bytes of the store and runtime paths its commands spell out, and a deep test directory
    would leave room for fewer sessions than a real Codex home does."""
    made = []

    def make(script):
        model = MockModel(script).start()
        base = tempfile.mkdtemp(prefix="om")
        made.append((model, base))
        return CodexHome(codex_bin, base, marketplace, model)

    yield make
    for model, base in made:
        model.stop()
        shutil.rmtree(base, ignore_errors=True)
        assert not model.errors, model.errors

MARK = "om: earlier sessions of this project hold memory"
IMPORT = "Import one (only before this session's first checkpoint): "


def test_a_second_run_in_the_same_workspace_is_pointed_at_the_first_imports_it_and_primes_its_memory(short_codex):
    observation = "The first session printed marker-b1b2 with echo."
    first_run = checkpointing_model("echo marker-b1b2", observation)

    def script(request):
        pointed = [m for m in request.messages("developer") if MARK in m]
        if request.is_compaction or not pointed:
            return first_run(request)
        context = pointed[-1]
        done = [out for _, out in request.tool_outputs()]
        if not done:
            line = next(line for line in context.splitlines() if line.startswith(IMPORT))
            return shell(line[len(IMPORT):])
        if len(done) == 1:
            return shell(f"{ledger_command_in(context)} prime")
        return say("Carried the earlier memory on.")

    home = short_codex(script)
    home.setup()
    rc, events, err = home.exec("Print the marker with the shell", env=CHECKPOINT_ENV)
    assert rc == 0, err[-2000:]
    first = thread_id(events)
    assert [e["text"] for e in ledger(home, first, "view", "--all")] == [observation]

    rc, events, err = home.exec("Continue the earlier work")
    assert rc == 0, err[-2000:]
    second = thread_id(events)
    assert second != first
    assert agent_messages(events)[-1] == "Carried the earlier memory on."

    requests = [r for r in home.model.turn_requests() if any(MARK in m for m in r.messages("developer"))]
    (pointer,) = {m for m in requests[0].messages("developer") if MARK in m}
    assert f'- "{first}": last checkpoint 20' in pointer and "1 observation, 0 reflections" in pointer
    assert observation not in pointer  # a pointer, never the memory itself
    imported, primed = [out for _, out in requests[-1].tool_outputs()][-2:]
    assert f'"session":"{first}"' in imported.replace(" ", "")
    assert observation in primed and "# om prime" in primed

    status = ledger(home, second, "status")
    assert status["imported_from"]["session"] == first and status["active"]["observations"] == 1
    listing = json.loads(om(home.store, second, "sessions", "--json").stdout)
    rows = {r["session"]: r for r in listing["sessions"]}
    assert rows[first]["project"] == rows[second]["project"] == str(home.work.resolve())
    assert shlex.split(ledger_command_in(pointer))[-1] == second
