"""`om self update|rollback|channel` of a real standalone install against a fake GitHub.

Each failure case asserts the same invariant: the installed om is byte-for-byte
unchanged and still runs.
"""

import json
import os
import subprocess
import sys
import threading

import pytest

from dist_support import BASE_VERSION, Install, fake_github, installed, pyz, pyz_bytes  # noqa: F401


def assert_unchanged(inst, before):
    assert inst.snapshot() == before
    r = inst.run("--version")
    assert (r.returncode, r.stdout.strip()) == (0, f"om {BASE_VERSION}"), r


def test_update_installs_the_newest_stable_and_rollback_returns_to_the_previous(installed, fake_github):
    fake_github.add_release("v1.1.0", pyz_bytes("1.1.0"))
    r = installed.run("self", "update")
    assert r.returncode == 0, r
    assert r.stdout == "om: updated 1.0.0 → 1.1.0 (stable)\n"
    assert installed.run("--version").stdout == "om 1.1.0\n"
    receipt = installed.receipt()
    assert (receipt["current"], receipt["previous"]) == ("1.1.0", "1.0.0")
    assert not [p for p in (installed.home / "versions").iterdir() if p.name.startswith(".")]
    r = installed.run("self", "rollback")
    assert (r.returncode, r.stdout) == (0, "om: rolled back 1.1.0 → 1.0.0\n"), r
    assert installed.run("--version").stdout == "om 1.0.0\n"


def test_check_exits_100_when_an_update_exists_and_0_when_up_to_date(installed, fake_github):
    fake_github.add_release("v1.0.0", pyz_bytes("1.0.0"))
    r = installed.run("self", "update", "--check")
    assert (r.returncode, r.stdout) == (0, "om: up to date (1.0.0, stable)\n"), r
    fake_github.add_release("v1.1.0", pyz_bytes("1.1.0"))
    r = installed.run("self", "update", "--check")
    assert r.returncode == 100, r
    assert "update available: 1.0.0 → 1.1.0 (stable)" in r.stderr
    assert installed.run("--version").stdout == "om 1.0.0\n"


def test_a_second_check_revalidates_with_the_etag_and_uses_the_cached_answer(installed, fake_github):
    fake_github.add_release("v1.1.0", pyz_bytes("1.1.0"))
    assert installed.run("self", "update", "--check").returncode == 100
    assert installed.run("self", "update", "--check").returncode == 100
    latest = [r for r in fake_github.api_requests() if r["path"].endswith("/releases/latest")]
    assert len(latest) == 2
    assert "if-none-match" not in latest[0]["headers"]
    assert latest[1]["headers"]["if-none-match"].startswith('"')


def test_stable_on_page_two_behind_drafts_and_prereleases_is_found_when_latest_is_404(installed, fake_github):
    fake_github.page_size = 2
    fake_github.latest_404 = True
    fake_github.add_release("v1.1.0", pyz_bytes("1.1.0"))
    fake_github.add_release("v1.2.0-dev.202601011200")
    fake_github.add_release("v1.2.0-rc.1")
    fake_github.add_release("v1.3.0", draft=True)
    fake_github.add_release("v1.4.0", prerelease=True)  # flag disagrees with the tag: skipped
    r = installed.run("self", "update")
    assert (r.returncode, r.stdout) == (0, "om: updated 1.0.0 → 1.1.0 (stable)\n"), r
    assert any("page=3" in q["path"] for q in fake_github.api_requests())


def test_rc_channel_prefers_a_newer_stable_found_on_a_later_page(installed, fake_github):
    fake_github.page_size = 2
    fake_github.add_release("v1.1.0", pyz_bytes("1.1.0"))
    fake_github.add_release("v1.1.0-dev.202601011200")
    fake_github.add_release("v1.1.0-rc.1")
    fake_github.add_release("v1.1.0-rc.2", draft=True)
    assert installed.run("self", "channel", "rc", "-y").returncode == 0
    r = installed.run("self", "update")
    assert (r.returncode, r.stdout) == (0, "om: updated 1.0.0 → 1.1.0 (rc)\n"), r


def test_digest_null_is_verified_against_sha256sums(installed, fake_github):
    fake_github.add_release("v1.1.0", pyz_bytes("1.1.0"), digest=None)
    r = installed.run("self", "update")
    assert r.returncode == 0, r
    assert installed.run("--version").stdout == "om 1.1.0\n"


