"""`om doctor`: each check driven to ok, warn and fail with a throwaway CODEX_HOME."""

import hashlib
import json
import os
import shlex
import shutil
import sqlite3
import sys
import time

import pytest

from conftest import ROOT, bytecode_env, run_om
from inprocess import setup_om

PLUGIN_ID = "om@observational-memory"
COMMAND = 'sh "${PLUGIN_ROOT}/hooks/om-hook" || true'
EVENTS = {"SessionStart": "session_start", "UserPromptSubmit": "user_prompt_submit", "PostToolUse": "post_tool_use",
          "Stop": "stop", "Interrupt": "interrupt"}
#: As hooks/codex.json registers them: Codex clamps Interrupt to 3 s, so the plugin asks for 3.
TIMEOUT = {"Interrupt": 3}


def hook(event):
    return {"type": "command", "command": COMMAND, "timeout": TIMEOUT.get(event, 30)}


def identity_hash(event):
    # The recipe in Codex 0.169.0 (see the Codex report): canonical JSON of the unexpanded hook.
    norm = {"event_name": EVENTS[event], "hooks": [{"type": "command", "command": COMMAND,
                                                    "timeout": TIMEOUT.get(event, 30), "async": False}]}
    blob = json.dumps(norm, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(blob.encode()).hexdigest()


def make_home(tmp_path, enabled=True, trust=True, events=tuple(EVENTS), stale=(), writable=None, mode=None, mcp=False,
              installed_ago=3600, codex_says="trusted"):
    home = tmp_path / "codex-home"
    root = home / "plugins" / "cache" / "observational-memory" / "om" / "0.1.0"
    (root / "hooks").mkdir(parents=True, exist_ok=True)
    if mcp:
        install_runtime(root)
    (root / "hooks" / "codex.json").write_text(json.dumps({"hooks": {e: [{"hooks": [hook(e)]}] for e in events}}))
    # `codex plugin add` writes every file of the copy; date it before the receipts the tests record.
    then = time.time() - installed_ago
    for path in (root, root / "hooks" / "codex.json", root / ".codex-plugin" / "plugin.json"):
        if path.exists():
            os.utime(path, (then, then))
    fake_codex(home, {e: codex_says for e in events})
    lines = [f'[plugins."{PLUGIN_ID}"]', f"enabled = {'true' if enabled else 'false'}", ""]
    if mode:
        lines.insert(0, f'sandbox_mode = "{mode}"')
    if writable:
        lines += ["[sandbox_workspace_write]", f"writable_roots = {json.dumps([str(writable)])}", ""]
    if trust:
        for e in events:
            h = identity_hash(e) if e not in stale else "sha256:" + "0" * 64
            lines += [f'[hooks.state."{PLUGIN_ID}:hooks/codex.json:{EVENTS[e]}:0:0"]', f'trusted_hash = "{h}"',
                      'trusted_content_hash = "sha256:' + "1" * 64 + '"', ""]
    (home / "config.toml").write_text("\n".join(lines))
    return home


def install_runtime(root):
    """What the MCP server needs of the plugin copy: its manifest, .mcp.json, bin/om and the om package."""
    for name in (".codex-plugin", "bin", "om"):
        shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / ".mcp.json", root / ".mcp.json")


FAKE_CODEX = """#!/usr/bin/env python3
# Answers `codex app-server` initialize and hooks/list as Codex 0.169.0 does, with the
# trust statuses in answer.json beside it (the real client is driven by tests/e2e).
import json, os, sys
if sys.argv[1:] != ["app-server"]:
    sys.exit(2)
answer = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "answer.json")))
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        print(json.dumps({"id": m["id"], "result": {"userAgent": "codex_cli_rs/0.169.0 (Linux)"}}), flush=True)
    elif m.get("method") == "hooks/list":
        hooks = [{"key": "om@observational-memory:hooks/codex.json:%s:0:0" % e.lower(), "pluginId": "om@observational-memory",
                  "eventName": e[0].lower() + e[1:], "trustStatus": s, "enabled": True} for e, s in answer.items()]
        print(json.dumps({"id": m["id"], "result": {"data": [{"cwd": "/", "hooks": hooks, "warnings": [], "errors": []}]}}), flush=True)
"""


def fake_codex(home, statuses):
    """A `codex` for PATH whose hooks/list reports `statuses` ({event: trustStatus})."""
    bindir = home.parent / "codex-bin"
    bindir.mkdir(exist_ok=True)
    (bindir / "codex").write_text(FAKE_CODEX)
    (bindir / "codex").chmod(0o755)
    (bindir / "answer.json").write_text(json.dumps(statuses))
    return bindir


