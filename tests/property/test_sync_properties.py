"""`om sync` under random operations across three machines, some syncs killed (-9) at random moments.

Invariants: every store stays readable whatever was killed when; once every machine has synced
a few times, each machine's mirror of another's session shows exactly what that machine's own
ledger holds; a mirror equals one rebuilt from scratch; and a forget of text seen on one machine
leaves, after the rounds it needs, no byte of it on any machine, om's repositories included.
"""

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT, RUNTIME_ARGV, _project_tmp
from sync_support import Machine, bare_remote, mirrors, raw_holds

NAMES = ("a", "b", "c")
operations = st.lists(st.one_of(
    st.tuples(st.just("capture"), st.sampled_from(NAMES), st.integers(0, 3), st.integers(0, 5)),
    st.tuples(st.just("secret"), st.sampled_from(NAMES), st.integers(0, 3), st.integers(0, 5)),
    st.tuples(st.just("sync"), st.sampled_from(NAMES)),
    st.tuples(st.just("kill"), st.sampled_from(NAMES), st.integers(0, 400)),
    st.tuples(st.just("forget"), st.sampled_from(NAMES), st.integers(0, 5)),
), min_size=3, max_size=10)


def killed_sync(machine, delay_ms):
    """Start `om sync` and kill its whole process group -9 after `delay_ms` (or let it end first)."""
    env = {k: v for k, v in os.environ.items() if k != "OBSERVATIONAL_MEMORY_STORE"}
    env.update(machine.env, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([*RUNTIME_ARGV, "--store", str(machine.store), "sync"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    time.sleep(delay_ms / 1000)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=60)


def own_view(machine):
    """{session: {record id: text}} of the machine's own sessions."""
    doc = json.loads(machine.setup("export", "--all-sessions", "--format", "json").stdout)
    return {s["session"]: {x["id"]: x["text"] for x in s["sources"] + s["entries"]} for s in doc["sessions"]}


def mirror_view(machine, writer):
    found = {}
    for w, folder in mirrors(machine):
        if w != writer:
            continue
        con = sqlite3.connect(f"file:{folder / 'memory.sqlite3'}?mode=ro", uri=True)
        try:
            session = con.execute("SELECT value FROM meta WHERE key = 'session'").fetchone()[0]
            rows = con.execute("SELECT id, body FROM sources UNION ALL SELECT id, body FROM entries").fetchall()
        finally:
            con.close()
        found[session] = {item: json.loads(body)["text"] for item, body in rows}
    return found


def readable(machine):
    r = machine.inproc("sessions", "--json")
    assert r.returncode == 0, r
    for _, folder in mirrors(machine):
        con = sqlite3.connect(f"file:{folder / 'memory.sqlite3'}?mode=ro", uri=True)
        try:
            assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        finally:
            con.close()


def rounds(machines, n):
    for _ in range(n):
        for m in machines:
            r = m.inproc("sync")
            assert r.returncode == 0, (m.name, r)


@settings(max_examples=int(os.environ.get("OM_SYNC_EXAMPLES", "4")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(operations)
def test_random_operations_with_killed_syncs_leave_stores_readable_and_converge(ops):
    with tempfile.TemporaryDirectory(prefix="om-sync-prop-", dir=_project_tmp()) as tmp:
        root = Path(tmp)
        url = bare_remote(root / "remote.git")
        machines = {}
        for name in NAMES:
            m = Machine(root, name)
            m.init("--remote", url, "--label", name)
            machines[name] = m
        secrets = set()
        for op in ops:
            m = machines[op[1]]
            if op[0] == "capture":
                m.capture(f"s{op[2]}", f"note {op[3]} written on {m.name}")
            elif op[0] == "secret":
                secret = f"secret-{m.name}-{op[3]}-zq"
                secrets.add(secret)
                m.capture(f"s{op[2]}", f"the line holding {secret} on {m.name}", kind="tool")
            elif op[0] == "sync":
                assert m.inproc("sync").returncode == 0
            elif op[0] == "kill":
                killed_sync(m, op[2])
            else:
                candidates = sorted(s for s in secrets if s.endswith(f"-{op[2]}-zq"))
                for secret in candidates:
                    r = m.inproc("forget", "--all-sessions", "--text", secret, "-y")
                    assert r.returncode in (0, 68), r
            for each in machines.values():
                readable(each)
        ordered = [machines[n] for n in NAMES]
        rounds(ordered, 3)
        writers = {n: m.setup("sync", "status", "--json").json["writer"] for n, m in machines.items()}
        for reader in ordered:
            for name, writer in writers.items():
                if machines[name] is not reader:
                    assert mirror_view(reader, writer) == own_view(machines[name]), (reader.name, name)
        # A mirror equals one rebuilt from scratch.
        a = machines["a"]
        before = {w: mirror_view(a, w) for w in writers.values()}
        shutil.rmtree(a.store / "sync" / "mirrors", ignore_errors=True)
        assert a.inproc("sync").returncode == 0
        assert {w: mirror_view(a, w) for w in writers.values()} == before
        # Whatever was forgotten before, a forget of every secret on one machine reaches every byte.
        for secret in sorted(secrets):
            r = a.inproc("forget", "--all-sessions", "--text", secret, "-y")
            assert r.returncode in (0, 68), r
        rounds(ordered, 3)
        for m in ordered:
            for secret in secrets:
                assert raw_holds(m, secret) == ([], False), (m.name, secret, raw_holds(m, secret))
