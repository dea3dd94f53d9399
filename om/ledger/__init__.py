"""The v1 ledger: one SQLite database per session, and all SQL on its v1 tables.

The ledger layer is this package (this core, which every event needs, and
`files`, `recall`, `checkpoint`, `forget` and `bodies`, which only their commands
load), om.sqlite (loading SQLite, connecting, transactions) and om.derived (the
derived tables, one module each); nothing else in om talks to SQLite. The modules
of the package import nothing of this core: they are given the ledger (or its
class) and reach the core through it.

Invariants:
- The three v1 tables (meta, sources, entries) keep the exact schema, row
  bodies, IDs and meta keys of the earlier implementations, so a store written
  by either side opens in the other.
- Every write runs in one explicit `BEGIN IMMEDIATE` transaction: a command
  either commits all of its changes or none of them (cursor included).
- Derived data is additive and disposable: `om_*` tables and indexes may be
  dropped at any time and are rebuilt from the v1 tables (om.derived).
- Storage names no adapter key: adapters keep their state under meta keys
  they declare, and callers pass those declarations in (`clear_state`).
- A session directory or database file that is a symlink is refused, as a
  store that is a file is: om never writes where a link points.
- Journal mode: SQLite's rollback journal (the file's own mode is never
  changed). It is what v1 peers wrote, and unlike WAL it lets a reader open a
  ledger in a directory it cannot write, which is exactly the agent's sandboxed
  shell running `prime` or `status` on the plugin data folder.
- synchronous=FULL: the journal and the database are fsynced before COMMIT
  returns, so a result printed by `capture` or `apply` survives a kill -9 of
  any process and a power loss.
"""

import time

from om.fastpath import exists, lexists  # not os: see om.fastpath
from om.sqlite import Transaction, connect
from om.sqlite import load as _load_sqlite

# The C module itself: sqlite3.dbapi2's datetime adapters and functools cost
# several milliseconds of imports per run, and no command needs them.
sqlite3 = _load_sqlite()

from om import ids
from om.errors import Conflict, NotFound, StoreError
from om.jsonio import dumps
from om.store import (
    canonical_store,
    database_path,
    ensure_database_file,
    refuse_symlinks,
    resolve_store,
    validate_session,
)

TRUNCATE_OVER = 24_000
TRUNCATE_KEEP = 12_000
#: v1's marker between the head and the tail of a truncated source, byte for byte.
TRUNCATE_MARKER = "\n[CAPTURE TRUNCATED]\n"
PENDING_CHUNK_CHARS = 48_000
#: Incremented (absent = 0) in the transaction of every command that rewrites
#: existing rows of the v1 tables in place (forget, import), so derived data that
#: caches row contents can tell it must be rebuilt.
GENERATION_KEY = "om_generation"

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

