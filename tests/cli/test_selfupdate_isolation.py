"""Other commands never pay for `om self`: its package is not even imported."""

import subprocess

import pytest

from conftest import ROOT, isolated

PROBE = (
    f"import sys; sys.path.insert(0, {str(ROOT)!r}); from om.cli import main; code = main(sys.argv[1:]); "
    "bad = sorted(m for m in sys.modules if m.startswith('om.selfupdate') or m in ('urllib.request', 'ssl', 'http.client')); "
    "sys.stderr.write('LOADED ' + repr(bad) + '\\n'); sys.exit(code)"
)


@pytest.mark.parametrize("args", [["--version"], ["capabilities"], ["--store", "{tmp}", "--session", "s1", "status"]])
def test_commands_other_than_self_do_not_import_the_updater(tmp_path, args):
    args = [a.replace("{tmp}", str(tmp_path / "store")) for a in args]
    p = subprocess.run([*isolated(), "-S", "-c", PROBE, *args], cwd=ROOT, capture_output=True,
                       text=True, env={"PATH": "/usr/bin:/bin"}, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "LOADED []" in p.stderr


def test_importing_the_self_package_alone_loads_nothing_else():
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); before = set(sys.modules); "
            "import om.selfupdate; print(sorted(set(sys.modules) - before))")
    p = subprocess.run([*isolated(), "-S", "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert p.stdout.strip() == "['om', 'om.selfupdate']"