FAILURES = {
    "digest mismatch": (dict(digest="sha256:" + "0" * 64), "does not match the release digest"),
    "sums mismatch": (dict(digest=None, sums_text="1" * 64 + "  om-1.1.0.pyz\n"), "does not match SHA256SUMS"),
    "digest right, sums mismatch": (dict(sums_text="1" * 64 + "  om-1.1.0.pyz\n"), "does not match SHA256SUMS"),
    "sums without a line": (dict(digest=None, sums_text="1" * 64 + "  other.pyz\n"), "has no line for om-1.1.0.pyz"),
    "neither digest nor sums": (dict(digest=None, sums=False), "neither a digest nor a SHA256SUMS"),
    "size mismatch": (dict(size=123), "the release says 123"),
    "missing asset": (dict(asset_name="om-other.pyz"), "has no asset om-1.1.0.pyz"),
}


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_a_release_that_fails_verification_leaves_the_install_unchanged(installed, fake_github, case):
    kwargs, message = FAILURES[case]
    fake_github.add_release("v1.1.0", pyz_bytes("1.1.0"), **kwargs)
    before = installed.snapshot()
    r = installed.run("self", "update")
    assert r.returncode == 1, r
    assert message in r.stderr
    assert "Traceback" not in r.stderr
    assert_unchanged(installed, before)


def test_a_payload_that_reports_another_version_is_not_activated(installed, fake_github):
    fake_github.add_release("v1.1.0", pyz_bytes("1.0.9"))
    before = installed.snapshot()
    r = installed.run("self", "update")
    assert r.returncode == 1 and "did not report version 1.1.0" in r.stderr, r
    assert_unchanged(installed, before)


@pytest.mark.parametrize("failure,message", [
    ("500", "HTTP 500 from localhost"),
    ("truncate", "failed"),
    ("timeout", "timed out"),
])
def test_a_download_that_breaks_leaves_the_install_unchanged(installed, fake_github, failure, message):
    fake_github.add_release("v1.1.0", pyz_bytes("1.1.0"))
    fake_github.download_failure = failure
    before = installed.snapshot()
    r = installed.run("self", "update")
    assert r.returncode == 1, r
    assert message in r.stderr, r
    assert_unchanged(installed, before)


@pytest.mark.parametrize("status", [403, 429])
def test_rate_limit_is_reported_with_its_reset_time(installed, fake_github, status):
    fake_github.rate_limit = status
    before = installed.snapshot()
    r = installed.run("self", "update")
    assert r.returncode == 1, r
    assert f"rate limit exceeded at 127.0.0.1:{fake_github.api.server_address[1]} (HTTP {status})" in r.stderr
    assert "resets at 00:00:00 UTC" in r.stderr and "GITHUB_TOKEN" in r.stderr
    assert_unchanged(installed, before)


def test_a_secondary_rate_limit_is_reported_with_its_retry_delay(installed, fake_github):
    fake_github.secondary_rate_limit = True
    before = installed.snapshot()
    r = installed.run("self", "update")
    assert r.returncode == 1, r
    assert "rate limit exceeded" in r.stderr and "retry after 60 s" in r.stderr
    assert_unchanged(installed, before)


def test_no_stable_release_at_all_is_a_clear_error(installed, fake_github):
    fake_github.add_release("v1.1.0-rc.1", pyz_bytes("1.1.0"))
    before = installed.snapshot()
    r = installed.run("self", "update")
    assert (r.returncode, r.stderr) == (1, "om: no stable release of om-memory/om found\n"), r
    paths = [q["path"] for q in fake_github.api_requests()]
    assert paths[0].endswith("/releases/latest") and "/releases?per_page=100" in paths[1]
    assert_unchanged(installed, before)


def test_an_unknown_repository_is_a_clear_error(installed, fake_github):
    before = installed.snapshot()
    r = installed.run("self", "update", env={"OM_UPDATE_REPO": "someone/else"})
    assert r.returncode == 1 and "no releases found for someone/else" in r.stderr, r
    assert_unchanged(installed, before)


def test_the_token_goes_to_the_api_only_and_never_follows_the_redirect(installed, fake_github):
    fake_github.add_release("v1.1.0", pyz_bytes("1.1.0"))
    r = installed.run("self", "update", env={"GITHUB_TOKEN": "SECRET-TOKEN"})
    assert r.returncode == 0, r
    api = fake_github.api_requests()
    cdn = [q for q in fake_github.requests if q["server"] == "cdn"]
    assert api and all(q["headers"].get("authorization") == "Bearer SECRET-TOKEN" for q in api)
    assert cdn and all("authorization" not in q["headers"] for q in cdn)
    assert all("SECRET-TOKEN" not in json.dumps(q) for q in cdn)


