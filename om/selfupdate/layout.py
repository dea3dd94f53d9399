"""The standalone install on disk, and the only code that changes it.

Layout (HOME = OM_HOME, default ~/.local/share/om; BIN = OM_BIN_DIR, default ~/.local/bin):

    HOME/versions/<version>/om.pyz    the released shiv zipapp, as downloaded (read-only)
    HOME/versions/<version>/lib/om/   its pure-python package, extracted and compiled once
    HOME/receipt.json                 {"installer", "launcher", "python", "current", "previous"}
    HOME/update.lock                  serialises updaters (om.filelock)
    BIN/om                            launcher: `#!<python> -IS`, puts one lib/ on sys.path

Invariants:
- A version directory is immutable once published: it is staged beside its final
  name, checked, then renamed into place; nothing rewrites it afterwards. A running
  `om` (and every lazy import it makes later) therefore reads one consistent version,
  whatever updates happen meanwhile. zipimport is never on the hot path: rewriting a
  zip under a process that imports from it is exactly what breaks (see docs).
- The launcher is the single switch. It is written to a temporary file in the same
  directory, fsynced, then moved over the old one with one os.replace: every start
  sees either the old launcher or the new, never a missing or partial one.
- Only versions that are neither current nor previous, and untouched for a grace
  period, are deleted, so a process that started before an update keeps its files.
"""

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile

from om.errors import OmError
from om.filelock import FileLock
from om.selfupdate.checksum import sha256_file
from om.store import fsync_dir, temp_name, write_atomically

RECEIPT = "receipt.json"
INSTALLER = "om-standalone"
#: A replaced version stays on disk at least this long (processes may still import from it).
GC_GRACE_SECONDS = 24 * 3600
_PKG_PREFIX = "site-packages/om/"
#: Linux truncates longer shebang lines on older kernels.
_SHEBANG_MAX = 127


def versions_dir(home):
    return os.path.join(home, "versions")


def version_dir(home, version):
    return os.path.join(versions_dir(home), str(version))


def lib_dir(home, version):
    return os.path.join(version_dir(home, version), "lib")


# --- receipt ------------------------------------------------------------------------


def read_receipt(home):
    path = os.path.join(home, RECEIPT)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise OmError(f"om: cannot read {path}: {e}") from None
    if not isinstance(data, dict) or data.get("installer") != INSTALLER:
        raise OmError(f"om: {path} is not an om install receipt")
    return data


def write_receipt(home, receipt):
    data = (json.dumps(receipt, indent=2, sort_keys=True) + "\n").encode("utf-8")
    write_atomically(os.path.join(home, RECEIPT), data)


# --- lock ---------------------------------------------------------------------------


class UpdateLock(FileLock):
    """Exclusive lock on HOME/update.lock; waits up to `timeout` seconds for another updater."""

    def __init__(self, home, timeout=None):
        if timeout is None:
            timeout = float(os.environ.get("OM_UPDATE_LOCK_TIMEOUT", "120"))
        super().__init__(os.path.join(home, "update.lock"), timeout, "another update is in progress")

    def __enter__(self):
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        return super().__enter__()


# --- payloads -----------------------------------------------------------------------


def payload_is_intact(home, version, sha256):
    vdir = version_dir(home, version)
    pyz = os.path.join(vdir, "om.pyz")
    if not os.path.isfile(os.path.join(vdir, "lib", "om", "__init__.py")):
        return False
    try:
        return sha256_file(pyz) == sha256
    except OSError:
        return False


