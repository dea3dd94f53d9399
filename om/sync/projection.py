"""A session as it travels: canonical JSON lines derived from its ledger's rows, and read back checked.

The file (one per shared session, `p/<project key>/<session hash>.jsonl` in a
writer's tree) is a header line, then the sources, then the entries, each in
`seq` order, each line `om.jsonio.dumps(record, sort_keys=True)`:

    {"format":1,"type":"session","session":"…","project":{"key":"…"},"share":"all",
     "created":"…","last_activity":"…","meta":{"cursor":41,"last_checkpoint_at":"…"}}
    {"type":"source","seq":1,"id":"s-…","kind":"user","timestamp":"…","text":"…","truncated":false}
    {"type":"source","seq":2,"id":"s-…","kind":"tool","timestamp":"…","withheld":"writer"}
    {"type":"entry","seq":1,"id":"o-…","kind":"observation","timestamp":"…","importance":"high",
     "text":"…","support":["s-…"],"active":false,"retirement":{"reason":"…","replacement_ids":["o-…"]}}

Invariants:
- Deterministic: the same rows (and share level and hold cutoff) give the same
  bytes, so the same blob id; nothing of the moment of publishing is in them.
- Nothing of the machine: no path, home folder or host name (the session's
  folders, its imported_from store, adapter state and receipts stay home).
- Share `entries` publishes every source as a stub (id, kind, time,
  `"withheld": "writer"`), so a citation resolves to "withheld by its writer";
  `all` publishes the text. A text om's redaction would change now (a rule
  newer than the capture) is withheld too (`"withheld": "secret"`) and
  reported, never published. With a hold cutoff, records newer than it are
  left out (a retirement has no time of its own: it travels with its entry).
- A project memory's promoted entries carry their provenance (client,
  session, time of first promotion and last confirmation, times promoted);
  a promotion's reason stays home.
- `parse` trusts nothing: the bytes must be UTF-8 lines of this format, the
  header's session must hash to the file's name and its key match the folder,
  ids are v1 ids, seqs rise, no id appears twice, sizes are capped; anything
  else raises Malformed with one line, and the caller skips that file.
"""

from om.errors import InputError

FORMAT = 1
#: Stands in a mirror for a text its writer did not publish.
WITHHELD = "[WITHHELD BY ITS WRITER]"
MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_TEXT_CHARS = 1_000_000
MAX_LIST = 1000
_KINDS = ("observation", "reflection")
_IMPORTANCE = ("low", "medium", "high", "critical")
_CLIENTS = ("codex", "claude", "cli")


class Malformed(Exception):
    """A session file that is not this format (the message says where, in one line)."""


def _dumps(value):
    from om.jsonio import dumps

    return dumps(value, sort_keys=True)


def _secret(text, kind=None):
    """True when om's redaction (and, for a prompt, its `<private>` rule) would change `text` today."""
    from om.redact import redact, strip_private

    if kind == "user" and strip_private(text) != text:
        return True
    return redact(text) != text


