"""The project memory: promote into it, retire in it, read it back with provenance.

Invariants:
- One ledger per project in the project home (om.project.home), of the
  reserved session `project-<key>`; every write is one transaction (with a
  checkpoint's, when the checkpoint asks for promotions: om.ledger.promotion).
- A session's project is the identity its hooks recorded (`om_project_id`),
  else the one of the root folder they recorded, else, for a command given
  `--project DIR`, DIR's; a session with none of them cannot promote, and the
  error says what to pass.
- Reading creates nothing: a project nobody promoted into has an empty memory.
- Each promotion is stamped with the client that made it (the session ledger's
  adapter: Codex, Claude Code; else the client om's MCP server speaks for;
  else the command line), the session and the time.
- Counting (`counts`, `status_of`, `at_start`) runs no git and creates nothing:
  a session's project is the identity it recorded, else its folder's cached one
  (om.project.identity, seconds=0); a memory that cannot be read counts 0.
"""

from om.errors import InputError, NotFound
from om.project import PROJECT_ID_KEY, PROJECT_KEY
from om.project.home import project_home, project_session

#: Meta keys of a project ledger: where this machine last saw the project, and its identity.
ROOT_KEY = "om_project_root"
ROOTS_KEY = "om_project_roots"


def identity_of_session(ledger, directory=None, remedy="pass --project DIR"):
    """The Identity of a session's project (see the module docstring), or InputError ending in `remedy`."""
    from om.project.identity import SECONDS, Identity, identify

    if directory is not None:
        return identity_of_directory(directory)
    key = ledger.meta_get(PROJECT_ID_KEY)
    root = ledger.meta_get(PROJECT_KEY)
    if root:
        identity = identify(root, SECONDS)
        if key is None or identity.key == key:
            return identity
        return Identity(root, (), key=key)  # the hooks' record wins: the folder now holds another repository
    raise InputError(f"om: session {ledger.session!r} has no project recorded (its hooks record the folder it works"
                     f" in); {remedy}")


def identity_of_directory(directory):
    import os

    from om.project.identity import SECONDS, identify

    path = os.path.abspath(os.path.expanduser(directory))
    if not os.path.isdir(path):
        raise InputError(f"om: --project {directory}: not a directory")
    return identify(path, SECONDS)


def read_ledger(identity):
    """The project's ledger for reading (an empty stand-in when nobody promoted into it yet)."""
    from om.ledger import Ledger

    return Ledger.read(project_home(), project_session(identity.key))


def _open_ledger(identity):
    """The project's ledger, created when missing, with where this machine sees the project recorded."""
    from om.jsonio import dumps
    from om.ledger import Ledger

    ledger = Ledger.open(project_home(), project_session(identity.key))
    try:
        if ledger.meta_get(ROOT_KEY) != identity.root:
            with ledger.transaction():
                ledger.meta_set(ROOT_KEY, identity.root)
                ledger.meta_set(ROOTS_KEY, dumps(list(identity.roots)))
    except BaseException:
        ledger.close()
        raise
    return ledger


def stamp(ledger, client=None, reason=None):
    """The provenance of a promotion made now from `ledger`'s session."""
    from om.ledger import now
    from om.ledger.promotion import client_of

    mark = {"client": client_of(ledger.conn) or client or "cli", "session": ledger.session, "at": now()}
    if reason:
        from om.redact import redact, strip_private

        mark["reason"] = redact(strip_private(reason))
    return mark


class _Attached:
    """The project ledger attached to a session ledger's connection for one transaction over both."""

    def __init__(self, ledger, identity):
        self.ledger, self.identity = ledger, identity

    def __enter__(self):
        from om.ledger import promotion

        with _open_ledger(self.identity) as project:
            path = project.path
        promotion.attach(self.ledger, path)
        return self

    def __exit__(self, *exc):
        from om.ledger import promotion

        promotion.detach(self.ledger)


def apply_checkpoint(ledger, checkpoint, client=None):
    """`ledger.apply(checkpoint)`, with its promotions (if any) in the same transaction."""
    from om.ledger import checkpoint as checkpoints
    from om.schema import CHECKPOINT, validate

    checkpoint = validate(CHECKPOINT, checkpoint)
    if not checkpoints.wants_promotion(checkpoint):
        return ledger.apply(checkpoint)
    # apply takes no --project: the checkpoint goes in without "promote", its entries promoted afterwards.
    identity = identity_of_session(ledger, remedy='apply the checkpoint without "promote", then run'
                                   " `om promote ID... --project DIR`")
    with _Attached(ledger, identity):
        receipt = checkpoints.apply(ledger, checkpoint, stamp(ledger, client))
    receipt["project"] = identity.key
    return receipt