def doctor(home, store, *extra, env=None):
    e = {"CODEX_HOME": str(home), "PATH": f"{home.parent / 'codex-bin'}:{os.environ.get('PATH', '')}",
         "CLAUDE_CONFIG_DIR": str(home / "no-claude")}
    if env:
        e.update(env)
    return run_om("doctor", "--json", *(["--store", store] if store else []), *extra, env=e)


def check(result, name):
    (c,) = [c for c in result.json["checks"] if c["check"] == name]
    return c


def data_folder(store):
    """The plugin's data folder beside the Codex store `store` (CODEX_HOME/om)."""
    return store.parent / "plugins" / "data" / "om-observational-memory"


def make_store(tmp_path, receipts=True, **record):
    """The store the Codex hooks of make_home(tmp_path)'s CODEX_HOME write, with one session."""
    store = tmp_path / "codex-home" / "om"
    setup_om("--store", store, "--session", "s1", "capture", input=json.dumps({"kind": "user", "text": "x", "key": "k"}))
    # What the hook launcher records: the real interpreter, so the check does
    # not depend on whether this machine's python3 is a version-manager shim.
    data_folder(store).mkdir(parents=True, exist_ok=True)
    (data_folder(store) / ".om-python").write_text(os.path.realpath(sys.executable) + "\n")
    if receipts:
        from om.receipts import record as rec

        for e in EVENTS:
            rec(str(store), e, record.get("outcome", "ok"), record.get("ms", 40.0))
    return store


def test_a_healthy_installation_is_all_ok_and_exits_zero(tmp_path):
    store = make_store(tmp_path)
    home = make_home(tmp_path, writable=store, mcp=True)
    r = doctor(home, store)
    assert r.returncode == 0, r
    assert {c["check"]: c["status"] for c in r.json["checks"] if c["status"] != "ok"} == {}
    assert r.json["status"] == "ok"
    assert all(c["fix"] == "" for c in r.json["checks"])
    text = run_om("doctor", "--store", store, env={"CODEX_HOME": str(home)})
    assert text.returncode == 0 and "store.integrity" in text.stdout


def test_without_store_it_checks_the_store_beside_the_codex_plugin_folders(tmp_path):
    home = make_home(tmp_path)
    r = doctor(home, None)
    assert r.json["store"] == str(home / "om") and r.json["stores"] == [str(home / "om")]
    assert r.json["store_from"] == "Codex" and r.json["clients"] == ["codex"]
    # Not created yet is no fault of its own: the first hook creates it (capture says no hook ran).
    c = check(r, "store.exists")
    assert c["status"] == "ok" and c["finding"] == f"store {home / 'om'} (Codex) is not created yet: the first hook creates it"


def test_store_checks_fail_on_a_corrupt_database_and_warn_on_loose_permissions_and_leftovers(tmp_path):
    store = make_store(tmp_path)
    home = make_home(tmp_path, writable=store)
    os.chmod(store, 0o755)
    (store / ".om-tmp-abc").mkdir()
    r = doctor(home, store)
    assert check(r, "store.permissions")["status"] == "warn" and "chmod" in check(r, "store.permissions")["fix"]
    assert check(r, "store.temp")["status"] == "warn" and ".om-tmp-abc" in check(r, "store.temp")["fix"]
    assert r.returncode == 0
    (session,) = [d for d in store.iterdir() if d.name.startswith("session-")]
    db = session / "memory.sqlite3"
    with sqlite3.connect(db) as c:
        c.execute("UPDATE meta SET value = '2' WHERE key = 'version'")
    r = doctor(home, store)
    assert check(r, "store.integrity")["status"] == "fail" and "schema version" in check(r, "store.integrity")["finding"]
    assert r.returncode == 1 and r.json["status"] == "fail"
    db.write_bytes(b"SQLite format 3\x00" + b"\x00" * 84 + os.urandom(4000))
    r = doctor(home, store)
    assert check(r, "store.integrity")["status"] == "fail" and r.returncode == 1
    assert "mv " in check(r, "store.integrity")["fix"]