def render(snapshot, share, cutoff=None):
    """(bytes of the session's file, [ids whose text was withheld as a secret]).

    `snapshot`: {"session", "key" (or None), "created", "last_activity", "cursor",
    "last_checkpoint_at", "sources", "entries", "provenance" ({id: record})}, the
    rows as the ledger hands them out (om.ledger.bodies).
    """
    withheld = []
    header = {
        "format": FORMAT, "type": "session", "session": snapshot["session"],
        "project": {"key": snapshot["key"]}, "share": share,
        "created": snapshot["created"], "last_activity": snapshot["last_activity"],
        "meta": {"cursor": snapshot["cursor"], "last_checkpoint_at": snapshot["last_checkpoint_at"]},
    }
    lines = [_dumps(header)]
    for s in snapshot["sources"]:
        if cutoff is not None and s["timestamp"] > cutoff:
            continue
        record = {"type": "source", "seq": s["seq"], "id": s["id"], "kind": s["kind"], "timestamp": s["timestamp"]}
        if share != "all":
            record["withheld"] = "writer"
        elif _secret(s["text"], s["kind"]):
            record["withheld"] = "secret"
            withheld.append(s["id"])
        else:
            record["text"], record["truncated"] = s["text"], bool(s["truncated"])
        lines.append(_dumps(record))
    marks = snapshot.get("provenance") or {}
    for e in snapshot["entries"]:
        if cutoff is not None and e["timestamp"] > cutoff:
            continue
        record = {"type": "entry", "seq": e["seq"], "id": e["id"], "kind": e["kind"], "timestamp": e["timestamp"],
                  "importance": e["importance"], "support": list(e["support"]), "active": bool(e["active"]),
                  "retirement": None}
        if _secret(e["text"]):
            record["withheld"] = "secret"
            withheld.append(e["id"])
        else:
            record["text"] = e["text"]
        retirement = e.get("retirement")
        if retirement:
            reason = retirement.get("reason") if isinstance(retirement.get("reason"), str) else ""
            record["retirement"] = {"reason": WITHHELD if _secret(reason) else reason,
                                    "replacement_ids": list(retirement.get("replacement_ids") or [])}
        mark = _provenance(marks.get(e["id"]))
        if mark is not None:
            record["provenance"] = mark
        lines.append(_dumps(record))
    return ("\n".join(lines) + "\n").encode("utf-8"), withheld


def _provenance(record):
    if not isinstance(record, dict):
        return None
    found: dict = {}
    for which in ("promoted", "confirmed"):
        mark = record.get(which)
        if isinstance(mark, dict):
            found[which] = {k: mark.get(k) for k in ("client", "session", "at") if isinstance(mark.get(k), str)}
    if "promoted" not in found:
        return None
    times = record.get("times")
    found["times"] = times if isinstance(times, int) and not isinstance(times, bool) and times > 0 else 1
    return found


# -- reading a file another writer published ----------------------------------------


