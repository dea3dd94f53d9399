"""The hook path and the built pyz work, and take their shortcuts, on every supported CPython.

The supported versions are the `Programming Language :: Python :: 3.N` classifiers of
pyproject.toml. Each test finds that interpreter on this machine (PATH, pyenv, the usual
system prefixes). Outside CI a missing one is skipped; with CI=true it fails, because a CI
run that silently drops a Python proves nothing about it.
"""

import glob
import json
import os
import re
import shutil
import subprocess

import jsonschema
import pytest

from conftest import ROOT, isolated
from dist_support import pyz

SCHEMAS = ROOT / "tests" / "fixtures" / "codex-0.169.0"
PLUGIN = ROOT
REGISTERED = json.loads((PLUGIN / "hooks" / "codex.json").read_text())["hooks"]
SUPPORTED = re.findall(
    r'"Programming Language :: Python :: (3\.\d+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8")
)
# What the hook must never import on any version: the public modules the fence avoids.
HEAVY = {"json", "re", "enum", "hashlib", "_hashlib", "functools", "collections", "shlex", "sqlite3", "os", "posixpath",
         "_collections_abc",
         "argparse", "datetime", "typing", "pathlib", "subprocess", "threading"}


def test_the_supported_versions_are_declared_from_3_9_on():
    assert SUPPORTED[0] == "3.9" and len(SUPPORTED) >= 5, SUPPORTED


def _candidates(version):
    name = f"python{version}"
    on_path = shutil.which(name)
    if on_path:
        yield on_path
    pyenv = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    yield from sorted(glob.glob(os.path.join(pyenv, "versions", f"{version}.*", "bin", name)), reverse=True)
    for prefix in ("/usr/bin", "/usr/local/bin", "/opt/homebrew/bin", "/Library/Frameworks/Python.framework/Versions/"
                   f"{version}/bin"):
        yield os.path.join(prefix, name)


def _probe(path):
    try:
        proc = subprocess.run(
            [path, "-I", "-S", "-c",
             "import sys; print(sys.implementation.name, '%d.%d' % sys.version_info[:2], sys.executable)"],
            capture_output=True, text=True, timeout=30,
        )
    except OSError:
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout.split(None, 2)


def interpreter(version):
    """The real executable of CPython `version`, or skip (fail with CI=true) when there is none."""
    for path in _candidates(version):
        found = os.path.isfile(path) and _probe(path)
        if found and found[0] == "cpython" and found[1] == version:
            return found[2].strip()
    message = f"CPython {version} (supported by om) is not installed on this machine"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def payloads(session):
    recorded = json.loads((SCHEMAS / "session-start.plugin.payload.json").read_text())["payload"]
    start = dict(recorded, session_id=session)
    common = {k: recorded[k] for k in ("transcript_path", "cwd", "model", "permission_mode")}
    common.update(session_id=session, turn_id="turn-1")
    return [
        ("SessionStart", start),
        ("UserPromptSubmit", dict(common, hook_event_name="UserPromptSubmit", prompt="Why does the build fail?")),
        ("PostToolUse", dict(common, hook_event_name="PostToolUse", tool_name="Bash", tool_use_id="call-1",
                             tool_input={"command": "make test"}, tool_response="error: missing header ü\n")),
        ("Stop", dict(common, hook_event_name="Stop", stop_hook_active=False,
                      last_assistant_message="The build lacks a header; added it.")),
    ]


SCHEMA_OF = {"SessionStart": "session-start", "UserPromptSubmit": "user-prompt-submit",
             "PostToolUse": "post-tool-use", "Stop": "stop"}


def _clean_env(**extra):
    # No PYTHON* variable reaches the other interpreters, but the one that keeps bytecode out of the tree.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OM_", "PLUGIN_", "PYTHON")) and k != "OBSERVATIONAL_MEMORY_STORE"
           or k == "PYTHONPYCACHEPREFIX"}
    env.update(extra)
    return env


