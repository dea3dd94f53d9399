"""The v1 ledger: one SQLite database per session, and all SQL that touches it.

Invariants:
- The three v1 tables (meta, sources, entries) keep the exact schema, row
  bodies, IDs and meta keys of the earlier implementations, so a store written
  by either side opens in the other.
- Every write runs in one explicit `BEGIN IMMEDIATE` transaction: a command
  either commits all of its changes or none of them (cursor included).
- Derived data is additive and disposable: `om_*` tables and indexes may be
  dropped at any time and are rebuilt from the v1 tables.
- Journal mode: SQLite's rollback journal (the file's own mode is never
  changed). It is what v1 peers wrote, and unlike WAL it lets a reader open a
  ledger in a directory it cannot write, which is exactly the agent's sandboxed
  shell running `prime` or `status` on the plugin data folder.
- synchronous=FULL: the journal and the database are fsynced before COMMIT
  returns, so a result printed by `capture` or `apply` survives a kill -9 of
  any process and a power loss.
"""

import os
import time

from om.sqlite import load as _load_sqlite

# The C module itself: sqlite3.dbapi2's datetime adapters and functools cost
# several milliseconds of imports per run, and no command needs them.
sqlite3 = _load_sqlite()

from om import ids
from om.errors import Conflict, InputError, NotFound, StoreError
from om.jsonio import dumps, loads
from om.store import database_path, ensure_database_file, resolve_store, validate_session

BUSY_TIMEOUT_MS = 15000
KINDS = ("user", "assistant", "tool")
IMPORTANCE = ("low", "medium", "high", "critical")
MAX_CAPTURE_CHARS = 1_000_000
TRUNCATE_OVER = 24_000
TRUNCATE_KEEP = 12_000
PENDING_CHUNK_CHARS = 48_000
MAX_ENTRY_TEXT = 2_000
MAX_REASON = 1_000
MAX_IDS = 100

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS sources (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " id TEXT UNIQUE NOT NULL, body TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS entries (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " id TEXT UNIQUE NOT NULL, body TEXT NOT NULL, active INTEGER NOT NULL DEFAULT 1,"
    " retirement TEXT)",
)

#: An index, not a change of the v1 table: SQLite maintains it for every writer,
#: v1 peers included, and it makes the active counts of status index-only.
ACTIVE_INDEX = "CREATE INDEX IF NOT EXISTS om_entries_active ON entries(active, id)"

#: Meta keys a fork keeps; every other key is rewritten or dropped.
FORK_KEEPS = ("version", "cursor", "paused", "last_checkpoint_at")
#: Transient Codex adapter state (legacy keys prompt_id, stop_turn, stop_prompt,
#: notified_cursor) is dropped by fork. Import clears only the Stop and reminder
#: part: the destination's prompt_id stays, since its current turn goes on.
IMPORT_CLEARS = ("stop_turn", "stop_prompt", "notified_cursor")
#: Prefix of adapter state added by `om` (also transient).
ADAPTER_PREFIX = "codex_"
#: Derived running totals of source sizes (see `Ledger._catch_up_sizes`).
SIZES = "om_source_sizes_v1"


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def connect(path, readonly=False):
    uri = "file:" + _uri_path(path) + ("?mode=ro" if readonly else "")
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        conn.execute("PRAGMA synchronous=FULL")
    except sqlite3.Error as e:
        raise StoreError(f"om: cannot open {path}: {e}") from None
    return conn


def _uri_path(path):
    return path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")


def check_capture(kind, text, key):
    """Raise InputError unless (kind, text, key) is a capture the ledger accepts.

    Callable before a ledger is opened, so a rejected capture creates nothing.
    """
    if kind not in KINDS:
        raise InputError(f"om: kind must be user, assistant or tool, got {kind!r}")
    if not isinstance(key, str):
        raise InputError("om: key must be a string")
    if not ids.trim_space(text):
        raise InputError("om: text must not be blank")
    if len(text) > MAX_CAPTURE_CHARS:
        raise InputError(f"om: text exceeds {MAX_CAPTURE_CHARS} characters")


