"""Every `om` command the docs show in a code block runs as shown, so a doc cannot drift from the code.

Invariant: each command line of an `om` call in a code block (fenced or indented) of README.md
and of every docs/*.md (a glob: a new doc is covered the day it is added) is run through `sh`
in a throwaway HOME, with `om` on PATH being this tree's (for `om self …`, the standalone om
installed from this tree's zipapp, whose commands those are), against a throwaway store of two
sessions, offline: the update server is a closed local port, and the client plugin copies the
doctor commands name are this tree's files where the clients would have put them. A command
fails the test when it exits with a usage error (64), an internal error (70), Python's or a
shell's own failures (2, 126, 127, a signal), prints a traceback or an argparse complaint, or
runs past a timeout. Other exits are answers about the state (not found, nothing to update)
and pass. A command that asks before it acts (`om self uninstall`) is answered "n" on a
terminal and must then cancel.

What counts as a command: a line (joined over trailing backslashes and over a synopsis's
indented `[...]` continuation) that starts with `om` or `python3 … bin/om`/`… .pyz` (after a
`$ ` prompt), that pipes into one, or the `om …` after ` -- ` (a client's `mcp add`); and the
`"command"` strings of JSON blocks that start with `om`. A line whose words before its first
option end in `:` is output (`om doctor: ok …`) and is left alone, as are `text` blocks. A
block's earlier `cd` lines run before each of its commands. Lines of the clients' own
CLIs (`codex plugin …`, `claude plugin …`) are not om commands: the end-to-end tests run
those with the real clients (test_plugin_copy.py, test_codex_hook_review.py,
test_claude_plugin.py, test_memory_outlives_the_plugin.py).

A synopsis (`[...]` optional parts, `a|b` choices, `WORD...` repeats) runs once with only its
required part and once more with each optional part added; a choice takes its first
alternative there, and the required part runs once more with each other alternative;
`OPTION ...` repeats the option with the value it was given before. Upper-case
words are placeholders, filled from PLACEHOLDERS; a new one fails the test until it is given a
value there. NOT_OFFLINE lists the blocks that cannot run here, each with the reason.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from sessions_support import session_with_memory, start

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
VERSION = re.search(r'^__version__ = "([^"]+)"', (ROOT / "om" / "__init__.py").read_text(), re.M).group(1)
SESSION, OTHER = "alpha", "beta"
#: What the docs' upper-case words stand for here (STORE and S: the throwaway store, filled in per run).
PLACEHOLDERS = {
    "S": "{store}", "STORE": "{store}",
    "ID": SESSION, "OLD": SESSION, "NEW": OTHER,
    "QUERY": "redis", "WORDS": "redis", "LITERAL": "redis",
    "DIR": ".", "PATH": ".", "DAYS": "30", "N": "5", "YYYY-MM-DD": "2026-01-01",
    "TEXT": "outdated",
    "URL": "file:///nonexistent/om-memory.git", "NAME": "laptop", "WRITER": "0" * 32,
}
#: Blocks (file:line of the command) that cannot run offline in a throwaway HOME, and why. Each must
#: still name an `om` command of the docs, so the list cannot go stale.
NOT_OFFLINE: dict = {}
FAILING_EXITS = {2: "a shell or Python usage failure", 64: "a usage error", 70: "an internal error",
                 126: "not executable", 127: "command not found"}
COMPLAINTS = ("Traceback (most recent call last)", "usage: om", "unrecognized arguments", "invalid choice",
              "unknown command", "command not found", "error: argument")
ASKS = "needs confirmation; rerun with -y"
#: The update server: a local port nothing listens on, so `self update` fails fast instead of going online.
OFFLINE_UPDATES = {"OM_UPDATE_API_URL": "http://127.0.0.1:9", "OM_UPDATE_TIMEOUT": "2", "OM_UPDATE_REPO": "om-memory/om"}
PLUGIN_FILES = ("om", "bin", "hooks", "skills", ".codex-plugin", ".claude-plugin", ".mcp.json", "plugin-pins.json")
PLUGIN_COPIES = (".codex/plugins/cache/observational-memory/om", ".claude/plugins/cache/observational-memory/om")

OM_CALL = re.compile(r"(?:^|(?<=[|;&]\s)|(?<=[|;&])|(?<=\s--\s))"
                     r"(?:python3\s+(?:-[A-Za-z]+\s+)*\S*(?:bin/om|om-\S*\.pyz)|om)(?=\s|$)")
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_-]*$")
ELLIPSES = ("...", "…")


# -- reading the docs ------------------------------------------------------------------


def code_blocks(text):
    """(first line number, language, [(line number, line)]) of each fenced or indented code block."""
    blocks, lines = [], text.splitlines()
    fence, current, previous_blank = None, None, True
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if fence is not None:
            if stripped.startswith("```"):
                blocks.append(current)
                fence, current = None, None
            else:
                current[2].append((number, line))
            continue
        if stripped.startswith("```"):
            if current is not None:
                blocks.append(current)
            fence, current = stripped, (number + 1, stripped[3:].strip().lower() or None, [])
            continue
        indented = line.startswith("    ") and stripped
        if indented and (current is not None or previous_blank):
            if current is None:
                current = (number, None, [])
            current[2].append((number, line))
        elif stripped and current is not None:
            blocks.append(current)
            current = None
        previous_blank = not stripped
    if current is not None:
        blocks.append(current)
    return blocks


def logical_lines(block):
    """(line number, text) of a block's lines joined over `\\` and over a synopsis's deeper-indented `[...]` lines."""
    indent = min((len(line) - len(line.lstrip()) for _, line in block if line.strip()), default=0)
    joined = []
    for number, line in block:
        deeper = len(line) - len(line.lstrip()) > indent and line.strip().startswith("[")
        if joined and (joined[-1][1].endswith("\\") or deeper):
            joined[-1] = (joined[-1][0], joined[-1][1].rstrip("\\").rstrip() + " " + line.strip())
        else:
            joined.append((number, line.strip()))
    return joined


def without_comment(line):
    """`line` without a shell comment (a `#` after a blank, outside quotes)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line


