"""build/zipapp.py: reproducible, clean-tree shiv builds that are checked before use."""

import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from conftest import ROOT
from dist_support import load_builder


def names(pyz):
    with zipfile.ZipFile(pyz) as z:
        return set(z.namelist())


def test_two_builds_with_the_same_source_date_epoch_are_byte_identical(tmp_path):
    builder = load_builder()
    a = builder.build(root=ROOT, out_dir=tmp_path / "a", source_date_epoch=1700000000)
    b = builder.build(root=ROOT, out_dir=tmp_path / "b", source_date_epoch=1700000000)
    assert a.read_bytes() == b.read_bytes()
    c = builder.build(root=ROOT, out_dir=tmp_path / "c", source_date_epoch=1800000000)
    assert c.read_bytes() != a.read_bytes()


def test_the_script_writes_the_pyz_and_its_sha256_and_the_pyz_runs(tmp_path):
    p = subprocess.run([sys.executable, str(ROOT / "build" / "zipapp.py"), "--version", "2.0.0-rc.1",
                        "--out-dir", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    pyz = tmp_path / "om-2.0.0-rc.1.pyz"
    assert p.stdout.strip() == str(pyz)
    digest = hashlib.sha256(pyz.read_bytes()).hexdigest()
    assert (tmp_path / "om-2.0.0-rc.1.pyz.sha256").read_text() == f"{digest}  om-2.0.0-rc.1.pyz\n"
    run = subprocess.run([sys.executable, str(pyz), "--version"], capture_output=True, text=True,
                         env={"SHIV_ROOT": str(tmp_path / "shiv"), "PATH": "/usr/bin:/bin"})
    assert run.stdout == "om 2.0.0-rc.1\n"
    assert "site-packages/om/cli.py" in names(pyz)
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names(pyz))


def test_a_deleted_or_untracked_module_never_ships(tmp_path):
    tree = tmp_path / "tree"
    pkg = tree / "om"
    shutil.copytree(ROOT / "om", pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (pkg / "doomed.py").write_text("X = 1\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    subprocess.run([*git, "-C", str(tree), "add", "om"], check=True)
    subprocess.run([*git, "-C", str(tree), "commit", "-qm", "tree"], check=True)
    (pkg / "doomed.py").unlink()
    (pkg / "scratch.py").write_text("Y = 2\n")
    (pkg / "__pycache__").mkdir(exist_ok=True)
    (pkg / "__pycache__" / "stale.cpython-311.pyc").write_bytes(b"junk")
    pyz = load_builder().build(root=tree, out_dir=tmp_path / "dist", version="3.0.0")
    shipped = names(pyz)
    assert "site-packages/om/cli.py" in shipped
    assert not any(n.endswith(("doomed.py", "scratch.py", ".pyc")) for n in shipped)


def fresh_clone(dest):
    """A new git repository holding exactly this checkout's files (tracked and new, never ignored)."""
    listing = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             cwd=ROOT, capture_output=True, check=True)
    for name in listing.stdout.decode("utf-8").split("\0"):
        if name and (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"]
    subprocess.run(git + ["init", "-q"], cwd=dest, check=True)
    subprocess.run(git + ["add", "-A"], cwd=dest, check=True)
    subprocess.run(git + ["commit", "-q", "-m", "clone"], cwd=dest, check=True)
    return dest


def test_scripts_build_makes_a_working_zipapp_in_a_fresh_clone_whose_python_has_no_shiv(tmp_path):
    clone = fresh_clone(tmp_path / "clone")
    python = shutil.which("python3")
    assert subprocess.run([python, "-c", "import shiv"], capture_output=True).returncode != 0
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if "/venv/" not in p)
    # A throwaway development cache (pip's download cache stays the suite's, so shiv is not fetched again).
    env["OM_DEV_CACHE"] = str(tmp_path / "cache")
    p = subprocess.run(["scripts/build"], cwd=clone, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    version = load_builder().source_version(ROOT)
    checkout = subprocess.run(["scripts/dev-cache", "--checkout"], cwd=clone, env=env, capture_output=True,
                              text=True, check=True).stdout.strip()
    assert checkout.startswith(str(tmp_path / "cache" / "checkouts" / "clone-"))
    pyz = Path(checkout) / "dist" / f"om-{version}.pyz"
    assert p.stdout.strip() == str(pyz)
    assert f"scripts/build: installing shiv into {checkout}/build-venv" in p.stderr
    # Neither the virtualenv nor the build is in the tree, which is the plugin.
    left = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=clone, capture_output=True, text=True)
    assert left.stdout == ""
    run = subprocess.run([python, str(pyz), "--version"], capture_output=True, text=True,
                         env={"SHIV_ROOT": str(tmp_path / "shiv"), "PATH": env["PATH"]})
    assert run.stdout == f"om {version}\n", run.stderr
