"""The HTML export's Project section: each exported project memory's entries, with their provenance.

Invariants:
- Written as the rest of the page is (om.export.browser): every stored text
  (entry texts, reasons, session ids, the root folder) HTML-escaped with
  quotes; only well-formed v1 ids become element ids and links; the page's
  own style and script (no new CSS, nothing for the Content-Security-Policy
  to allow).
- An entry is a card like a session's (`article.entry`, in `.group`s), so the
  page's filters (words, kind, state, importance) and its `#id` links reach
  project entries too; its anchors carry the section's prefix (`P1-o-…`), and
  a session's entry with the same id keeps the first place on the page.
- A link leads to an entry this section shows; any other id it cites (its
  sources, a reflection's observations: evidence that `recall` shows) is
  escaped text.
"""

from om.export.browser import _e, _when
from om.export.projects import memory, provenance_facts
from om.export.reader import well_formed


def sections(projects):
    """The Project sections of the records of om.export.projects, in their order ('' for none)."""
    return "".join(section(record, f"P{n}") for n, record in enumerate(projects, 1))


def section(record, prefix):
    out = [f'<section class="session project" id="{prefix}">\n'
           f'<h2>Project memory <code>{_e(record["project"])}</code></h2>\n']
    if record.get("error"):
        out.append(f'<p class="unknown">Not exported: {_e(record["error"])}</p>\n</section>\n')
        return "".join(out)
    c = record["counts"]
    facts = [f"<span><b>{c['active']:,}</b> active · <b>{c['retired']:,}</b> retired</span>"]
    if record["root"]:
        facts.append(f"<span>seen here at <code>{_e(record['root'])}</code></span>")
    facts.append("<span>promoted by sessions of this project, Codex and Claude Code alike; recall an id from any"
                 " of them for its evidence</span>")
    out.append(f'<div class="meta">{"".join(facts)}</div>\n')
    entries = memory(record)
    shown = {e["id"] for e in entries}
    for label, group in (("Project entries", [e for e in entries if e["active"]]),
                         ("Retired from the project", [e for e in entries if not e["active"]])):
        if group:
            cards = "".join(_card(e, prefix, shown) for e in group)
            out.append(f'<div class="group"><h3>{label}</h3>\n{cards}</div>\n')
    if not entries:
        out.append('<p class="unknown">No entry.</p>\n')
    out.append("</section>\n")
    return "".join(out)


def _ref(prefix, item_id, shown):
    if well_formed(item_id) and item_id in shown:
        return f'<a href="#{prefix}-{item_id}">{item_id}</a>'
    return f"<code>{_e(item_id)}</code>"


def _card(e, prefix, shown):
    eid = e["id"]
    attrs = f' id="{prefix}-{eid}"' if well_formed(eid) else ""
    kind = "reflection" if e["kind"] == "reflection" else "observation"
    pills = ['<span class="pill reflection">reflection</span>' if kind == "reflection"
             else f'<span class="pill {_e(e["importance"])}">{_e(e["importance"])}</span>',
             '<span class="pill kind">project</span>']
    if not e["active"]:
        pills.append('<span class="pill retired">retired</span>')
    marks, times, reason = provenance_facts(e)
    rel = [f"{label} by {_e(client)} in session <code>{_e(session or 'unknown')}</code> {_when(at)}"
           for label, client, session, at in marks]
    rel.append(f"promoted {times:,} time{'' if times == 1 else 's'}")
    if reason:
        rel.append(f"reason given: {_e(reason)}")
    if e["support"]:
        rel.append(("rests on " if kind == "reflection" else "cites ")
                   + " ".join(_ref(prefix, i, shown) for i in e["support"]))
    retirement = e["retirement"] or {}
    if retirement.get("replacement_ids"):
        rel.append("replaced by " + " ".join(_ref(prefix, i, shown) for i in retirement["replacement_ids"]))
    why = f'<div class="reason">{_e(retirement.get("reason") or "")}</div>' if e["retirement"] else ""
    return (
        f'<article class="entry"{attrs} data-id="{_e(eid)}" data-kind="{kind}"'
        f' data-state="{"active" if e["active"] else "retired"}" data-importance="{_e(e["importance"])}"'
        ' data-scope="project">'
        f'<div class="head">{"".join(pills)}<span class="id">{_e(eid)}</span><span>{_when(e["timestamp"])}</span>'
        f'</div><div class="text">{_e(e["text"])}</div>{why}'
        f'<div class="rel">{"".join(f"<span>{r}</span>" for r in rel)}</div></article>\n'
    )
