#!/usr/bin/env python3
"""Build the released artifact: dist/om-<version>.pyz, a shiv zipapp, and its .sha256.

Invariants:
- Only files git tracks under om/ (and that exist in the work tree) are staged, so a
  module deleted from om/, an untracked scratch file or a stale __pycache__ never ships.
- The build is reproducible: file modes are normalised, timestamps come from
  SOURCE_DATE_EPOCH (default: the last commit's time), and shiv copies a staged
  site-packages instead of running pip, so nothing records the build path. Two builds
  of the same tree with the same SOURCE_DATE_EPOCH are byte-identical.
- The artifact is checked before it is reported: running it with --version must print
  the version it was built as.

Usage: python build/zipapp.py [--version 1.2.3-rc.1] [--out-dir dist]
"""

import argparse
import os
import re
import runpy
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENTRY_POINT = "om.cli:run"
# The shebang used when the pyz is executed directly; the installed launcher names an
# absolute interpreter instead (see om/selfupdate/layout.py).
SHEBANG = "/usr/bin/env python3"
_VERSION_LINE = re.compile(r'^__version__ = "[^"]*"$', re.M)


class BuildError(Exception):
    pass


def tracked_sources(root):
    """Relative paths of the package files git tracks, minus ones deleted from the work tree."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--", "om"],
            cwd=root, check=True, capture_output=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise BuildError(f"cannot list tracked files in {root} (a git checkout is required): {e}") from None
    paths = sorted(p for p in out.decode("utf-8").split("\0") if p)
    paths = [p for p in paths if (root / p).is_file() and not p.endswith((".pyc", ".pyo"))]
    if "om/__init__.py" not in paths:
        raise BuildError(f"om/__init__.py is not tracked in {root}")
    return paths


def source_version(root):
    text = (root / "om" / "__init__.py").read_text(encoding="utf-8")
    m = re.search(r'^__version__ = "([^"]*)"$', text, re.M)
    if not m:
        raise BuildError("om/__init__.py has no __version__ line")
    return m.group(1)


def default_epoch(root):
    try:
        out = subprocess.run(
            ["git", "log", "-1", "--format=%ct"], cwd=root, check=True, capture_output=True
        ).stdout.strip()
        return int(out)
    except (OSError, subprocess.CalledProcessError, ValueError):
        return 315532800  # 1980-01-01, the earliest zip timestamp


def stage(root, site_packages, version):
    """Copy tracked package files into site_packages with normalised modes and version."""
    for rel in tracked_sources(root):
        dest = site_packages / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / rel, dest)
        os.chmod(dest, 0o644)
    init = site_packages / "om" / "__init__.py"
    text = init.read_text(encoding="utf-8")
    text, n = _VERSION_LINE.subn(f'__version__ = "{version}"', text)
    if n != 1:
        raise BuildError("om/__init__.py must have exactly one __version__ line")
    init.write_text(text, encoding="utf-8")
    for d in sorted(p for p in site_packages.rglob("*") if p.is_dir()):
        os.chmod(d, 0o755)


# The runtime's own checksum code, run from the source file: importing `om` here would
# import the package this script is building (and whatever else is on sys.path as `om`).
sha256_file = runpy.run_path(str(ROOT / "om" / "selfupdate" / "checksum.py"))["sha256_file"]


def default_out_dir():
    """dist/ in this checkout's part of the development cache (scripts/dev-cache), not in the tree.

    A build left in the tree would ship with the plugin: the repository root is the plugin root.
    """
    try:
        out = subprocess.run(["sh", str(ROOT / "scripts" / "dev-cache"), "--checkout"], check=True,
                             capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        detail = getattr(e, "stderr", "") or e
        raise BuildError(f"no development cache for the default output folder (give --out-dir): {detail}") from None
    return Path(out.strip()) / "dist"


def build(root=ROOT, out_dir=None, version=None, source_date_epoch=None, python=None):
    """Build, check and checksum the zipapp; return its path."""
    root = Path(root).resolve()
    out_dir = Path(out_dir) if out_dir is not None else default_out_dir()
    version = version or source_version(root)
    if not re.fullmatch(r"[0-9A-Za-z.\-]+", version):
        raise BuildError(f"unusable version: {version!r}")
    epoch = source_date_epoch if source_date_epoch is not None else os.environ.get("SOURCE_DATE_EPOCH")
    epoch = int(epoch) if epoch not in (None, "") else default_epoch(root)
    python = python or sys.executable
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"om-{version}.pyz"
    with tempfile.TemporaryDirectory(prefix="om-build-") as tmp:
        tmp = Path(tmp)
        # A fixed staging name keeps the build independent of the temporary path.
        site_packages = tmp / "site-packages"
        site_packages.mkdir()
        stage(root, site_packages, version)
        partial = tmp / target.name
        env = dict(os.environ, SOURCE_DATE_EPOCH=str(epoch))
        proc = subprocess.run(
            [python, "-m", "shiv", "--site-packages", str(site_packages), "-e", ENTRY_POINT,
             "-o", str(partial), "-p", SHEBANG, "--reproducible", "--compile-pyc"],
            env=env, capture_output=True, text=True,
        )
        if proc.returncode != 0:
            raise BuildError(f"shiv failed: {proc.stderr.strip() or proc.stdout.strip()}")
        check_runs(partial, version, python, tmp / "shiv-root")
        os.chmod(partial, 0o755)
        shutil.copyfile(partial, target)
        os.chmod(target, 0o755)
    digest = sha256_file(target)
    (out_dir / f"{target.name}.sha256").write_text(f"{digest}  {target.name}\n", encoding="utf-8")
    return target


def check_runs(pyz, version, python, shiv_root):
    env = dict(os.environ, SHIV_ROOT=str(shiv_root))
    proc = subprocess.run(
        [python, "-I", str(pyz), "--version"], env=env, capture_output=True, text=True, timeout=120
    )
    got = proc.stdout.strip()
    if proc.returncode != 0 or got != f"om {version}":
        raise BuildError(
            f"built zipapp does not run as om {version}: exit {proc.returncode}, "
            f"stdout {got!r}, stderr {proc.stderr.strip()[-300:]!r}"
        )


def main(argv=None):
    p = argparse.ArgumentParser(description="Build om-<version>.pyz with shiv.")
    p.add_argument("--version", help="version to stamp into the build (default: om/__init__.py)")
    p.add_argument("--out-dir", help="default: dist/ in this checkout's development cache (scripts/dev-cache --checkout)")
    args = p.parse_args(argv)
    try:
        target = build(out_dir=Path(args.out_dir) if args.out_dir else None, version=args.version)
    except BuildError as e:
        print(f"build/zipapp.py: {e}", file=sys.stderr)
        return 1
    print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
