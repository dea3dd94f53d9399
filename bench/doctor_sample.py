"""Print a sample `om doctor` report from a real Codex run.

Installs the plugin into a throwaway CODEX_HOME with the real `codex plugin`
commands (Codex CLI from scripts/install-codex, or $OM_CODEX_BIN), trusts its
hooks as the hook review does, runs one `codex exec` turn in the default
sandbox against the scripted mock model, then runs the installed plugin's
`bin/om doctor` against that CODEX_HOME and prints its human-readable report
(`--json` prints the JSON report instead).

Usage: python bench/doctor_sample.py [--json]
"""

import json
import os
import shutil
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests", "e2e"), os.path.join(ROOT, "tests")]

import codex_harness  # noqa: E402
import doctor_run  # noqa: E402


def main():
    work = tempfile.mkdtemp(prefix="om-doctor-sample-")
    try:
        marketplace = codex_harness.export_marketplace(os.path.join(work, "marketplace"))
        (rc, _events, err), report, text, codex_home = doctor_run.run(
            codex_harness.codex_binary(), marketplace, os.path.join(work, "codex"))
        if rc != 0:
            raise SystemExit(f"codex exec failed ({rc}): {err[-2000:]}")
        # The throwaway folder's name is noise in a sample; show it as $CODEX_HOME.
        home = str(codex_home.home)
        if "--json" in sys.argv[1:]:
            report.pop("exit", None)
            print(json.dumps(report, indent=2).replace(home, "$CODEX_HOME"))
        else:
            print(text.replace(home, "$CODEX_HOME"), end="")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