class Ledger:
    """One open session ledger. Use `Ledger.open(...)` as a context manager."""

    def __init__(self, conn, store, session, path):
        self.conn = conn
        self.store = store
        self.session = session
        self.path = path

    # -- opening ---------------------------------------------------------

    @classmethod
    def open(cls, store, session, create=True):
        validate_session(session)
        store = resolve_store(store, create=create)
        path = database_path(store, session)
        if not os.path.exists(path):
            if not create:
                raise NotFound(f"om: no ledger for session {session!r} in store {store}")
            ensure_database_file(path)
        ledger = cls(connect(path), store, session, path)
        try:
            ledger._ensure_schema()
        except BaseException:
            ledger.close()
            raise
        return ledger

    def _ensure_schema(self):
        # Read first: a complete ledger needs no write, so read-only
        # directories (a sandboxed shell) can still run read commands.
        try:
            ok = self._schema_state() == (3, self.session, "1")
        except sqlite3.DatabaseError as e:
            if "no such table" not in str(e):
                raise StoreError(f"om: {self.path} is not a usable ledger: {e}") from None
            ok = False
        if ok:
            return
        with self.transaction():
            for statement in SCHEMA:
                self.conn.execute(statement)
            self.conn.execute(ACTIVE_INDEX)
            self.conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('session', ?)", (self.session,))
            self.conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('version', '1')")
        tables, session, version = self._schema_state()
        if session != self.session:
            raise Conflict(f"om: ledger {self.path} belongs to session {session!r}, not {self.session!r}")
        if version != "1":
            raise StoreError(f"om: ledger {self.path} has schema version {version!r}; this runtime reads version 1")

    def _schema_state(self):
        tables = self.conn.execute(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('meta', 'sources', 'entries')"
        ).fetchone()[0]
        meta = dict(self.conn.execute("SELECT key, value FROM meta WHERE key IN ('session', 'version')"))
        return tables, meta.get("session"), meta.get("version")

    def close(self):
        try:
            self.conn.close()
        except sqlite3.Error:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- transactions ------------------------------------------------------

    def transaction(self, mode="IMMEDIATE"):
        return _Transaction(self.conn, mode)

    def reading(self):
        """A consistent read snapshot (BEGIN DEFERRED), for several queries."""
        return _Transaction(self.conn, "DEFERRED")

    # -- meta ---------------------------------------------------------------

    def meta_get(self, key, default=None):
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def meta_set(self, key, value):
        self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, str(value)))

    def meta_delete(self, *keys):
        for key in keys:
            self.conn.execute("DELETE FROM meta WHERE key = ?", (key,))

    def cursor(self):
        return _int(self.meta_get("cursor"))

    def is_paused(self):
        return self.meta_get("paused") == "1"

    # -- capture -------------------------------------------------------------

    def capture(self, kind, text, key):
        check_capture(kind, text, key)
        from om.redact import redact

        text = redact(text)
        source_id = ids.source_id(kind, key, text)
        truncated = len(text) > TRUNCATE_OVER
        if truncated:
            omitted = len(text) - 2 * TRUNCATE_KEEP
            text = (
                text[:TRUNCATE_KEEP]
                + f"\n[om: {omitted} characters omitted from the middle of this source]\n"
                + text[-TRUNCATE_KEEP:]
            )
        body = dumps(
            {"seq": 0, "id": source_id, "kind": kind, "timestamp": now(), "text": text, "truncated": truncated}
        )
        # Not INSERT OR IGNORE alone: under AUTOINCREMENT an ignored insert still
        # burns a sequence number, and a repeated capture must be a true no-op.
        self._write(
            "INSERT OR IGNORE INTO sources(id, body) SELECT ?1, ?2"
            " WHERE NOT EXISTS (SELECT 1 FROM sources WHERE id = ?1)",
            (source_id, body),
        )
        return source_id

    def _write(self, sql, params):
        try:
            self.conn.execute(sql, params)
        except sqlite3.Error as e:
            raise StoreError(f"om: cannot write {self.path}: {e}") from None

    # -- pending and status ---------------------------------------------------

    def pending(self):
        with self.reading():
            cursor = self.cursor()
            sources, through, total = [], cursor, 0
            for seq, body in self.conn.execute(
                "SELECT seq, body FROM sources WHERE seq > ? ORDER BY seq", (cursor,)
            ):
                source = _source(seq, body)
                cost = len(dumps(source))
                if sources and total + cost > PENDING_CHUNK_CHARS:
                    break
                sources.append(source)
                total += cost
                through = seq
        return {"through": through, "sources": sources}

    def pending_stats(self):
        """(count, chars, oldest pending seq or None) of sources after the cursor. Never writes."""
        count, _, chars, oldest = self._pending_totals()
        return count, chars, oldest

    def _pending_totals(self):
        """(count, UTF-8 bytes, code points, oldest seq or None) of the sources after the cursor.

        Reads the running-size table as far as it is valid and scans only the
        sources after it, so the cost does not grow with the backlog while the
        hooks keep the table current. Never writes: it works read-only.
        """
        cursor = self.cursor()
        oldest = self.conn.execute("SELECT min(seq) FROM sources WHERE seq > ?", (cursor,)).fetchone()[0]
        if oldest is None:
            return 0, 0, 0, None
        count = size = chars = 0
        scan_from = cursor
        top = self._sizes_top()
        if top is not None and top[0] > cursor:
            base = self.conn.execute(
                f"SELECT total, chars, count FROM {SIZES} WHERE seq <= ? ORDER BY seq DESC LIMIT 1", (cursor,)
            ).fetchone() or (0, 0, 0)
            size, chars, count = top[1] - base[0], top[2] - base[1], top[3] - base[2]
            scan_from = top[0]
        more, more_size, more_chars = self.conn.execute(
            "SELECT count(*), coalesce(sum(length(CAST(json_extract(body, '$.text') AS BLOB))), 0),"
            " coalesce(sum(length(json_extract(body, '$.text'))), 0) FROM sources WHERE seq > ?",
            (scan_from,),
        ).fetchone()
        return count + more, size + more_size, chars + more_chars, oldest

    def _sizes_top(self):
        """(seq, bytes, chars, count) of the size table's newest row while it still names that source, else None."""
        try:
            top = self.conn.execute(
                f"SELECT z.seq, z.total, z.chars, z.count, s.id IS z.id FROM {SIZES} AS z"
                " LEFT JOIN sources AS s ON s.seq = z.seq ORDER BY z.seq DESC LIMIT 1"
            ).fetchone()
        except sqlite3.OperationalError:
            return None
        # A newest row that names another source means `sources` was rewritten (an import).
        return top[:4] if top is not None and top[4] else None

    def forget_sizes(self):
        """Drop the running sizes (inside a write transaction that rewrites `sources`)."""
        self.conn.execute(f"DROP TABLE IF EXISTS {SIZES}")

    def backlog(self):
        """(pending count, pending UTF-8 bytes, oldest pending seq or None, highest seq or 0).

        One read for the Codex adapter's checkpoint policy, which is defined on
        UTF-8 bytes (not code points) of the pending texts. Call it inside a
        write transaction: it first brings the derived size table up to date
        (see `_catch_up_sizes`), so its cost does not grow with the backlog.
        """
        last = self._catch_up_sizes()
        count, size, _, oldest = self._pending_totals()
        return count, size, oldest, last

    def _catch_up_sizes(self):
        """Extend the derived table of running source sizes to the newest source.

        The size table is additive and derived (a v1 peer ignores it; losing it
        loses nothing): one row per source, with the running totals of UTF-8
        bytes, code points and sources up to that seq. Sources only ever grow by
        seq, so rows written by anyone (om's captures, v1 peers) are caught up
        by seq, usually one row per event. An import rewrites `sources`
        wholesale; the newest row then no longer names the same source, and the
        table is rebuilt. Returns the seq of the newest row (0 when none).
        """
        conn = self.conn
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {SIZES} (seq INTEGER PRIMARY KEY, id TEXT NOT NULL,"
            " total INTEGER NOT NULL, chars INTEGER NOT NULL, count INTEGER NOT NULL)"
        )
        top = conn.execute(
            f"SELECT z.seq, z.total, z.chars, z.count, s.id IS z.id FROM {SIZES} AS z"
            " LEFT JOIN sources AS s ON s.seq = z.seq ORDER BY z.seq DESC LIMIT 1"
        ).fetchone()
        if top is not None and top[4]:
            seq, total, chars, count = top[:4]
        else:
            if top is not None:
                conn.execute(f"DELETE FROM {SIZES}")
            seq, total, chars, count = 0, 0, 0, 0
        rows = []
        for seq, source_id, size, length in conn.execute(
            "SELECT seq, id, coalesce(length(CAST(json_extract(body, '$.text') AS BLOB)), 0),"
            " coalesce(length(json_extract(body, '$.text')), 0)"
            " FROM sources WHERE seq > ? ORDER BY seq",
            (seq,),
        ):
            total += size
            chars += length
            count += 1
            rows.append((seq, source_id, total, chars, count))
        if rows:
            conn.executemany(
                f"INSERT INTO {SIZES}(seq, id, total, chars, count) VALUES (?, ?, ?, ?, ?)", rows
            )
        return seq

    def status(self):
        with self.reading():
            meta = dict(
                self.conn.execute(
                    "SELECT key, value FROM meta WHERE key IN"
                    " ('cursor', 'paused', 'last_checkpoint_at', 'forked_from', 'forked_from_store')"
                )
            )
            cursor = _int(meta.get("cursor"))
            count, chars, _ = self.pending_stats()
            observations, reflections = self._active_counts()
        status = {
            "session": self.session,
            "database": self.path,
            "paused": meta.get("paused") == "1",
            "through": cursor,
            "pending_sources": count,
            "pending_chars": chars,
            "estimated_pending_tokens": (chars + 3) // 4,
        }
        if meta.get("last_checkpoint_at"):
            status["last_checkpoint_at"] = meta["last_checkpoint_at"]
        if meta.get("forked_from") is not None:
            status["imported_from"] = {"store": meta.get("forked_from_store", ""), "session": meta["forked_from"]}
        status["active"] = {"observations": observations, "reflections": reflections}
        return status

    def _active_counts(self):
        """(active observations, active reflections): two range counts over om_entries_active."""
        counts = (
            "SELECT (SELECT count(*) FROM entries {hint} WHERE active = 1 AND {id} >= 'o-' AND {id} < 'o.'),"
            " (SELECT count(*) FROM entries {hint} WHERE active = 1 AND {id} >= 'r-' AND {id} < 'r.')"
        )
        try:
            return self.conn.execute(counts.format(hint="INDEXED BY om_entries_active", id="id")).fetchone()
        except sqlite3.OperationalError:
            # A v1 ledger om has not written to yet has no such index; the unary
            # + keeps the planner off the id index, which would visit every row.
            return self.conn.execute(counts.format(hint="", id="+id")).fetchone()

    def set_paused(self, paused):
        with self.transaction():
            self.meta_set("paused", "1" if paused else "0")
        return self.status()

    # -- entries ------------------------------------------------------------

    def entries(self, active_only=False):
        sql = "SELECT seq, id, body, active, retirement FROM entries"
        if active_only:
            sql += " WHERE active = 1"
        return [_entry(*row) for row in self.conn.execute(sql + " ORDER BY seq")]

    # -- the view order (derived, additive) -------------------------------------
    #
    # `om_view_order_v1` holds, per entry, its view priority as one integer and the
    # exact byte size of its view line. Both are functions of the immutable
    # entry body, so rows never change; whether an entry is active is always
    # read from `entries`. The table covers exactly the entries up to its
    # highest seq: apply extends it in its own transaction, and rows written by
    # v1 peers (which know nothing of it) are added on the next read. The line
    # format version is part of the name, so a new format starts a new table.

    VIEW_TABLE = "om_view_order_v1"

    def refresh_view_order(self):
        """Bring the order table up to date when the ledger can be written; never fails."""
        if self._view_order_current():
            return
        try:
            with self.transaction():
                self._extend_view_order()
        except StoreError:
            pass  # a read-only ledger (a sandboxed shell): view_oracle ranks in memory

    def view_oracle(self):
        """`(next_fitting, total)` for om.render.select over the active entries.

        Call inside `reading()`, after `refresh_view_order()`: uses the order
        table when it covers every entry, else ranks the entries in memory.
        """
        if not self._view_order_current():
            from om.render import list_oracle

            entries = self.entries(active_only=True)
            return list_oracle(entries), len(entries)
        query = (
            # CROSS JOIN and +e.active pin the plan: walk the order index and stop
            # at the first fit. Left to itself the planner may prefer scanning
            # om_entries_active and sorting every active entry.
            f"SELECT v.rank, e.seq, e.id, e.body, e.retirement FROM {self.VIEW_TABLE} v"
            " CROSS JOIN entries e ON e.seq = v.seq"
            " WHERE v.rank > ? AND v.size <= ? AND +e.active = 1 AND e.id = v.id ORDER BY v.rank LIMIT 1"
        )

        def next_fitting(after, remaining):
            row = self.conn.execute(query, (-1 if after is None else after, remaining)).fetchone()
            if row is None:
                return None
            rank, seq, entry_id, body, retirement = row
            return rank, _entry(seq, entry_id, body, 1, retirement)

        return next_fitting, self.active_count()

    def _view_order_current(self):
        try:
            covered = self.conn.execute(f"SELECT coalesce(max(seq), 0) FROM {self.VIEW_TABLE}").fetchone()[0]
        except sqlite3.OperationalError:
            return False
        return covered == self.conn.execute("SELECT coalesce(max(seq), 0) FROM entries").fetchone()[0]

    def _extend_view_order(self):
        """Add order rows for entries above the table's highest seq (inside a write transaction)."""
        from om.render import line_size, sort_key

        table = self.VIEW_TABLE
        self.conn.execute(
            f"CREATE TABLE IF NOT EXISTS {table}"
            " (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, rank INTEGER NOT NULL, size INTEGER NOT NULL)"
        )
        self.conn.execute(f"CREATE INDEX IF NOT EXISTS {table}_rank ON {table}(rank, size)")
        self.conn.execute(ACTIVE_INDEX)
        covered = self.conn.execute(f"SELECT coalesce(max(seq), 0) FROM {table}").fetchone()[0]
        rows = []
        for row in self.conn.execute(
            "SELECT seq, id, body, active, retirement FROM entries WHERE seq > ? ORDER BY seq", (covered,)
        ):
            entry = _entry(*row)
            rows.append((entry["seq"], entry["id"], sort_key(entry), line_size(entry)))
        self.conn.executemany(f"INSERT INTO {table}(seq, id, rank, size) VALUES (?, ?, ?, ?)", rows)

    def active_count(self):
        return self.conn.execute("SELECT count(*) FROM entries WHERE active = 1").fetchone()[0]

    def recall(self, item_id):
        if not isinstance(item_id, str) or not item_id:
            raise InputError("om: recall needs an id")
        with self.reading():
            if item_id.startswith("s-"):
                row = self.conn.execute("SELECT seq, body FROM sources WHERE id = ?", (item_id,)).fetchone()
                if row is None:
                    raise NotFound(f"om: no source {_shown(item_id)}")
                return {"sources": [_source(*row)]}
            entry = self._entry_by_id(item_id)
            if entry is None:
                raise NotFound(f"om: no entry {_shown(item_id)}")
            if entry["kind"] == "observation":
                return {"entry": entry, "sources": self._sources_by_ids(entry["support"])}
            observations = [e for e in (self._entry_by_id(i) for i in entry["support"]) if e is not None]
            observations.sort(key=lambda e: e["seq"])
            source_ids = sorted({s for o in observations for s in o["support"]})
            return {"entry": entry, "observations": observations, "sources": self._sources_by_ids(source_ids)}

    def _entry_by_id(self, entry_id):
        row = self.conn.execute(
            "SELECT seq, id, body, active, retirement FROM entries WHERE id = ?", (entry_id,)
        ).fetchone()
        return _entry(*row) if row else None

    def _sources_by_ids(self, source_ids):
        found = []
        for sid in source_ids:
            row = self.conn.execute("SELECT seq, body FROM sources WHERE id = ?", (sid,)).fetchone()
            if row:
                found.append(_source(*row))
        found.sort(key=lambda s: s["seq"])
        return found

    # -- apply ----------------------------------------------------------------

    def apply(self, checkpoint):
        """Apply a shape-checked checkpoint (see om.jsonio.checkpoint_from_object)."""
        from om.redact import redact

        through = checkpoint["through"]
        receipt = {"through": through, "observations": [], "reflections": [], "retired": []}
        with self.transaction():
            cursor = self.cursor()
            latest = self.conn.execute("SELECT coalesce(max(seq), 0) FROM sources").fetchone()[0]
            if not cursor <= through <= max(latest, cursor):
                raise Conflict(
                    f"om: stale or out-of-range cursor {through} (checkpointed through {cursor},"
                    f" latest source {latest}); reread pending and retry"
                )
            for i, o in enumerate(checkpoint.get("observations", ())):
                where = f"observations[{i}]"
                support = _id_set(o["source_ids"], where, "source_ids")
                stamps = []
                for sid in support:
                    row = self.conn.execute("SELECT body FROM sources WHERE id = ?", (sid,)).fetchone()
                    if row is None:
                        raise NotFound(f"om: {where} cites unknown source {_shown(sid)}")
                    stamps.append(loads(row[0])["timestamp"])
                text = redact(_entry_text(o["text"], where))
                importance = o.get("importance") or "medium"
                if importance not in IMPORTANCE:
                    raise InputError(
                        f"om: {where} importance must be low, medium, high or critical, got {importance!r}"
                    )
                oid = ids.observation_id(text, support, importance)
                self._insert_entry(oid, "observation", max(stamps), importance, text, support)
                receipt["observations"].append(oid)
            for i, r in enumerate(checkpoint.get("reflections", ())):
                where = f"reflections[{i}]"
                support = _id_set(r["observation_ids"], where, "observation_ids")
                stamps = []
                for oid in support:
                    entry = self._entry_by_id(oid)
                    if entry is None or entry["kind"] != "observation":
                        raise NotFound(f"om: {where} cites unknown observation {_shown(oid)}")
                    if not entry["active"]:
                        raise Conflict(f"om: {where} cites retired observation {_shown(oid)}")
                    stamps.append(entry["timestamp"])
                text = redact(_entry_text(r["text"], where))
                rid = ids.reflection_id(text, support)
                self._insert_entry(rid, "reflection", max(stamps), "medium", text, support)
                receipt["reflections"].append(rid)
            for i, r in enumerate(checkpoint.get("retire", ())):
                where = f"retire[{i}]"
                old = self._entry_by_id(r["id"])
                if old is None:
                    raise NotFound(f"om: {where} names unknown entry {_shown(r['id'])}")
                reason = ids.trim_space(r.get("reason") or "")
                if not reason or len(reason) > MAX_REASON:
                    raise InputError(f"om: {where} reason must be 1 to {MAX_REASON} characters")
                replacements = _id_set(r["replacement_ids"], where, "replacement_ids")
                for rep_id in replacements:
                    rep = self._entry_by_id(rep_id)
                    if rep is None:
                        raise NotFound(f"om: {where} names unknown replacement {_shown(rep_id)}")
                    if not rep["active"]:
                        raise Conflict(f"om: {where} replacement {_shown(rep_id)} is retired")
                    if rep["seq"] <= old["seq"]:
                        raise Conflict(f"om: {where} replacement {_shown(rep_id)} is not newer than {old['id']}")
                    cites_old = rep["kind"] == "reflection" and old["id"] in rep["support"]
                    if rep["kind"] != old["kind"] and not cites_old:
                        raise Conflict(
                            f"om: {where} replacement {_shown(rep_id)} must be a newer {old['kind']}"
                            " or a reflection citing the retired observation"
                        )
                retirement = dumps({"id": old["id"], "reason": redact(reason), "replacement_ids": replacements})
                self.conn.execute(
                    "UPDATE entries SET active = 0, retirement = ? WHERE id = ?", (retirement, old["id"])
                )
                receipt["retired"].append(old["id"])
            self._extend_view_order()
            self.meta_set("cursor", through)
            self.meta_set("last_checkpoint_at", now())
        return receipt

    def _insert_entry(self, entry_id, kind, timestamp, importance, text, support):
        body = dumps(
            {
                "seq": 0,
                "id": entry_id,
                "kind": kind,
                "timestamp": timestamp,
                "importance": importance,
                "text": text,
                "support": support,
                "active": True,
                "retirement": None,
            }
        )
        self.conn.execute(
            "INSERT OR IGNORE INTO entries(id, body, active, retirement) SELECT ?1, ?2, 1, NULL"
            " WHERE NOT EXISTS (SELECT 1 FROM entries WHERE id = ?1)",
            (entry_id, body),
        )