def test_a_codex_home_without_the_plugin_is_not_judged_and_a_disabled_plugin_fails_alone(tmp_path):
    empty = tmp_path / "empty-home"
    empty.mkdir()
    r = doctor(empty, None)
    assert not [c for c in r.json["checks"] if c["check"].startswith(("codex.", "capture"))]
    (line,) = [c for c in r.json["checks"] if c["status"] != "ok"]
    assert line["check"] == "clients" and "codex plugin add om@observational-memory" in line["fix"]
    store = make_store(tmp_path)
    r = doctor(make_home(tmp_path, enabled=False), store)
    assert check(r, "codex.plugin")["status"] == "fail" and r.returncode == 1
    # One cause, one verdict: what only running hooks could show is not judged.
    assert [c["check"] for c in r.json["checks"] if c["status"] not in ("ok",)] == ["codex.plugin", "codex.mcp", "capture"]
    assert check(r, "capture") == {"check": "capture", "status": "skip", "fix": "",
                                   "finding": "not judged: see codex.plugin, which keeps the hooks from running"}


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"trust": False}, "untrusted"),
        ({"stale": ("Stop",)}, "changed since trusted: Stop"),
        ({"events": ("SessionStart", "Stop")}, "not registered for UserPromptSubmit, PostToolUse"),
    ],
)
def test_hooks_that_codex_would_skip_fail_with_the_reason(tmp_path, kwargs, words):
    store = make_store(tmp_path)
    home = make_home(tmp_path, writable=store, **kwargs)
    (tmp_path / "codex-bin" / "codex").unlink()  # Codex cannot be asked: config.toml is read instead
    r = doctor(home, store)
    c = check(r, "codex.hooks")
    assert c["status"] == "fail" and words in c["finding"] and c["fix"]
    assert r.returncode == 1


def test_sandbox_warns_unless_the_store_is_writable_or_full_access(tmp_path):
    store = make_store(tmp_path)
    r = doctor(make_home(tmp_path), store)
    c = check(r, "codex.sandbox")
    assert c["status"] == "warn" and str(store) in c["fix"] and "writable_roots" in c["fix"]
    r = doctor(make_home(tmp_path / "b", writable=tmp_path), store)
    assert check(r, "codex.sandbox")["status"] == "ok"
    r = doctor(make_home(tmp_path / "c", mode="danger-full-access"), store)
    assert check(r, "codex.sandbox")["status"] == "ok"


def test_receipts_flag_events_that_never_ran_failures_and_slow_hooks(tmp_path):
    store = make_store(tmp_path, receipts=False)
    home = make_home(tmp_path, writable=store)
    r = doctor(home, store)
    c = check(r, "capture.Stop")
    assert c["status"] == "warn" and c["finding"] == "no Stop run recorded in this store"
    assert "hooks trusted (/hooks)" in c["fix"] and "trusted workspace" not in c["fix"]
    from om.receipts import record

    for e in EVENTS:
        record(str(store), e, "ok", 30.0)
    record(str(store), "Stop", "failed", 12.0)
    r = doctor(home, store)
    assert check(r, "capture.SessionStart")["status"] == "ok"
    assert check(r, "capture.Stop")["status"] == "fail" and r.returncode == 1
    record(str(store), "Stop", "ok", 20.0)
    assert check(doctor(home, store), "capture.Stop")["status"] == "warn"
    for _ in range(20):
        record(str(store), "PostToolUse", "ok", 900.0)
    c = check(doctor(home, store), "capture.PostToolUse")
    assert c["status"] == "warn" and "p95" in c["finding"]


@pytest.mark.parametrize("durations, verdict, words", [
    ([900.0], "ok", "900.0 ms (a p95 needs 20 runs)"),
    ([900.0, 40.0], "ok", "fastest 40.0 ms, slowest 900.0 ms"),
    ([900.0, 300.0, 260.0], "warn", "each of the last 3 runs took over the 250 ms budget"),
    ([900.0] * 18 + [40.0], "ok", "fastest 40.0 ms"),
    ([40.0] * 19 + [900.0], "ok", "p95 40.0 ms"),
    ([40.0] * 18 + [900.0] * 2, "warn", "p95 900.0 ms is over the 250 ms budget"),
    ([40.0] * 60 + [900.0] * 2, "ok", "p95 40.0 ms"),
])
def test_hook_time_is_judged_on_enough_runs_one_slow_first_run_is_no_verdict(tmp_path, durations, verdict, words):
    # The first run after an install compiles bytecode and reads a cold disk: one slow run says
    # nothing, a p95 needs 20 durations, and fewer warn only when every one of three was slow.
    from om.receipts import record

    store = make_store(tmp_path, receipts=False)
    home = make_home(tmp_path, writable=store)
    for e in EVENTS:
        if e != "PostToolUse":
            record(str(store), e, "ok", 30.0)
    for ms in durations:
        record(str(store), "PostToolUse", "ok", ms)
    c = check(doctor(home, store), "capture.PostToolUse")
    assert c["status"] == verdict and words in c["finding"], c


