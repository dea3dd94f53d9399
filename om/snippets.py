"""A search result's snippet: a window of its text around the most query terms, matches marked [like this].

Invariants:
- A pure function of the text and the query (om.query): a window of at most
  `width` characters of the text (SNIPPET_CHARS by default) holding the most
  distinct query terms (the first such window), moved to word boundaries where
  it can be, an ellipsis where text was cut off, whitespace runs as one space.
- A word is marked when it matches a term as the search matches it: its exact
  form, its stem, or (the last term) as a prefix; CJK terms wherever they occur.
"""

import unicodedata

from om.derived import fts as ix
from om.derived.fts import fold
from om.query import CJK_RUN, WORD

SNIPPET_CHARS = 160


def snippet(text, q, width=SNIPPET_CHARS):
    """A short window of the text around the most query terms, matches marked [like this]."""
    text = unicodedata.normalize("NFC", text)
    spans = _match_spans(text, q)
    if not spans:
        window = (0, min(len(text), width))
    else:
        best, best_key = spans[0][0], None
        for start, _, _ in spans:
            inside = {t for s, e, t in spans if start <= s and e <= start + width}
            key = (len(inside), -start)
            if best_key is None or key > best_key:
                best, best_key = start, key
        a = max(0, best - width // 4)
        window = (_word_start(text, a, best), _word_end(text, min(len(text), a + width)))
    a, b = window
    out, pos = [], a
    for s, e, _ in spans:
        if s < a or e > b or s < pos:
            continue
        out.append(text[pos:s])
        out.append("[" + text[s:e] + "]")
        pos = e
    out.append(text[pos:b])
    body = " ".join("".join(out).split())
    return ("…" if a > 0 else "") + body + ("…" if b < len(text) else "")


def _word_start(text, a, limit):
    """Move a window start forward past a cut word (never past the first match)."""
    if a == 0 or text[a - 1].isspace():
        return a
    space = text.find(" ", a, limit)
    return space + 1 if space >= 0 else a


def _word_end(text, b):
    if b >= len(text) or text[b].isspace():
        return b
    space = text.rfind(" ", b - 24, b)
    return space if space > 0 else b


def _match_spans(text, q):
    """(start, end, term index) of every match of a query term in the text, in order.

    A word matches a term by its exact form, by its stem, or (last term) as a prefix.
    """
    spans = []
    last = len(q.terms) - 1
    plain = {key: i for i, (key, _, cjk) in enumerate(q.terms) if not cjk}
    stems = {stem: i for i, (_, stem, cjk) in enumerate(q.terms) if not cjk}
    for m in WORD.finditer(text):
        token = m.group()
        if CJK_RUN.search(token):
            continue
        folded = fold(token)
        i = plain.get(folded)
        if i is None:
            i = stems.get(ix.stem_of(folded))
        if i is None and q.prefix and folded.startswith(q.terms[last][0]):
            i = last
        if i is not None:
            spans.append((m.start(), m.end(), i))
    for i, (key, _, cjk) in enumerate(q.terms):
        if cjk:
            start = text.find(key)
            while start >= 0:
                spans.append((start, start + len(key), i))
                start = text.find(key, start + len(key))
    spans.sort()
    return spans