def test_plain_http_to_a_non_loopback_host_is_refused(installed):
    before = installed.snapshot()
    for url in ("http://example.com", "http://om.localhost.example.com"):
        r = installed.run("self", "update", env={"OM_UPDATE_API_URL": url})
        assert r.returncode == 1 and "only https (or http on a loopback address)" in r.stderr, r
    assert_unchanged(installed, before)


def test_a_redirect_to_plain_http_off_loopback_is_refused(installed, fake_github):
    fake_github.add_release("v1.1.0", pyz_bytes("1.1.0"))
    fake_github.download_redirect = "http://example.com/blob"
    before = installed.snapshot()
    r = installed.run("self", "update")
    assert r.returncode == 1 and "refusing to fetch 'http://example.com/blob" in r.stderr, r
    assert not [q for q in fake_github.requests if q["server"] == "cdn" and "/blob/" in q["path"]]
    assert_unchanged(installed, before)


def test_never_an_implicit_downgrade_and_force_moves_back_with_confirmation(installed, fake_github):
    fake_github.add_release("v1.0.0", pyz_bytes("1.0.0"))
    fake_github.add_release("v1.1.0-rc.1", pyz_bytes("1.1.0-rc.1"))
    assert installed.run("self", "channel", "rc", "-y").returncode == 0
    assert installed.run("self", "update").stdout == "om: updated 1.0.0 → 1.1.0-rc.1 (rc)\n"
    assert installed.run("self", "channel", "stable").returncode == 0
    r = installed.run("self", "update")
    assert r.returncode == 0 and "1.1.0-rc.1 is newer than the newest stable release 1.0.0; staying" in r.stdout, r
    assert installed.run("--version").stdout == "om 1.1.0-rc.1\n"
    r = installed.run("self", "update", "--force")
    assert r.returncode == 64 and "needs confirmation; rerun with -y" in r.stderr, r
    r = installed.run("self", "update", "--force", "-y")
    assert (r.returncode, r.stdout) == (0, "om: updated 1.1.0-rc.1 → 1.0.0 (stable)\n"), r
    assert installed.run("--version").stdout == "om 1.0.0\n"


def test_force_reinstalls_the_current_version(installed, fake_github):
    fake_github.add_release("v1.0.0", pyz_bytes("1.0.0"))
    assert installed.run("self", "update").stdout == "om: already on 1.0.0, the newest stable release\n"
    r = installed.run("self", "update", "--force")
    assert (r.returncode, r.stdout) == (0, "om: reinstalled 1.0.0 (stable)\n"), r


def test_switching_to_a_prerelease_channel_needs_confirmation(installed):
    r = installed.run("self", "channel", "nightly")
    assert r.returncode == 64 and "needs confirmation; rerun with -y" in r.stderr, r
    assert installed.run("self", "channel").stdout == "stable\n"
    assert installed.run("self", "channel", "nightly", "-y").returncode == 0
    assert installed.run("self", "channel").stdout == "nightly\n"
    stored = json.loads((installed.tmp / "config" / "om" / "channel.json").read_text())
    assert stored == {"channel": "nightly"}


def test_download_progress_is_plain_lines_when_stderr_is_not_a_terminal(installed, fake_github):
    fake_github.add_release("v1.1.0", pyz_bytes("1.1.0"))
    r = installed.run("self", "update")
    assert r.returncode == 0
    assert "om: downloading om-1.1.0.pyz (" in r.stderr and "om: downloaded om-1.1.0.pyz" in r.stderr
    assert "\r" not in r.stderr


def test_download_progress_is_a_bar_on_a_terminal(installed, fake_github):
    import pty

    fake_github.add_release("v1.1.0", pyz_bytes("1.1.0"))
    master, slave = pty.openpty()
    p = subprocess.run([str(installed.launcher), "self", "update"], stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=slave, env=installed.env, timeout=60)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    tty = b"".join(chunks).decode()
    assert p.returncode == 0
    assert "\rom-1.1.0.pyz [" in tty and "100%" in tty