def test_hook_python_warns_on_a_version_manager_shim_and_path_warns_on_another_om(tmp_path):
    store = make_store(tmp_path)
    home = make_home(tmp_path, writable=store)
    (data_folder(store) / ".om-python").write_text("/home/u/.pyenv/shims/python3\n")
    r = doctor(home, store)
    assert check(r, "runtime.hook_python")["status"] == "warn"
    real = tmp_path / "py"
    real.write_text("#!/bin/sh\n")
    real.chmod(0o755)
    (data_folder(store) / ".om-python").write_text(f"{real}\n")
    assert check(doctor(home, store), "runtime.hook_python")["status"] == "ok"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    other = bindir / "om"
    other.write_text("#!/usr/bin/python3\nfrom observational_memory.cli import main\nmain()\n")
    other.chmod(0o755)
    r = doctor(home, store, env={"PATH": f"{bindir}:{os.environ['PATH']}"})
    assert check(r, "runtime.path")["status"] == "warn" and "observational-memory" in check(r, "runtime.path")["fix"]
    other.write_text("#!/usr/bin/env python3\nfrom om.cli import main\nmain()\n")
    r = doctor(home, store, env={"PATH": f"{bindir}:{os.environ['PATH']}"})
    assert check(r, "runtime.path")["status"] == "ok"



def test_the_mcp_check_starts_the_installed_server_and_finds_every_ledger_tool(tmp_path):
    home = make_home(tmp_path, mcp=True)
    c = check(doctor(home, None), "codex.mcp")
    assert c["status"] == "ok", c
    from om.mcp.tools import catalogue

    assert "python3 -I -S bin/om mcp --client codex" in c["finding"] and f"lists {len(catalogue())} tools" in c["finding"]
    assert c["finding"].endswith(f"; it serves {home / 'om'}")
    # The server was only asked for its tools: it neither made nor moved a store.
    assert not (home / "plugins" / "data").exists() and not (home / "om").exists()


def fake_server(home, script, command="python3"):
    root = home / "plugins" / "cache" / "observational-memory" / "om" / "0.1.0"
    (root / "server.py").write_text(script)
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"om": {"command": command, "args": ["server.py"], "cwd": "."}}}))


LISTS_ONLY_STATUS = """
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("method") == "initialize":
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "x", "version": "1"}}}), flush=True)
    elif m.get("method") == "tools/list":
        print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": [{"name": "status"}]}}), flush=True)
"""


@pytest.mark.parametrize(
    "script, command, words",
    [
        ("import sys; sys.stderr.write('boom: no module named om\\n'); sys.exit(3)", "python3", "did not answer initialize: boom"),
        ("print('hello from a server that forgot the protocol')", "python3", "other than JSON-RPC"),
        (LISTS_ONLY_STATUS, "python3", "lacks tools: prime, view, view_all, recall, pending, apply, pause, resume"),
        ("import time; time.sleep(60)", "python3", "did not answer tools/list within 5 s"),
        ("", "no-such-python-here", "no-such-python-here is not on PATH"),
    ],
)
def test_the_mcp_check_fails_with_the_reason_when_the_server_does_not_serve_its_tools(tmp_path, script, command, words):
    store = make_store(tmp_path)
    home = make_home(tmp_path, writable=store)
    fake_server(home, script, command)
    r = doctor(home, store)
    c = check(r, "codex.mcp")
    assert c["status"] == "fail" and words in c["finding"], c
    assert c["fix"] and r.returncode == 1


def test_the_mcp_check_warns_when_the_plugin_declares_no_server(tmp_path):
    store = make_store(tmp_path)
    c = check(doctor(make_home(tmp_path, writable=store), store), "codex.mcp")
    assert c["status"] == "warn" and "declares no MCP server" in c["finding"]
    assert "codex plugin add om@observational-memory" in c["fix"]


def test_runtime_reports_the_update_channel_and_whether_a_plugin_manages_it(tmp_path):
    store = make_store(tmp_path)
    home = make_home(tmp_path, writable=store)
    config = tmp_path / "config"
    r = doctor(home, store, env={"XDG_CONFIG_HOME": str(config)})
    finding = check(r, "runtime.version")["finding"]
    # Run from this checkout: its bin/ carries the plugin's marker, yet git, not a plugin, updates it.
    assert f"a source checkout in {ROOT} (update it with git pull), update channel stable" in finding
    standalone = tmp_path / "standalone"
    shutil.copytree(ROOT / "om", standalone / "om", ignore=shutil.ignore_patterns("__pycache__"))
    r = run_om("doctor", "--json", "--store", store, cwd=tmp_path,
               env={"CODEX_HOME": str(home), "PYTHONPATH": str(standalone), "XDG_CONFIG_HOME": str(config)})
    assert "standalone, update channel stable" in check(r, "runtime.version")["finding"]
    (config / "om").mkdir(parents=True)
    (config / "om" / "channel.json").write_text('{"channel": "nightly"}\n')
    assert "update channel nightly" in check(doctor(home, store, env={"XDG_CONFIG_HOME": str(config)}), "runtime.version")["finding"]
    # A runtime with the managed marker beside it, as the plugin installs one.
    runtime = tmp_path / "runtime"
    shutil.copytree(ROOT / "om", runtime / "om", ignore=shutil.ignore_patterns("__pycache__"))
    (runtime / ".observational-memory-managed").write_text("om@observational-memory\n")
    r = run_om("doctor", "--json", "--store", store, cwd=tmp_path,
               env={"CODEX_HOME": str(home), "PYTHONPATH": str(runtime), "XDG_CONFIG_HOME": str(config)})
    assert "plugin-managed" in check(r, "runtime.version")["finding"]