def now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class Ledger:
    """One open session ledger. Use `Ledger.open(...)` as a context manager."""

    #: The timestamp of this moment as the ledger writes it (for om.ledger.checkpoint).
    now = staticmethod(now)

    def __init__(self, conn, store, session, path):
        self.conn = conn
        self.store = store
        self.session = session
        self.path = path
        #: True for the empty stand-in `read` gives for a session the store holds no ledger of.
        self.absent = False

    # -- opening ---------------------------------------------------------

    @classmethod
    def open(cls, store, session, create=True):
        validate_session(session)
        store = resolve_store(store, create=create)
        path = database_path(store, session)
        refuse_symlinks(path)
        if not exists(path):
            if not create:
                raise NotFound(f"om: no ledger for session {session!r} in store {store}")
            ensure_database_file(path)
        return cls.with_schema(connect(path), store, session, path)

    @classmethod
    def with_schema(cls, conn, store, session, path):
        """The ledger on `conn`, its v1 tables created if missing (the connection is closed on failure)."""
        ledger = cls(conn, store, session, path)
        try:
            ledger._ensure_schema()
        except BaseException:
            ledger.close()
            raise
        return ledger

    @classmethod
    def read(cls, store, session):
        """The ledger of `session` for a reading command, creating nothing.

        The real ledger when the store holds one; otherwise (no such session, or no
        such store) an empty version 1 ledger in memory with `absent` set and the
        paths the real one would have, so a reading command gives its usual output.
        A store path that exists but is no store is refused as for `open`.
        """
        validate_session(session)
        root = canonical_store(store)
        if lexists(root):
            root = resolve_store(root, create=False)
            path = database_path(root, session)
            refuse_symlinks(path)
            if exists(path):
                return cls.open(root, session, create=False)
        from om.sqlite import memory

        ledger = cls(memory(), root, session, database_path(root, session))
        ledger.absent = True
        ledger._ensure_schema()
        return ledger

    def _ensure_schema(self):
        # Read first: a complete ledger needs no write, so read-only
        # directories (a sandboxed shell) can still run read commands.
        try:
            ok = self.is_v1_ledger_of(self.session)
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

    @classmethod
    def open_directory(cls, store, directory, writable=False):
        """The ledger in an existing session directory of `store`, whichever session it holds.

        Read-only unless `writable`; StoreError with a short reason unless the
        directory holds the v1 ledger of the session whose id hashes to its name
        (om.ledger.files.open_directory).
        """
        from om.ledger import files

        return files.open_directory(cls, store, directory, writable)

    @staticmethod
    def glance(directory, *keys):
        """(each meta key's value, then whether any entry is active) of the ledger in `directory`, from
        one read-only statement, or None (om.ledger.files.glance): a filter, never a verdict."""
        from om.ledger import files

        return files.glance(directory, *keys)

    def sources_span(self):
        """(number of sources, timestamp of the first, timestamp of the last; None when empty)."""
        return tuple(self.conn.execute(
            "SELECT count(*),"
            " (SELECT json_extract(body, '$.timestamp') FROM sources ORDER BY seq LIMIT 1),"
            " (SELECT json_extract(body, '$.timestamp') FROM sources ORDER BY seq DESC LIMIT 1) FROM sources"
        ).fetchone())

    def in_wal(self):
        """Whether the ledger is in WAL mode (a peer's choice): its writes may leave its own file as it was."""
        return str(self.conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal"

    def has_entries(self):
        """True when the ledger holds any observation or reflection, active or retired."""
        return self.conn.execute("SELECT 1 FROM entries LIMIT 1").fetchone() is not None

    def all_sources(self):
        """Every source in seq order, each as `recall` prints it."""
        from om.ledger.bodies import source_fields

        return [source_fields(seq, body) for seq, body in self.conn.execute("SELECT seq, body FROM sources ORDER BY seq")]

    def is_v1_ledger_of(self, session):
        """True when this database holds the three v1 tables and is `session`'s version 1 ledger."""
        return self._schema_state() == (3, session, "1")

    # -- whole-ledger copies (fork and import: om.ledger.files) -------------

    @classmethod
    def snapshot_of(cls, path, session):
        """A private in-memory copy of the ledger at `path`, checked to be `session`'s v1 ledger."""
        from om.ledger import files

        return files.snapshot_of(cls, path, session)

    def copy_to(self, path, meta):
        """Write a complete copy of this ledger to the new file `path` as another session's ledger."""
        from om.ledger import files

        files.copy_to(self, path, meta)

    @classmethod
    def scratch(cls, path, session):
        """A new private scratch ledger of `session` in the file `path` (see om.ledger.files)."""
        from om.ledger import files

        return files.scratch(cls, path, session)

    def attached(self, path):
        """A context in which the scratch ledger at `path` is readable by `merge_sources`."""
        from om.ledger import files

        return files.Attached(self, path)

    def merge_sources(self, path):
        """Add the scratch ledger's sources this one lacks, inside `attached(path)` and a write transaction."""
        from om.ledger import files

        return files.merge_sources(self, path)

    def missing_sources(self, path):
        """({kind: count} the scratch ledger at `path` would add, count already held); never writes."""
        from om.ledger import files

        return files.missing_sources(self, path)

    def adopt(self, snapshot, meta, transient=()):
        """Replace this still empty ledger's history with `snapshot`'s, in one write transaction."""
        from om.ledger import files

        files.adopt(self, snapshot, meta, transient)

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
        return Transaction(self.conn, mode)

    def reading(self):
        """A consistent read snapshot (BEGIN DEFERRED), for several queries."""
        return Transaction(self.conn, "DEFERRED")

    # -- meta ---------------------------------------------------------------

    def meta_get(self, key, default=None):
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def meta_set(self, key, value):
        self.conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, str(value)))

    def meta_delete(self, *keys):
        for key in keys:
            self.conn.execute("DELETE FROM meta WHERE key = ?", (key,))

    def state(self, declared):
        """The adapter state `declared` (an AdapterState) names, read and written through this ledger."""
        return _StateView(self, declared)

    def clear_state(self, declared):
        """Delete the transient meta keys an adapter declared (its keys and its prefix)."""
        self.meta_delete(*declared.import_clears)
        if declared.prefix:
            self.conn.execute(
                "DELETE FROM meta WHERE substr(key, 1, ?) = ?", (len(declared.prefix), declared.prefix)
            )

    def cursor(self):
        return _int(self.meta_get("cursor"))

    def generation(self):
        """`om_generation`: how many times om rewrote this ledger's rows in place."""
        return _int(self.meta_get(GENERATION_KEY))

    def rows_rewritten(self):
        """Inside the transaction that rewrote rows of the v1 tables in place (forget, import):
        drop every derived table (om.derived; the next read rebuilds it from the rows) and
        increment `om_generation`, so derived data kept elsewhere (the store index) knows."""
        from om.derived import fts, sizes, view_order

        for table in (sizes, view_order, fts):
            table.invalidate(self.conn)
        self.meta_set(GENERATION_KEY, self.generation() + 1)

    def is_paused(self):
        return self.meta_get("paused") == "1"

    def has_sources(self):
        """Whether anything was ever captured under this session (a fork or import counts)."""
        return self.conn.execute("SELECT EXISTS (SELECT 1 FROM sources)").fetchone()[0] == 1

    # -- capture -------------------------------------------------------------

    def capture(self, kind, text, key):
        """Record one source; return its id. A repeated (kind, key, text) is a no-op.

        Every capture (hooks, `capture`, `ingest`) comes here: a user prompt loses
        its `<private>` spans, then any text its secrets (om.redact), before the
        id is hashed and the row written.

        The values must be ones om.schema.CAPTURE accepts: the CLI validates
        them before it opens a ledger, and an adapter builds them itself (its
        own kind, non-blank text cut to the limit). Not re-checked here, so the
        hook's path does not load the schema on every event.
        """
        from om.redact import redact, strip_private

        if kind == "user":
            text = strip_private(text)  # om's extension: a prompt's <private> spans are never stored
        text = redact(text)
        source_id = ids.source_id(kind, key, text)
        truncated = len(text) > TRUNCATE_OVER
        if truncated:
            text = text[:TRUNCATE_KEEP] + TRUNCATE_MARKER + text[-TRUNCATE_KEEP:]
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
        from om.ledger.bodies import source_fields

        with self.reading():
            cursor = self.cursor()
            sources, through, total = [], cursor, 0
            for seq, body in self.conn.execute(
                "SELECT seq, body FROM sources WHERE seq > ? ORDER BY seq", (cursor,)
            ):
                source = source_fields(seq, body)
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

    def _pending_totals(self, top=None):
        """(count, UTF-8 bytes, code points, oldest seq or None) of the sources after the cursor.

        Reads the running-size table as far as it is valid and scans only the
        sources after it, so the cost does not grow with the backlog while the
        hooks keep the table current. Never writes: it works read-only. `top`
        is the table's newest row as a catch-up in this transaction just left
        it (`om.derived.sizes.current`), which spares reading it again.
        """
        cursor = self.cursor()
        oldest = self.conn.execute("SELECT min(seq) FROM sources WHERE seq > ?", (cursor,)).fetchone()[0]
        if oldest is None:
            return 0, 0, 0, None
        count = size = chars = 0
        scan_from = cursor
        from om.derived import sizes

        current = top is not None  # the table reaches the newest source: nothing lies beyond it
        if top is None:
            top = sizes.valid_top(self.conn)
        if top is not None and top[0] > cursor:
            base = sizes.totals_through(self.conn, cursor)
            size, chars, count = top[1] - base[0], top[2] - base[1], top[3] - base[2]
            scan_from = top[0]
            if current:
                return count, size, chars, oldest
        more, more_size, more_chars = self.conn.execute(
            "SELECT count(*), coalesce(sum(length(CAST(json_extract(body, '$.text') AS BLOB))), 0),"
            " coalesce(sum(length(json_extract(body, '$.text'))), 0) FROM sources WHERE seq > ?",
            (scan_from,),
        ).fetchone()
        return count + more, size + more_size, chars + more_chars, oldest

    def backlog(self):
        """(pending count, pending UTF-8 bytes, oldest pending seq or None, highest seq or 0).

        One read for a checkpoint policy defined on UTF-8 bytes (not code
        points) of the pending texts, as the hooks' is. Call it inside a write
        transaction: it first brings the derived size table up to date
        (om.derived.sizes), so its cost does not grow with the backlog.
        """
        from om.derived import sizes

        top = sizes.current(self.conn)
        count, size, _, oldest = self._pending_totals(top if top[3] else None)
        return count, size, oldest, top[0]

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

    # -- entries read back (om.ledger.recall) and written (om.ledger.checkpoint) --

    def entries(self, active_only=False):
        from om.ledger import recall

        return recall.entries(self, active_only)

    def active_count(self):
        return self.conn.execute("SELECT count(*) FROM entries WHERE active = 1").fetchone()[0]

    def refresh_view_order(self):
        """Bring the view-order table up to date when the ledger can be written; never fails."""
        from om.ledger import recall

        recall.refresh_view_order(self)

    def view_oracle(self):
        """`(next_fitting, total)` for om.render.select over the active entries (inside `reading()`)."""
        from om.ledger import recall

        return recall.view_oracle(self)

    def recall(self, item_id):
        from om.ledger import recall

        return recall.recall(self, item_id)

    def apply(self, checkpoint):
        """Apply a checkpoint (om.schema.CHECKPOINT) in one transaction; its receipt."""
        from om.ledger import checkpoint as checkpoints

        return checkpoints.apply(self, checkpoint)

    # -- forgetting (om.ledger.forget) ------------------------------------------

    def forget_plan(self, request):
        """What `forget(request)` would change now (an om.ledger.forget.Request); reads only."""
        from om.ledger import forget

        return forget.plan(self, request)

    def forget(self, request):
        """Take the request's text out of this ledger's rows, in one transaction; what changed."""
        from om.ledger import forget

        return forget.forget(self, request)

    def unknown_ids(self, ids):
        """The ids among `ids` that name no source or entry here."""
        from om.ledger import forget

        return forget.missing(self, ids)

    def compact(self):
        """Rebuild the database file (VACUUM) so that no freed page or cell keeps old text."""
        from om.ledger import forget

        forget.compact(self)


