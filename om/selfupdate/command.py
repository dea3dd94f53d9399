"""`om self update|channel|rollback|install|uninstall`: the standalone install's own lifecycle.

Invariants:
- Ownership is settled first, from the file system only: a plugin-managed or
  package-manager runtime is refused before any network request.
- Nothing is switched until the new version is downloaded, verified (size, sha256
  against every published checksum) and has run `--version` from its final layout;
  any failure leaves the launcher, the receipt and every published version as they were.
- Never an implicit downgrade: moving to an older release needs --force (and a yes).
- Uninstalling removes what `om self install` and running the pyz left (the launcher, the
  install's home, the channel setting, the release cache, shiv's unpacked copies of om
  zipapps, and the folders holding them once empty) and never a store: memory is the
  clients', deleted only on purpose.
Returns the text to print; raises OmError subclasses (UpdateAvailable for --check).
"""

import os
import shutil

from om import invocation
from om.errors import NotFound, OmError, UpdateAvailable, UsageError
from om.selfupdate import channel as channels
from om.selfupdate import layout, ownership
from om.store import temp_name


def run(args, stdin=None, stderr=None):
    sub = getattr(args, "self_command", None)
    if sub == "update":
        return update(args.check, args.force, args.yes, stdin, stderr)
    if sub == "channel":
        return set_channel(args.channel, args.yes, stdin, stderr)
    if sub == "rollback":
        return rollback()
    if sub == "install":
        return install()
    if sub == "uninstall":
        return uninstall(args.yes, stdin, stderr)
    raise UsageError("om: self needs a subcommand: update, channel, rollback, install or uninstall")


def confirm(question, yes, stdin, stderr, refusal):
    """Return when `yes` or the user answers yes on a terminal: without one raise `refusal`, on no cancel."""
    if yes:
        return
    try:
        interactive = stdin is not None and stdin.isatty()
    except (AttributeError, ValueError):
        interactive = False
    if not interactive:
        raise UsageError(refusal)
    stderr.write(f"{question} [y/N] ")
    stderr.flush()
    answer = stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        raise OmError("om: cancelled; nothing changed")


# --- update -----------------------------------------------------------------------


def _current(receipt, home):
    from om.selfupdate.version import try_parse

    v = try_parse(receipt.get("current") or "")
    if v is None:
        raise OmError(f"om: the receipt in {home} names no valid current version")
    return v


def _newest(client, channel):
    from om.selfupdate import releases

    if channel == "stable":
        latest = client.latest()
        if latest is not None:
            found = releases.best([latest], "stable")
            if found:
                return found
    return releases.best(client.releases(), channel)


def update(check=False, force=False, yes=False, stdin=None, stderr=None):
    ownership.refuse_if_foreign()
    home = ownership.standalone_home()
    receipt = layout.read_receipt(home)
    current = _current(receipt, home)
    channel = channels.read()

    from om.selfupdate import github

    settings = github.Settings()
    client = github.Client(settings)
    found = _newest(client, channel)
    if found is None:
        raise OmError(f"om: no {channel} release of {settings.repo} found")
    target, release = found
    if check:
        if target > current:
            raise UpdateAvailable(f"om: update available: {current} → {target} ({channel})")
        if target == current:
            return f"om: up to date ({current}, {channel})\n"
        return f"om: up to date ({current}; the newest {channel} release, {target}, is older)\n"
    if target == current and not force:
        return f"om: already on {current}, the newest {channel} release\n"
    if target < current:
        if not force:
            return (
                f"om: {current} is newer than the newest {channel} release {target}; staying on it "
                f"(use --force to install {target})\n"
            )
        confirm(
            f"Move back from {current} to {target}?", yes, stdin, stderr,
            f"om: moving back from {current} to {target} needs confirmation; rerun with -y",
        )
    with layout.UpdateLock(home):
        receipt = layout.read_receipt(home)
        before = receipt.get("current")
        _install_release(client, home, receipt, target, release, stderr)
        layout.activate(home, receipt, target)
        layout.collect_garbage(home, receipt)
    if before == str(target):
        return f"om: reinstalled {target} ({channel})\n"
    return f"om: updated {before} → {target} ({channel})\n"