def test_hook_python_fails_without_python3_and_warns_on_a_gone_or_shim_interpreter(tmp_path):
    store = make_store(tmp_path)
    home = make_home(tmp_path, writable=store)
    recorded = data_folder(store) / ".om-python"
    recorded.write_text(str(tmp_path / "deleted" / "python3") + "\n")
    c = check(doctor(home, store), "runtime.hook_python")
    assert c["status"] == "warn" and "is gone" in c["finding"] and ".om-python" in c["fix"]
    recorded.unlink()
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    r = doctor(home, store, env={"PATH": str(empty)})
    c = check(r, "runtime.hook_python")
    assert c["status"] == "fail" and "no python3 on PATH" in c["finding"] and r.returncode == 1
    assert check(r, "capture")["status"] == "skip" and "runtime.hook_python" in check(r, "capture")["finding"]
    # A shim before anything is recorded is no fault: the launcher records the interpreter behind it.
    shims = tmp_path / ".pyenv" / "shims"
    shims.mkdir(parents=True)
    (shims / "python3").write_text("#!/bin/sh\n")
    (shims / "python3").chmod(0o755)
    c = check(doctor(home, store, env={"PATH": str(shims)}), "runtime.hook_python")
    assert c["status"] == "ok" and "the hooks record the interpreter behind it on their first run" in c["finding"]
    plain = tmp_path / "usr-bin"
    plain.mkdir()
    (plain / "python3").write_text("#!/bin/sh\n")
    (plain / "python3").chmod(0o755)
    c = check(doctor(home, store, env={"PATH": str(plain)}), "runtime.hook_python")
    assert c["status"] == "ok" and "not recorded yet" in c["finding"]


def test_a_store_path_that_is_a_file_fails(tmp_path):
    store = tmp_path / "store-file"
    store.write_text("not a folder")
    r = doctor(make_home(tmp_path), store)
    c = check(r, "store.exists")
    assert c["status"] == "fail" and "not a directory" in c["finding"] and c["fix"] and r.returncode == 1


def test_a_database_readable_by_others_is_a_permission_warning(tmp_path):
    store = make_store(tmp_path)
    (session,) = [d for d in store.iterdir() if d.name.startswith("session-")]
    os.chmod(session / "memory.sqlite3", 0o644)
    c = check(doctor(make_home(tmp_path, writable=store), store), "store.permissions")
    assert c["status"] == "warn" and "memory.sqlite3" in c["finding"]


def test_a_codex_config_that_is_not_toml_fails(tmp_path):
    store = make_store(tmp_path)
    home = make_home(tmp_path, writable=store)
    (home / "config.toml").write_text("[plugins\nenabled = \n")
    r = doctor(home, store)
    c = check(r, "codex.plugin")
    assert c["status"] == "fail" and "not valid TOML" in c["finding"] and r.returncode == 1


@pytest.mark.parametrize(
    "edit, words",
    [
        (lambda text: text.replace('trusted_hash = "sha256:', 'enabled = false\ntrusted_hash = "sha256:', 1),
         "disabled: SessionStart"),
        (lambda text: text.replace('trusted_content_hash = "sha256:' + "1" * 64 + '"', "", 1),
         "changed since trusted: SessionStart"),
    ],
)
def test_a_disabled_hook_or_one_without_its_bundle_trust_fails(tmp_path, edit, words):
    store = make_store(tmp_path)
    home = make_home(tmp_path, writable=store)
    (tmp_path / "codex-bin" / "codex").unlink()  # Codex cannot be asked: config.toml is read instead
    config = home / "config.toml"
    config.write_text(edit(config.read_text()))
    r = doctor(home, store)
    c = check(r, "codex.hooks")
    assert c["status"] == "fail" and words in c["finding"] and r.returncode == 1


