"""Read a session ledger straight from its SQLite file, independently of `om`.

The reliability tests judge what `om` left on disk with plain `sqlite3`, so a
bug in the ledger code cannot hide itself. Opening a file here also rolls back
a hot journal left by a killed writer, exactly as the next `om` command would.
"""

import hashlib
import json
import os
import sqlite3


def session_dir(store, session):
    # The documented recipe (spec: session directory hash), not om's own code.
    canonical = json.dumps(session, ensure_ascii=False, separators=(",", ":"))
    return os.path.join(str(store), "session-" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:24])


def database(store, session):
    return os.path.join(session_dir(store, session), "memory.sqlite3")


def _connect(path):
    if not os.path.isfile(path):
        raise FileNotFoundError(path)
    return sqlite3.connect(path, timeout=30, isolation_level=None)


def dump(path, volatile_meta=()):
    """The full content of the three v1 tables; meta keys in `volatile_meta` keep only their presence."""
    conn = _connect(path)
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        for key in volatile_meta:
            if key in meta:
                meta[key] = "<present>"
        return {
            "meta": sorted(meta.items()),
            "sources": conn.execute("SELECT seq, id, body FROM sources ORDER BY seq").fetchall(),
            "entries": conn.execute(
                "SELECT seq, id, body, active, retirement FROM entries ORDER BY seq"
            ).fetchall(),
        }
    finally:
        conn.close()


def integrity(path):
    conn = _connect(path)
    try:
        return [row[0] for row in conn.execute("PRAGMA integrity_check")]
    finally:
        conn.close()


def journal_mode(path):
    conn = _connect(path)
    try:
        return conn.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        conn.close()


def source_ids(path):
    conn = _connect(path)
    try:
        return [row[0] for row in conn.execute("SELECT id FROM sources ORDER BY seq")]
    finally:
        conn.close()


def max_seq(path):
    conn = _connect(path)
    try:
        return conn.execute("SELECT coalesce(max(seq), 0) FROM sources").fetchone()[0]
    finally:
        conn.close()
