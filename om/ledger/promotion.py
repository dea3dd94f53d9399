"""Project memory rows: copying entries into a project's ledger, retiring them there, provenance.

A project's memory is an ordinary v1 ledger (om.project.home). Promotion writes
it through the session ledger's connection with the project ledger ATTACHed as
`om_project`, so a checkpoint and the promotions it asks for are one
transaction over both files (SQLite's multi-file commit, which the rollback
journal makes atomic); a `project retire` without a session runs on the
project ledger's own connection (`schema="main"`).

Invariants:
- Entry and source rows are copied byte for byte, with their ids: ids are
  content hashes, so the same entry promoted twice, from two sessions or two
  clients, is one row. An entry's text that capture would not store (a
  `<private>` span, a secret: om.redact) is cleaned first and the entry hashed
  again; its row in the session is left as it is.
- An observation takes its cited sources; a reflection takes its observations
  and theirs. Only promoted entries carry provenance (`om_promoted:<id>`, a
  meta key v1 readers ignore): the first promotion (client, session, time)
  and the last confirmation, and how many times it was promoted. The entries
  carried along as a reflection's evidence have none and are not listed as
  project memory of their own.
- An entry retired in the project stays retired when promoted again (v1's
  rule for identical entries), and the receipt says so.
- The project ledger's cursor covers every source it holds: nothing is ever
  pending there.
- Retirement follows the checkpoint's rule (`check_retirement`, shared with
  om.ledger.checkpoint): a newer active entry of the same kind, or a newer
  reflection citing the retired observation; none at all is allowed with a reason.
- Counting them (active, retired, which sessions promoted them) is om.project.counts,
  which reads a project ledger without loading this layer.
"""

from om import ids
from om.errors import Conflict, NotFound
from om.jsonio import dumps, loads
from om.ledger.recall import _entry, shown
from om.project.counts import PROVENANCE_PREFIX

ALIAS = "om_project"


def attach(ledger, path):
    """ATTACH the project ledger at `path` (read-write) as ALIAS; outside any transaction."""
    from om.errors import StoreError
    from om.sqlite import load, uri

    try:
        ledger.conn.execute(f"ATTACH DATABASE ? AS {ALIAS}", (uri(path),))
    except load().Error as e:
        raise StoreError(f"om: cannot open the project memory {path}: {e}") from None


def detach(ledger):
    from om.sqlite import load

    try:
        ledger.conn.execute(f"DETACH DATABASE {ALIAS}")
    except load().Error:
        pass


def entry_in(conn, schema, entry_id):
    row = conn.execute(
        f"SELECT seq, id, body, active, retirement FROM {schema}.entries WHERE id = ?", (entry_id,)
    ).fetchone()
    return _entry(*row) if row else None


def _clean(text):
    from om.redact import redact, strip_private

    return redact(strip_private(text))


def promote(conn, entry_ids, stamp, schema_from="main", schema_to=ALIAS):
    """Copy each entry of `entry_ids` (active in `schema_from`) into `schema_to`; a receipt list.

    `stamp` is the provenance of this promotion: {client, session, at, reason?}.
    Inside the caller's write transaction; NotFound or Conflict rolls it all back.
    """
    receipt = []
    for entry_id in entry_ids:
        entry = entry_in(conn, schema_from, entry_id)
        if entry is None:
            raise NotFound(f"om: promote names unknown entry {shown(entry_id)}")
        if not entry["active"]:
            raise Conflict(f"om: promote names retired entry {shown(entry_id)}; promote its replacement")
        if entry["kind"] == "reflection":
            carried = []
            for oid in entry["support"]:
                observation = entry_in(conn, schema_from, oid)
                if observation is None:
                    raise NotFound(f"om: reflection {shown(entry_id)} cites unknown observation {shown(oid)}")
                carried.append(_copy(conn, observation, schema_from, schema_to))
            entry = dict(entry, support=sorted(set(carried)))
        project_id = _copy(conn, entry, schema_from, schema_to)
        item = {"id": project_id, "from": entry_id, "kind": entry["kind"]}
        present = entry_in(conn, schema_to, project_id)
        if not present["active"]:
            item["retired_in_project"] = True
        _stamp(conn, schema_to, project_id, stamp)
        receipt.append(item)
    _cover(conn, schema_to, stamp["at"])
    return receipt