def test_the_text_report_gives_the_same_findings_as_json(tmp_path):
    store = make_store(tmp_path, outcome="failed")
    home = make_home(tmp_path, trust=False)
    os.chmod(store, 0o755)
    data = doctor(home, store)
    text = run_om("doctor", "--store", store, env={"CODEX_HOME": str(home), "PATH": f"{tmp_path / 'codex-bin'}:{os.environ['PATH']}",
                                                   "CLAUDE_CONFIG_DIR": str(home / "no-claude")})
    assert text.returncode == data.returncode == 1
    lines = text.stdout.splitlines()
    assert lines[0] == f"om doctor: {data.json['status']} (for Codex; store {data.json['store']})"
    for c in data.json["checks"]:
        row = next(line for line in lines if line.split()[1:2] == [c["check"]])
        assert row.split()[0] == c["status"] and row.endswith(c["finding"])
        if c["fix"]:
            assert lines[lines.index(row) + 1].strip() == "fix: " + c["fix"]


def test_a_failure_older_than_a_day_no_longer_warns(tmp_path):
    import time

    from om.receipts import record

    store = make_store(tmp_path, receipts=False)
    home = make_home(tmp_path, writable=store)
    for e in EVENTS:
        record(str(store), e, "ok", 30.0)
    record(str(store), "Stop", "failed", 12.0, now=time.time() - 2 * 86400)
    record(str(store), "Stop", "ok", 20.0)
    c = check(doctor(home, store), "capture.Stop")
    assert c["status"] == "ok" and "2 run(s)" not in c["finding"] and "3 run(s)" in c["finding"]


def test_codex_reporting_the_hooks_modified_fails_though_config_toml_still_trusts_them(tmp_path):
    # What a `codex plugin add` of changed plugin files leaves: the same trust entries,
    # which Codex now reports as modified and skips.
    store = make_store(tmp_path)
    home = make_home(tmp_path, writable=store, codex_says="modified")
    r = doctor(home, store)
    assert check(r, "codex.hooks")["status"] == "ok"
    c = check(r, "codex.trust")
    assert c["status"] == "fail" and r.returncode == 1
    assert "Codex 0.169.0 will not run these om hooks (modified: Interrupt, PostToolUse, SessionStart, Stop, UserPromptSubmit)" in c["finding"]
    assert "installed plugin files differ" in c["finding"] and "/hooks" in c["fix"]
    fake_codex(home, {e: "trusted" for e in EVENTS})
    assert check(doctor(home, store), "codex.trust") == {
        "check": "codex.trust", "status": "ok", "fix": "",
        "finding": "Codex 0.169.0 reports all 5 om hooks trusted and enabled (hooks/list)"}


def test_without_codex_on_path_doctor_warns_that_it_could_not_ask_codex(tmp_path):
    store = make_store(tmp_path)
    home = make_home(tmp_path, writable=store)
    (tmp_path / "codex-bin" / "codex").unlink()
    r = doctor(home, store)
    c = check(r, "codex.trust")
    assert c["status"] == "warn" and "no codex on PATH" in c["finding"] and "put codex on PATH" in c["fix"]
    assert r.returncode == 0


def test_a_codex_that_exits_without_answering_is_reported_not_trusted(tmp_path):
    store = make_store(tmp_path)
    home = make_home(tmp_path, writable=store)
    (tmp_path / "codex-bin" / "codex").write_text("#!/bin/sh\nexit 1\n")
    c = check(doctor(home, store), "codex.trust")
    assert c["status"] == "warn" and "app-server exited without answering" in c["finding"]


def test_receipts_older_than_the_installed_plugin_copy_warn_that_the_hooks_have_not_run_since(tmp_path):
    from om.receipts import record

    store = make_store(tmp_path, receipts=False)
    for e in EVENTS:
        record(str(store), e, "ok", 30.0, now=time.time() - 7200)
    home = make_home(tmp_path, writable=store, installed_ago=60)
    r = doctor(home, store)
    for event in ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"):
        c = check(r, f"capture.{event}")
        assert c["status"] == "warn" and c["finding"].startswith("no run since the plugin copy was installed at "), c
        assert "/hooks" in c["fix"]
    assert check(r, "capture.Interrupt")["status"] == "ok"
    assert r.returncode == 0
    for e in EVENTS:
        record(str(store), e, "ok", 30.0)
    assert all(c["status"] == "ok" for c in doctor(home, store).json["checks"] if c["check"].startswith("capture."))


def test_with_the_store_a_regular_file_capture_is_not_judged_the_store_is_the_one_cause(tmp_path):
    home = make_home(tmp_path)
    (home / "om").write_text("not a folder")
    r = doctor(home, None)
    assert check(r, "store.exists")["status"] == "fail"
    assert check(r, "capture")["finding"] == "not judged: see store.exists, which keeps the hooks from running"
    assert not [c for c in r.json["checks"] if c["check"].startswith("capture.")]