def _install_release(client, home, receipt, version, release, stderr):
    from om.selfupdate import releases
    from om.selfupdate.progress import Progress

    name = releases.asset_name(version)
    asset = releases.find_asset(release, name)
    if asset is None:
        raise OmError(f"om: release {release.get('tag_name')} has no asset {name}; nothing changed")
    sums_asset = releases.find_asset(release, releases.SUMS_NAME)
    sums_text = None
    if sums_asset is not None:
        sums_text = client.fetch_small(sums_asset).decode("utf-8", "replace")
    vroot = layout.versions_dir(home)
    os.makedirs(vroot, exist_ok=True)
    tmp = temp_name(vroot, "download")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        progress = Progress(stderr, name, asset.get("size"))
        ok = False
        try:
            with os.fdopen(fd, "wb") as out:
                limit = asset.get("size") if isinstance(asset.get("size"), int) else None
                sha, size = client.download(asset, out, progress, limit=limit)
                out.flush()
                os.fsync(out.fileno())
            ok = True
        finally:
            progress.finish(ok)
        sha = releases.verify(asset, sha, size, sums_text)
        layout.publish_payload(home, version, tmp, sha, receipt["python"])
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


# --- channel, rollback, install ---------------------------------------------------


def set_channel(channel, yes=False, stdin=None, stderr=None):
    current = channels.read()
    if channel is None:
        return f"{current}\n"
    ownership.refuse_if_foreign()
    if channel == current:
        return f"om: already on the {channel} channel\n"
    if channel != "stable":
        confirm(
            f"Switch to the {channel} channel (pre-releases, may be less stable)?", yes, stdin, stderr,
            f"om: switching to the {channel} channel needs confirmation; rerun with -y",
        )
    channels.write(channel)
    if channel == "stable":
        return (
            "om: channel set to stable; you keep your version until a newer stable release ships "
            "(`om self update --force` moves back now)\n"
        )
    return f"om: channel set to {channel}; run `om self update` to get its newest release\n"


def rollback():
    ownership.refuse_if_foreign()
    home = ownership.standalone_home()
    with layout.UpdateLock(home):
        receipt = layout.read_receipt(home)
        current, previous = receipt.get("current"), receipt.get("previous")
        if not previous or not os.path.isfile(os.path.join(layout.lib_dir(home, previous), "om", "__init__.py")):
            raise NotFound(f"om: there is no previous version to roll back to; {current} stays installed")
        layout.activate(home, receipt, previous)
    return f"om: rolled back {current} → {previous}\n"


def install():
    import zipfile

    from om import __version__
    from om.selfupdate import locations
    from om.selfupdate.version import try_parse

    pyz = invocation.entry_path()
    if not pyz or not os.path.isfile(pyz) or not zipfile.is_zipfile(pyz):
        raise UsageError(
            "om: `om self install` runs from the downloaded zipapp: python3 om-<version>.pyz self install"
        )
    if try_parse(__version__) is None:
        raise OmError(f"om: this build's version {__version__!r} is not a release version")
    home = locations.data_home()
    launcher = os.path.join(locations.bin_dir(), "om")
    python = layout.interpreter()
    with layout.UpdateLock(home):
        receipt = layout.read_receipt(home) or layout.new_receipt(launcher, python)
        receipt["launcher"], receipt["python"] = launcher, python
        before = receipt.get("current")
        layout.publish_payload(home, __version__, pyz, layout.sha256_file(pyz), python)
        layout.activate(home, receipt, __version__)
    lines = [f"om: installed {__version__} in {home}" + (f" (was {before})" if before and before != __version__ else "")]
    lines.append(f"om: launcher {launcher}")
    path_dirs = [os.path.abspath(p) for p in os.environ.get("PATH", "").split(os.pathsep) if p]
    if os.path.dirname(launcher) not in path_dirs:
        where, line = path_line(os.path.dirname(launcher), os.environ.get("SHELL", ""))
        lines += [f"om: {os.path.dirname(launcher)} is not on PATH; to run `om`, {where}:", f"    {line}"]
    extraction = _shiv_extraction(pyz)
    if extraction:
        # The installed om never imports from shiv's unpacked copies: this run's and any
        # earlier run's are removed, this one last, when every module this process still
        # needs is loaded (what remains is printing, then exit).
        gone = _remove_shiv_copies(os.path.dirname(extraction), keep=extraction)
        _remove_own(extraction)
        lines.append(f"om: removed the zipapp's unpacked copy {extraction}"
                     + (f" and {len(gone)} earlier one(s)" if gone else ""))
    return "\n".join(lines) + "\n"


