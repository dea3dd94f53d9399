"""The HTML export: one self-contained memory browser (inline CSS and a little vanilla JS).

Invariants:
- Self-contained: no network, fonts, images or scripts from anywhere; a
  Content-Security-Policy allows only this page's own style and script (by
  hash), so even markup that slipped through could neither load nor run.
- Every stored text is HTML-escaped (`html.escape` with quotes) where it is
  written into the page, and source texts, kept for lazy expansion in one
  `application/json` block, have `<`, `>`, `&`, U+2028 and U+2029 escaped, so
  no stored text can end the block or become markup. The script only ever
  puts stored text into the page through `textContent`.
- Only well-formed v1 ids become element ids and links; anything else a
  foreign ledger holds is shown as escaped text.
- Big sessions stay usable: source texts are collapsed and only put into the
  page when a source is opened (the word filter reads them once a word is typed).
- An id as `recall` prints it (`#s-…`, `#o-…`, `#r-…`) lands on its first place in the
  page, as the page's own anchors (`#S1-s-…`, one prefix per session) do.
- The project memory of the exported sessions follows them, in Project
  sections written by om.export.projecthtml under the same rules.
"""

import base64
import hashlib
from html import escape

from om import __version__
from om.export.reader import IMPORTANCE_ORDER, counts, links, well_formed
from om.jsonio import dumps

GROUPS = (("reflection", "Reflections"),) + tuple((i, i.capitalize()) for i in IMPORTANCE_ORDER)