def test_a_failed_hook_names_its_logged_reason_and_the_log_not_an_event_file(tmp_path):
    store = make_store(tmp_path)
    home = make_home(tmp_path, writable=store)
    event = {"hook_event_name": "Stop", "session_id": "s1", "turn_id": "t1", "cwd": str(tmp_path),
             "last_assistant_message": "done", "stop_hook_active": False}
    (store / "session-x").mkdir()
    # A ledger that cannot be opened: the Stop hook fails open and logs why.
    from om.store import database_path

    db = database_path(str(store), "s1")
    os.chmod(db, 0)
    try:
        if os.access(db, os.R_OK):
            os.chmod(db, 0o600)
            with open(db, "wb") as f:
                f.write(b"not a database at all" * 10)
        hooked = run_om("--store", store, "hook", "--client", "codex", input=json.dumps(event))
        assert hooked.returncode == 0 and "hook failed open" in hooked.stdout
    finally:
        os.chmod(db, 0o600)
    c = check(doctor(home, store), "capture.Stop")
    assert c["status"] == "fail" and "; logged: " in c["finding"]
    assert f"tail -n 20 '{store / 'hook-errors.log'}'" in c["fix"]
    assert "event.json" not in c["fix"] and "om --store" not in c["fix"]


def test_interrupt_that_never_ran_is_ok_and_one_that_failed_fails(tmp_path):
    from om.receipts import record

    store = make_store(tmp_path, receipts=False)
    home = make_home(tmp_path, writable=store)
    c = check(doctor(home, store), "capture.Interrupt")
    assert c["status"] == "ok" and "runs only when you interrupt a turn" in c["finding"]
    record(str(store), "Interrupt", "failed", 3.0)
    assert check(doctor(home, store), "capture.Interrupt")["status"] == "fail"


def test_a_store_path_holding_a_percent_sign_passes_integrity_as_capture_and_status_do(tmp_path):
    store = tmp_path / "a%41b"
    r = run_om("--store", store, "--session", "s1", "capture", input=json.dumps({"kind": "user", "text": "x", "key": "k"}))
    assert r.returncode == 0 and run_om("--store", store, "--session", "s1", "status").returncode == 0
    c = check(doctor(make_home(tmp_path, writable=store), store), "store.integrity")
    assert c["status"] == "ok", c


def test_the_rerun_line_and_the_fixes_name_this_runtime_by_a_command_that_runs_as_written(tmp_path):
    store = make_store(tmp_path, receipts=False)
    home = make_home(tmp_path, writable=store)
    r = doctor(home, store)
    assert r.json["run_as"] == f"python3 {shlex.quote(str(ROOT / 'bin' / 'om'))}"
    assert r.json["rerun"] == f"{r.json['run_as']} doctor --store '{store}'"
    assert check(r, "capture.Stop")["fix"].endswith(f"then rerun {r.json['rerun']}")
    text = run_om("doctor", "--store", store, env={"CODEX_HOME": str(home)})
    assert text.stdout.splitlines()[-1] == f"run again: {r.json['rerun']}"
    import subprocess

    again = subprocess.run(r.json["rerun"] + " --json", shell=True, cwd=tmp_path, capture_output=True, text=True,
                           env={"CODEX_HOME": str(home), "PATH": os.environ["PATH"], **bytecode_env()})
    assert json.loads(again.stdout)["store"] == str(store)
    # Without --store, doctor checks the plugin's data folder, and so does the command it names.
    assert doctor(home, None).json["rerun"] == f"{r.json['run_as']} doctor"


def test_the_mcp_doctor_tool_returns_the_report_doctor_prints(tmp_path):
    from mcp_client import McpServer

    store = make_store(tmp_path)
    home = make_home(tmp_path, writable=store)
    env = {"CODEX_HOME": str(home), "PATH": f"{tmp_path / 'codex-bin'}:{os.environ['PATH']}"}
    srv = McpServer(store=store, env=env)
    srv.initialize()
    (tool,) = [t for t in srv.request("tools/list")["result"]["tools"] if t["name"] == "doctor"]
    assert tool["annotations"]["readOnlyHint"] is True and tool["inputSchema"]["required"] == []
    text = srv.ok("doctor")
    assert srv.close() == 0
    printed = run_om("doctor", "--store", store, env=env).stdout
    strip = lambda t: [line for line in t.splitlines() if "codex.mcp" not in line and "run again" not in line]  # noqa: E731
    assert strip(text) == strip(printed)
    assert "codex.trust" in text and text.startswith("om doctor: ")


