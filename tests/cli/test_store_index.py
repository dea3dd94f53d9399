"""The store index (<store>/index/): derived, disposable, never wrong, as a subprocess.

What it is, where it lives and with which modes; that deleting, damaging or
replacing it only costs time; that a change no stamp field but the change time
shows is seen; read-only stores; kill -9 in the middle of an update; and
readers racing a writer.
"""

import json
import os
import random
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
import time

from conftest import ROOT, RUNTIME_ARGV, run_om, run_read_only
from sessions_support import ledger_path, peer_source, v1_session, v1_tables

INDEX = os.path.join("index", "store-v1.sqlite3")


def listing(store, *args):
    r = run_om("--store", store, "sessions", "--json", *args)
    assert r.returncode == 0, r
    return r.json


def reference(store, tmp_path):
    """What reading every ledger gives: the listing of a copy of the store without its index."""
    twin = tmp_path / ("twin-" + os.urandom(4).hex())
    shutil.copytree(store, twin, ignore=shutil.ignore_patterns("index"))
    try:
        return json.loads(json.dumps(listing(twin)).replace(str(twin), str(store)))
    finally:
        shutil.rmtree(twin)


def many(store, count, words=("redis", "cache", "timeout", "deploy")):
    rng = random.Random(count)
    for i in range(count):
        v1_session(store, f"s{i:04d}", [" ".join(rng.choices(words, k=8)) for _ in range(3)], memory=i % 2 == 0)


def settle(store):
    """Every ledger settled and the index holding the stamps' snapshot: the next listing is the fast one,
    taken from the snapshot without reading a row (om.sessions.index), which a change must still defeat."""
    time.sleep(3.2)
    listing(store)  # reads the rows that were read unsettled
    listing(store)  # nothing changed: stores the snapshot
    conn = sqlite3.connect(f"file:{os.path.join(store, INDEX)}?mode=ro", uri=True)
    try:
        assert conn.execute("SELECT count(*) FROM outputs WHERE key = 'stamps'").fetchone() == (1,)
    finally:
        conn.close()
    listing(store)


def test_the_index_is_one_private_file_beside_the_sessions_and_changes_no_ledger(store, tmp_path):
    many(store, 5)
    before = {p: v1_tables(p) for p in store.glob("session-*/memory.sqlite3")}
    first = listing(store)
    path = store / INDEX
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700 and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert sorted(os.listdir(store / "index")) == ["store-v1.sqlite3"]
    assert {p: v1_tables(p) for p in store.glob("session-*/memory.sqlite3")} == before
    assert all(sorted(os.listdir(d)) == ["memory.sqlite3"] for d in store.glob("session-*"))
    assert listing(store) == first == reference(store, tmp_path)


def test_deleting_damaging_or_replacing_the_index_costs_time_never_an_answer(store, tmp_path):
    many(store, 6)
    expected = listing(store)
    shutil.rmtree(store / "index")
    assert listing(store) == expected and (store / INDEX).exists()
    (store / INDEX).write_bytes(b"not a database " * 1000)
    assert listing(store) == expected
    conn = sqlite3.connect(store / INDEX)
    conn.execute("UPDATE meta SET value = 'some other format' WHERE key = 'format'")
    conn.commit()
    conn.close()
    assert listing(store) == expected
    conn = sqlite3.connect(store / INDEX)
    assert conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()[0] != "some other format"
    conn.close()
    time.sleep(3.2)
    listing(store)  # every row is stored settled now: trusted on its stamp alone
    conn = sqlite3.connect(store / INDEX)
    conn.execute("UPDATE sessions SET doc = replace(doc, '\"sources\":3', '\"sources\":7')")  # a lie, stamps kept
    conn.commit()
    conn.close()
    assert listing(store) != expected  # the index is trusted while stamps hold: this is what it would show
    shutil.rmtree(store / "index")
    assert listing(store) == expected  # and deleting it is the cure


