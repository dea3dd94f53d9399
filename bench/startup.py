#!/usr/bin/env python3
"""Start-up time of the installed `om` against the bare interpreter, measured in one run.

Builds the zipapp, installs it standalone into a temporary directory (launcher + extracted
payload), then times, with the same real interpreter (the binary behind any venv link or
pyenv shim; the launcher must name it too) and interleaved rounds:
    bare       python3 -I -S -c pass
    installed  <launcher> --version        (what shells and hooks run)
    source     python3 -I -S -c '<import om.cli from the tree>' --version (launcher's floor)
    pyz        python3 -I om.pyz --version  (the shiv zipapp run directly, warm cache)
    hook       <launcher> --store S hook --client codex < UserPromptSubmit (the hook path)
    hook-src   the same hook command from the source tree
    status     <launcher> --store S --session s1 status   (a ledger command: parse, open, print)
    status-src the same status command from the source tree
    capture    <launcher> --store S --session s1 capture < {kind,text,key} (the same key: one row)
    capture-src the same capture command from the source tree
and prints medians and ratios to `bare`. With `--against DIR` (another checkout, e.g. a
worktree of main) the source-tree rows also run from DIR's tree in the same rounds,
as `<row>@base`, so a change is read against its baseline in one run. bench/hook.py measures the hook on big ledgers.

Usage: python bench/startup.py [--rounds 40] [--against DIR]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The same import and call as the launcher, from the source tree: the launcher's own cost is the difference.
SOURCE = "import sys; sys.argv[0] = 'om'; sys.path.insert(0, %r); from om.cli import main; sys.exit(main())"


PROMPT = (b'{"session_id":"bench","turn_id":"t1","cwd":"/","model":"mock","transcript_path":null,'
          b'"permission_mode":"default","hook_event_name":"UserPromptSubmit","prompt":"Please fix the bug"}')


CAPTURE = b'{"kind":"tool","text":"ls -la\\ntotal 0","key":"bench-capture"}'


def timed(cmd, env):
    stdin = PROMPT if "hook" in cmd else CAPTURE if "capture" in cmd else b""
    t = time.perf_counter()
    subprocess.run(cmd, env=env, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


def _launcher_interpreter(launcher):
    """The interpreter the installed launcher's first line names (either launcher form)."""
    first, second = launcher.read_text().splitlines()[:2]
    if first.startswith("#!/bin/sh"):
        return second.split("exec ", 1)[1].split(" -IS", 1)[0].strip("'")
    return first[2:].rsplit(" -IS", 1)[0]


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=40)
    p.add_argument("--against", type=Path, help="another checkout whose source-tree rows run in the same rounds")
    args = p.parse_args(argv)
    import importlib.util

    spec = importlib.util.spec_from_file_location("zipapp_build", ROOT / "build" / "zipapp.py")
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    # The real binary, not a venv link or a pyenv shim: -I -S ignores site-packages anyway.
    python = os.path.realpath(sys.executable)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        pyz = builder.build(root=ROOT, out_dir=tmp / "dist")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp), "OM_HOME": str(tmp / "home"),
               "OM_BIN_DIR": str(tmp / "bin"), "SHIV_ROOT": str(tmp / "shiv")}
        subprocess.run([python, "-I", str(pyz), "self", "install"], env=env, check=True, stdout=subprocess.DEVNULL)
        launcher_python = _launcher_interpreter(tmp / "bin" / "om")
        if launcher_python != python:
            sys.exit(f"bench/startup.py: the launcher runs {launcher_python}, not {python}: not comparable")
        hook = ["--store", str(tmp / "store"), "hook", "--client", "codex"]
        ledger = ["--store", str(tmp / "store"), "--session", "s1"]
        commands = {
            "bare": [python, "-I", "-S", "-c", "pass"],
            "installed": [str(tmp / "bin" / "om"), "--version"],
            "source": [python, "-I", "-S", "-c", SOURCE % str(ROOT), "--version"],
            "pyz": [python, "-I", str(pyz), "--version"],
            "hook": [str(tmp / "bin" / "om"), *hook],
            "hook-src": [python, "-I", "-S", "-c", SOURCE % str(ROOT), *hook],
            "status": [str(tmp / "bin" / "om"), *ledger, "status"],
            "status-src": [python, "-I", "-S", "-c", SOURCE % str(ROOT), *ledger, "status"],
            "capture": [str(tmp / "bin" / "om"), *ledger, "capture"],
            "capture-src": [python, "-I", "-S", "-c", SOURCE % str(ROOT), *ledger, "capture"],
        }
        if args.against is not None:
            against = args.against.resolve()
            # The package was under plugin/ for a while; before and after, at the root.
            base = str(against / "plugin") if (against / "plugin" / "om").is_dir() else str(against)
            for name in ("source", "hook-src", "status-src", "capture-src"):
                commands[f"{name}@base"] = [*commands[name][:4], SOURCE % base, *commands[name][5:]]
        for cmd in commands.values():  # warm caches (shiv extraction, page cache)
            for _ in range(3):
                timed(cmd, env)
        samples = {name: [] for name in commands}
        for _ in range(args.rounds):
            for name, cmd in commands.items():
                samples[name].append(timed(cmd, env))
    med = {name: statistics.median(v) * 1000 for name, v in samples.items()}
    p95 = {name: statistics.quantiles(v, n=20)[-1] * 1000 for name, v in samples.items()}
    print(f"interpreter: {python} ({sys.version.split()[0]}), {args.rounds} interleaved rounds")
    for name, cmd in commands.items():
        shown = " ".join(cmd[:4] + ["<import om.cli from the tree>", *cmd[5:]] if "-c" in cmd and name != "bare" else cmd)
        print(f"{name:16s} median {med[name]:6.1f} ms  p95 {p95[name]:6.1f} ms  "
              f"x{med[name] / med['bare']:.2f} of bare   {shown.replace(str(tmp), '$TMP')}")
    print(f"installed is x{med['pyz'] / med['installed']:.2f} faster than running the pyz directly")
    return 0


if __name__ == "__main__":
    sys.exit(main())