def promote(ledger, entry_ids, reason=None, directory=None, client=None):
    """Promote entries already applied in `ledger`'s session; the receipt."""
    from om.ledger import promotion

    wanted = []
    for entry_id in entry_ids:
        if not isinstance(entry_id, str) or not entry_id.startswith(("o-", "r-")):
            raise InputError(f"om: promote takes entry ids (o-... or r-...), got {str(entry_id)[:80]!r}")
        if entry_id not in wanted:
            wanted.append(entry_id)
    if not wanted:
        raise InputError("om: promote needs at least one entry id")
    identity = identity_of_session(ledger, directory)
    with _Attached(ledger, identity):
        with ledger.transaction():
            promoted = promotion.promote(ledger.conn, wanted, stamp(ledger, client, reason))
    return {"project": identity.key, "promoted": promoted}


def retire(identity, entry_id, reason, replacements=(), ledger=None, client=None):
    """Retire a project entry; `replacements` may name entries of `ledger`'s session, promoted first."""
    from om.ledger import promotion

    if not isinstance(reason, str) or not reason.strip():
        raise InputError("om: project retire needs --reason TEXT")
    if len(reason) > 1000:
        raise InputError("om: --reason exceeds 1000 characters")
    replacements = sorted(set(replacements))
    if not _holds(identity.key):
        raise NotFound(f"om: the project memory of {identity.key} holds no entry yet; nothing was created")
    if ledger is None:
        with _open_ledger(identity) as project:
            with project.transaction():
                _require(project.conn, "main", entry_id)
                retired = promotion.retire(project.conn, "main", "project retire", entry_id, reason.strip(),
                                           replacements)
        return {"project": identity.key, "retired": [retired], "promoted": []}
    with _Attached(ledger, identity):
        with ledger.transaction():
            _require(ledger.conn, promotion.ALIAS, entry_id)
            local = [r for r in replacements if promotion.entry_in(ledger.conn, promotion.ALIAS, r) is None]
            promoted = promotion.promote(ledger.conn, local, stamp(ledger, client)) if local else []
            renamed = {item["from"]: item["id"] for item in promoted}
            final = sorted({renamed.get(r, r) for r in replacements})
            retired = promotion.retire(ledger.conn, promotion.ALIAS, "project retire", entry_id, reason.strip(),
                                       final)
    return {"project": identity.key, "retired": [retired], "promoted": promoted}


def _require(conn, schema, entry_id):
    from om.ledger import promotion

    if promotion.entry_in(conn, schema, entry_id) is None:
        raise NotFound(f"om: the project memory holds no entry {entry_id[:80]!r} (om project view --all lists it)")


def entries(identity):
    """Every entry of the project memory, oldest first, each with its provenance (None for carried evidence)."""
    from om.ledger import promotion

    with read_ledger(identity) as project:
        with project.reading():
            found = project.entries()
            marks = promotion.provenance(project.conn)
    for entry in found:
        entry["provenance"] = marks.get(entry["id"])
    return found


def memory_entries(identity):
    """The entries that are project memory: promoted ones (carried evidence left out), active and retired."""
    return [e for e in entries(identity) if e["provenance"] is not None]


def recorded_key(ledger):
    """The project key a session's hooks recorded, without running git (None when none is)."""
    return ledger.meta_get(PROJECT_ID_KEY)


def active_count(key):
    """Active entries of project `key`'s memory; 0 when it has none. One stat when nobody promoted into it."""
    from om.fastpath import exists
    from om.ledger import Ledger, promotion
    from om.store import database_path

    home = project_home()
    if not exists(database_path(home, project_session(key))):
        return 0
    with Ledger.open(home, project_session(key), create=False) as project:
        with project.reading():
            return promotion.active_promoted(project.conn)


def counts(key):
    """(active, retired) entries of project `key`'s memory: one stat, and one read-only query when it
    exists ((0, 0) when it does not, or cannot be read: a count never fails the command that shows it)."""
    from om.project import counts as counting

    try:
        conn = counting.open_read_only(key, 15.0)
    except Exception:  # a key a peer wrote that names no file, a link, a busy or damaged ledger: no count
        return 0, 0
    if conn is None:
        return 0, 0
    try:
        return counting.counts(conn)
    except Exception:
        return 0, 0
    finally:
        conn.close()