def smoke_test(python, lib, version):
    """Run the payload exactly as the launcher will; it must print `om <version>`."""
    try:
        proc = subprocess.run(
            [python, "-I", "-S", "-c", _BOOT % (lib,), "--version"],
            capture_output=True, timeout=60, stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise OmError(f"om: the new version did not run: {e}") from None
    out = proc.stdout.decode("utf-8", "replace").strip()
    if proc.returncode != 0 or out != f"om {version}":
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise OmError(
            f"om: the downloaded om did not report version {version} "
            f"(exit {proc.returncode}, printed {out!r}{', ' + err[-1] if err else ''}); nothing changed"
        )


_BOOT = "import sys; sys.argv[0] = 'om'; sys.path.insert(0, %r); from om.cli import main; sys.exit(main())"


def publish_payload(home, version, pyz_path, sha256, python):
    """Make HOME/versions/<version> from a verified pyz (copied, never moved from its source).

    Reuses an intact existing directory. Raises OmError without touching the published
    directories when extraction or the smoke test fails.
    """
    final = version_dir(home, version)
    if payload_is_intact(home, version, sha256):
        return final
    vroot = versions_dir(home)
    os.makedirs(vroot, exist_ok=True)
    staging = temp_name(vroot, str(version))
    os.mkdir(staging, 0o755)
    try:
        staged_pyz = os.path.join(staging, "om.pyz")
        shutil.copyfile(pyz_path, staged_pyz)
        if sha256_file(staged_pyz) != sha256:
            raise OmError("om: the payload changed while it was being copied; nothing changed")
        lib = os.path.join(staging, "lib")
        _extract_package(staged_pyz, lib)
        _compile(lib, os.path.join(final, "lib"))
        smoke_test(python, lib, version)
        _seal(staging)
        if os.path.lexists(final):
            # A damaged copy of this version: set it aside rather than rewrite it in place.
            os.rename(final, temp_name(vroot, f"{version}.damaged"))
        os.rename(staging, final)
        fsync_dir(vroot)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return final


def _extract_package(pyz, lib):
    try:
        with zipfile.ZipFile(pyz) as z:
            members = [i for i in z.infolist() if i.filename.startswith(_PKG_PREFIX)]
            if not any(i.filename == _PKG_PREFIX + "__init__.py" for i in members):
                raise OmError("om: the download is not an om zipapp (no om package inside)")
            for info in members:
                rel = info.filename[len("site-packages/"):]
                parts = rel.split("/")
                if any(p in ("", ".", "..") for p in parts[:-1]) or os.path.isabs(rel) or "\\" in rel:
                    raise OmError(f"om: unsafe path in the download: {info.filename!r}")
                if info.is_dir() or not parts[-1]:
                    continue
                dest = os.path.join(lib, *parts)
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                with z.open(info) as src, open(dest, "wb") as out:
                    shutil.copyfileobj(src, out)
    except (zipfile.BadZipFile, OSError) as e:
        raise OmError(f"om: the download is not a readable zipapp: {e}") from None


def _compile(lib, display_dir):
    # Compiled once here so the launcher (python -I, read-only payload) never compiles.
    import compileall

    ok = compileall.compile_dir(lib, quiet=2, ddir=display_dir, workers=1)
    if not ok:
        raise OmError("om: the downloaded om does not compile with this Python; nothing changed")


def _seal(root):
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                os.fsync(f.fileno())
            os.chmod(path, 0o444)


# --- launcher -----------------------------------------------------------------------


def launcher_text(python, lib):
    body = (
        "# om launcher, written by `om self`: it runs the immutable payload named below and is\n"
        "# only ever replaced whole (one rename), never edited in place.\n"
        "import sys\n"
        f"sys.path.insert(0, {lib!r})\n"
        "from om.cli import main\n"
        "sys.exit(main())\n"
    )
    shebang = f"#!{python} -IS"
    if len(shebang) <= _SHEBANG_MAX and not any(c.isspace() for c in python):
        return shebang + "\n" + body
    # A long or spaced interpreter path: let sh re-exec it (sh ignores the Python string).
    quoted = "'" + python.replace("'", "'\"'\"'") + "'"
    return f"#!/bin/sh\n''''exec {quoted} -IS \"$0\" \"$@\" # '''\n" + body


def write_launcher(path, python, lib):
    mode = 0o755
    try:
        mode = os.stat(path).st_mode & 0o7777 or 0o755
    except OSError:
        pass
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_atomically(path, launcher_text(python, lib).encode("utf-8"), mode)


def activate(home, receipt, version):
    """Point the launcher at an published version and record the previous one."""
    lib = lib_dir(home, version)
    if not os.path.isfile(os.path.join(lib, "om", "__init__.py")):
        raise OmError(f"om: version {version} is not installed in {versions_dir(home)}")
    old = receipt.get("current")
    write_launcher(receipt["launcher"], receipt["python"], lib)
    if old and old != str(version):
        receipt["previous"] = old
        # The grace period of the outgoing version starts now.
        try:
            os.utime(version_dir(home, old))
        except OSError:
            pass
    receipt["current"] = str(version)
    write_receipt(home, receipt)
    return receipt


def collect_garbage(home, receipt, now=None):
    """Delete versions that are neither current nor previous and past the grace period."""
    now = time.time() if now is None else now
    keep = {receipt.get("current"), receipt.get("previous")}
    root = versions_dir(home)
    removed = []
    try:
        names = os.listdir(root)
    except OSError:
        return removed
    for name in names:
        path = os.path.join(root, name)
        if name in keep:
            continue
        try:
            age = now - os.stat(path).st_mtime
        except OSError:
            continue
        # Staging leftovers of a crashed update are dead after an hour.
        limit = 3600 if name.startswith(".") else GC_GRACE_SECONDS
        if age > limit:
            remove_path(path)
            removed.append(name)
    return removed


def remove_path(path):
    """Delete a file or a whole directory; False when it could not be (gone already, say)."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
        return not os.path.lexists(path)
    try:
        os.unlink(path)
    except OSError:
        return False
    return True


def remove_install(home, receipt):
    """Delete the standalone install: its launcher (when it is this install's) and the whole home.

    Returns the paths removed. The launcher goes first: a start that races the removal
    finds no command rather than a command whose versions are half gone."""
    removed = []
    launcher = (receipt or {}).get("launcher")
    if launcher and os.path.isfile(launcher):
        try:
            with open(launcher, encoding="utf-8", errors="replace") as f:
                ours = versions_dir(home) in f.read(4096)
        except OSError:
            ours = False
        if ours:
            os.unlink(launcher)
            removed.append(launcher)
    if os.path.isdir(home):
        shutil.rmtree(home)
        removed.append(home)
    return removed


def new_receipt(launcher, python):
    return {"installer": INSTALLER, "launcher": launcher, "python": python, "current": None, "previous": None}


def interpreter():
    """The interpreter the launcher should name: absolute, never a shim or a relative path."""
    return os.path.abspath(sys.executable)