def words(line):
    """The shell words of `line`, quotes kept, split on blanks outside quotes."""
    found, word, quote = [], "", None
    for ch in line:
        if quote:
            word += ch
            quote = None if ch == quote else quote
        elif ch in "'\"":
            word += ch
            quote = ch
        elif ch.isspace():
            if word:
                found.append(word)
            word = ""
        else:
            word += ch
    return found + ([word] if word else [])


def is_output(command):
    """Whether an `om …` line is output (its words before the first option end in `:`)."""
    for word in words(command)[:4]:
        if word.startswith("-"):
            return False
        if word.endswith(":"):
            return True
    return False


def commands_of(path):
    """[(where, shell line, cd lines before it)] of every om command in the code blocks of `path`."""
    found = []
    rel = path.relative_to(ROOT)
    for _, language, block in code_blocks(path.read_text(encoding="utf-8")):
        if language in ("text", "python", "toml"):
            continue
        if language == "json":
            for number, line in block:
                for value in re.findall(r'"command":\s*("(?:[^"\\]|\\.)*")', line):
                    command = json.loads(value)
                    if OM_CALL.match(command):
                        found.append((f"{rel}:{number}", command.removesuffix(" || true"), ()))
            continue
        cds = []
        for number, line in logical_lines(block):
            line = without_comment(line.removeprefix("$ "))
            if re.fullmatch(r"cd\s+\S+", line):
                cds.append(line)
                continue
            call = OM_CALL.search(line)
            if call is None or (call.start() == 0 and is_output(line)):
                continue
            start = call.start() if line[:call.start()].rstrip().endswith("--") else 0
            found.append((f"{rel}:{number}", line[start:], tuple(cds)))
    return found


