"""The Markdown export: memory for people, with stored text that cannot change the structure.

Invariants:
- Every stored text (entry texts, retirement reasons, source texts) sits in a
  backtick fence longer than any run of backticks in it, so no line of the
  text can close the fence; CommonMark keeps the content verbatim.
- Stored one-line values (session, project, store) sit in code spans
  delimited the same way; a value with a line break gets a fence instead.
- Everything else on the page is written by this module from ids, counts,
  kinds and timestamps, whose alphabet cannot form Markdown syntax.
"""

from om.export.reader import IMPORTANCE_ORDER, counts, links, well_formed

INFO = "text"


def backtick_run(text):
    """The longest run of consecutive backticks in `text`."""
    longest = run = 0
    for ch in text:
        if ch == "`":
            run += 1
            if run > longest:
                longest = run
        else:
            run = 0
    return longest


def fence(text):
    """`text` as a fenced code block that no content can close early."""
    marks = "`" * max(3, backtick_run(text) + 1)
    body = text if text.endswith(("\n", "\r")) else text + "\n"
    return f"{marks}{INFO}\n{body}{marks}\n"


def code(text):
    """A one-line stored value as an inline code span (a fence when it holds a line break)."""
    if any(c in text for c in "\n\r"):
        return "\n\n" + fence(text)
    marks = "`" * (backtick_run(text) + 1)
    if text[:1] in ("`", " ") or text[-1:] in ("`", " "):
        # CommonMark strips one space from each end again, so a value starting
        # or ending with a backtick or a space keeps its exact content.
        text = f" {text} "
    return f"{marks}{text}{marks}"


def render_markdown(snapshots, all_sessions, skipped=(), projects=()):
    parts = []
    if all_sessions:
        parts.append("# Memory of every session in the store\n\n")
        if not snapshots and not skipped:
            parts.append("The store holds no session.\n")
        if skipped:
            parts.append(f"Not exported, because their ledgers cannot be read ({len(skipped)}):\n\n")
            parts.extend(f"- {code(s['directory'])}: {code(s['error'])}\n" for s in skipped)
            parts.append("\n")
        for i, s in enumerate(snapshots, 1):
            c = counts(s)
            parts.append(
                f"{i}. Session {code(s['session'])}{_from(s)}: project {_project(s)}; {c['observations']} observations,"
                f" {c['reflections']} reflections, {c['retired']} retired, {c['sources']} sources;"
                f" last activity {_word(s['last_activity'] or 'none')}\n"
            )
        for s in snapshots:
            parts.append("\n---\n\n")
            parts.append(_session(s, "##"))
        for record in projects:
            parts.append("\n---\n\n")
            parts.append(_project_memory(record, "##"))
    else:
        parts.append(_session(snapshots[0], "#"))
        for record in projects:
            parts.append(_project_memory(record, "##"))
    return "".join(parts)


def _from(s):
    """' (from machine `LABEL`)' for a mirror of another machine's session (om sync), else ''."""
    origin = s.get("origin")
    if not origin:
        return ""
    return f" (from machine {code(origin['label'] or origin['writer'])}, read-only)"


def _project(s):
    return code(s["project"]) if s["project"] else "unknown"


def _session(s, h):
    c = counts(s)
    meta = s["meta"]
    by_id = {e["id"]: e for e in s["entries"]}
    chain = links(s)
    out = [f"{h} Memory of session {code(s['session'])}{_from(s)}\n\n"]
    out.append(f"- Project: {_project(s)}\n")
    out.append(
        f"- Memory: {c['observations']} active observations, {c['reflections']} active reflections,"
        f" {c['retired']} retired entries, {c['sources']} captured sources\n"
    )
    out.append(f"- Checkpointed through source {meta['cursor']}; last checkpoint {_word(meta['last_checkpoint_at'] or 'never')}\n")
    out.append(f"- Last activity: {_word(s['last_activity'] or 'none')}\n")
    out.append(f"- Capture: {'paused' if meta['paused'] else 'on'}\n")
    imported = meta["imported_from"]
    if imported:
        out.append(f"- Imported from session {code(imported['session'])} of store {code(imported['store'])}\n")
    active = [e for e in s["entries"] if e["active"]]
    reflections = [e for e in active if e["kind"] == "reflection"]
    observations = [e for e in active if e["kind"] == "observation"]
    out.append(f"\n{h}# Active memory\n\n")
    if not active:
        out.append("No active memory yet.\n\n")
    if reflections:
        out.append(f"{h}## Reflections\n\n")
        for e in reflections:
            out.append(_entry(e, h + "###", by_id, chain))
    for importance in IMPORTANCE_ORDER + (None,):
        if importance is None:  # a foreign ledger's importance outside the four
            group = [e for e in observations if e["importance"] not in IMPORTANCE_ORDER]
        else:
            group = [e for e in observations if e["importance"] == importance]
        if group:
            out.append(f"{h}## {(importance or 'other').capitalize()} importance\n\n")
            for e in group:
                out.append(_entry(e, h + "###", by_id, chain))
    retired = [e for e in s["entries"] if not e["active"]]
    if retired:
        out.append(f"{h}# Retired\n\n")
        for e in retired:
            out.append(_entry(e, h + "##", by_id, chain))
    cited = {i for e in s["entries"] for i in e["support"] if i.startswith("s-")}
    shown = [src for src in s["sources"] if src["id"] in cited]
    out.append(f"{h}# Cited sources\n\n")
    hidden = len(s["sources"]) - len(shown)
    if hidden:
        out.append(f"{hidden} captured sources that no entry cites are left out here; the JSON export holds them.\n\n")
    elif not shown:
        out.append("No entry cites a source yet.\n\n")
    for src in shown:
        out.append(f"{h}## {_name(src['id'])}\n\n")
        note = " · truncated when captured (the middle was omitted)" if src["truncated"] else ""
        by = chain.get(src["id"], {}).get("cited_by", [])
        out.append(f"*{_word(src['kind'])} · seq {src['seq']} · {_word(src['timestamp'])}{note}* · cited by {_refs(by)}\n\n")
        out.append(fence(src["text"]))
        out.append("\n")
    return "".join(out)