def parse(data, key, digest):
    """The session file `data` found at `p/<key>/<digest>.jsonl`, checked: {"session", "key", "share",
    "created", "last_activity", "cursor", "last_checkpoint_at", "sources", "entries"}; Malformed otherwise."""
    from om.ids import session_hash
    from om.jsonio import loads

    if len(data) > MAX_FILE_BYTES:
        raise Malformed(f"larger than {MAX_FILE_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Malformed("not UTF-8") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise Malformed("empty")
    records = []
    for number, line in enumerate(lines, 1):
        try:
            value = loads(line)
        except InputError:
            raise Malformed(f"line {number} is not JSON") from None
        if not isinstance(value, dict):
            raise Malformed(f"line {number} is not a JSON object")
        records.append(value)
    head = records[0]
    if head.get("format") != FORMAT or head.get("type") != "session":
        raise Malformed(f"not a format {FORMAT} session file")
    session = head.get("session")
    if not isinstance(session, str) or not session or len(session) > 256 or session_hash(session) != digest:
        raise Malformed("its session does not hash to its file name")
    project = head.get("project")
    found_key = project.get("key") if isinstance(project, dict) else None
    if found_key is not None and not isinstance(found_key, str):
        raise Malformed("its project key is not a string")
    from om.sync.layout import NO_PROJECT

    if (found_key or NO_PROJECT) != key:
        raise Malformed("its project does not match its folder")
    meta = head["meta"] if isinstance(head.get("meta"), dict) else {}
    cursor = meta.get("cursor")
    found: dict = {
        "session": session, "key": found_key, "share": head.get("share") if head.get("share") in ("all", "entries")
        else "entries", "created": _stamp(head.get("created")), "last_activity": _stamp(head.get("last_activity")),
        "cursor": cursor if isinstance(cursor, int) and not isinstance(cursor, bool) and cursor >= 0 else 0,
        "last_checkpoint_at": _stamp(meta.get("last_checkpoint_at")), "sources": [], "entries": [],
    }
    seen = set()
    last = {"source": 0, "entry": 0}
    for number, r in enumerate(records[1:], 2):
        kind = r.get("type")
        if kind not in ("source", "entry"):
            raise Malformed(f"line {number}: unknown record type")
        seq, item = r.get("seq"), r.get("id")
        if not isinstance(seq, int) or isinstance(seq, bool) or seq <= last[kind]:
            raise Malformed(f"line {number}: seq does not rise")
        last[kind] = seq
        if not _well_formed(item, ("s-",) if kind == "source" else ("o-", "r-")) or item in seen:
            raise Malformed(f"line {number}: bad or repeated id")
        seen.add(item)
        timestamp = _stamp(r.get("timestamp"))
        if timestamp is None:
            raise Malformed(f"line {number}: bad timestamp")
        text = _text(r, number)
        if kind == "source":
            what = r.get("kind")
            if not isinstance(what, str) or not 1 <= len(what) <= 32:
                raise Malformed(f"line {number}: bad source kind")
            found["sources"].append({"seq": seq, "id": item, "kind": what, "timestamp": timestamp, "text": text,
                                     "truncated": r.get("truncated") is True, "withheld": text is None})
            continue
        if r.get("kind") not in _KINDS or r.get("importance") not in _IMPORTANCE:
            raise Malformed(f"line {number}: bad entry kind or importance")
        support = r.get("support")
        if not isinstance(support, list) or len(support) > MAX_LIST or not all(
                _well_formed(s, ("s-", "o-", "r-")) for s in support):
            raise Malformed(f"line {number}: bad support")
        retirement = r.get("retirement")
        if retirement is not None:
            reason, replacements = (retirement.get("reason"), retirement.get("replacement_ids")) if isinstance(
                retirement, dict) else (None, None)
            if not isinstance(reason, str) or len(reason) > MAX_TEXT_CHARS or not isinstance(replacements, list) \
                    or len(replacements) > MAX_LIST or not all(_well_formed(x, ("o-", "r-")) for x in replacements):
                raise Malformed(f"line {number}: bad retirement")
            retirement = {"reason": reason, "replacement_ids": replacements}
        if not isinstance(r.get("active"), bool):
            raise Malformed(f"line {number}: bad active flag")
        found["entries"].append({
            "seq": seq, "id": item, "kind": r["kind"], "timestamp": timestamp, "importance": r["importance"],
            "text": text, "support": support, "active": r["active"], "retirement": retirement,
            "provenance": _checked_provenance(r.get("provenance")), "withheld": text is None,
        })
    return found


def _text(record, number):
    if "withheld" in record:
        return None
    text = record.get("text")
    if not isinstance(text, str) or len(text) > MAX_TEXT_CHARS:
        raise Malformed(f"line {number}: bad text")
    return text


def _checked_provenance(value):
    if not isinstance(value, dict):
        return None
    found = _provenance(value)
    if found is None:
        return None
    for mark in (found.get("promoted"), found.get("confirmed")):
        if mark is not None:
            if mark.get("client") not in _CLIENTS:
                mark.pop("client", None)
            if _stamp(mark.get("at")) is None:
                mark.pop("at", None)
            if len(mark.get("session") or "") > 256:
                mark.pop("session", None)
    return found


def _stamp(value):
    """A ledger timestamp (YYYY-MM-DDTHH:MM:SSZ), else None."""
    if isinstance(value, str) and len(value) == 20 and value[4::3] == "--T::Z" and value.replace(
            "-", "").replace(":", "").replace("T", "").replace("Z", "").isdigit():
        return value
    return None


def _well_formed(item, prefixes):
    from om.sync.layout import is_hex

    return isinstance(item, str) and len(item) == 26 and item[:2] in prefixes and is_hex(item[2:], 24)