def _respond(event, out):
    assert out.count("\n") <= 1, out
    if not out.strip():
        return None
    response = json.loads(out)
    schema = json.loads((SCHEMAS / f"{SCHEMA_OF[event]}.command.output.schema.json").read_text())
    jsonschema.validate(response, schema)
    return response


def _pending(argv, store, session, env):
    proc = subprocess.run([*argv, "--store", str(store), "--session", session, "pending"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [(s["kind"], s["text"]) for s in json.loads(proc.stdout)["sources"]]


EXPECTED = [("user", "Why does the build fail?"), ("tool", None), ("assistant", "The build lacks a header; added it.")]


def _assert_captured(sources):
    assert [k for k, _ in sources] == [k for k, _ in EXPECTED], sources
    assert sources[0][1] == EXPECTED[0][1] and sources[2][1] == EXPECTED[2][1]
    assert "make test" in sources[1][1] and "missing header ü" in sources[1][1]


@pytest.mark.parametrize("version", SUPPORTED)
def test_the_registered_codex_hook_captures_real_payloads_without_heavy_imports(version, tmp_path):
    python = interpreter(version)
    data = tmp_path / "plugins" / "data" / "om-observational-memory"
    data.mkdir(parents=True)
    # The launcher remembers its interpreter here; pinning it selects the Python under test.
    (data / ".om-python").write_text(python + "\n")
    # Codex sets both spellings for plugin hooks; its registered command uses PLUGIN_ROOT.
    env = _clean_env(PLUGIN_ROOT=str(PLUGIN), PLUGIN_DATA=str(data), CLAUDE_PLUGIN_ROOT=str(PLUGIN),
                     CLAUDE_PLUGIN_DATA=str(data))
    session = f"py{version}"
    for event, payload in payloads(session):
        command = REGISTERED[event][0]["hooks"][0]["command"]
        proc = subprocess.run(["/bin/sh", "-c", command], input=json.dumps(payload).encode(),
                              capture_output=True, env=env, cwd="/", timeout=60)
        assert proc.returncode == 0 and proc.stderr == b"", proc
        response = _respond(event, proc.stdout.decode())
        if event == "SessionStart":
            assert "Ledger command" in response["hookSpecificOutput"]["additionalContext"]
    # The store is the client's own, beside the plugin folders (tmp_path plays CODEX_HOME).
    _assert_captured(_pending([python, "-I", "-S", str(PLUGIN / "bin" / "om")], tmp_path / "om", session, env))

    # The same runtime, one more event, with its imports listed: the fence held.
    event = dict(payloads(session)[2][1], tool_use_id="call-2")
    proc = subprocess.run([python, "-I", "-S", "-X", "importtime", str(PLUGIN / "bin" / "om"), "hook", "--client",
                           "codex", "--plugin-data", str(data)], input=json.dumps(event).encode(), capture_output=True,
                          env=env, timeout=60)
    assert proc.returncode == 0, proc
    loaded = {line.split("|")[-1].strip() for line in proc.stderr.decode().splitlines()
              if line.startswith("import time:")}
    assert {"om.ledger", "om.fastpath", "_json", "_sqlite3"} <= loaded  # the hook really ran
    assert sorted(loaded & HEAVY) == []


FENCE_AGREES = r"""
import hashlib, json, shlex, sys
sys.path.insert(0, sys.argv[1])
from om import fastpath
from om.jsonio import dumps, loads
assert fastpath.HAVE_C_JSON, "the _json shortcut was not taken"
assert fastpath.sha256.__module__ != "_hashlib" and "openssl" not in repr(fastpath.sha256), fastpath.sha256
doc = {"a": [1, -2.5, 1e300, True, None], "é": "<\u2028>\x00\"\\", "z": {"": []}}
assert loads(json.dumps(doc)) == doc
assert dumps(doc) == json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
assert dumps(doc, sort_keys=True) == json.dumps(doc, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
for data in (b"", b"abc", "é".encode() * 1000):
    assert fastpath.sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
for word in ("", "plain", "it's", "a b", "$HOME", "ü", "'", "a'b\"c"):
    assert fastpath.shell_quote(word) == shlex.quote(word), word
print("ok")
"""


def _prints_ok(version, script):
    """Run `script` (which asserts, then prints ok) on one CPython with the plugin's source as argv[1]."""
    proc = subprocess.run([*isolated(interpreter(version)), "-c", script, str(PLUGIN)], capture_output=True, text=True,
                          env=_clean_env(), timeout=60)
    assert proc.returncode == 0 and proc.stdout == "ok\n", proc.stderr


@pytest.mark.parametrize("version", SUPPORTED)
def test_the_fast_path_shortcuts_are_taken_and_agree_with_their_public_fallbacks(version):
    _prints_ok(version, FENCE_AGREES)


@pytest.mark.parametrize("version", SUPPORTED)
def test_the_built_pyz_runs_and_captures_a_hook_event(version, tmp_path):
    python = interpreter(version)
    artifact = pyz("1.1.0")
    env = _clean_env(SHIV_ROOT=str(tmp_path / "shiv"), HOME=str(tmp_path / "home"))
    run = [python, "-I", str(artifact)]
    proc = subprocess.run([*run, "--version"], capture_output=True, text=True, env=env, timeout=120)
    assert (proc.returncode, proc.stdout) == (0, "om 1.1.0\n"), proc.stderr
    store = tmp_path / "store"
    session = f"pyz{version}"
    for event, payload in payloads(session)[1:]:
        proc = subprocess.run([*run, "--store", str(store), "hook", "--client", "codex"],
                              input=json.dumps(payload).encode(), capture_output=True, env=env, timeout=120)
        assert proc.returncode == 0 and proc.stderr == b"", proc
        _respond(event, proc.stdout.decode())
    _assert_captured(_pending(run, store, session, env))


TOML_READS = r"""
import sys
sys.path.insert(0, sys.argv[1])
from om.tomlio import TomlError, loads
config = '''
sandbox_mode = 'workspace-write'
[plugins."om@om-local"]
enabled = true
[sandbox_workspace_write]
writable_roots = [
  "/data/om",  # the store
  'C:\it"s',
]
'''
assert loads(config) == {"sandbox_mode": "workspace-write", "plugins": {"om@om-local": {"enabled": True}},
                         "sandbox_workspace_write": {"writable_roots": ["/data/om", 'C:\\it"s']}}, loads(config)
try:
    value = loads("timeout = 1.5")
except TomlError as e:
    assert sys.version_info < (3, 11) and e.unsupported and "line 1" in str(e), e
else:
    assert sys.version_info >= (3, 11) and value == {"timeout": 1.5}
print("ok")
"""


@pytest.mark.parametrize("version", SUPPORTED)
def test_codex_config_toml_is_read_exactly_or_refused_clearly(version):
    _prints_ok(version, TOML_READS)


FENCE_FALLS_BACK = r"""
import sys
sys.path.insert(0, sys.argv[1])
for private in ("_json", "_sha256", "_sha2"):
    sys.modules[private] = None  # makes `import` of it raise ImportError
import hashlib, json
from om import fastpath
from om.errors import InputError
from om.jsonio import dumps, loads
assert not fastpath.HAVE_C_JSON and fastpath.sha256 is hashlib.sha256
doc = {"a": [1, -2.5, 1e300, True, None], "é": "<\u2028>\x00\"\\", "z": {"": []}}
assert loads(json.dumps(doc)) == doc and loads(' [1] ') == [1]
assert dumps(doc) == json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
for bad in ("NaN", "[1,]", "1 2", '"\x00"', "[" * 100000):
    try:
        loads(bad)
    except InputError:
        pass
    else:
        raise AssertionError(bad)
from om import ids
assert ids.source_id("user", "k", "t") == "s-" + hashlib.sha256(b'["user","k","t"]').hexdigest()[:24]
print("ok")
"""


@pytest.mark.parametrize("version", SUPPORTED)
def test_without_the_private_modules_the_public_fallbacks_give_the_same_results(version):
    _prints_ok(version, FENCE_FALLS_BACK)