def _entry(e, heading, by_id, chain):
    out = [f"{heading} {_name(e['id'])}\n\n"]
    facts = [_word(e["kind"])]
    if e["kind"] == "observation":
        facts.append(f"{_word(e['importance'])} importance")
    facts.append(_word(e["timestamp"]))
    out.append("*" + " · ".join(facts) + "*\n\n")
    out.append(fence(e["text"]))
    out.append("\n")
    if e["kind"] == "reflection":
        parts = []
        for oid in e["support"]:
            o = by_id.get(oid)
            state = "" if o is None else f" ({_word(o['importance'])}{'' if o['active'] else ', retired'})"
            parts.append(_ref(oid) + state)
        out.append("- Rests on: " + (", ".join(parts) or "nothing") + "\n")
    else:
        out.append("- Cites: " + _refs(e["support"]) + "\n")
    rel = chain.get(e["id"], {})
    if rel.get("cited_by"):
        out.append("- Supports: " + _refs(rel["cited_by"]) + "\n")
    if rel.get("replaces"):
        out.append("- Replaces: " + _refs(rel["replaces"]) + "\n")
    if e["retirement"]:
        out.append("- Replaced by: " + _refs(e["retirement"].get("replacement_ids") or []) + "\n")
        out.append("- Reason for retirement:\n\n")
        out.append(fence(e["retirement"].get("reason") or ""))
    out.append("\n")
    return "".join(out)


def _project_memory(record, h):
    """The project memory of `record` (om.export.projects): its entries, active then retired, with provenance."""
    from om.export.projects import memory

    out = [f"{h} Project memory of project {_word(record['project'])}\n\n"]
    if record.get("error"):
        out.append(f"Not exported: {code(record['error'])}\n\n")
        return "".join(out)
    c = record["counts"]
    root = f" (seen here at {code(record['root'])})" if record["root"] else ""
    out.append(f"Promoted by sessions of this project{root}, Codex and Claude Code alike: {c['active']} active"
               f" entries, {c['retired']} retired. Its ledger is session {code(record['session'])} of the project"
               " home; `recall ID` shows an entry's evidence from any session of the project.\n\n")
    entries = memory(record)
    shown = {e["id"] for e in entries}
    active = [e for e in entries if e["active"]]
    if not active:
        out.append("No active entry.\n\n")
    out.extend(_project_entry(e, h + "#", shown) for e in active)
    retired = [e for e in entries if not e["active"]]
    if retired:
        out.append(f"{h}# Retired from the project memory\n\n")
        out.extend(_project_entry(e, h + "##", shown) for e in retired)
    return "".join(out)


def _project_entry(e, heading, shown):
    """One project entry: links only to the entries of its section; the evidence it cites by id (recall shows it)."""
    from om.export.projects import provenance_facts

    def refs(ids):
        return ", ".join(_ref(i) if i in shown else code(str(i)) for i in ids) or "nothing"

    facts = [_word(e["kind"])]
    if e["kind"] == "observation":
        facts.append(f"{_word(e['importance'])} importance")
    facts.append(_word(e["timestamp"]))
    if not e["active"]:
        facts.append("retired")
    out = [f"{heading} {_name(e['id'])}\n\n", "*" + " · ".join(facts) + "*\n\n", fence(e["text"]), "\n"]
    out.append(("- Rests on: " if e["kind"] == "reflection" else "- Cites: ") + refs(e["support"]) + "\n")
    marks, times, reason = provenance_facts(e)
    out.extend(f"- {label.capitalize()} by {client} in session {code(str(session or 'unknown'))},"
               f" {_word(at or 'unknown')}\n" for label, client, session, at in marks)
    out.append(f"- Promoted {times} time{'' if times == 1 else 's'}\n")
    if reason:
        out.append("- Reason given:\n\n" + fence(reason))
    if e["retirement"]:
        out.append("- Replaced by: " + refs(e["retirement"].get("replacement_ids") or []) + "\n")
        out.append("- Reason for retirement:\n\n" + fence(e["retirement"].get("reason") or ""))
    out.append("\n")
    return "".join(out)


def _refs(ids):
    return ", ".join(_ref(i) for i in ids) or "nothing"


def _ref(item_id):
    return f"[{item_id}](#{item_id})" if well_formed(item_id) else code(str(item_id))


_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:-.+")


def _word(value):
    """A kind, importance or timestamp as is when it is plain, else as a code span."""
    value = str(value)
    return value if value and _PLAIN.issuperset(value) else code(value)


def _name(item_id):
    return item_id if well_formed(item_id) else code(str(item_id))