STYLE = """
:root{--bg:#f6f5f1;--card:#fff;--ink:#1f2328;--muted:#667085;--line:#e4e2dc;--accent:#3557c9;
--crit:#c0362c;--high:#c96a12;--med:#2f6fb5;--low:#7a828e;--refl:#7b4bc4;--flash:#fff3bf;--code:#f3f1ec}
@media (prefers-color-scheme:dark){:root{--bg:#15171a;--card:#1d2024;--ink:#e7e9ec;--muted:#98a1ad;
--line:#2e3238;--accent:#8fa8ff;--code:#16181b;--flash:#3d3a1c}}
*{box-sizing:border-box}
html{scroll-padding-top:7.5rem}
body{margin:0;background:var(--bg);color:var(--ink);font:15px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,
"Helvetica Neue",Arial,sans-serif}
a{color:var(--accent);text-decoration:none}a:hover{text-decoration:underline}
code,.id,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace}
header.page{padding-top:1.6rem;padding-bottom:.6rem}
.wrap{max-width:60rem;margin:0 auto;padding:0 1.25rem}
h1{font-size:1.55rem;margin:0 0 .25rem;letter-spacing:-.01em}
h1 small{font-weight:500;color:var(--muted);font-size:1rem}
h2{font-size:1.2rem;margin:2rem 0 .6rem}
h3{font-size:.78rem;text-transform:uppercase;letter-spacing:.08em;color:var(--muted);margin:1.3rem 0 .4rem}
.meta{color:var(--muted);font-size:.9rem;display:flex;flex-wrap:wrap;gap:.3rem 1.1rem;margin:.9rem 0 .35rem}
.meta b{color:var(--ink);font-weight:600}
.bar{position:sticky;top:0;z-index:5;background:color-mix(in srgb,var(--bg) 88%,transparent);
backdrop-filter:blur(6px);border-bottom:1px solid var(--line);padding:.6rem 0}
.bar .wrap{display:flex;flex-wrap:wrap;gap:.5rem .9rem;align-items:center}
.bar input[type=search]{flex:1 1 12rem;padding:.45rem .7rem;border:1px solid var(--line);border-radius:.5rem;
background:var(--card);color:var(--ink);font:inherit}
.bar select{flex:0 0 auto;padding:.4rem .5rem;border:1px solid var(--line);border-radius:.5rem;background:var(--card);
color:var(--ink);font:inherit}
.bar label{font-size:.88rem;color:var(--muted);display:inline-flex;gap:.25rem;align-items:center}
#shown{font-size:.85rem;color:var(--muted);margin-left:auto;white-space:nowrap}
.imps{display:inline-flex;gap:.55rem}
.entry{background:var(--card);border:1px solid var(--line);border-left:4px solid var(--med);border-radius:.6rem;
padding:.65rem 1rem .6rem;margin:.5rem 0;transition:background .4s;box-shadow:0 1px 2px rgba(16,24,40,.04)}
.entry[data-importance=critical]{border-left-color:var(--crit)}
.entry[data-importance=high]{border-left-color:var(--high)}
.entry[data-importance=low]{border-left-color:var(--low)}
.entry[data-kind=reflection]{border-left-color:var(--refl)}
.entry[data-state=retired]{opacity:.72;border-left-style:dashed}
.entry .text{white-space:pre-wrap;overflow-wrap:anywhere;margin:.3rem 0 .45rem;font-size:1rem}
.head{display:flex;flex-wrap:wrap;gap:.3rem .6rem;align-items:center;font-size:.8rem;color:var(--muted)}
.id{font-size:.78rem;color:var(--muted)}
.pill{display:inline-block;border-radius:999px;padding:.05rem .55rem;font-size:.72rem;font-weight:600;
letter-spacing:.02em;color:#fff;background:var(--med)}
.pill.critical{background:var(--crit)}.pill.high{background:var(--high)}.pill.low{background:var(--low)}
.pill.reflection{background:var(--refl)}.pill.retired{background:transparent;color:var(--muted);
border:1px solid var(--line)}.pill.kind{background:transparent;color:var(--muted);border:1px solid var(--line)}
.pill.trunc{background:transparent;color:var(--high);border:1px solid var(--high)}
.rel{font-size:.84rem;color:var(--muted);display:flex;flex-wrap:wrap;gap:.15rem .9rem}
.rel a{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.78rem}
.reason{font-size:.9rem;border-left:3px solid var(--line);padding:.1rem .7rem;margin:.35rem 0;
white-space:pre-wrap;overflow-wrap:anywhere}
.reason::before{content:"Retired: ";font-weight:600;color:var(--muted)}
details.src{content-visibility:auto;contain-intrinsic-size:auto 2.4rem;background:var(--card);
border:1px solid var(--line);border-radius:.5rem;margin:.35rem 0;
transition:background .4s}
details.src summary{cursor:pointer;padding:.45rem .8rem;display:flex;flex-wrap:wrap;gap:.2rem .7rem;
align-items:center;font-size:.85rem;color:var(--muted)}
details.src pre{margin:0;padding:.7rem .9rem;background:var(--code);border-top:1px solid var(--line);
white-space:pre-wrap;overflow-wrap:anywhere;max-height:28rem;overflow:auto;font-size:.82rem;color:var(--ink)}
.flash,.entry:target,details.src:target{background:var(--flash)}
table.index{width:100%;border-collapse:collapse;background:var(--card);border:1px solid var(--line);
border-radius:.6rem;overflow:hidden;font-size:.9rem}
table.index th,table.index td{text-align:left;padding:.45rem .7rem;border-bottom:1px solid var(--line)}
table.index th{font-size:.75rem;text-transform:uppercase;letter-spacing:.06em;color:var(--muted)}
table.index .n{text-align:right;font-variant-numeric:tabular-nums}
.unknown{color:var(--muted);font-style:italic}
h2 a.up{font-size:.8rem;font-weight:500;margin-left:.6rem}
section.session+section.session{border-top:1px solid var(--line);margin-top:2.5rem}
#none{color:var(--muted);font-style:italic}
footer{color:var(--muted);font-size:.8rem;padding:2.5rem 0 3rem}
""".strip()

