"""README's first command, scripts/demo, runs a session through capture, checkpoint and prime from the checkout."""

import subprocess

from conftest import ROOT


def test_the_demo_captures_checkpoints_and_primes_in_a_throwaway_store():
    done = subprocess.run(["bash", str(ROOT / "scripts" / "demo")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    prime = done.stdout.split("$ om prime", 1)[1]
    assert "The user wants pytest, never unittest" in prime and "importance=high" in prime
    assert '"kind":"user"' in done.stdout.rsplit("$ om recall", 1)[1]