def test_a_change_that_puts_the_modification_time_back_is_still_seen(store, tmp_path):
    many(store, 3)
    listing(store)
    settle(store)  # every ledger has settled: from now on each row is trusted on its stamp alone
    path = ledger_path(store, "s0001")
    before = os.stat(path)
    conn = sqlite3.connect(path, isolation_level=None)
    with conn:
        conn.execute("UPDATE sources SET body = json_set(body, '$.timestamp', '2027-01-01T00:00:00Z')"
                     " WHERE seq = 3")  # the same size
    conn.close()
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # as cp -p or rsync -t leave it
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    rows = {r["session"]: r for r in listing(store)["sessions"]}
    assert rows["s0001"]["last_capture"] == "2027-01-01T00:00:00Z"
    assert listing(store) == reference(store, tmp_path)


def test_rewrites_in_place_hand_copies_and_removals_are_picked_up_on_the_next_read(store, tmp_path):
    many(store, 4)
    listing(store)
    settle(store)
    conn = sqlite3.connect(ledger_path(store, "s0000"), isolation_level=None)
    with conn:  # what forget does: the same rows, a text replaced, om_generation bumped
        conn.execute("UPDATE sources SET body = json_set(body, '$.text', 'forgotten') WHERE seq = 1")
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('om_generation', '1')")
    conn.close()
    shutil.copyfile(ledger_path(store, "s0002"), ledger_path(store, "s0003"))  # another session's ledger
    shutil.rmtree(ledger_path(store, "s0001").parent)
    found = listing(store)
    assert [r["session"] for r in found["sessions"]] == ["s0000", "s0002"]  # equal activity: by id
    assert [os.path.basename(s["directory"]) for s in found["skipped"]] == [ledger_path(store, "s0003").parent.name]
    assert found == reference(store, tmp_path)


def test_a_read_only_store_answers_from_its_index_and_the_ledgers_and_changes_nothing(store, tmp_path):
    many(store, 4)
    listing(store)
    conn = sqlite3.connect(ledger_path(store, "s0002"), isolation_level=None)
    with conn:
        peer_source(conn, "s0002", 7, "written after the index")
    conn.close()
    expected = reference(store, tmp_path)
    snapshot = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    r = run_read_only(store, "sessions", "--json")
    assert r.returncode == 0, r
    assert json.loads(r.stdout) == expected
    for args in (("search", "redis", "--all-sessions", "--sources"), ("export", "--format", "json", "--all-sessions")):
        r = run_read_only(store, *args)
        assert r.returncode == 0 and r.stderr == "", r
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == snapshot


def test_a_read_only_store_without_an_index_is_read_whole_and_gets_none(store, tmp_path):
    many(store, 3)
    for args in (("sessions", "--json"), ("search", "redis", "--all-sessions"),
                 ("export", "--format", "md", "--all-sessions")):
        r = run_read_only(store, *args)
        assert r.returncode == 0, r
    assert not (store / "index").exists()
    assert json.loads(run_read_only(store, "sessions", "--json").stdout) == reference(store, tmp_path)


def test_an_index_folder_or_file_that_is_a_symlink_is_never_followed(store, tmp_path):
    many(store, 3)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (store / "index").symlink_to(elsewhere)
    expected = reference(store, tmp_path)
    assert listing(store) == expected and os.listdir(elsewhere) == []
    (store / "index").unlink()
    (store / "index").mkdir(mode=0o700)
    (store / INDEX).symlink_to(elsewhere / "target.sqlite3")
    assert listing(store) == expected and os.listdir(elsewhere) == []


KILLER = r"""
import os, random, signal, subprocess, sys, time
argv, delay = sys.argv[2:], float(sys.argv[1])
proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(delay)
proc.send_signal(signal.SIGKILL)
proc.wait()
"""