def test_with_hooks_codex_will_not_run_trust_is_the_one_verdict_and_capture_is_not_judged(tmp_path):
    store = make_store(tmp_path, receipts=False)
    r = doctor(make_home(tmp_path, writable=store, codex_says="untrusted", mcp=True), store)
    trust = check(r, "codex.trust")
    assert trust["status"] == "fail" and "trust the om hooks when it asks at start-up" in trust["fix"]
    assert "docs/codex.md#trust-without-the-tui" in trust["fix"]
    # codex.hooks makes no claim about trust when Codex answered: no ok next to the fail.
    hooks = check(r, "codex.hooks")
    assert hooks["status"] == "ok" and "trust" not in hooks["finding"].split("(")[0]
    assert [c["check"] for c in r.json["checks"] if c["status"] in ("warn", "fail", "skip")] == ["codex.trust", "capture"]


def test_every_fix_that_is_a_command_works_run_as_printed_in_the_order_printed(tmp_path):
    import subprocess

    store = make_store(tmp_path)
    home = make_home(tmp_path, writable=store, mcp=True)
    (data_folder(store) / ".om-python").write_text(str(tmp_path / "gone" / "python3") + "\n")
    os.chmod(store, 0o755)
    setup_om("--store", store, "--session", "s2", "capture", input=json.dumps({"kind": "user", "text": "y", "key": "k"}))
    (damaged,) = [p for p in store.glob("session-*/memory.sqlite3") if p.parent.name != check_session_dir(store)]
    damaged.write_bytes(b"SQLite format 3\x00" + b"\x00" * 84 + os.urandom(4000))
    fixes = [(c["check"], c["fix"]) for c in doctor(home, None).json["checks"] if c["status"] != "ok"]
    assert [name for name, _ in fixes] == ["runtime.hook_python", "store.permissions", "store.integrity"], fixes
    for name, fix in fixes:
        ran = subprocess.run(["/bin/sh", "-c", fix], cwd=tmp_path, capture_output=True, text=True,
                             env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)})
        assert ran.returncode == 0, (name, fix, ran.stderr)
    after = doctor(home, None).json
    assert after["status"] == "ok", [c for c in after["checks"] if c["status"] != "ok"]


def check_session_dir(store):
    """The directory of session s1, the one whose receipts make_store recorded."""
    from om.ids import session_hash

    return f"session-{session_hash('s1')}"


def test_the_project_memory_is_reported_with_its_home_projects_size_and_a_loose_mode_is_fixed_as_printed(tmp_path):
    import subprocess

    store = make_store(tmp_path)
    codex = make_home(tmp_path, writable=store)
    projects = tmp_path / "projects"
    env = {"OM_PROJECT_HOME": str(projects)}
    before = check(doctor(codex, store, env=env), "project.memory")
    assert before["status"] == "ok" and f"project home {projects} ($OM_PROJECT_HOME) is not created yet" in before[
        "finding"]
    folder = tmp_path / "repo"
    folder.mkdir()
    entry = run_om("--store", store, "--session", "s1", "apply", env=env, input=json.dumps({
        "through": 1, "observations": [{"text": "Ports: 8080 for the API.", "source_ids": [
            run_om("--store", store, "--session", "s1", "pending").json["sources"][0]["id"]]}]})).json["observations"][0]
    promoted = run_om("--store", store, "--session", "s1", "promote", entry, "--project", str(folder), env=env)
    assert promoted.returncode == 0, promoted

    report = doctor(codex, store, env=env)
    memory, permissions = check(report, "project.memory"), check(report, "project.permissions")
    assert memory["status"] == "ok" and f"project home {projects} ($OM_PROJECT_HOME): 1 project, 1 active entry" \
        in memory["finding"] and "(0 retired)" in memory["finding"]
    assert memory["finding"].endswith(("bytes", "KB", "MB"))
    assert permissions["status"] == "ok" and report.returncode == 0

    (database,) = projects.glob("session-*/memory.sqlite3")
    os.chmod(projects, 0o755)
    os.chmod(database, 0o644)
    loose = check(doctor(codex, store, env=env), "project.permissions")
    assert loose["status"] == "warn" and "readable by other users" in loose["finding"]
    ran = subprocess.run(["/bin/sh", "-c", loose["fix"]], cwd=tmp_path, capture_output=True, text=True,
                         env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)})
    assert ran.returncode == 0, ran.stderr
    assert check(doctor(codex, store, env=env), "project.permissions")["status"] == "ok"
    assert os.stat(projects).st_mode & 0o777 == 0o700 and os.stat(database).st_mode & 0o777 == 0o600
    text = run_om("doctor", "--store", store, env={"CODEX_HOME": str(codex), **env}).stdout
    assert "project.memory" in text and "project.permissions" in text
