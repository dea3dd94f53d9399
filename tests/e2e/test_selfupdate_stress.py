"""Updates back and forth while other processes keep running `om`: zero failures."""

import subprocess
import threading
import time

from dist_support import fake_github, installed, pyz_bytes  # noqa: F401

STRESS_SECONDS = 3.0
MIN_UPDATES = 6


def test_commands_running_during_repeated_updates_never_fail(installed, fake_github):
    fake_github.add_release("v1.0.0", pyz_bytes("1.0.0"))
    fake_github.add_release("v1.1.0", pyz_bytes("1.1.0"))
    old_release, new_release = fake_github.releases[1], fake_github.releases[0]
    deadline = time.monotonic() + STRESS_SECONDS
    failures, runs, updates = [], [0], [0]
    finished = threading.Event()

    def updater():
        flip = True
        while time.monotonic() < deadline or updates[0] < MIN_UPDATES:
            # Alternate which release is newest: each round is a real download-verify-switch.
            fake_github.releases = [new_release, old_release] if flip else [old_release]
            r = installed.run("self", "update", "--force", "-y")
            if r.returncode != 0:
                failures.append(("update", r))
            updates[0] += 1
            flip = not flip
        finished.set()

    def user(args, expect):
        while not finished.is_set():
            # A command that imports lazily after start-up, at an unpredictable moment.
            p = subprocess.run([str(installed.launcher), *args], capture_output=True,
                               env=installed.env, timeout=60, stdin=subprocess.DEVNULL)
            runs[0] += 1
            out = p.stdout.decode()
            if p.returncode != 0 or not expect(out):
                failures.append((args, p.returncode, out, p.stderr.decode()[-500:]))

    threads = [threading.Thread(target=updater)]
    threads += [threading.Thread(target=user, args=(["--version"], lambda o: o in ("om 1.0.0\n", "om 1.1.0\n")))]
    threads += [threading.Thread(target=user, args=(["capabilities"], lambda o: '"clients"' in o))]
    threads += [threading.Thread(target=user, args=(["self", "channel"], lambda o: o == "stable\n"))]
    store = str(installed.tmp / "store")
    threads += [threading.Thread(target=user, args=(["--store", store, "--session", "s1", "status"], lambda o: '"session"' in o))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert updates[0] >= MIN_UPDATES and runs[0] >= 4
    assert installed.run("--version").stdout in ("om 1.0.0\n", "om 1.1.0\n")