def test_kill_9_in_the_middle_of_an_index_update_leaves_a_store_that_reads_correctly(store, tmp_path):
    many(store, 1200)  # more than one transaction of rows on a first build
    expected = reference(store, tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "OBSERVATIONAL_MEMORY_STORE"}
    env["PYTHONPATH"] = str(ROOT)
    rng = random.Random(26)
    journals = 0
    for round_ in range(8):
        if round_ % 2 == 0:
            shutil.rmtree(store / "index", ignore_errors=True)  # a first build, killed
        else:
            for i in rng.sample(range(1200), 300):  # catch-up of many changed sessions, killed
                os.utime(ledger_path(store, f"s{i:04d}"))
        subprocess.run([sys.executable, "-c", KILLER, str(rng.uniform(0.2, 2.5)), *RUNTIME_ARGV,
                        "--store", str(store), "sessions", "--json"], env=env, timeout=120, check=True)
        journals += os.path.exists(str(store / INDEX) + "-journal")
        assert listing(store) == expected, round_
    assert listing(store) == expected
    print(f"hot journals left by the kills: {journals} of 8")


def test_readers_racing_a_writer_are_at_most_the_captures_in_flight_late(store, tmp_path):
    many(store, 20)
    path = ledger_path(store, "s0005")
    stop = threading.Event()
    written = [0]

    def writer():
        conn = sqlite3.connect(path, isolation_level=None, timeout=30)
        n = 0
        while not stop.is_set():
            with conn:
                peer_source(conn, "s0005", 100 + n, f"capture {n}")
            n += 1
            written[0] = n
            time.sleep(0.005)
        conn.close()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for _ in range(15):
            low = 3 + written[0]
            rows = {r["session"]: r for r in listing(store)["sessions"]}
            high = 3 + written[0]
            assert low <= rows["s0005"]["sources"] <= high + 1  # the one in flight at most
    finally:
        stop.set()
        thread.join()
    assert listing(store) == reference(store, tmp_path)


def _forget_by_hand(path, secret):
    """What `om forget` does to a ledger: the same rows, the text replaced, om_generation bumped."""
    conn = sqlite3.connect(path, isolation_level=None)
    with conn:
        for table in ("sources", "entries"):
            conn.execute(f"UPDATE {table} SET body = replace(body, ?, '[FORGOTTEN]')", (secret,))
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('om_generation', '1')")
    conn.execute("VACUUM")
    conn.close()


def _index_bytes(store):
    return b"".join(p.read_bytes() for p in (store / "index").iterdir())


def test_forgotten_text_leaves_the_store_index_file_when_forget_says_so_and_on_the_next_read(store, tmp_path):
    from om.sessions.index import forget

    secret = "zebrafishpassword"  # its own stem: the one token the index keeps of it is these bytes
    for name in ("alpha", "gamma"):
        v1_session(store, name, [f"the key is {secret} now", "something else"], memory=True)
    v1_session(store, "beta", ["nothing to see"], memory=True)
    found = run_om("--store", store, "search", secret, "--all-sessions", "--sources").json
    assert {r["session"] for r in found["results"]} == {"alpha", "gamma"}
    assert secret.encode() in _index_bytes(store)
    # forget calls the store index itself: the bytes are gone at once.
    _forget_by_hand(ledger_path(store, "alpha"), secret)
    forget(str(store), ["alpha"])
    assert _index_bytes(store).count(secret.encode()) > 0  # gamma's are still there, alpha's are not
    _forget_by_hand(ledger_path(store, "gamma"), secret)
    forget(str(store), ["gamma"])
    assert secret.encode() not in _index_bytes(store)
    assert run_om("--store", store, "search", secret, "--all-sessions", "--sources").json["results"] == []
    assert secret.encode() not in _index_bytes(store)
    assert listing(store) == reference(store, tmp_path)


def test_a_rewrite_nobody_announced_is_seen_by_its_generation_and_leaves_no_bytes_either(store):
    secret = "quokkasecretword"  # its own stem
    v1_session(store, "alpha", [f"the key is {secret} now", "something else"], memory=True)
    v1_session(store, "beta", ["nothing to see"], memory=True)
    run_om("--store", store, "search", secret, "--all-sessions", "--sources")
    assert secret.encode() in _index_bytes(store)
    _forget_by_hand(ledger_path(store, "alpha"), secret)
    assert run_om("--store", store, "search", secret, "--all-sessions", "--sources").json["results"] == []
    assert secret.encode() not in _index_bytes(store)