SCRIPT = """
(function () {
  "use strict";
  var texts = null;
  function data() {
    if (texts === null) { texts = JSON.parse(document.getElementById("om-texts").textContent); }
    return texts;
  }
  var q = document.getElementById("q"), kind = document.getElementById("kind"), state = document.getElementById("state");
  var imps = [].slice.call(document.querySelectorAll("input[name=imp]"));
  var cards = [].slice.call(document.querySelectorAll(".entry"));
  var groups = [].slice.call(document.querySelectorAll(".group"));
  var sources = [].slice.call(document.querySelectorAll(".src"));
  var hay = cards.map(function (c) {
    return (c.querySelector(".text").textContent + " " + c.getAttribute("data-id")).toLowerCase();
  });
  var sourceHay = null;  // a source's text is read only once a word asks for it
  function sourceMatches(n, words) {
    if (!words.length) { return true; }
    if (sourceHay === null) {
      sourceHay = sources.map(function (d) {
        return ((data()[d.id] || "") + " " + d.querySelector("summary").textContent).toLowerCase();
      });
    }
    return words.every(function (w) { return sourceHay[n].indexOf(w) >= 0; });
  }
  function apply() {
    var words = q.value.toLowerCase().split(/\\s+/).filter(Boolean);
    var allowed = {};
    imps.forEach(function (i) { allowed[i.value] = i.checked; });
    var shown = 0;
    cards.forEach(function (c, n) {
      var d = c.dataset;
      var ok = (kind.value === "all" || d.kind === kind.value) &&
        (state.value === "all" || d.state === state.value) &&
        (d.kind === "reflection" || allowed[d.importance] !== false) &&
        words.every(function (w) { return hay[n].indexOf(w) >= 0; });
      c.hidden = !ok;
      if (ok) { shown += 1; }
    });
    groups.forEach(function (g) { g.hidden = !g.querySelector(".entry:not([hidden])"); });
    var found = 0;
    sources.forEach(function (d, n) {
      d.hidden = !sourceMatches(n, words);
      if (!d.hidden) { found += 1; }
    });
    document.getElementById("shown").textContent = shown + " of " + cards.length +
      (cards.length === 1 ? " entry" : " entries") +
      (words.length ? ", " + found + " of " + sources.length + (sources.length === 1 ? " source" : " sources") : "");
    document.getElementById("none").hidden = shown > 0;
  }
  function reset() {
    q.value = ""; kind.value = "all"; state.value = "all";
    imps.forEach(function (i) { i.checked = true; });
    apply();
  }
  function fill(d) {
    var pre = d.querySelector("pre");
    if (pre && !pre.hasAttribute("data-filled")) {
      pre.textContent = data()[d.id] || "";
      pre.setAttribute("data-filled", "");
    }
  }
  function target(id) {
    // A page anchor (S1-s-...), or an id as recall prints it (s-..., o-..., r-...): its first place.
    var el = id && document.getElementById(id);
    if (!el && /^[sor]-[0-9a-f]{1,64}$/.test(id)) { el = document.querySelector('[data-id="' + id + '"]'); }
    return el;
  }
  function reveal() {
    var el = target(decodeURIComponent(location.hash.slice(1)));
    if (!el) { return; }
    if (el.hidden) { reset(); }
    if (el.tagName === "DETAILS") { el.open = true; fill(el); }
    el.scrollIntoView({block: "center"});
    el.classList.add("flash");
    setTimeout(function () { el.classList.remove("flash"); }, 1400);
  }
  [q, kind, state].concat(imps).forEach(function (el) { el.addEventListener("input", apply); });
  document.addEventListener("toggle", function (e) {
    if (e.target.classList && e.target.classList.contains("src") && e.target.open) { fill(e.target); }
  }, true);
  document.addEventListener("click", function (e) {
    var a = e.target.closest && e.target.closest("a[href^='#']");
    if (a && a.getAttribute("href") === location.hash) { reveal(); }
  });
  document.addEventListener("keydown", function (e) {
    if (e.key === "/" && document.activeElement !== q) { e.preventDefault(); q.focus(); }
  });
  window.addEventListener("hashchange", reveal);
  apply();
  reveal();
  document.documentElement.setAttribute("data-ready", "");
}());
""".strip()


