"""Wall time of the hook commands of both clients, as a ratio to a bare interpreter start.

Codex: the command exactly as the plugin's hooks/codex.json registers it (the file its
manifest declares; through `sh -c`, with the plugin root substituted and both spellings
of the plugin variables set, as Codex does).
Claude Code, with Claude Code 2.1.332 payload shapes: the command hooks/hooks.json
registers, through `/bin/sh -c` with only CLAUDE_PLUGIN_ROOT/CLAUDE_PLUGIN_DATA set, as
Claude Code runs plugin hooks. The output shows both commands.
Each for UserPromptSubmit, PostToolUse and Stop on ledgers of 10,000 sources,
interleaved with `python3 -I -S -c pass` on the same real interpreter, in one run. The
plugin data folder sits where the clients put it (`<home>/plugins/data/<plugin>-<market>`),
the ledgers in it as earlier versions kept them; a warm-up run of each command moves them
to wherever that tree keeps its store before anything is timed.
Prints the median and p95 of each and their ratio to the baseline's median.

With --compare REV, the hooks of another commit of this repository (exported with
`git archive`, each run through the command its own hooks files register, on its own copy
of the same ledgers) are measured in the same interleaved rounds, and the output ends with
this tree's median over REV's per client and event: below 1.00 is faster, above is a
regression.

    python3 bench/hook.py [--runs 60] [--compare REV]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from om_runs import export_commit, project_home

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLUGIN = ROOT
sys.path.insert(0, ROOT)
SOURCES = 10_000
SESSION = "bench-session"
HEAVY = {"argparse", "re", "shlex", "hashlib", "_hashlib", "json", "json.decoder", "enum", "sqlite3", "datetime",
         "functools", "collections", "os", "_collections_abc"}


def real_interpreter():
    base = getattr(sys, "_base_executable", None) or sys.executable
    return os.path.realpath(base)


def data_folder(tmp, home):
    """The plugin data folder a client gives the om plugin in a home under `tmp`."""
    return os.path.join(tmp, home, "plugins", "data", "om-observational-memory")


def build_ledger(store, pending):
    from om.ledger import Ledger

    with Ledger.open(store, SESSION) as ledger:
        with ledger.transaction():
            for i in range(SOURCES):
                kind = ("user", "tool", "assistant")[i % 3]
                ledger.capture(kind, f"source {i}: " + "evidence text " * 20, f"key-{i}")
            ledger.meta_set("cursor", str(SOURCES - pending))


def claude_events(i):
    """Claude Code 2.1.332 shapes: the turn is `prompt_id`, Bash results are objects."""
    base = {"session_id": SESSION, "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp", "prompt_id": f"prompt-{i}",
            "permission_mode": "bypassPermissions"}
    return {
        "UserPromptSubmit": dict(base, hook_event_name="UserPromptSubmit", prompt=f"Please fix bug number {i}"),
        "PostToolUse": dict(base, hook_event_name="PostToolUse", effort={"level": "medium"}, tool_name="Bash",
                            tool_input={"command": f"grep -rn bug{i} src", "description": "search"},
                            tool_response={"stdout": f"src/a.py:{i}: bug", "stderr": "", "interrupted": False,
                                           "isImage": False, "noOutputExpected": False},
                            tool_use_id=f"toolu_{i}", duration_ms=12),
        "Stop": dict(base, hook_event_name="Stop", effort={"level": "medium"}, stop_hook_active=False,
                     last_assistant_message=f"Fixed bug {i} in src/a.py.", background_tasks=[], session_crons=[]),
    }


def registered_argv(registered, name, plugin=PLUGIN):
    command = registered[name][0]["hooks"][0]["command"]
    return ["/bin/sh", "-c", command.replace("${CLAUDE_PLUGIN_ROOT}", plugin).replace("${PLUGIN_ROOT}", plugin)]


def codex_hooks(plugin):
    """The hooks Codex registers from a plugin root: hooks/codex.json, or (older trees) hooks/hooks.json."""
    for name in ("codex.json", "hooks.json"):
        path = os.path.join(plugin, "hooks", name)
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as fh:
                return json.load(fh)["hooks"]
    raise SystemExit(f"no Codex hooks file under {plugin}")


def claude_hooks(plugin):
    with open(os.path.join(plugin, "hooks", "hooks.json"), encoding="utf-8") as fh:
        return json.load(fh)["hooks"]


def export_tree(rev, into):
    """The plugin root of commit `rev` of this repository, unpacked under `into`, and its Codex hooks."""
    export_commit(rev, into)
    # The plugin root was plugin/ for a while (before and after, it is the repository root).
    plugin = os.path.join(into, "plugin") if os.path.isdir(os.path.join(into, "plugin", "hooks")) else into
    return plugin, codex_hooks(plugin)




def events(i):
    turn = f"turn-{i}"
    base = {"session_id": SESSION, "turn_id": turn, "cwd": "/tmp", "model": "mock",
            "transcript_path": "/tmp/t.jsonl", "permission_mode": "bypassPermissions"}
    return {
        "UserPromptSubmit": dict(base, hook_event_name="UserPromptSubmit", prompt=f"Please fix bug number {i}"),
        "PostToolUse": dict(base, hook_event_name="PostToolUse", tool_name="Bash",
                            tool_input={"command": f"grep -rn bug{i} src"}, tool_response=f"src/a.py:{i}: bug",
                            tool_use_id=f"call-{i}"),
        "Stop": dict(base, hook_event_name="Stop", stop_hook_active=False,
                     last_assistant_message=f"Fixed bug {i} in src/a.py."),
    }


def timed(argv, payload=b"", env=None):
    start = time.perf_counter()
    proc = subprocess.run(argv, input=payload, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0 or proc.stderr:
        raise SystemExit(f"{argv[:3]} failed: rc={proc.returncode} {proc.stderr[-300:]!r}")
    return elapsed


def p95(values):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--compare", metavar="REV", help="also measure the hooks of this commit, interleaved")
    args = parser.parse_args()
    python = real_interpreter()
    registered = codex_hooks(PLUGIN)
    claude_registered = claude_hooks(PLUGIN)
    baseline_argv = [python, "-I", "-S", "-c", "pass"]
    print(f"interpreter: {python}")
    print(f"baseline: {' '.join(baseline_argv)}")
    print(f"codex:  {' '.join(registered_argv(registered, 'Stop'))}")
    print(f"claude: {' '.join(registered_argv(claude_registered, 'Stop'))}")
    with tempfile.TemporaryDirectory() as tmp:
        other = None
        if args.compare:
            other = export_tree(args.compare, os.path.join(tmp, "compare"))
            other_claude = claude_hooks(other[0])
            print(f"codex @{args.compare}: {' '.join(registered_argv(other[1], 'Stop', other[0]))}")
            print(f"claude @{args.compare}: {' '.join(registered_argv(other_claude, 'Stop', other[0]))}")
        results = {}
        for label, pending in (("10,000 sources, 10 pending", 10), ("10,000 sources, all pending", SOURCES)):
            store = data_folder(tmp, f"home-{pending}")
            build_ledger(store, pending)
            with open(os.path.join(store, ".om-python"), "w") as fh:
                fh.write(python + "\n")
            plugin = ROOT
            clean = {k: v for k, v in os.environ.items() if not k.startswith(("OM_", "PLUGIN_", "CLAUDE_"))}
            clean["OM_PROJECT_HOME"] = project_home()
            # Codex sets both spellings for plugin hooks; Claude Code only its own.
            env = dict(clean, PLUGIN_ROOT=plugin, PLUGIN_DATA=store, CLAUDE_PLUGIN_ROOT=plugin, CLAUDE_PLUGIN_DATA=store)
            claude_env = dict(clean, CLAUDE_PLUGIN_ROOT=plugin, CLAUDE_PLUGIN_DATA=store)
            names = ("UserPromptSubmit", "PostToolUse", "Stop")
            base, hooks = [], {f"{client} {name}": [] for client in ("codex", "claude") for name in names}
            for name in names:  # warm up: bytecode, the store's move, the derived tables
                timed(registered_argv(registered, name), json.dumps(events(-1)[name]).encode(), env)
                timed(registered_argv(claude_registered, name), json.dumps(claude_events(-1)[name]).encode(),
                      claude_env)
            if other:
                other_store = data_folder(tmp, f"home-{pending}-compare")
                build_ledger(other_store, pending)
                with open(os.path.join(other_store, ".om-python"), "w") as fh:
                    fh.write(python + "\n")
                other_env = dict(clean, PLUGIN_ROOT=other[0], PLUGIN_DATA=other_store, CLAUDE_PLUGIN_ROOT=other[0],
                                 CLAUDE_PLUGIN_DATA=other_store)
                other_claude_env = dict(clean, CLAUDE_PLUGIN_ROOT=other[0], CLAUDE_PLUGIN_DATA=other_store)
                for name in names:
                    hooks[f"codex {name} @{args.compare}"] = []
                    hooks[f"claude {name} @{args.compare}"] = []
                    # Warm up: bytecode, and whatever derived tables that commit keeps.
                    timed(registered_argv(other[1], name, other[0]), json.dumps(events(-1)[name]).encode(), other_env)
                    timed(registered_argv(other_claude, name, other[0]), json.dumps(claude_events(-1)[name]).encode(),
                          other_claude_env)
            # Reference floor: import _sqlite3 and commit one row (synchronous=FULL, as the ledger does).
            hooks["sqlite insert floor"] = []
            floor = os.path.join(tmp, f"floor-{pending}.sqlite3")
            floor_argv = [python, "-I", "-S", "-c",
                          "import _sqlite3 as s; c = s.connect(%r, isolation_level=None); "
                          "c.execute('PRAGMA synchronous=FULL'); c.execute('CREATE TABLE IF NOT EXISTS t(x)'); "
                          "c.execute('BEGIN IMMEDIATE'); c.execute('INSERT INTO t VALUES (1)'); "
                          "c.execute('COMMIT')" % floor]
            for i in range(args.runs):
                hooks["sqlite insert floor"].append(timed(floor_argv))
                payloads, claude = events(i), claude_events(i)
                for name in names:
                    payload = json.dumps(payloads[name]).encode()
                    hooks[f"codex {name}"].append(timed(registered_argv(registered, name), payload, env))
                    base.append(timed(baseline_argv))
                    if other:
                        hooks[f"codex {name} @{args.compare}"].append(
                            timed(registered_argv(other[1], name, other[0]), payload, other_env))
                    payload = json.dumps(claude[name]).encode()
                    hooks[f"claude {name}"].append(timed(registered_argv(claude_registered, name), payload,
                                                         claude_env))
                    base.append(timed(baseline_argv))
                    if other:
                        hooks[f"claude {name} @{args.compare}"].append(
                            timed(registered_argv(other_claude, name, other[0]), payload, other_claude_env))
            results[label] = (base, hooks)
        data = data_folder(tmp, "home-10")
        print("\nheavy modules imported by the hook process (python -X importtime):")
        for client, sample in (("codex", events), ("claude", claude_events)):
            for name, payload in sample(10_000).items():
                proc = subprocess.run([python, "-X", "importtime", "-I", "-S", os.path.join(ROOT, "bin", "om"),
                                       "hook", "--client", client, "--plugin-data", data],
                                      input=json.dumps(payload).encode(), capture_output=True)
                loaded = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.decode().splitlines()}
                heavy = sorted(loaded & HEAVY)
                print(f"  {client + ' ' + name:24} {', '.join(heavy) or 'none'}")
        for label, (base, hooks) in results.items():
            median_base = statistics.median(base)
            print(f"\n{label} ({args.runs} runs each, interleaved)")
            print(f"  {'baseline':34} median {median_base * 1000:6.1f} ms  p95 {p95(base) * 1000:6.1f} ms")
            for name, values in hooks.items():
                median = statistics.median(values)
                print(f"  {name:34} median {median * 1000:6.1f} ms  p95 {p95(values) * 1000:6.1f} ms"
                      f"  ratio median {median / median_base:4.2f}x  p95 {p95(values) / median_base:4.2f}x")
            if other:
                for client in ("codex", "claude"):
                    for name in ("UserPromptSubmit", "PostToolUse", "Stop"):
                        now, then = (statistics.median(hooks[f"{client} {name}{suffix}"])
                                     for suffix in ("", f" @{args.compare}"))
                        print(f"  {client} {name:18} this tree / @{args.compare}: {now / then:4.3f}")


if __name__ == "__main__":
    main()