def _search_rows(store):
    """The search part of a store's index, by session name (ids differ from one build to another): every
    token of every document, where it stands, and the entries that are retired."""
    conn = sqlite3.connect(f"file:{store / INDEX}?mode=ro", uri=True)
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.words USING fts5vocab(main, docs, 'instance')")
        names = dict(conn.execute("SELECT id, session FROM sessions"))
        kinds = {0: "source", 1: "entry"}
        tokens = sorted((names[doc >> 32 & (2**30 - 1)], kinds[doc >> 62], doc & (2**32 - 1), term, col, offset)
                        for term, doc, col, offset in conn.execute("SELECT term, doc, col, offset FROM temp.words"))
        retired = sorted((names[doc >> 32 & (2**30 - 1)], doc & (2**32 - 1))
                         for (doc,) in conn.execute("SELECT doc FROM retired"))
        return tokens, retired
    finally:
        conn.close()


def test_searchers_racing_each_other_and_a_writer_store_what_one_build_from_scratch_stores(store, tmp_path):
    many(store, 150)
    run_om("--store", store, "search", "redis", "--all-sessions")
    env = {k: v for k, v in os.environ.items() if k != "OBSERVATIONAL_MEMORY_STORE"}
    env["PYTHONPATH"] = str(ROOT)
    for i in range(0, 150, 2):  # changed since: every racer reads them again, after what the index covers
        conn = sqlite3.connect(ledger_path(store, f"s{i:04d}"), isolation_level=None)
        with conn:
            peer_source(conn, f"s{i:04d}", 50, "redis cache again")
        conn.close()
    racers = [subprocess.Popen([*RUNTIME_ARGV, "--store", str(store), "search", "cache", "redis", "--all-sessions",
                                "--sources"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
              for _ in range(4)]
    for racer in racers:
        assert racer.wait(timeout=300) == 0, racer.stderr.read()
    time.sleep(3.2)  # what the racers stored unsettled is read again once more, settled
    run_om("--store", store, "search", "redis", "--all-sessions")
    twin = tmp_path / "twin"
    shutil.copytree(store, twin, ignore=shutil.ignore_patterns("index"))
    run_om("--store", twin, "search", "redis", "--all-sessions")
    assert _search_rows(store) == _search_rows(twin)


def _searching(store, *args, cpus=None):
    """`om search ARGS --all-sessions --sources` over `store` as a process (on only `cpus`, when given), the
    leader of its own process group, as a shell starts a command."""
    env = {k: v for k, v in os.environ.items() if k != "OBSERVATIONAL_MEMORY_STORE"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.Popen([*RUNTIME_ARGV, "--store", str(store), "search", *args, "--all-sessions", "--sources"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=lambda: _as_a_shell_starts_it(cpus))


def _as_a_shell_starts_it(cpus):
    """Ctrl-C at its default and not blocked, as a shell starts a foreground command, whatever state the
    test process is in (a signal mask or an ignored SIGINT is inherited across exec)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    if cpus is not None:
        os.sched_setaffinity(0, cpus)


def _signal_state(pid):
    """The SigBlk and SigIgn lines of a process, for a failure message."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return [line.strip() for line in f if line.startswith(("SigBlk", "SigIgn"))]
    except OSError:
        return []


def test_a_first_build_shared_by_worker_processes_stores_what_one_process_alone_stores(store, tmp_path):
    cpus = sorted(os.sched_getaffinity(0))
    assert len(cpus) >= 2, "this test needs a machine with two CPUs to share a build between processes"
    many(store, 260)  # enough sessions to be shared (om.sessions.searchindex.PARALLEL_AT)
    alone = tmp_path / "alone"
    shutil.copytree(store, alone)
    answers = {}
    for where, use in ((alone, {cpus[0]}), (store, set(cpus[:2]))):
        proc = _searching(where, "redis", "timeout", cpus=use)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        said = err.decode().splitlines()[-1]
        assert said.startswith("om: read 260 sessions' search rows in "), said
        assert said.endswith(" (2 processes reading them)") == (len(use) == 2), said
        answers[where] = json.loads(out.decode().replace(str(where), "STORE"))
    assert _search_rows(store) == _search_rows(alone)
    assert answers[store] == answers[alone]
    # Built without merging as it inserted, merged once at the end: one segment, merging on again.
    assert _segments(store) == _segments(alone) == 1 and _merging(store) == 4


def _state(pid):
    """A process's state letter and its parent's pid, or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[1])


def _children(pid):
    return [int(e) for e in os.listdir("/proc") if e.isdigit() and (_state(e) or ("", 0))[1] == pid]


def _running(pid):
    """Whether `pid` is a live process (a zombie nobody reaps is not)."""
    return (_state(pid) or ("Z",))[0] != "Z"


def _long_sessions(store, tmp_path):
    """400 sessions long enough to read that a signal lands while the workers read; the answer to
    searching them, from a copy."""
    rng = random.Random(26)
    words = ("redis", "cache", "timeout", "deploy", "queue", "worker", "shard", "lease")
    for i in range(400):
        v1_session(store, f"s{i:04d}", [" ".join(rng.choices(words, k=30)) + f" item{j}" for j in range(100)],
                   memory=i % 2 == 0)
    twin = tmp_path / "twin"
    shutil.copytree(store, twin)
    proc = _searching(twin, "redis", "timeout")
    return json.loads(proc.communicate(timeout=300)[0].decode().replace(str(twin), "STORE"))


def _started_workers(proc):
    deadline = time.monotonic() + 60
    workers = []
    while len(workers) < 2 and time.monotonic() < deadline:
        workers = _children(proc.pid)
        time.sleep(0.005)
    return workers


def _gone(workers):
    deadline = time.monotonic() + 10
    while any(map(_running, workers)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not any(map(_running, workers))


def test_ctrl_c_during_a_shared_build_says_interrupted_and_leaves_no_worker_and_a_store_that_searches_correctly(
        store, tmp_path):
    expected = _long_sessions(store, tmp_path)
    two = set(sorted(os.sched_getaffinity(0))[:2])
    assert len(two) == 2, "this test needs a machine with two CPUs to share a build between processes"
    run_om("--store", store, "sessions")
    proc = _searching(store, "redis", "timeout", cpus=two)
    workers = _started_workers(proc)
    time.sleep(0.1)
    assert len(workers) == 2 and all(map(_running, workers)), "the build was not shared, or ended too soon"
    state = _signal_state(proc.pid)
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the whole foreground group
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (err, state)
    # Said once, by the command: a worker that unwound into the command's code would say it too.
    assert err.decode().splitlines()[-1] == "om: interrupted" and err.count(b"om: interrupted") == 1, err
    assert b"Traceback" not in err and len(set(err.splitlines())) == len(err.splitlines()), err
    assert _gone(workers)
    proc = _searching(store, "redis", "timeout")
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert json.loads(out.decode().replace(str(store), "STORE")) == expected


def test_kill_9_of_a_build_shared_by_workers_leaves_no_worker_and_a_store_that_searches_correctly(store, tmp_path):
    expected = _long_sessions(store, tmp_path)
    rng = random.Random(26)
    two = set(sorted(os.sched_getaffinity(0))[:2])
    assert len(two) == 2, "this test needs a machine with two CPUs to share a build between processes"
    for round_ in range(3):
        shutil.rmtree(store / "index", ignore_errors=True)
        run_om("--store", store, "sessions")  # the catalogue is there: the kill lands in the search part
        proc = _searching(store, "redis", "timeout", cpus=two)  # two workers, however many CPUs there are
        workers = _started_workers(proc)
        time.sleep(rng.uniform(0, 0.2))  # the build takes about a second unloaded
        assert len(workers) == 2 and all(map(_running, workers)), "the build was not shared, or ended too soon"
        proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
        assert _gone(workers), f"round {round_}: a worker outlived its parent"
        proc = _searching(store, "redis", "timeout")
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert json.loads(out.decode().replace(str(store), "STORE")) == expected, round_


def test_a_build_that_can_fork_no_worker_reads_every_session_itself(store, tmp_path, monkeypatch):
    import errno

    from inprocess import run_om_in_process

    many(store, 260)
    alone = tmp_path / "alone"
    shutil.copytree(store, alone)
    proc = _searching(alone, "redis", "timeout", cpus={sorted(os.sched_getaffinity(0))[0]})
    expected = json.loads(proc.communicate(timeout=300)[0].decode().replace(str(alone), "STORE"))

    def no_fork():
        raise OSError(errno.EAGAIN, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    r = run_om_in_process("--store", store, "search", "redis", "timeout", "--all-sessions", "--sources")
    assert r.returncode == 0, r.stderr
    said = r.stderr.splitlines()[-1]
    assert said.startswith("om: read 260 sessions' search rows in ") and "processes" not in said, said
    assert json.loads(r.stdout.replace(str(store), "STORE")) == expected
    assert _search_rows(store) == _search_rows(alone)


def test_a_ledger_in_wal_mode_written_while_a_peer_holds_it_open_is_seen_on_the_next_read(store, tmp_path):
    many(store, 3)
    path = ledger_path(store, "s0001")
    holder = sqlite3.connect(path, isolation_level=None)  # a peer's long-lived connection: no checkpoint at close
    try:
        assert holder.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)
        holder.execute("SELECT count(*) FROM sources").fetchone()
        listing(store)
        time.sleep(3.2)  # every ledger settled
        listing(store)
        listing(store)
        found = run_om("--store", store, "search", "zebra", "--all-sessions", "--sources")
        assert found.returncode == 0 and found.json["results"] == [], found
        before = os.stat(path)
        writer = sqlite3.connect(path, isolation_level=None)
        peer_source(writer, "s0001", 9, "zebra crossing")
        writer.close()
        after = os.stat(path)
        # The commit went to the WAL: the ledger's own file shows nothing of it.
        assert (after.st_size, after.st_mtime_ns, after.st_ctime_ns) == (
            before.st_size, before.st_mtime_ns, before.st_ctime_ns)
        assert {r["session"]: r["sources"] for r in listing(store)["sessions"]}["s0001"] == 4
        assert listing(store) == reference(store, tmp_path)
        found = run_om("--store", store, "search", "zebra", "--all-sessions", "--sources")
        assert [r["session"] for r in found.json["results"]] == ["s0001"], found
    finally:
        holder.close()


def test_a_search_of_every_session_reads_only_the_ledgers_of_its_results_and_writes_none(store):
    from om.derived.fts import TABLE

    rng = random.Random(42)
    filler = [f"w{i}" for i in range(30)]
    for i in range(60):
        v1_session(store, f"s{i:04d}", [" ".join(rng.choices(filler, k=rng.randint(5, 30))) + f" item{j}"
                                        for j in range(12)], memory=False)
    before = {i: v1_tables(ledger_path(store, f"s{i:04d}")) for i in range(60)}
    found = run_om("--store", store, "search", "item7", "--all-sessions", "--sources", "--limit", "3")
    assert found.returncode == 0, found
    assert found.json["sessions"] == 60 and len(found.json["results"]) == 3
    assert all("[item7]" in r["snippet"] for r in found.json["results"])
    # One ranking from the store index: no session was searched alone, so none has its own search index.
    for i in range(60):
        conn = sqlite3.connect(f"file:{ledger_path(store, f's{i:04d}')}?mode=ro", uri=True)
        try:
            assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (TABLE,)).fetchone() is None, i
        finally:
            conn.close()
        assert v1_tables(ledger_path(store, f"s{i:04d}")) == before[i]


def test_kill_9_during_a_first_build_or_a_catch_up_of_the_search_part_leaves_a_store_that_searches_correctly(
        store, tmp_path):
    many(store, 1100)  # a large build: many transactions of documents, shared by worker processes
    twin = tmp_path / "twin"
    shutil.copytree(store, twin)
    proc = _searching(twin, "redis", "cache")
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    expected = json.loads(out.decode().replace(str(twin), "STORE"))
    rng = random.Random(11)
    for round_ in range(4):
        if round_ % 2 == 0:
            shutil.rmtree(store / "index", ignore_errors=True)  # a first build, killed
        else:
            for i in rng.sample(range(1100), 400):  # a catch-up of many sessions, killed
                conn = sqlite3.connect(ledger_path(store, f"s{i:04d}"), isolation_level=None)
                with conn:
                    peer_source(conn, f"s{i:04d}", 40 + round_, "redis cache later")
                    conn.execute("UPDATE entries SET active = 1 - active")  # retired, or active again
                conn.close()
        proc = _searching(store, "redis", "cache")
        said = b""
        while b"search part" not in said:
            said = proc.stderr.readline()
            assert said, "the search part was not built"
        time.sleep(rng.uniform(0, 1.0))
        proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
        if round_ % 2:
            for i in range(1100):  # as the twin is: its first rows again, so each is read whole
                shutil.copyfile(ledger_path(twin, f"s{i:04d}"), ledger_path(store, f"s{i:04d}"))
        proc = _searching(store, "redis", "cache")
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert json.loads(out.decode().replace(str(store), "STORE")) == expected, round_
    time.sleep(3.2)  # what was stored unsettled is read again once more, settled
    for where in (store, twin):
        proc = _searching(where, "redis", "cache")
        assert proc.communicate(timeout=300)[0] and proc.returncode == 0
    assert _search_rows(store) == _search_rows(twin)


def _segments(store):
    """How many FTS5 segments the store index's documents are in."""
    conn = sqlite3.connect(f"file:{store / INDEX}?mode=ro", uri=True, timeout=30)
    try:
        return conn.execute("SELECT count(DISTINCT segid) FROM docs_idx").fetchone()[0]
    finally:
        conn.close()


def _merging(store):
    """FTS5's automerge setting of the store index's documents (4, its default, when never set)."""
    conn = sqlite3.connect(f"file:{store / INDEX}?mode=ro", uri=True, timeout=30)
    try:
        row = conn.execute("SELECT v FROM docs_config WHERE k = 'automerge'").fetchone()
        return 4 if row is None else int(row[0])
    finally:
        conn.close()


def test_a_first_build_inserts_without_merging_and_merging_is_back_after_it_after_a_kill_and_after_a_crash(
        store, tmp_path):
    expected = _long_sessions(store, tmp_path)
    run_om("--store", store, "sessions")  # the catalogue is there: what follows is the search part's build
    proc = _searching(store, "redis", "timeout")
    seen, deadline = set(), time.monotonic() + 120
    while 0 not in seen and proc.poll() is None and time.monotonic() < deadline:
        try:
            seen.add(_merging(store))
        except sqlite3.OperationalError:  # no documents table yet, or the builder committing
            pass
    assert 0 in seen, "the build merged segments while it inserted, or ended before it was seen"
    proc.kill()
    proc.wait()
    proc.stdout.close()
    proc.stderr.close()
    assert _merging(store) == 0  # killed mid-build: left off
    proc = _searching(store, "redis", "timeout")
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert json.loads(out.decode().replace(str(store), "STORE")) == expected
    assert _merging(store) == 4
    # A build killed after it stored everything but before it switched merging on: the next catch-up,
    # however small, switches it on.
    conn = sqlite3.connect(store / INDEX, isolation_level=None)
    conn.execute("INSERT INTO docs(docs, rank) VALUES ('automerge', 0)")
    conn.close()
    conn = sqlite3.connect(ledger_path(store, "s0007"), isolation_level=None)
    with conn:
        peer_source(conn, "s0007", 500, "redis timeout at last")
    conn.close()
    r = run_om("--store", store, "search", "at last", "--all-sessions", "--sources")
    assert r.returncode == 0 and [x["session"] for x in r.json["results"]] == ["s0007"], r
    assert _merging(store) == 4