def test_concurrent_updaters_are_serialised_and_both_succeed(installed, fake_github):
    fake_github.add_release("v1.1.0", pyz_bytes("1.1.0"))
    results = []

    def update():
        results.append(installed.run("self", "update", "--force", "-y"))

    threads = [threading.Thread(target=update) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.returncode for r in results] == [0, 0, 0], results
    assert installed.run("--version").stdout == "om 1.1.0\n"
    assert installed.receipt()["current"] == "1.1.0"
    assert sorted(p.name for p in (installed.home / "versions").iterdir()) == ["1.0.0", "1.1.0"]


def test_an_updater_waits_for_the_lock_and_gives_up_without_changing_anything(installed, fake_github):
    import fcntl

    fake_github.add_release("v1.1.0", pyz_bytes("1.1.0"))
    before = installed.snapshot()
    with open(installed.home / "update.lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        r = installed.run("self", "update", env={"OM_UPDATE_LOCK_TIMEOUT": "0.5"})
        assert r.returncode == 67 and "another update is in progress" in r.stderr, r
        assert_unchanged(installed, before)
    r = installed.run("self", "update", env={"OM_UPDATE_LOCK_TIMEOUT": "0.5"})
    assert (r.returncode, r.stdout) == (0, "om: updated 1.0.0 → 1.1.0 (stable)\n"), r


def test_versions_neither_current_nor_previous_are_removed_after_the_grace_period(installed, fake_github):
    for v in ("1.1.0", "1.2.0"):
        fake_github.add_release("v" + v, pyz_bytes(v))
        assert installed.run("self", "update").returncode == 0
    old = installed.home / "versions" / "1.0.0"
    os.utime(old, (1, 1))
    fake_github.add_release("v1.3.0", pyz_bytes("1.3.0"))
    assert installed.run("self", "update").returncode == 0
    names = sorted(p.name for p in (installed.home / "versions").iterdir())
    # 1.1.0 stopped being current only moments ago: kept for processes still using it.
    assert names == ["1.1.0", "1.2.0", "1.3.0"]


# --- refusals before any network access ------------------------------------------


def test_a_plugin_managed_runtime_refuses_without_any_request(installed, fake_github):
    fake_github.add_release("v1.1.0", pyz_bytes("1.1.0"))
    marker = installed.home / "versions" / BASE_VERSION / ".observational-memory-managed"
    marker.write_text('{"manager": "the om Codex plugin"}')
    before = installed.snapshot()
    for args in (["self", "update"], ["self", "update", "--check"], ["self", "channel", "rc", "-y"], ["self", "rollback"]):
        r = installed.run(*args)
        assert r.returncode == 67, r
        assert "managed by the om Codex plugin" in r.stderr and "update it through the om Codex plugin" in r.stderr
    assert fake_github.requests == []
    assert installed.snapshot() == before


def test_a_plugin_pyz_with_the_marker_beside_it_refuses_every_self_command_with_67_and_no_request(
        tmp_path, fake_github):
    plugin = tmp_path / "plugin"
    plugin.mkdir()
    (plugin / "om.pyz").write_bytes(pyz_bytes(BASE_VERSION))
    (plugin / ".observational-memory-managed").write_text("")
    inst = Install(tmp_path, fake_github)
    for args in (["self", "update"], ["self", "update", "--check"], ["self", "channel", "rc", "-y"],
                 ["self", "rollback"]):
        r = inst.run_pyz(plugin / "om.pyz", *args)
        assert r.returncode == 67 and "managed by its plugin" in r.stderr, (args, r)
    assert fake_github.requests == []


def test_a_bare_pyz_refuses_self_update_check_with_67_and_no_request(tmp_path, fake_github):
    inst = Install(tmp_path, fake_github)
    r = inst.run_pyz(pyz(BASE_VERSION), "self", "update", "--check")
    assert r.returncode == 67 and "not a standalone install" in r.stderr, r
    assert fake_github.requests == []


@pytest.mark.parametrize("venv,installer,hint", [
    ("venv", "pip", "installed by pip (.* `pip install --upgrade om-memory`"),
    ("pipx/venvs/om-memory", "pip", "installed by pipx (.* `pipx upgrade om-memory`"),
    ("uv/tools/om-memory", "uv", "installed by uv (.* `uv tool upgrade om-memory`"),
    ("venv", "uv", "installed by uv (.* `uv pip install --upgrade om-memory`"),
])
def test_a_package_manager_install_refuses_without_any_request(tmp_path, fake_github, venv, installer, hint):
    import re
    import shutil

    from conftest import ROOT

    site = tmp_path / venv / "lib" / "python3" / "site-packages"
    shutil.copytree(ROOT / "om", site / "om", ignore=shutil.ignore_patterns("__pycache__"))
    info = site / "om_memory-1.0.0.dist-info"
    info.mkdir()
    (info / "INSTALLER").write_text(installer + "\n")
    inst = Install(tmp_path, fake_github)
    code = f"import sys; sys.path.insert(0, {str(site)!r}); from om.cli import main; sys.exit(main())"
    for args in (["self", "update"], ["self", "update", "--check"], ["self", "channel", "rc", "-y"],
                 ["self", "rollback"]):
        p = subprocess.run([sys.executable, "-I", "-S", "-c", code, *args], env=inst.env,
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 67, (args, p)
        assert re.search(hint.replace("(", r"\(", 1), p.stderr), (args, p.stderr)
    assert fake_github.requests == []
    assert not (tmp_path / "config" / "om" / "channel.json").exists()


def test_self_install_refuses_outside_a_zipapp(tmp_path):
    from conftest import run_om

    r = run_om("self", "install", env={"OM_HOME": str(tmp_path / "h"), "OM_BIN_DIR": str(tmp_path / "b")})
    assert r.returncode == 64 and "runs from the downloaded zipapp" in r.stderr, r
    assert not (tmp_path / "h").exists()


def test_self_install_over_an_existing_install_keeps_the_old_version_as_previous(installed, fake_github):
    r = installed.run_pyz(pyz("1.1.0"), "self", "install")
    assert r.returncode == 0 and "installed 1.1.0" in r.stdout and "(was 1.0.0)" in r.stdout, r
    assert installed.run("--version").stdout == "om 1.1.0\n"
    assert installed.run("self", "rollback").stdout == "om: rolled back 1.1.0 → 1.0.0\n"


def test_self_install_removes_the_pyz_extraction_it_ran_from_and_earlier_ones_and_the_install_runs(tmp_path):
    inst = Install(tmp_path, None)
    earlier = tmp_path / "shiv" / "om-0.9.0.pyz_0123abcd"
    (earlier / "site-packages").mkdir(parents=True)
    (tmp_path / "shiv" / ".om-0.9.0.pyz_0123abcd_lock").write_text("")
    (tmp_path / "shiv" / "other-tool.pyz_77").mkdir()
    r = inst.run_pyz(pyz(BASE_VERSION), "self", "install")
    assert r.returncode == 0, r
    assert f"om: removed the zipapp's unpacked copy {tmp_path / 'shiv'}/om-{BASE_VERSION}.pyz_" in r.stdout
    assert "and 2 earlier one(s)" in r.stdout, r
    assert sorted(p.name for p in (tmp_path / "shiv").iterdir()) == ["other-tool.pyz_77"]
    assert inst.run("--version").stdout == f"om {BASE_VERSION}\n"
    assert inst.run("self", "channel").returncode == 0  # a lazily imported module still loads


@pytest.mark.parametrize("shell, where", [
    ("bash", "~/.bashrc"), ("zsh", "~/.zshrc"), ("fish", "once in fish"), ("sh", "~/.profile"),
])
def test_self_install_off_path_prints_the_line_for_the_users_shell_and_that_line_finds_om(tmp_path, shell, where):
    import shutil

    inst = Install(tmp_path, None)
    program = shutil.which(shell)
    assert program, f"{shell} is not installed (scripts/test installs zsh and fish)"
    r = inst.run_pyz(pyz(BASE_VERSION), "self", "install", env={"SHELL": program, "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    (i,) = [n for n, text in enumerate(lines) if "is not on PATH" in text]
    assert lines[i] == f"om: {inst.bin} is not on PATH; to run `om`, " + (
        "run this once in fish:" if shell == "fish" else f"add this line to {where} and open a new shell:")
    line = lines[i + 1].strip()
    assert line == (f"fish_add_path {inst.bin}" if shell == "fish" else f'export PATH="{inst.bin}:$PATH"')
    # Pasted into that shell, the line makes `om` this install's launcher.
    found = subprocess.run([program, "-c", f"{line}; command -v om"], capture_output=True, text=True, timeout=60,
                           env=dict(inst.env, PATH="/usr/bin:/bin"))
    assert found.returncode == 0 and found.stdout.strip() == str(inst.launcher), found


def test_self_install_on_path_says_nothing_about_path(tmp_path):
    inst = Install(tmp_path, None)
    r = inst.run_pyz(pyz(BASE_VERSION), "self", "install", env={"PATH": f"{inst.bin}:/usr/bin:/bin"})
    assert r.returncode == 0 and "PATH" not in r.stdout, r


def test_self_uninstall_removes_the_install_its_settings_and_shiv_leftovers_and_keeps_the_memory(installed):
    assert installed.run("self", "channel", "rc", "-y").returncode == 0
    (installed.tmp / "cache" / "om").mkdir(parents=True, exist_ok=True)
    leftover = installed.tmp / "shiv" / "om-1.0.0.pyz_feedbeef"
    leftover.mkdir(parents=True)
    memory = installed.tmp / "userhome" / ".claude" / "om" / "session-x"
    memory.mkdir(parents=True)
    (memory / "memory.sqlite3").write_bytes(b"keep me")
    asked = installed.run("self", "uninstall")
    assert asked.returncode == 64 and "needs confirmation; rerun with -y" in asked.stderr, asked
    assert installed.launcher.exists()
    r = installed.run("self", "uninstall", "-y")
    assert r.returncode == 0, r
    for gone in (installed.launcher, installed.home, installed.tmp / "config" / "om" / "channel.json",
                 installed.tmp / "cache" / "om", leftover):
        assert not gone.exists(), gone
        assert f"om: removed {gone}\n" in r.stdout, r
    # The folders that held only om's files go too: shiv's root and om's settings folder.
    for gone in (installed.tmp / "shiv", installed.tmp / "config" / "om"):
        assert not gone.exists() and f"om: removed {gone}\n" in r.stdout, (gone, r)
    assert (memory / "memory.sqlite3").read_bytes() == b"keep me"
    assert f"kept the memory in {installed.tmp / 'userhome' / '.claude' / 'om'}" in r.stdout
    again = subprocess.run([sys.executable, "-I", str(pyz(BASE_VERSION)), "self", "uninstall", "-y"],
                           env=dict(installed.env, SHIV_ROOT=str(installed.tmp / "shiv2")), capture_output=True,
                           text=True, timeout=120)
    assert again.returncode == 0 and again.stdout.startswith("om: no standalone om to remove"), again


def test_self_uninstall_keeps_the_folders_that_hold_anything_else(installed):
    assert installed.run("self", "channel", "rc", "-y").returncode == 0
    (installed.tmp / "shiv" / "other-tool.pyz_77").mkdir(parents=True)
    (installed.tmp / "config" / "om" / "notes.txt").write_text("mine")
    r = installed.run("self", "uninstall", "-y")
    assert r.returncode == 0, r
    assert (installed.tmp / "shiv" / "other-tool.pyz_77").is_dir()
    assert (installed.tmp / "config" / "om" / "notes.txt").read_text() == "mine"
    assert not (installed.tmp / "config" / "om" / "channel.json").exists()


def test_rollback_with_nothing_to_roll_back_to_is_not_found_and_changes_nothing(installed):
    before = installed.snapshot()
    r = installed.run("self", "rollback")
    assert (r.returncode, r.stdout) == (66, ""), r
    assert r.stderr == "om: there is no previous version to roll back to; 1.0.0 stays installed\n"
    assert_unchanged(installed, before)


def test_check_without_a_network_says_so_in_words_and_exits_1(installed):
    r = installed.run("self", "update", "--check", env={"OM_UPDATE_API_URL": "https://api.github.invalid"})
    assert r.returncode == 1, r
    assert r.stderr == "om: cannot reach api.github.invalid: api.github.invalid does not resolve (no network, or no DNS)\n"


def test_doctor_of_a_downloaded_zipapp_advises_installing_the_plugin_from_github_in_one_line(tmp_path):
    inst = Install(tmp_path, None)
    r = inst.run_pyz(pyz(BASE_VERSION), "doctor", "--json", env={"CODEX_HOME": str(tmp_path / "codex"),
                                                                  "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")})
    assert r.returncode == 0, r
    report = json.loads(r.stdout)
    (line,) = [c for c in report["checks"] if c["status"] != "ok"]
    assert line["check"] == "clients"
    assert line["fix"].startswith("codex plugin marketplace add om-memory/om && codex plugin add om@observational-memory")
    assert "checkout" not in line["fix"]
