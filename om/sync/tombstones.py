"""Forgetting in another writer's records: tombstones, the one rule every machine applies, acknowledgements.

A tombstone says "writer OWNER's record ID (its text, or its retirement
reason: FIELD) held a text hashing to BASE; show AFTER instead":

    {"tid": "<32 hex>", "owner": "<writer>", "session": "…", "id": "s-…", "field": "text",
     "base": "<sha256 hex of the text seen>", "after": "<that text with the literal → [FORGOTTEN]>",
     "at": "…"}

and `{"tid", "owner", "whole": true, "at"}` forgets a whole writer (`om sync
forget-writer`: a lost machine).

Invariants:
- A tombstone holds no secret: the literal is gone from `after`, and `base`
  is a hash (of the whole text, not of the literal).
- The rule (`rule`), the same code for the owner and every reader: a text
  equal to `after` or to the marker stays; a text hashing to `base` becomes
  `after`; any other text becomes the marker (the owner changed it
  meanwhile: the rule errs towards forgetting). Several tombstones for one
  text apply in one order (time, then tid) everyone shares, so
  every machine shows the same text at every moment, and texts only move
  towards more forgotten.
- Grow-only: this writer's tombstones (sync/tombstones.jsonl) are appended
  and published whole (sorted by tid) in its tree; a tombstone is never
  removed, but once its owner has acknowledged it, its text (`base`,
  `after`: the rest of the record, which the owner may forget too) is
  dropped (`"done": true`) and the writer republishes without history. Readers
  apply every tombstone whose owner has not acknowledged it; once the owner
  acknowledges a tid (`acks.jsonl` of its tree), readers show the owner's
  own text, into which it has applied the same rule.
- The owner applies tombstones to its own ledgers through the ledger's forget
  transaction (om.ledger.forget: one transaction, secure_delete, derived
  tables dropped, VACUUM) before it acknowledges them.
- Remote content is checked field by field; a line that is not a tombstone
  is skipped.
"""

from om.ledger.forget import MARKER

FIELDS = ("text", "reason")
MAX_AFTER_CHARS = 1_000_000


def digest(text):
    from om.fastpath import sha256

    return sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def rule(text, tomb):
    """The text a record shows under tombstone `tomb` (see the module docstring)."""
    if text == tomb["after"] or text == MARKER:
        return text
    if digest(text) == tomb["base"]:
        return tomb["after"]
    return MARKER


def apply_all(text, tombs):
    # Oldest first (a later forget saw the earlier one's text), then by tid: one order for everyone.
    for tomb in sorted(tombs, key=lambda t: (t["at"], t["tid"])):
        text = rule(text, tomb)
    return text


def _now():
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _tid():
    from om.fastpath import posix

    return posix.urandom(16).hex()


def for_change(owner, session, item, field, old, new):
    """The tombstone for one rewrite of another writer's text (`old` → `new`)."""
    return {"tid": _tid(), "owner": owner, "session": session, "id": item, "field": field, "base": digest(old),
            "after": new, "at": _now()}


def for_writer(owner):
    return {"tid": _tid(), "owner": owner, "whole": True, "at": _now()}


def checked(value):
    """`value` when it is a well-formed tombstone, else None."""
    from om.sync.layout import is_hex, is_writer

    if not isinstance(value, dict) or not is_hex(value.get("tid"), 32) or not is_writer(value.get("owner")):
        return None
    at = str(value.get("at") or "")[:20]
    if value.get("whole") is True:
        return {"tid": value["tid"], "owner": value["owner"], "whole": True, "at": at}
    session, item = value.get("session"), value.get("id")
    if not (isinstance(session, str) and 0 < len(session) <= 256 and isinstance(item, str) and len(item) == 26
            and item[:2] in ("s-", "o-", "r-") and is_hex(item[2:], 24) and value.get("field") in FIELDS):
        return None
    found = {k: value[k] for k in ("tid", "owner", "session", "id", "field")}
    found["at"] = at
    if value.get("done") is True:
        return dict(found, done=True)
    after = value.get("after")
    if not (is_hex(value.get("base"), 64) and isinstance(after, str) and len(after) <= MAX_AFTER_CHARS):
        return None
    return dict(found, base=value["base"], after=after)


def parse_lines(data):
    """The well-formed records of a JSON-lines file (bytes); the others are skipped."""
    from om.errors import InputError
    from om.jsonio import loads

    found = []
    for line in data.decode("utf-8", "replace").splitlines():
        if not line.strip():
            continue
        try:
            found.append(loads(line))
        except InputError:
            continue
    return found


def parse(data):
    return [t for t in (checked(v) for v in parse_lines(data)) if t is not None]


def parse_acks(data):
    from om.sync.layout import is_hex

    return {v["tid"] for v in parse_lines(data) if isinstance(v, dict) and is_hex(v.get("tid"), 32)}


def file_bytes(tombs):
    """This writer's tombstones as published: one canonical line each, sorted by tid, duplicates dropped."""
    from om.jsonio import dumps

    unique = {t["tid"]: t for t in tombs}
    return "".join(dumps(unique[tid], sort_keys=True) + "\n" for tid in sorted(unique)).encode("utf-8")


def acks_bytes(tids):
    from om.jsonio import dumps

    return "".join(dumps({"tid": tid}) + "\n" for tid in sorted(set(tids))).encode("utf-8")


