"""What the `om ingest` tests share: the real transcripts kept as fixtures, and the sources a store holds.

The stores are read with plain `sqlite3` (as the reliability tests read them), so a bug in
om's ledger code cannot hide itself from the comparison.
"""

import glob
import json
import os
import re
import shutil
import sqlite3
import uuid
from pathlib import Path


def _unpacked():
    """The fixture transcripts, unpacked once per test process into a private temporary folder.

    They are kept gzipped (tests/fixtures/transcripts/transcripts.tar.gz) because every plugin
    install copies the repository, tests included."""
    import atexit
    import tarfile
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="om-transcripts-"))
    atexit.register(shutil.rmtree, folder, True)
    with tarfile.open(Path(__file__).resolve().parent / "fixtures" / "transcripts" / "transcripts.tar.gz") as tar:
        for member in tar.getmembers():
            if not (member.isdir() or member.isfile()) or member.name.startswith(("/", "..")):
                raise ValueError(f"unexpected member {member.name!r} in the fixture archive")
        tar.extractall(folder, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    return folder


FIXTURES = _unpacked()
CLIENT_OF = {"codex-0.146.0": "codex", "codex-0.169.0": "codex", "claude-2.1.332": "claude"}


def scenarios():
    """[(fixture folder, scenario)] of every fixture transcript set."""
    return [(folder, scenario) for folder in sorted(CLIENT_OF)
            for scenario in sorted(json.loads((FIXTURES / folder / "hook-sources.json").read_text()))]


def hook_sources(folder, scenario):
    """{session: [source ids the real hooks stored, in seq order]} for one scenario."""
    return json.loads((FIXTURES / folder / "hook-sources.json").read_text())[scenario]


def copy_scenario(folder, scenario, dest):
    """A private copy of a scenario's transcripts (tests may change or cut them); its path."""
    target = Path(dest) / folder / scenario
    shutil.copytree(FIXTURES / folder / scenario, target)
    return target


def transcript(folder, scenario, session):
    """The path of a scenario's transcript of `session` (not a sub-agent's)."""
    (path,) = [p for p in glob.glob(str(FIXTURES / folder / scenario / "**" / "*.jsonl"), recursive=True)
               if session in os.path.basename(p) and "subagents" not in p]
    return Path(path)


def stored(store):
    """{session: [(seq, id, kind, text)]} of every ledger in `store`."""
    out = {}
    for path in glob.glob(os.path.join(str(store), "session-*", "memory.sqlite3")):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            session = dict(conn.execute("SELECT key, value FROM meta"))["session"]
            rows = conn.execute("SELECT seq, id, body FROM sources ORDER BY seq").fetchall()
        finally:
            conn.close()
        out[session] = [(seq, sid, json.loads(body)["kind"], json.loads(body)["text"]) for seq, sid, body in rows]
    return out


def stored_ids(store):
    """{session: [source id, in seq order]} of every ledger in `store` that holds any."""
    return {session: [row[1] for row in rows] for session, rows in stored(store).items() if rows}


def meta(store, session_db):
    conn = sqlite3.connect(f"file:{session_db}?mode=ro", uri=True)
    try:
        return dict(conn.execute("SELECT key, value FROM meta"))
    finally:
        conn.close()


def ingest(store, client, *args, env=None):
    """`om --store STORE ingest --client CLIENT ARGS --json` as a subprocess: its report (it must succeed)."""
    from conftest import run_om

    r = run_om("--store", store, "ingest", "--client", client, *map(str, args), "--json", env=env)
    assert r.returncode == 0, r
    return r.json


def assert_resumed_without_a_duplicate(store, session, fresh, ingest_into):
    """A session ingested once, then resumed with the hooks running: its two turns (prompt, tool, reply)
    are each there once, another ingest adds nothing, and a fresh store ingests to the same ids.
    `ingest_into(store)` runs the client's ingest into a store."""
    rows = stored(store)[session]
    assert [kind for _, _, kind, _ in rows] == ["user", "tool", "assistant"] * 2
    assert len({(kind, text) for _, _, kind, text in rows}) == 6
    assert ingest_into(store)["captured"] == 0
    ingest_into(fresh)
    assert stored_ids(fresh) == stored_ids(store)


_IDS = re.compile(r"(?:call_|toolu_|msg_)[0-9a-f]{16,24}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def grow_transcript(src, dest, size, session):
    """A transcript of at least `size` bytes at `dest`: `src`'s first line, then the rest again and again,
    each time with fresh turn, prompt, message and call ids (real lines, new sources; `session` kept).
    Returns how many copies were written."""
    lines = Path(src).read_bytes().splitlines(True)
    head, body = lines[0], b"".join(lines[1:]).decode("utf-8")
    old_ids = sorted(set(_IDS.findall(body)) - {session})
    copies, written = 0, len(head)
    with open(dest, "wb") as out:
        out.write(head)
        while written < size:
            fresh = {old: _fresh_like(old) for old in old_ids}
            chunk = _IDS.sub(lambda match, fresh=fresh: fresh.get(match.group(), match.group()), body).encode("utf-8")
            out.write(chunk)
            written += len(chunk)
            copies += 1
    return copies


def _fresh_like(old):
    prefix, underscore, rest = old.partition("_")
    if underscore:
        return prefix + "_" + (uuid.uuid4().hex * 2)[: len(rest)]
    return str(uuid.uuid4())