def path_line(directory, shell):
    """(where it goes, the line) that puts `directory` first on PATH for the login shell `shell` ($SHELL).

    bash and zsh: an `export` line for their rc file; fish: `fish_add_path`, run once
    (it keeps the setting); any other shell: the POSIX line for ~/.profile.
    """
    from om.fastpath import shell_quote

    name = os.path.basename(shell)
    if name == "fish":
        return "run this once in fish", f"fish_add_path {shell_quote(directory)}"
    plain = not set(directory) & set('"$`\\')
    line = f'export PATH="{directory}:$PATH"' if plain else f'export PATH={shell_quote(directory)}:"$PATH"'
    rc = {"bash": "~/.bashrc", "zsh": "~/.zshrc"}.get(name, "~/.profile")
    return f"add this line to {rc} and open a new shell", line


def uninstall(yes=False, stdin=None, stderr=None):
    """Remove the standalone install and what running the zipapp left; the memory stays."""
    from om.location import CLIENTS, client_store
    from om.selfupdate import locations

    ownership.refuse_if_foreign()
    home = locations.data_home()
    receipt = layout.read_receipt(home) if os.path.isfile(os.path.join(home, layout.RECEIPT)) else None
    shiv = _shiv_root()
    entry = invocation.entry_path()
    own = _shiv_extraction(entry) if entry else None  # run from the pyz: its copy goes last
    leftovers = [p for p in _shiv_copies(shiv) if p not in (own, _lock_of(own))]
    settings = [p for p in (os.path.join(locations.config_dir(), "channel.json"), locations.cache_dir())
                if os.path.lexists(p)]
    if receipt is None and not os.path.isdir(home) and not leftovers and not settings:
        _remove_own(own)
        return f"om: no standalone om to remove (nothing in {home} or {shiv})\n"
    what = [p for p in ((receipt or {}).get("launcher"), home) if p and os.path.lexists(p)] + settings + leftovers
    confirm(f"om: remove {', '.join(what)}? (your memory stays)", yes, stdin, stderr,
            "om: uninstalling needs confirmation; rerun with -y")
    if os.path.isdir(home):
        with layout.UpdateLock(home):  # an update in progress finishes first
            removed = layout.remove_install(home, receipt)
    else:
        removed = layout.remove_install(home, receipt)
    removed += [path for path in settings if layout.remove_path(path)]
    removed += _remove_shiv_copies(shiv, keep=own)
    kept = [client_store(c) for c in CLIENTS if os.path.isdir(client_store(c))]
    if own:
        removed.append(own)
    _remove_own(own)
    # The folders om's files were in, once nothing else is (shiv's root, om's settings folder).
    removed += [path for path in (shiv, locations.config_dir()) if _remove_if_empty(path)]
    lines = [f"om: removed {path}" for path in removed]
    if kept:
        lines.append(f"om: kept the memory in {', '.join(kept)} (delete it on purpose with rm -rf)")
    return "\n".join(lines) + "\n"


def _remove_if_empty(path):
    try:
        os.rmdir(path)
    except OSError:  # missing, or holding something that is not om's
        return False
    return True


def _shiv_root():
    """Where shiv unpacks zipapps: $SHIV_ROOT, else ~/.shiv."""
    return os.path.expanduser(os.environ.get("SHIV_ROOT") or "~/.shiv")


def _shiv_copies(root):
    """shiv's unpacked copies of om zipapps (`om-<version>.pyz_<build id>`) in `root`, and their lock files."""
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []
    return [os.path.join(root, n) for n in names
            if (n.startswith("om-") and ".pyz_" in n) or (n.startswith(".om-") and n.endswith("_lock"))]


def _remove_shiv_copies(root, keep=None):
    removed = []
    for path in _shiv_copies(root):
        if path not in (keep, _lock_of(keep)) and layout.remove_path(path):
            removed.append(path)
    return removed


def _lock_of(extraction):
    """The lock file shiv keeps beside an unpacked copy: <root>/.<name>_lock."""
    if not extraction:
        return None
    return os.path.join(os.path.dirname(extraction), "." + os.path.basename(extraction) + "_lock")


def _remove_own(extraction):
    """Remove the unpacked copy this very process runs from, and its lock: the last thing it does.

    Safe for this process only because every module it still needs is loaded: the CLI
    prints the reply and exits without importing anything more."""
    if not extraction:
        return
    shutil.rmtree(extraction, ignore_errors=True)
    try:
        os.unlink(_lock_of(extraction))
    except OSError:
        pass


def _shiv_extraction(pyz):
    """The directory shiv unpacked the running pyz into (<root>/<pyz name>_<build id>), or None."""
    from om.selfupdate import locations

    site = locations.runtime_root()
    parent = os.path.dirname(site)
    if os.path.basename(site) == "site-packages" and os.path.basename(parent).startswith(
            os.path.basename(os.path.realpath(pyz)) + "_"):
        return parent
    return None