def variants(line):
    """The command lines a synopsis stands for (the line itself when it is none), placeholders left in."""
    items, group = [], None
    for word in words(line):
        quoted = word.startswith(("'", '"'))
        opens, closes = not quoted and word.startswith("["), not quoted and word.endswith("]")
        word = word[1 if opens else 0:len(word) - (1 if closes else 0)]
        if opens:
            group = [[]]
        if group is None:
            items.append(word)
        elif word == "|":
            group.append([])
        elif word:
            group[-1].append(word)
        if closes and group is not None:
            items.append(group)
            group = None
    runs = [[w for w in items if isinstance(w, str)]]
    for at, item in enumerate(items):
        if isinstance(item, list):
            runs.append([w for w in items[:at] if isinstance(w, str)] + item[0]
                        + [w for w in items[at + 1:] if isinstance(w, str)])
    # A choice `a|b` takes its first alternative, and the required part runs once with each other one.
    runs += [runs[0][:at] + [other] + runs[0][at + 1:]
             for at, word in enumerate(runs[0]) for other in _choices(word)[1:]]
    return [" ".join(_filled_repeats([_choices(w)[0] for w in run])) for run in runs]


def _choices(word):
    """The alternatives of a synopsis's choice `a|b`; a pipe, `||` and a quoted word are one."""
    if word.startswith(("'", '"')) or word in ("|", "||") or "|" not in word:
        return [word]
    return word.split("|")


def _filled_repeats(run):
    """`OPTION ...` becomes the option with the value it had before; other repeat marks go."""
    out, values = [], {}
    for word in run:
        if word in ELLIPSES:
            if out and out[-1].startswith("-") and out[-1] in values:
                out.append(values[out[-1]])
            elif out and out[-1].startswith("-"):
                out.pop()
            continue
        if out and out[-1].startswith("-") and not word.startswith("-"):
            values.setdefault(out[-1], word)
        out.append(word)
    return out


def filled(line, store):
    """`line` with its placeholders given values (KeyError naming an unknown one)."""
    out = []
    for word in words(line):
        bare = word
        for mark in ELLIPSES:
            bare = bare.removesuffix(mark)
        if PLACEHOLDER.match(bare) and "=" not in bare:
            if bare not in PLACEHOLDERS:
                raise KeyError(bare)
            word = PLACEHOLDERS[bare].format(store=store)
        out.append(word.replace("<version>", VERSION))
    return " ".join(out)


def doc_commands():
    return [(where, line, cds) for path in DOCS for where, line, cds in commands_of(path)]


# -- running them ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A store of two sessions of a project, and the plugin copies the clients would have made."""
    top = tmp_path_factory.mktemp("docs-template")
    work = top / "work"
    (work / ".git").mkdir(parents=True)
    store = top / "store"
    session_with_memory(store, SESSION, work, "We dropped redis: its timeouts broke checkout.")
    start(store, OTHER, work, setup=True)
    plugin = top / "plugin"
    listing = subprocess.run(["git", "ls-files", "-z", "--", *PLUGIN_FILES], cwd=ROOT, capture_output=True,
                             timeout=60, check=True)
    for name in filter(None, listing.stdout.decode().split("\0")):
        (plugin / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, plugin / name)
    assert (plugin / "bin" / "om").is_file()
    return top


@pytest.fixture
def place(template, tmp_path):
    """A fresh HOME, work folder and store for one command, and `om` on PATH."""
    shutil.copytree(template / "store", tmp_path / "store")
    shutil.copytree(template / "work", tmp_path / "work")
    home = tmp_path / "home"
    for copy in PLUGIN_COPIES:
        shutil.copytree(template / "plugin", home / copy / VERSION, copy_function=os.link)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "om").write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "{ROOT / "bin" / "om"}" "$@"\n')
    (bindir / "om").chmod(0o755)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OM_", "CODEX_", "CLAUDE_", "PLUGIN_", "OBSERVATIONAL_MEMORY", "XDG_", "SHIV_"))}
    env.update(OFFLINE_UPDATES, HOME=str(home), CODEX_HOME=str(home / ".codex"),
               PATH=f"{bindir}{os.pathsep}{env.get('PATH', '')}")
    return tmp_path, env


