"""One real Codex turn with the plugin installed, then `om doctor` on that installation.

Invariant: the plugin is installed by the real `codex plugin` commands, its hooks
trusted as the hook review trusts them, one `codex exec` turn runs against the mock
model in the default sandbox (workspace-write, no writable_roots), and doctor is the
installed plugin's own runtime (`bin/om doctor`) run with that CODEX_HOME and with the
same `codex` first on PATH (doctor asks it whether it runs the hooks), so its findings
are about exactly what a user would have.
"""

import json
import os
import subprocess
import sys

from codex_harness import CodexHome
from mock_model import MockModel, say, shell

DEFAULT_SANDBOX = ("\n[sandbox_workspace_write]\n"
                   "writable_roots = []\n"
                   "exclude_slash_tmp = true\n"
                   "exclude_tmpdir_env_var = true\n")


def one_command_model(request):
    """Run one shell command, then answer; any hook continuation gets a short reply."""
    if request.is_compaction:
        return say("Summary.")
    if any(item.get("role") == "user" and "<hook_prompt" in json.dumps(item) for item in request.items):
        return say("Nothing worth keeping yet.")
    if not request.tool_outputs():
        return shell("echo doctor-sample")
    return say("Printed it.")


def doctor(home):
    """(doctor --json report, doctor text) of the installed plugin's runtime for `home`."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OM_", "CODEX_", "OBSERVATIONAL_MEMORY", "PLUGIN_", "PYTHON", "CLAUDE"))}
    # A Codex-only user: their home has no Claude Code configuration.
    env.update(CODEX_HOME=str(home.home), HOME=str(home.base / "home"))
    env["PATH"] = os.path.dirname(home.codex) + os.pathsep + env.get("PATH", "")
    launcher = [sys.executable, str(home.plugin_root / "bin" / "om"), "doctor"]
    data = subprocess.run(launcher + ["--json"], env=env, capture_output=True, text=True, timeout=60)
    text = subprocess.run(launcher, env=env, capture_output=True, text=True, timeout=60)
    report = json.loads(data.stdout) if data.stdout.strip() else {"stderr": data.stderr}
    report["exit"] = data.returncode
    return report, text.stdout + text.stderr


def run(codex_bin, marketplace_dir, base, then=None):
    """(exec result, doctor --json report, doctor text, CodexHome); the model is stopped on return.

    `then(home)`, when given, runs after the first turn and before doctor (with the model up)."""
    model = MockModel(one_command_model).start()
    try:
        home = CodexHome(codex_bin, base, marketplace_dir, model)
        home.setup(sandbox="workspace-write", top=DEFAULT_SANDBOX)
        turn = home.exec("Print doctor-sample with the shell")
        if then is not None:
            then(home)
        report, text = doctor(home)
        return turn, report, text, home
    finally:
        model.stop()
