"""The project memory across the real clients: what a session of one client promotes, a new session of the other
client, in another clone of the repository, starts with; a later session retires it and it is gone from the starts.

The real Codex CLI (each pinned version) and Claude Code 2.1.332, each with the plugin installed as a user installs
it, against scripted mock models whose moves are read from what the client showed them. The clients keep their
sessions in their own stores (CODEX_HOME/om, CLAUDE_CONFIG_DIR/om) under throwaway homes of their own; the project
memory lives in the one project home both are started with (OM_PROJECT_HOME). Both clients hand their environment
to the hook commands and to the agent's shell: a hook or a command that missed it would use the default project home
in that client's HOME, which these tests check stays unmade.
"""

import json
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from agent_moves import json_in, project_entry_ids, promoting_checkpoint
from claude_harness import claude, claude_bin, claude_marketplace  # noqa: F401 (fixtures)
from claude_mock import say as claude_say
from claude_mock import shell as claude_shell
from codex_harness import codex, codex_bin, marketplace, thread_id  # noqa: F401 (fixtures)
from conftest import run_om
from mock_model import say, shell
from test_claude_plugin import checkpointing_model as claude_checkpointing
from test_claude_plugin import start_context as claude_start_context
from test_codex_plugin import checkpointing_model as codex_checkpointing
from test_codex_plugin import ledger_command_in

pytestmark = pytest.mark.e2e

CHECKPOINT_ENV = {"OM_CHECKPOINT_TURNS": "1"}
GIT = ["git", "-c", "user.email=dev@example.com", "-c", "user.name=dev", "-c", "init.defaultBranch=main"]
#: What the start context says when the session's project memory holds active entries.
PROJECT_LINE = "Project memory: "
WORK = "Print the marker with the shell"
READ = "Pick the work up where the project left it"
RETIRE = "The marker fact no longer holds; retire it"
REASON = "The marker command changed; this fact no longer holds."


@pytest.fixture
def project_home(monkeypatch):
    """A project home of this test's own, on disk; the `om` commands of the test inherit it, the clients get it."""
    path = Path(tempfile.mkdtemp(prefix="om-projects-"))
    monkeypatch.setenv("OM_PROJECT_HOME", str(path))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def origin(tmp_path):
    """A repository with one commit, the origin both clones are made from."""
    path = tmp_path / "origin"
    path.mkdir()
    subprocess.run([*GIT, "init", "-q"], cwd=path, check=True, capture_output=True)
    (path / "README").write_text("shop\n")
    subprocess.run([*GIT, "add", "README"], cwd=path, check=True, capture_output=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "first"], cwd=path, check=True, capture_output=True)
    return path


def clone(origin, folder):
    """`folder` (an empty workspace of a client) made a clone of `origin`."""
    subprocess.run(["git", "clone", "-q", str(origin), str(folder)], check=True, capture_output=True)
    return folder


def client_env(project_home, **extra):
    # The harnesses start each client from the test's environment without any OM_ variable: the project
    # home is handed over explicitly, as a user's shell profile would export it.
    return dict(extra, OM_PROJECT_HOME=str(project_home))


def project(folder, *args):
    """`om project --project FOLDER ARGS` as JSON."""
    result = run_om("project", "--project", str(folder), *args)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def no_default_project_home(*homes):
    """No hook and no command of either client fell back to the project home of its own HOME."""
    return [str(h) for h in homes if (Path(h) / ".local" / "share" / "om-projects").exists()]


def asked(request_texts, prompt):
    return any(prompt in text for text in request_texts)


# -- the agent's moves ----------------------------------------------------------------------------------------------


def reading_moves(command, outputs, retire=False):
    """Load memory; then recall the first project entry prime listed (or retire it); then say what was done."""
    if not outputs:
        return "shell", f"{command} prime"
    if len(outputs) == 1:
        ids = project_entry_ids(outputs[0])
        if not ids:
            return "say", "No project memory is active."
        if retire:
            return "shell", f"{command} project retire {ids[0]} --reason {shlex.quote(REASON)}"
        return "shell", f"{command} recall {ids[0]}"
    return "say", "Retired it." if retire else "Read the project memory."


def codex_start_context(request):
    """The om SessionStart context Codex showed the model (a developer message), '' when none."""
    found = [m for m in request.messages("developer") if "Ledger command" in m]
    return found[-1] if found else ""


def codex_reader(request):
    context = codex_start_context(request)
    retire = asked(request.messages("user"), RETIRE)
    kind, move = reading_moves(ledger_command_in(context), [out for _, out in request.tool_outputs()], retire)
    return shell(move) if kind == "shell" else say(move)


def claude_reader(request):
    context = claude_start_context(request)
    retire = asked(request.texts(), RETIRE)
    kind, move = reading_moves(ledger_command_in(context), [out for _, out in request.tool_results()], retire)
    return claude_shell(move) if kind == "shell" else claude_say(move)


def codex_requests_of(home, prompt):
    return [r for r in home.model.turn_requests() if asked(r.messages("user"), prompt)]


def claude_requests_of(home, prompt):
    return [r for r in home.mock.requests if asked(r.texts(), prompt)]


def fact_line(entry_id, fact, client):
    """The line prime prints for an entry confirmed today by `client`."""
    return f'- {entry_id} observation importance=high confirmed today by {client}: "{fact}"'


# -- the tests ------------------------------------------------------------------------------------------------------