def own(store):
    """The tombstones this store has published or will publish (sync/tombstones.jsonl)."""
    from om.sync.layout import tombstones_path

    try:
        with open(tombstones_path(store), "rb") as f:
            return parse(f.read())
    except FileNotFoundError:
        return []


def settle(store, tombs, index):
    """Drop the text (`base`, `after`) of this writer's tombstones their owner has acknowledged; the tids settled.

    `after` holds the rest of the record's text, which its owner may forget
    later: once the owner has applied a tombstone nobody needs it, so it
    leaves the file (rewritten whole) and the caller republishes without history.
    """
    from om.store import write_atomically
    from om.sync.layout import tombstones_path

    settled = {t["tid"] for t in tombs if not t.get("whole") and not t.get("done")
               and t["tid"] in index.acks.get(t["owner"], set())}
    if not settled:
        return settled
    kept = [dict({k: t[k] for k in ("tid", "owner", "session", "id", "field", "at")}, done=True)
            if t["tid"] in settled else t for t in tombs]
    write_atomically(tombstones_path(store), file_bytes(kept), mode=0o600)
    return settled


def append(store, tombs):
    """Add tombstones to this store's file (appended and fsynced: the file only grows)."""
    if not tombs:
        return
    import os

    from om.jsonio import dumps
    from om.sync.layout import tombstones_path

    data = "".join(dumps(t, sort_keys=True) + "\n" for t in tombs).encode("utf-8")
    fd = os.open(tombstones_path(store), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


class Index:
    """Every tombstone and acknowledgement known: this store's own, and each fetched writer's."""

    def __init__(self):
        self.tombs = {}  # tid -> tombstone
        self.acks = {}  # writer -> {tid}

    def add(self, tombs, writer=None, acks=()):
        for tomb in tombs:
            if not tomb.get("done"):  # acknowledged, and its text dropped: nothing left to apply
                self.tombs.setdefault(tomb["tid"], tomb)
        if writer is not None:
            self.acks.setdefault(writer, set()).update(acks)

    def forgotten_writers(self):
        return {t["owner"] for t in self.tombs.values() if t.get("whole")}

    def pending(self, owner, session):
        """{(id, field): [tombstones]} that apply to `owner`'s `session`: not acknowledged by the owner."""
        acked = self.acks.get(owner, set())
        found = {}
        for tomb in self.tombs.values():
            if tomb["owner"] == owner and not tomb.get("whole") and tomb["session"] == session \
                    and tomb["tid"] not in acked:
                found.setdefault((tomb["id"], tomb["field"]), []).append(tomb)
        return found

    def addressed_to(self, owner):
        """The record tombstones for `owner` it has not acknowledged, in tid order."""
        acked = self.acks.get(owner, set())
        return sorted((t for t in self.tombs.values() if t["owner"] == owner and not t.get("whole")
                       and t["tid"] not in acked), key=lambda t: t["tid"])


def key(pending):
    """A digest of the tombstones applied to a mirror (part of what says it must be rebuilt)."""
    from om.fastpath import sha256

    tids = sorted(t["tid"] for tombs in pending.values() for t in tombs)
    return sha256(",".join(tids).encode("ascii")).hexdigest()[:32] if tids else ""


def apply_owned(store, writer, index, acks):
    """Apply the tombstones addressed to this writer to its own ledgers.

    Returns (newly acknowledged tids, [(home, session)] of the ledgers they
    name, [(home, session)] of those rewritten now). Each ledger is rewritten
    through its forget transaction and compacted; a tombstone for a session or
    record this store no longer holds is acknowledged as it is (nothing of it
    is left to forget). Run again after a kill, it rewrites nothing more (the
    rule keeps a text already rewritten) but names the same ledgers, so what
    derived data the caller drops for them is dropped.
    """
    import os

    from om.ledger import Ledger
    from om.ledger.forget import Request
    from om.project.home import is_project_session, project_home
    from om.store import database_path

    todo = [t for t in index.addressed_to(writer) if t["tid"] not in acks]
    by_session = {}
    for tomb in todo:
        by_session.setdefault(tomb["session"], []).append(tomb)
    acked, touched, rewritten = [], [], []
    for session, tombs in sorted(by_session.items()):
        home = project_home() if is_project_session(session) else store
        if not os.path.isfile(database_path(home, session)):
            acked += [t["tid"] for t in tombs]
            continue
        touched.append((home, session))
        with Ledger.open(home, session, create=False) as ledger:
            rewrites = {}
            for (item, field), group in _grouped(tombs).items():
                text = _current(ledger, item, field)
                if text is None:
                    continue
                new = apply_all(text, group)
                if new != text:
                    rewrites.setdefault(item, {})[field] = new
            if rewrites:
                ledger.forget(Request(rewrites=rewrites))
                ledger.compact()
                rewritten.append((home, session))
        acked += [t["tid"] for t in tombs]
    return acked, touched, rewritten


def _grouped(tombs):
    found = {}
    for tomb in tombs:
        found.setdefault((tomb["id"], tomb["field"]), []).append(tomb)
    return found


def _current(ledger, item, field):
    from om.errors import NotFound

    try:
        found = ledger.recall(item)
    except NotFound:
        return None
    record = found.get("entry") or (found.get("sources") or [None])[0]
    if record is None or record.get("id") != item:
        return None
    if field == "text":
        return record.get("text")
    retirement = record.get("retirement")
    return retirement.get("reason") if retirement else None