def _hash(text):
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


CSP = (
    f"default-src 'none'; style-src {_hash(STYLE)}; script-src {_hash(SCRIPT)};"
    " img-src 'none'; base-uri 'none'; form-action 'none'"
)


def script_json(value):
    """JSON for a `<script type="application/json">` block: nothing in it can close the block."""
    return (
        dumps(value)
        .replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _e(value):
    return escape(str(value), quote=True)


def _when(stamp):
    """A v1 timestamp as people read it (the exact value stays in the title); anything else as is."""
    if not stamp:
        return "never"
    text = str(stamp)
    if len(text) == 20 and text[10] == "T" and text.endswith("Z"):
        return f'<time datetime="{_e(text)}" title="{_e(text)}">{_e(text[:10])} {_e(text[11:16])} UTC</time>'
    return _e(text)


def render_html(snapshots, all_sessions, skipped=(), projects=""):
    """The page; `projects` is the HTML of its Project sections (om.export.projecthtml), after the sessions."""
    texts = {}
    body = []
    if all_sessions:
        title = "Memory of every session"
        body.append(_index(snapshots))
        if skipped:
            body.append(_skipped(skipped))
    else:
        s = snapshots[0]
        title = "Memory of session " + s["session"]
    for n, s in enumerate(snapshots, 1):
        body.append(_session(s, f"S{n}", texts, all_sessions))
    if all_sessions and not snapshots and not skipped:
        body.append('<p class="unknown">The store holds no session.</p>')
    body.append(projects)
    head = (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(CSP)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta name="generator" content="om {_e(__version__)}">\n'
        f"<title>{_e(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
    )
    return "".join(
        [
            head,
            _header(snapshots, all_sessions),
            _toolbar(),
            '<main class="wrap">\n',
            '<noscript><p class="unknown">Filters and source texts need JavaScript;'
            " the Markdown export shows the same memory without it.</p></noscript>\n",
            '<p id="none" hidden>No entry matches the filters.</p>\n',
            *body,
            "</main>\n",
            f'<footer class="wrap">Exported by om {_e(__version__)}. Everything on this page is quoted'
            " evidence from the session ledger; nothing here was sent anywhere.</footer>\n",
            f'<script type="application/json" id="om-texts">{script_json(texts)}</script>\n',
            f"<script>{SCRIPT}</script>\n</body>\n</html>\n",
        ]
    )


def _counted(n, one, many=None):
    """`<b>n</b>` and the noun, singular for 1 ("1 observation"), else plural (`one` + s unless given)."""
    return f"<b>{n:,}</b> {one if n == 1 else many or one + 's'}"


def _header(snapshots, all_sessions):
    if all_sessions:
        total = [counts(s) for s in snapshots]
        line = (
            f"{_counted(len(snapshots), 'session')} ·"
            f" {_counted(sum(c['observations'] + c['reflections'] for c in total), 'active entry', 'active entries')}"
            f" · <b>{sum(c['retired'] for c in total):,}</b> retired ·"
            f" {_counted(sum(c['sources'] for c in total), 'source')}"
        )
        return (
            '<header class="page wrap"><h1>Observational memory <small>every session in the store</small></h1>'
            f'<div class="meta"><span>{line}</span></div></header>\n'
        )
    return (
        f'<header class="page wrap"><h1>Observational memory <small>{_e(snapshots[0]["session"])}</small></h1>'
        "</header>\n"
    )


def _toolbar():
    boxes = "".join(
        f'<label><input type="checkbox" name="imp" value="{i}" checked>{i}</label>' for i in IMPORTANCE_ORDER
    )
    return (
        '<nav class="bar" aria-label="Filters"><div class="wrap">'
        '<input type="search" id="q" placeholder="Filter by words or id" aria-label="Text filter">'
        '<select id="kind" aria-label="Kind"><option value="all">All kinds</option>'
        '<option value="observation">Observations</option><option value="reflection">Reflections</option></select>'
        '<select id="state" aria-label="State"><option value="active" selected>Active</option>'
        '<option value="retired">Retired</option><option value="all">All states</option></select>'
        f'<span class="imps">{boxes}</span><span id="shown"></span></div></nav>\n'
    )


def _project(s):
    if s["project"]:
        return f"<span>{_e(s['project'])}</span>"
    return '<span class="unknown">unknown</span>'


def _index(snapshots):
    rows = []
    for n, s in enumerate(snapshots, 1):
        c = counts(s)
        rows.append(
            f'<tr><td><a href="#S{n}">{_e(s["session"])}</a></td><td>{_project(s)}</td>'
            f'<td class="n">{c["observations"]:,}</td><td class="n">{c["reflections"]:,}</td>'
            f'<td class="n">{c["retired"]:,}</td><td class="n">{c["sources"]:,}</td>'
            f'<td>{_when(s["last_activity"])}</td></tr>'
        )
    return (
        '<h2 id="sessions">Sessions</h2>\n<table class="index"><thead><tr><th>Session</th><th>Project</th>'
        '<th class="n">Observations</th><th class="n">Reflections</th><th class="n">Retired</th>'
        '<th class="n">Sources</th><th>Last activity</th>'
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>\n"
    )


def _skipped(skipped):
    items = "".join(f"<li><code>{_e(s['directory'])}</code>: {_e(s['error'])}</li>" for s in skipped)
    return (f'<h2 id="skipped">Not exported</h2>\n<p class="unknown">{len(skipped):,} session'
            f'{"" if len(skipped) == 1 else "s"} of the store could not be read:</p>\n<ul class="skipped">{items}</ul>\n')


def _session(s, prefix, texts, all_sessions):
    c = counts(s)
    meta = s["meta"]
    chain = links(s)
    by_id = {e["id"]: e for e in s["entries"]}
    out = [f'<section class="session" id="{prefix}">\n']
    if all_sessions:
        out.append(f'<h2>Session <code>{_e(s["session"])}</code> <a class="up" href="#sessions">all sessions</a></h2>\n')
    out.append('<div class="meta">')
    facts = [
        f"<span>Project {_project(s)}</span>",
        f"<span>{_counted(c['observations'], 'observation')} · {_counted(c['reflections'], 'reflection')} ·"
        f" <b>{c['retired']:,}</b> retired · {_counted(c['sources'], 'source')}</span>",
        f"<span>checkpointed through source <b>{_e(meta['cursor'])}</b></span>",
        f"<span>last checkpoint {_when(meta['last_checkpoint_at'])}</span>",
        f"<span>last activity {_when(s['last_activity'])}</span>",
    ]
    if meta["paused"]:
        facts.append("<span><b>capture paused</b></span>")
    if meta["imported_from"]:
        facts.append(f"<span>imported from <code>{_e(meta['imported_from']['session'])}</code></span>")
    if s.get("origin"):
        origin = s["origin"]
        facts.append(f"<span>from machine <code>{_e(origin['label'] or origin['writer'])}</code> (om sync,"
                     " read-only)</span>")
    out.append("".join(facts))
    out.append("</div>\n")
    active = [e for e in s["entries"] if e["active"]]
    retired = [e for e in s["entries"] if not e["active"]]
    for key, label in GROUPS:
        if key == "reflection":
            group = [e for e in active if e["kind"] == "reflection"]
        else:
            group = [e for e in active if e["kind"] != "reflection" and e["importance"] == key]
        out.append(_group(group, label, prefix, by_id, chain))
    others = [e for e in active if e["kind"] != "reflection" and e["importance"] not in IMPORTANCE_ORDER]
    out.append(_group(others, "Other importance", prefix, by_id, chain))
    out.append(_group(retired, "Retired", prefix, by_id, chain))
    out.append(f"<h2>Sources <small class=\"id\">{len(s['sources']):,} captured</small></h2>\n")
    for src in s["sources"]:
        out.append(_source(src, prefix, texts, chain))
    out.append("</section>\n")
    return "".join(out)


def _group(entries, label, prefix, by_id, chain):
    if not entries:
        return ""
    cards = "".join(_entry(e, prefix, by_id, chain) for e in entries)
    return f'<div class="group"><h3>{_e(label)}</h3>\n{cards}</div>\n'


def _anchor(prefix, item_id):
    return f"{prefix}-{item_id}"


def _link(prefix, item_id):
    if well_formed(item_id):
        return f'<a href="#{_anchor(prefix, item_id)}">{item_id}</a>'
    return f"<code>{_e(item_id)}</code>"


def _links(prefix, ids):
    return " ".join(_link(prefix, i) for i in ids)


def _entry(e, prefix, by_id, chain):
    eid = e["id"]
    attrs = f' id="{_anchor(prefix, eid)}"' if well_formed(eid) else ""
    state = "active" if e["active"] else "retired"
    kind = "reflection" if e["kind"] == "reflection" else "observation"
    pills = []
    if kind == "reflection":
        pills.append('<span class="pill reflection">reflection</span>')
    else:
        pills.append(f'<span class="pill {_e(e["importance"])}">{_e(e["importance"])}</span>')
    if not e["active"]:
        pills.append('<span class="pill retired">retired</span>')
    rel = []
    if e["support"]:
        rel.append(("rests on " if kind == "reflection" else "cites ") + _links(prefix, e["support"]))
    around = chain.get(eid, {})
    if around.get("cited_by"):
        rel.append("supports " + _links(prefix, around["cited_by"]))
    if around.get("replaces"):
        rel.append("replaces " + _links(prefix, around["replaces"]))
    retirement = e["retirement"] or {}
    if retirement.get("replacement_ids"):
        rel.append("replaced by " + _links(prefix, retirement["replacement_ids"]))
    reason = f'<div class="reason">{_e(retirement.get("reason") or "")}</div>' if e["retirement"] else ""
    return (
        f'<article class="entry"{attrs} data-id="{_e(eid)}" data-kind="{kind}" data-state="{state}"'
        f' data-importance="{_e(e["importance"])}">'
        f'<div class="head">{"".join(pills)}<span class="id">{_e(eid)}</span><span>{_when(e["timestamp"])}</span></div>'
        f'<div class="text">{_e(e["text"])}</div>{reason}'
        f'<div class="rel">{"".join(f"<span>{r}</span>" for r in rel)}</div></article>\n'
    )


def _source(src, prefix, texts, chain):
    sid = src["id"]
    anchor = _anchor(prefix, sid) if well_formed(sid) else f"{prefix}-seq{int(src['seq'])}"
    texts[anchor] = src["text"]
    trunc = '<span class="pill trunc" title="om kept the start and end of this source">truncated</span>' if src["truncated"] else ""
    data_id = f' data-id="{_e(sid)}"' if well_formed(sid) else ""
    by = chain.get(sid, {}).get("cited_by", [])
    cited = f"<span>cited by {_links(prefix, by)}</span>" if by else ""
    return (
        f'<details class="src" id="{anchor}"{data_id}><summary><span class="pill kind">{_e(src["kind"])}</span>'
        f'<span class="id">{_e(sid)}</span><span>#{int(src["seq"])}</span><span>{_when(src["timestamp"])}</span>'
        f'<span>{len(src["text"]):,} chars</span>{trunc}{cited}</summary><pre></pre></details>\n'
    )