def test_codex_promotes_claude_code_in_another_clone_starts_with_it_and_a_later_session_retires_it(
        codex, claude, origin, project_home):
    fact = "The marker is printed with echo: marker-5d2a."
    promoting = codex_checkpointing("echo marker-5d2a", fact, checkpoint=promoting_checkpoint)
    codex_home = codex(lambda r: codex_reader(r) if asked(r.messages("user"), RETIRE) else promoting(r))
    codex_home.setup()
    first_clone = clone(origin, codex_home.work)
    claude_home = claude(claude_reader).setup()
    second_clone = clone(origin, claude_home.work)

    # 1. Codex, in the first clone: a checkpoint applied by the agent promotes its observation.
    rc, events, err = codex_home.exec(WORK, env=client_env(project_home, **CHECKPOINT_ENV))
    assert rc == 0, err[-2000:]
    codex_session = thread_id(events)
    applied = json_in(codex_home.model.turn_requests()[-1].tool_outputs()[-1][1])
    (promoted,) = applied["promoted"]
    key, entry_id = applied["project"], promoted["id"]
    assert project(first_clone, "--json")["project"] == project(second_clone, "--json")["project"] == key  # one project, two folders

    # 2. Claude Code, a new session in the second clone: pointed at the project memory, prime quotes it.
    run = claude_home.run(READ, env=client_env(project_home))
    assert run.returncode == 0, run
    assert run.assistant_texts()[-1] == "Read the project memory."
    requests = claude_requests_of(claude_home, READ)
    context = claude_start_context(requests[0])
    assert f"{PROJECT_LINE}1 entry that earlier sessions" in context and " prime" in context
    assert fact not in context  # contract v1: no memory body in the hook's context
    primed, recalled = [out for _, out in requests[-1].tool_results()]
    assert fact_line(entry_id, fact, "Codex") in primed.splitlines()
    evidence = json_in(recalled)
    assert evidence["project"] == key and (evidence["entry"]["id"], evidence["entry"]["text"]) == (entry_id, fact)
    assert any(s["kind"] == "tool" and "marker-5d2a" in s["text"] for s in evidence["sources"])
    (entry,) = project(second_clone, "view", "--all")
    assert entry["provenance"]["confirmed"]["client"] == "codex"
    assert entry["provenance"]["confirmed"]["session"] == codex_session

    # 3. Codex again, a third session, in the first clone: it retires the entry with the agent's command.
    rc, events, err = codex_home.exec(RETIRE, env=client_env(project_home))
    assert rc == 0, err[-2000:]
    primed, retired = [out for _, out in codex_requests_of(codex_home, RETIRE)[-1].tool_outputs()]
    assert fact_line(entry_id, fact, "Codex") in primed
    assert json_in(retired)["retired"] == [entry_id]

    # 4. The next start, Claude Code in the second clone: no project memory to point at, none in prime.
    run = claude_home.run(READ, env=client_env(project_home))
    assert run.returncode == 0, run
    assert run.assistant_texts()[-1] == "No project memory is active."
    requests = claude_requests_of(claude_home, READ)[len(requests):]
    assert PROJECT_LINE not in claude_start_context(requests[0])
    (primed,) = [out for _, out in requests[-1].tool_results()]
    assert entry_id not in primed and fact not in primed
    (entry,) = project(second_clone, "view", "--all")
    assert entry["active"] is False and REASON in json.dumps(entry)
    assert not no_default_project_home(codex_home.base / "home", claude_home.home)


def test_claude_code_promotes_and_a_new_codex_session_in_another_clone_starts_with_it(
        codex, claude, origin, project_home):
    fact = "The marker is printed with echo: marker-9e41."
    claude_home = claude(claude_checkpointing("echo marker-9e41", fact, checkpoint=promoting_checkpoint)).setup()
    first_clone = clone(origin, claude_home.work)
    codex_home = codex(codex_reader)
    codex_home.setup()
    second_clone = clone(origin, codex_home.work)

    # 1. Claude Code, in the first clone: the checkpoint promotes its observation.
    run = claude_home.run(WORK, env=client_env(project_home, **CHECKPOINT_ENV))
    assert run.returncode == 0, run
    assert run.assistant_texts()[-1] == "Checkpoint done."
    applied = json_in(claude_home.mock.requests[-1].tool_results()[-1][1])
    (promoted,) = applied["promoted"]
    key, entry_id = applied["project"], promoted["id"]
    assert project(first_clone, "--json")["project"] == project(second_clone, "--json")["project"] == key

    # 2. Codex, a new session in the second clone: pointed at the project memory, prime quotes it, recall cites.
    rc, events, err = codex_home.exec(READ, env=client_env(project_home))
    assert rc == 0, err[-2000:]
    requests = codex_home.model.turn_requests()
    context = codex_start_context(requests[0])
    assert f"{PROJECT_LINE}1 entry that earlier sessions" in context and " prime" in context
    assert fact not in context
    primed, recalled = [out for _, out in requests[-1].tool_outputs()]
    assert fact_line(entry_id, fact, "Claude Code") in primed
    evidence = json_in(recalled)
    assert evidence["project"] == key and (evidence["entry"]["id"], evidence["entry"]["text"]) == (entry_id, fact)
    assert any(s["kind"] == "tool" and "marker-9e41" in s["text"] for s in evidence["sources"])
    (entry,) = project(second_clone, "view", "--all")
    assert entry["provenance"]["confirmed"]["client"] == "claude"
    assert entry["provenance"]["confirmed"]["session"] == run.session_id
    assert not no_default_project_home(codex_home.base / "home", claude_home.home)
