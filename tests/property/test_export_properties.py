"""No stored text can change the structure of a Markdown or HTML export.

In process (the renderers are pure functions of the snapshots the reader
builds), so hypothesis can try many texts quickly. Structure is compared with
the same export after every stored text was replaced by a plain word: the
token or tag sequence must be identical, and each text must come out verbatim.
"""

import json
from html.parser import HTMLParser

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from om.export.browser import render_html
from om.export.markdown import render_markdown

PIECES = ["`", "``", "```", "````", "~~~", "\n", "\r", "\r\n", "\n\n", "<", ">", "&", "&amp;", "</script>",
          "<script>", "</pre>", "<!--", "-->", "</textarea>", "\u2028", "\u2029", "\x85", '"', "'", "#", "# h",
          "[x](#y)", "<b>", "    ", "\t", "\x00", "\\", "*", "_", "---", "> ", "1. ", "- ", "|", "]]>", "\ufeff"]
TEXT = st.lists(st.sampled_from(PIECES) | st.text(max_size=8), min_size=1, max_size=14).map("".join).filter(
    lambda t: t.strip()
)
ONE_LINE = TEXT.filter(lambda t: "\n" not in t and "\r" not in t)
IMPORTANCE = st.sampled_from(["low", "medium", "high", "critical"]) | TEXT


def hexid(prefix, n):
    return f"{prefix}-{n:024x}"


@st.composite
def snapshots(draw):
    n_sources = draw(st.integers(1, 4))
    sources = [
        {"seq": i + 1, "id": hexid("s", i + 1), "kind": draw(st.sampled_from(["user", "assistant", "tool"])),
         "timestamp": "2026-09-06T06:40:53Z", "text": draw(TEXT), "truncated": draw(st.booleans())}
        for i in range(n_sources)
    ]
    entries = []
    n_obs = draw(st.integers(1, 4))
    for i in range(n_obs):
        entries.append({"seq": i + 1, "id": hexid("o", i + 1), "kind": "observation",
                        "timestamp": "2026-09-06T06:40:53Z", "importance": draw(IMPORTANCE), "text": draw(TEXT),
                        "support": [hexid("s", draw(st.integers(1, n_sources)))], "active": True,
                        "retirement": None})
    entries.append({"seq": n_obs + 1, "id": hexid("r", 1), "kind": "reflection", "timestamp": "2026-09-06T06:40:53Z",
                    "importance": "medium", "text": draw(TEXT), "support": [hexid("o", n_obs)], "active": True,
                    "retirement": None})
    if n_obs > 1:
        entries[0]["active"] = False
        entries[0]["retirement"] = {"id": entries[0]["id"], "reason": draw(TEXT), "replacement_ids": [hexid("o", 2)]}
    session = {
        "session": draw(TEXT), "project": draw(st.none() | TEXT),
        "meta": {"cursor": n_sources, "paused": draw(st.booleans()), "last_checkpoint_at": "2026-09-06T06:41:00Z",
                 "imported_from": draw(st.none() | st.fixed_dictionaries({"store": TEXT, "session": TEXT}))},
        "last_activity": "2026-09-06T06:41:00Z", "sources": sources, "entries": entries,
    }
    return session


def stored_texts(s):
    """The fenced texts of the Markdown export (it shows the sources that entries cite)."""
    cited = {i for e in s["entries"] for i in e["support"]}
    out = [x["text"] for x in s["sources"] if x["id"] in cited] + [e["text"] for e in s["entries"]]
    out += [e["retirement"]["reason"] for e in s["entries"] if e["retirement"]]
    return out


def plain(s):
    """The same snapshot with every fenced stored text replaced by a harmless word."""
    s = json.loads(json.dumps(s))
    for x in s["sources"] + s["entries"]:
        x["text"] = "plain"
        if x.get("retirement"):
            x["retirement"]["reason"] = "plain"
    return s


def md_shape(text):
    tokens = MarkdownIt("commonmark").parse(text)
    shape = []
    for t in tokens:
        children = [(c.type, c.content if c.type != "code_inline" else "") for c in (t.children or [])]
        shape.append((t.type, t.tag, t.level, t.info, children if t.type == "inline" else None))
    return shape, [t.content for t in tokens if t.type == "fence"]


def normalized(text):
    """What CommonMark makes of a text's line endings and NULs inside a fence."""
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "\ufffd")


class Tags(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.data, self.script, self._in = [], [], [], False

    def handle_starttag(self, tag, attrs):
        self.tags.append(("start", tag, tuple(attrs)))
        self._in = tag == "script"

    def handle_startendtag(self, tag, attrs):
        self.tags.append(("startend", tag, tuple(attrs)))

    def handle_endtag(self, tag):
        self.tags.append(("end", tag))
        self._in = False

    def handle_data(self, data):
        (self.script if self._in else self.data).append(data)

    def handle_comment(self, data):
        self.tags.append(("comment", data))


def html_shape(page):
    parser = Tags()
    parser.feed(page)
    parser.close()
    return parser


FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(snapshots(), st.booleans())
def test_no_stored_text_changes_the_structure_of_the_markdown_export(snapshot, all_sessions):
    page = render_markdown([snapshot], all_sessions)
    shape, fences = md_shape(page)
    plain_shape, plain_fences = md_shape(render_markdown([plain(snapshot)], all_sessions))
    assert shape == plain_shape
    assert len(fences) == len(plain_fences)
    for text in stored_texts(snapshot):
        body = normalized(text)
        assert (body if body.endswith("\n") else body + "\n") in fences


@FAST
@given(snapshots(), st.booleans())
def test_no_stored_text_becomes_markup_in_the_html_export(snapshot, all_sessions):
    page = render_html([snapshot], all_sessions)
    parsed = html_shape(page)
    assert parsed.tags == html_shape(render_html([plain(snapshot)], all_sessions)).tags
    shown = "".join(parsed.data)
    for e in snapshot["entries"]:
        assert e["text"].replace("\r\n", "\n").replace("\r", "\n") in shown.replace("\r\n", "\n").replace("\r", "\n")
    block = page.split('<script type="application/json" id="om-texts">', 1)[1].split("</script>", 1)[0]
    assert not any(c in block for c in "<>&\u2028\u2029")
    assert json.loads(block) == {f"S1-{x['id']}": x["text"] for x in snapshot["sources"]}