def at_start(key, sessions=False, timeout=1.0):
    """(active entries, with `sessions` the ids of the sessions whose promotions they are) of project
    `key`'s memory, for a session's start: one stat, then a statement or two on one read-only connection.
    Raises on a damaged ledger (the start hook catches it); waits at most `timeout` for a promotion
    being written."""
    from om.project import counts as counting

    conn = counting.open_read_only(key, timeout)
    if conn is None:
        return 0, set()
    try:
        active = counting.counts(conn)[0]
        return active, counting.promoting_sessions(conn) if active and sessions else set()
    finally:
        conn.close()


def key_of_session(meta):
    """The project key of a session from its recorded meta ({om_project_id, om_project}): the recorded
    identity, else its root folder's from the identity cache alone (no git: seconds=0), else None."""
    key = meta.get(PROJECT_ID_KEY)
    if key:
        return key
    root = meta.get(PROJECT_KEY)
    if not root:
        return None
    from om.project.identity import identify

    identity = identify(root, 0)
    return identity.key if identity.known else None


def status_of(ledger):
    """`ledger.status()` with its project's key and the counts of its project memory (what `om status` and
    the MCP `status` tool print): `project_id` (null when no project is recorded) and `project_memory`
    ({active, retired}; null without a project). No git runs (om.project.identity's cache alone)."""
    status = ledger.status()
    key = None if ledger.absent else key_of_session(
        {PROJECT_ID_KEY: ledger.meta_get(PROJECT_ID_KEY), PROJECT_KEY: ledger.meta_get(PROJECT_KEY)})
    status["project_id"] = key
    if key is None:
        status["project_memory"] = None
    else:
        active, retired = counts(key)
        status["project_memory"] = {"active": active, "retired": retired}
    return status


def view_command(identity):
    """The exact command that lists every entry of the project's memory."""
    from om.fastpath import shell_quote
    from om.invocation import runtime_argv

    words = runtime_argv() + ["project", "--project", identity.root, "view", "--all"]
    return " ".join(shell_quote(w) for w in words)


def mirrored_entries(store, key):
    """Project `key`'s entries other machines published (om sync's mirrors in `store`), each with provenance
    naming its writer (`provenance["from"]`); [] for a store without mirrors."""
    if store is None:
        return []
    from om.sync import readers

    if not readers.has_mirrors(store):
        return []
    return readers.project_entries(store, key)


def with_mirrored(found, mirrored):
    """This machine's entries, then each entry only another machine holds (an id shown once)."""
    ids = {e["id"] for e in found}
    for entry in mirrored:
        if entry["id"] not in ids:
            ids.add(entry["id"])
            found.append(entry)
    return found


def block_for_session(ledger, limit):
    """The project block for `ledger`'s session within `limit` bytes ('' when it has no project memory)."""
    import time

    from om.project import block

    key = recorded_key(ledger)
    if key is None or limit <= 0:
        return ""
    mirrored = [e for e in mirrored_entries(None if ledger.absent else ledger.store, key) if e["active"]]
    active = active_count(key)
    if not active and not mirrored:
        return ""
    identity = identity_of_session(ledger)
    found = entries(identity) if active else []
    return block.render(with_mirrored(found, mirrored), identity.key, time.time(), limit, view_command(identity))


def recall(ledger, item_id):
    """`ledger.recall(item_id)`, else the same id in the session's project memory (marked `project`)."""
    try:
        return ledger.recall(item_id)
    except NotFound:
        key = None if ledger.absent else recorded_key(ledger)
        if key is None or not active_count(key) and not _holds(key):
            raise
        with read_ledger(_keyed(key)) as project:
            try:
                found = project.recall(item_id)
            except NotFound:
                raise NotFound(f"om: no entry or source {item_id[:80]!r} in this session or its project memory")\
                    from None
        found["project"] = key
        return found


def _holds(key):
    from om.fastpath import exists
    from om.store import database_path

    return exists(database_path(project_home(), project_session(key)))


def _keyed(key):
    """An Identity standing for project `key` when only its key is needed (reading its ledger)."""
    from om.project.identity import Identity

    return Identity("", (), key=key)