class _Transaction:
    """BEGIN <mode> ... COMMIT, or ROLLBACK on any exception (KeyboardInterrupt too)."""

    def __init__(self, conn, mode):
        self.conn = conn
        self.mode = mode
        self.nested = False

    def __enter__(self):
        if self.conn.in_transaction:
            self.nested = True
            return self
        try:
            self.conn.execute(f"BEGIN {self.mode}")
        except sqlite3.Error as e:
            raise StoreError(f"om: cannot start a transaction: {e}") from None
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.nested:
            return False
        if exc_type is None:
            try:
                self.conn.execute("COMMIT")
            except sqlite3.Error as e:
                self._rollback()
                raise StoreError(f"om: cannot commit: {e}") from None
            return False
        self._rollback()
        if isinstance(exc, sqlite3.Error):
            raise StoreError(f"om: database error: {exc}") from None
        return False

    def _rollback(self):
        if self.conn.in_transaction:
            try:
                self.conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass


def _shown(text, limit=80):
    """An id from the input as an error message shows it: bounded, on one line."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _int(value):
    try:
        return int(value) if value is not None else 0
    except ValueError:
        raise StoreError(f"om: ledger meta holds a non-integer value {value!r}") from None


def _id_set(values, where, field):
    unique = sorted(set(values))
    if not 1 <= len(unique) <= MAX_IDS:
        raise InputError(f"om: {where} {field} must list 1 to {MAX_IDS} ids")
    return unique


def _entry_text(text, where):
    text = ids.trim_space(text)
    if not text:
        raise InputError(f"om: {where} text must not be blank")
    if len(text) > MAX_ENTRY_TEXT:
        raise InputError(f"om: {where} text exceeds {MAX_ENTRY_TEXT} characters")
    return text


def _source(seq, body):
    b = loads(body)
    return {
        "seq": seq,
        "id": b["id"],
        "kind": b["kind"],
        "timestamp": b["timestamp"],
        "text": b["text"],
        "truncated": bool(b.get("truncated", False)),
    }


def _entry(seq, entry_id, body, active, retirement):
    b = loads(body)
    return {
        "seq": seq,
        "id": entry_id,
        "kind": b["kind"],
        "timestamp": b["timestamp"],
        "importance": b.get("importance", "medium"),
        "text": b["text"],
        "support": b.get("support") or [],
        "active": bool(active),
        "retirement": loads(retirement) if retirement else None,
    }