def run_line(line, cds, env, cwd, terminal_answer=None):
    script = " && ".join([*cds, line])
    if terminal_answer is None:
        done = subprocess.run(["sh", "-c", script], env=env, cwd=cwd, capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
        return done.returncode, done.stdout, done.stderr
    import pty

    main, replica = pty.openpty()
    proc = subprocess.Popen(["sh", "-c", script], env=env, cwd=cwd, stdin=replica, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    os.close(replica)
    os.write(main, terminal_answer.encode() + b"\n")
    out, err = proc.communicate(timeout=60)
    os.close(main)
    return proc.returncode, out, err


def complaint(rc, stderr):
    """Why a run shows drift between the docs and the code, else None."""
    if rc < 0:
        return f"killed by signal {-rc}"
    if rc in FAILING_EXITS:
        return f"exit {rc}: {FAILING_EXITS[rc]}"
    said = [c for c in COMPLAINTS if c in stderr]
    return f"stderr says {said[0]!r}" if said else None


def hook_payload():
    """A Claude Code SessionStart event, for the hook command lines of the settings block."""
    return json.dumps({"session_id": "docs-hook", "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp",
                       "hook_event_name": "SessionStart", "source": "startup"})


COMMANDS = doc_commands()


def test_the_docs_show_om_commands_and_every_block_that_cannot_run_offline_is_one_of_them():
    assert len(COMMANDS) > 40, COMMANDS
    wheres = {where for where, _, _ in COMMANDS}
    assert set(NOT_OFFLINE) <= wheres, sorted(set(NOT_OFFLINE) - wheres)
    assert all(reason.strip() for reason in NOT_OFFLINE.values())


@pytest.mark.parametrize("where,line,cds", COMMANDS, ids=[f"{w} {line[:60]}" for w, line, _ in COMMANDS])
def test_a_command_the_docs_show_runs_as_shown(place, where, line, cds):
    if where in NOT_OFFLINE:
        pytest.fail(f"{where} cannot run offline ({NOT_OFFLINE[where]}); run it by hand")  # never silently skipped
    tmp, env = place
    store = tmp / "store"
    if ".pyz" in line or line.startswith("om self "):
        env = _with_a_zipapp(tmp, env, installed=line.startswith("om self "))
    problems = []
    for variant in variants(line):
        try:
            command, before = filled(variant, store), tuple(filled(cd, store) for cd in cds)
        except KeyError as e:
            pytest.fail(f"{where}: the placeholder {e.args[0]} has no value in PLACEHOLDERS ({line})")
        if " hook --client " in command:
            problems += _hook_problems(command, env, tmp / "work")
            continue
        rc, out, err = run_line(command, before, env, tmp / "work")
        if rc == 64 and err.rstrip().endswith(ASKS):
            rc, out, err = run_line(command, before, env, tmp / "work", terminal_answer="n")
            if "om: cancelled; nothing changed" not in err:
                problems.append(f"{command}: asked, was answered no, did not cancel: {err.strip()[-300:]}")
                continue
        why = complaint(rc, err)
        if why:
            problems.append(f"{command}\n    {why}; stderr: {err.strip()[-600:]}")
    assert not problems, f"{where}: " + "\n  ".join(problems)


def _with_a_zipapp(tmp, env, installed):
    """The release zipapp of this tree in the work folder; with `installed`, also installed as the
    standalone `om` on PATH (the `om self` commands are that om's: the tree's own refuses them)."""
    from dist_support import pyz

    zipapp = tmp / "work" / f"om-{VERSION}.pyz"
    shutil.copy(pyz(VERSION), zipapp)
    env = dict(env, SHIV_ROOT=str(tmp / "shiv"))
    if installed:
        done = subprocess.run([sys.executable, "-I", str(zipapp), "self", "install"], env=env, capture_output=True,
                              text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr
        env["PATH"] = f"{Path(env['HOME']) / '.local' / 'bin'}{os.pathsep}{env['PATH']}"
    return env


def _hook_problems(command, env, cwd):
    """A hook command of a settings block, fed a SessionStart: it must answer with the start context."""
    done = subprocess.run(["sh", "-c", command], env=env, cwd=cwd, capture_output=True, text=True, timeout=60,
                          input=hook_payload())
    why = complaint(done.returncode, done.stderr)
    if why is None:
        try:
            json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
        except (ValueError, KeyError, TypeError):
            why = f"no start context on stdout: {done.stdout[:300]!r}"
    return [f"{command}\n    {why}; stderr: {done.stderr.strip()[-600:]}"] if why else []
