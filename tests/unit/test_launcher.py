"""The launcher runs the payload it names, with short and with long interpreter paths."""

import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from om import __version__
from om.selfupdate import layout


@pytest.mark.parametrize("depth", [0, 12], ids=["short-shebang", "long-path-via-sh"])
def test_the_launcher_runs_om_from_the_named_directory(tmp_path, depth):
    where = tmp_path
    for i in range(depth):
        where = where / ("long-directory-name-%02d" % i)
    where.mkdir(parents=True, exist_ok=True)
    python = where / "python3"
    os.symlink(sys.executable, python)
    launcher = tmp_path / "bin" / "om"
    lib = tmp_path / "lib"  # a version's own copy, as installed (running the tree's would write bytecode into it)
    shutil.copytree(ROOT / "om", lib / "om", ignore=shutil.ignore_patterns("__pycache__"))
    layout.write_launcher(str(launcher), str(python), str(lib))
    text = launcher.read_text()
    assert text.startswith("#!/bin/sh\n" if depth else f"#!{python} -IS\n")
    assert os.stat(launcher).st_mode & 0o777 == 0o755
    p = subprocess.run([str(launcher), "--version"], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert (p.returncode, p.stdout) == (0, f"om {__version__}\n"), p.stderr
    assert not [n for n in os.listdir(launcher.parent) if n != "om"]