class AdapterState:
    """An adapter's declaration of the meta keys it keeps in a ledger.

    `prefix` namespaces the keys the adapter adds (all transient); `legacy`
    lists the unprefixed keys earlier implementations wrote, which it keeps
    using for interop; `import_clears` are the ones an import drops (the rest
    of the legacy keys describe a turn the destination is still in). A fork
    drops all of them, since it keeps only om.ledger.files.FORK_KEEPS.
    """

    def __init__(self, prefix, legacy=(), import_clears=()):
        self.prefix = prefix
        self.legacy = tuple(legacy)
        self.import_clears = tuple(import_clears)

    def key(self, name):
        return name if name in self.legacy else self.prefix + name


class _StateView:
    """Meta access confined to one adapter's declared keys."""

    def __init__(self, ledger, declared):
        self.ledger = ledger
        self.declared = declared

    def get(self, name, default=None):
        return self.ledger.meta_get(self.declared.key(name), default)

    def set(self, name, value):
        self.ledger.meta_set(self.declared.key(name), value)

    def delete(self, *names):
        self.ledger.meta_delete(*(self.declared.key(n) for n in names))


def _int(value):
    try:
        return int(value) if value is not None else 0
    except ValueError:
        raise StoreError(f"om: ledger meta holds a non-integer value {value!r}") from None