def _copy(conn, entry, schema_from, schema_to):
    """Copy one entry and the sources it cites; its id in the project (hashed again if its text was cleaned)."""
    if entry["kind"] == "observation":
        for sid in entry["support"]:
            conn.execute(
                f"INSERT INTO {schema_to}.sources(id, body) SELECT id, body FROM {schema_from}.sources"
                f" WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM {schema_to}.sources WHERE id = ?1)",
                (sid,),
            )
    text = _clean(entry["text"])
    if entry["kind"] == "observation":
        entry_id = ids.observation_id(text, entry["support"], entry["importance"])
    else:
        entry_id = ids.reflection_id(text, entry["support"])
    body = dumps({"seq": 0, "id": entry_id, "kind": entry["kind"], "timestamp": entry["timestamp"],
                  "importance": entry["importance"], "text": text, "support": entry["support"],
                  "active": True, "retirement": None})
    conn.execute(
        f"INSERT INTO {schema_to}.entries(id, body, active, retirement) SELECT ?1, ?2, 1, NULL"
        f" WHERE NOT EXISTS (SELECT 1 FROM {schema_to}.entries WHERE id = ?1)",
        (entry_id, body),
    )
    return entry_id


def _stamp(conn, schema, entry_id, stamp):
    key = PROVENANCE_PREFIX + entry_id
    row = conn.execute(f"SELECT value FROM {schema}.meta WHERE key = ?", (key,)).fetchone()
    record = _provenance(row[0]) if row else None
    mark = {k: stamp[k] for k in ("client", "session", "at")}
    if record is None:
        record = {"promoted": mark, "confirmed": mark, "times": 1}
    else:
        record["confirmed"] = mark
        record["times"] = int(record.get("times") or 1) + 1
    if stamp.get("reason"):
        record["reason"] = stamp["reason"]
    conn.execute(f"INSERT OR REPLACE INTO {schema}.meta(key, value) VALUES (?, ?)", (key, dumps(record)))


def _cover(conn, schema, at):
    top = conn.execute(f"SELECT coalesce(max(seq), 0) FROM {schema}.sources").fetchone()[0]
    conn.execute(f"INSERT OR REPLACE INTO {schema}.meta(key, value) VALUES ('cursor', ?)", (str(top),))
    conn.execute(f"INSERT OR REPLACE INTO {schema}.meta(key, value) VALUES ('last_checkpoint_at', ?)", (at,))


def _provenance(value):
    try:
        record = loads(value)
    except Exception:
        return None
    return record if isinstance(record, dict) and isinstance(record.get("promoted"), dict) else None


def provenance(conn, schema="main"):
    """{entry id: provenance record} of every promoted entry of the project ledger."""
    rows = conn.execute(
        f"SELECT key, value FROM {schema}.meta WHERE key >= ? AND key < ?",
        (PROVENANCE_PREFIX, PROVENANCE_PREFIX[:-1] + ";"),
    )
    found = {}
    for key, value in rows:
        record = _provenance(value)
        if record is not None:
            found[key[len(PROVENANCE_PREFIX):]] = record
    return found


def check_retirement(conn, schema, where, old, replacements, hint=""):
    """The checkpoint's retirement rule for entry `old` and its `replacements` (ids) in `schema`."""
    for rep_id in replacements:
        rep = entry_in(conn, schema, rep_id)
        if rep is None:
            raise NotFound(f"om: {where} names unknown replacement {shown(rep_id)}{hint}")
        if not rep["active"]:
            raise Conflict(f"om: {where} replacement {shown(rep_id)} is retired")
        if rep["seq"] <= old["seq"]:
            raise Conflict(f"om: {where} replacement {shown(rep_id)} is not newer than {old['id']}")
        cites_old = rep["kind"] == "reflection" and old["id"] in rep["support"]
        if rep["kind"] != old["kind"] and not cites_old:
            raise Conflict(
                f"om: {where} replacement {shown(rep_id)} must be a newer {old['kind']}"
                " or a reflection citing the retired observation"
            )


def retire(conn, schema, where, entry_id, reason, replacements, hint=""):
    """Retire `entry_id` in `schema` by the checkpoint's rule; its id. Inside the caller's transaction."""
    old = entry_in(conn, schema, entry_id)
    if old is None:
        raise NotFound(f"om: {where} names unknown entry {shown(entry_id)}")
    check_retirement(conn, schema, where, old, replacements, hint)
    retirement = dumps({"id": old["id"], "reason": _clean(reason), "replacement_ids": replacements})
    conn.execute(f"UPDATE {schema}.entries SET active = 0, retirement = ? WHERE id = ?", (retirement, old["id"]))
    return old["id"]


def client_of(conn):
    """The client whose adapter wrote this session ledger ("codex", "claude"): the one its start recorded
    (om.project's `om_client`), else the one whose declared state keys it holds; else None."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'om_client'").fetchone()
    if row and row[0] in ("codex", "claude"):
        return row[0]
    for client in ("codex", "claude"):
        if conn.execute("SELECT 1 FROM meta WHERE key >= ? AND key < ? LIMIT 1",
                        (client + "_", client + "`")).fetchone():
            return client
    return None


def active_promoted(conn):
    """How many active entries of a project ledger are project memory (promoted, not carried evidence)."""
    from om.project.counts import counts

    return counts(conn)[0]
