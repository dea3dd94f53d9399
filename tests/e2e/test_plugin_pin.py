"""Pinning the plugin end to end: build, publish with --pin, then the registered hook runs it.

The plugin tree is a copy of the files git tracks (what a marketplace clone carries);
the hook command is taken verbatim from hooks/codex.json and run by sh with the variables
Codex 0.169.0 sets, on a SessionStart payload it sent to a plugin.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys

from conftest import ROOT, bytecode_env
from dist_support import fake_github  # noqa: F401
from om.selfupdate import pins

FIXTURE = json.loads((ROOT / "tests" / "fixtures" / "codex-0.169.0" / "session-start.plugin.payload.json").read_text())
MARKER = ".observational-memory-managed"


def plugin_tree(tmp_path):
    root = tmp_path / "plugins" / "cache" / "observational-memory" / "om" / "0.1.0"
    plugin = ROOT
    listed = subprocess.run(["git", "ls-files", "-z", "--cached"], cwd=plugin, capture_output=True, check=True).stdout
    for rel in filter(None, listed.decode().split("\0")):
        if not (plugin / rel).is_file():
            continue
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(plugin / rel, root / rel)
    return root


def tool_env(tmp_path):
    return {"PATH": "/usr/bin:/bin", "GITHUB_TOKEN": "RELEASE-TOKEN", "SOURCE_DATE_EPOCH": "1767225600",
            "HOME": str(tmp_path), **bytecode_env()}


def publish(fake, tmp_path, plugin, tag, *args):
    return subprocess.run(
        [sys.executable, str(ROOT / "release" / "publish.py"), "--api-url", fake.api_url, "--repo", fake.repo,
         "--out-dir", str(tmp_path / "dist"), "--target", "abc123", "--tag", tag, "--plugin-root", str(plugin),
         *args],
        capture_output=True, text=True, env=tool_env(tmp_path), timeout=180,
    )


def registered_hook(plugin, data, event="SessionStart"):
    """Run the command hooks/codex.json registers for `event`, as Codex does; return the response."""
    command = json.loads((plugin / "hooks" / "codex.json").read_text())["hooks"][event][0]["hooks"][0]["command"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OM_", "PLUGIN_", "CLAUDE_"))}
    env.update(PLUGIN_ROOT=str(plugin), CLAUDE_PLUGIN_ROOT=str(plugin),
               PLUGIN_DATA=str(data), CLAUDE_PLUGIN_DATA=str(data),
               # a throwaway home (to see what lands there), and python3 found without a home-based shim
               HOME=str(data.parent / "userhome"),
               PATH=os.path.dirname(os.path.realpath(sys.executable)) + os.pathsep + env.get("PATH", ""))
    proc = subprocess.run(["/bin/sh", "-c", command], input=json.dumps(FIXTURE["payload"]).encode(),
                          capture_output=True, env=env, cwd="/", timeout=60)
    assert proc.returncode == 0, proc
    return json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"], proc.stderr.decode()


def published_asset(fake, name):
    asset = next(a for r in fake.releases for a in r["assets"] if a["name"] == name)
    return fake.blobs[asset["id"]]


def test_a_pinned_release_ships_in_the_plugin_tree_and_the_registered_hook_runs_it(fake_github, tmp_path):
    plugin = plugin_tree(tmp_path)
    p = publish(fake_github, tmp_path, plugin, "v1.4.0", "--pin")
    assert p.returncode == 0, p.stderr
    # The plugin tree carries the published bytes, and git would commit them.
    shipped = plugin / "runtime" / "om-1.4.0.pyz"
    assert shipped.read_bytes() == published_asset(fake_github, "om-1.4.0.pyz")
    pin = pins.load(plugin / "plugin-pins.json")
    assert (pin["version"], pin["sha256"]) == ("1.4.0", hashlib.sha256(shipped.read_bytes()).hexdigest())
    for rel in ("runtime/om-1.4.0.pyz", "plugin-pins.json"):
        assert subprocess.run(["git", "check-ignore", "-q", rel], cwd=ROOT).returncode == 1, rel
    # The pin is downloaded back without the release token reaching the download host.
    downloads = [q for q in fake_github.requests if q["server"] == "cdn" and q["method"] == "GET"]
    assert downloads and all("authorization" not in q["headers"] for q in downloads)

    data = tmp_path / "plugins" / "data" / "om-observational-memory"
    context, _ = registered_hook(plugin, data)
    installed = data / "runtime" / "1.4.0" / "om"
    assert f" {installed} --store " in context  # the command the runtime advertises names itself
    assert (installed.parent / "om-1.4.0.pyz").read_bytes() == shipped.read_bytes()
    assert (installed.parent / MARKER).is_file()
    assert (data / "runtime" / "active").read_text().splitlines() == [str(plugin), str(installed), shipped.name]
    # unpacked once: no shiv bootstrap per event, nothing under the user's ~/.shiv
    assert (installed.parent / "lib" / "om" / "__init__.py").is_file()
    assert not (data.parent / "userhome" / ".shiv").exists()
    version = subprocess.run([sys.executable, "-I", "-S", str(installed), "--version"],
                             capture_output=True, text=True, timeout=60)
    assert version.stdout == "om 1.4.0\n", version

    fake_github.requests.clear()
    env = dict(tool_env(tmp_path), OM_UPDATE_API_URL=fake_github.api_url, OM_UPDATE_REPO=fake_github.repo,
               SHIV_ROOT=str(tmp_path / "shiv"))
    for args in (["self", "update", "--check"], ["self", "update"]):
        refusal = subprocess.run([sys.executable, "-I", "-S", str(installed), *args], capture_output=True,
                                 text=True, env=env, timeout=60)
        assert refusal.returncode == 67 and "managed by the om Codex plugin" in refusal.stderr, refusal
    assert fake_github.requests == []


def test_a_tampered_pinned_asset_is_never_run_and_the_bundled_source_takes_over(fake_github, tmp_path):
    plugin = plugin_tree(tmp_path)
    assert publish(fake_github, tmp_path, plugin, "v1.4.0", "--pin").returncode == 0
    shipped = plugin / "runtime" / "om-1.4.0.pyz"
    data_bytes = bytearray(shipped.read_bytes())
    data_bytes[len(data_bytes) // 2] ^= 0xFF  # same size: only the sha256 can tell
    shipped.write_bytes(bytes(data_bytes))

    data = tmp_path / "data"
    context, stderr = registered_hook(plugin, data)
    assert f" {plugin}/bin/om --store " in context
    assert "does not match the pinned sha256" in stderr
    assert not (data / "runtime" / "1.4.0" / "om-1.4.0.pyz").exists()
    assert not (data / "runtime" / "1.4.0" / "om").exists()
    assert not (data / "runtime" / "active").exists()


def test_re_pinning_the_same_plugin_tree_switches_hooks_to_the_new_release(fake_github, tmp_path):
    plugin = plugin_tree(tmp_path)
    assert publish(fake_github, tmp_path, plugin, "v1.4.0", "--pin").returncode == 0
    data = tmp_path / "data"
    registered_hook(plugin, data)
    assert publish(fake_github, tmp_path, plugin, "v1.5.0").returncode == 0  # published, not pinned
    assert pins.load(plugin / "plugin-pins.json")["version"] == "1.4.0"
    p = subprocess.run(
        [sys.executable, str(ROOT / "release" / "pin_plugin.py"), "--api-url", fake_github.api_url,
         "--repo", fake_github.repo, "--tag", "v1.5.0", "--plugin-root", str(plugin)],
        capture_output=True, text=True, env=tool_env(tmp_path), timeout=60,
    )
    assert p.returncode == 0, p.stderr
    assert sorted(x.name for x in (plugin / "runtime").iterdir()) == ["om-1.5.0.pyz"]
    context, _ = registered_hook(plugin, data)
    assert f" {data / 'runtime' / '1.5.0' / 'om'} --store " in context


def test_pinning_refuses_a_release_whose_published_bytes_match_no_checksum(fake_github, tmp_path):
    plugin = plugin_tree(tmp_path)
    before = (plugin / "plugin-pins.json").read_bytes()
    fake_github.add_release("v1.6.0", b"PK not the built bytes", sums_text="0" * 64 + "  om-1.6.0.pyz\n")
    p = subprocess.run(
        [sys.executable, str(ROOT / "release" / "pin_plugin.py"), "--api-url", fake_github.api_url,
         "--repo", fake_github.repo, "--tag", "v1.6.0", "--plugin-root", str(plugin)],
        capture_output=True, text=True, env=tool_env(tmp_path), timeout=60,
    )
    assert p.returncode == 1 and "does not match SHA256SUMS" in p.stderr, p
    assert (plugin / "plugin-pins.json").read_bytes() == before
    assert not (plugin / "runtime").exists()
