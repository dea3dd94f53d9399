"""A search query as terms: what `om search` looks for, whichever path (index or scan) looks.

Invariants:
- A query is always plain words: it is tokenized here, with the code the index
  tokenizes with (om.derived.fts), and every term becomes an FTS5 phrase in
  quotes, so no query text can be FTS syntax or fail to parse. Stop words and
  single letters are dropped unless the query holds nothing else, then they are
  the terms; only a query without any word is an InputError.
- Words match by stem (om.porter, through om.derived.fts), and the last word
  also as a prefix of the exact word; CJK runs are bigrams.
- A Query is a function of its text and whether the last word may be a
  prefix: the same ones make the same terms and expressions, which om.search
  ranks by and om.snippets marks.
"""

import re
import unicodedata

from om.derived import fts as ix
from om.derived.fts import WORD_PATTERN, fold
from om.errors import InputError

#: Whether single letters (the `s` of `Melanie's`) are dropped like stop words.
SINGLE_LETTERS = True

STOP_WORDS = frozenset(
    """a about all also am an and another any anything are as at be because been before being below
    between both but by can could did do does doing each else ever every few for from further get gets
    got had has have having he her here hers herself him himself his how i if in into is it its itself
    just kind kinds like likely many me more most much must my myself no nor not now of off on once one
    ones only or other ought our ourselves out over own same she should so some something sort such than
    that the their them themselves then there these they thing things this those to too type under until
    up very was way ways we were what when where which while who whom whose why will with would you your
    yours yourself yourselves""".split()
)

CJK_RUN = re.compile(ix.CJK_CLASS + "+")
WORD = ix.pattern(WORD_PATTERN)


class Query:
    """A natural-language query as terms: folded, stop words dropped (unless all are), CJK as bigrams.

    Each term is (key, stem, is_cjk); its FTS5 expression matches the stem in
    the `stems` column (and the key as a prefix in `text`, for the last term),
    its exact expression the key itself in `text`.
    """

    def __init__(self, text, prefix=True):
        if not isinstance(text, str):
            raise InputError("om: search needs a query")
        self.text = text
        words = []  # (folded word, is_cjk) in order, stop words included
        for match in WORD.finditer(unicodedata.normalize("NFC", text)):
            raw = match.group()
            pos = 0
            for run in CJK_RUN.finditer(raw):
                if run.start() > pos:
                    words.append((fold(raw[pos : run.start()]), False))
                words.append((run.group(), True))
                pos = run.end()
            if pos < len(raw):
                words.append((fold(raw[pos:]), False))
        terms = []  # (key, is_cjk)
        for word, cjk in words:
            if cjk:
                grams = [word] if len(word) <= 2 else [word[i : i + 2] for i in range(len(word) - 1)]
                terms.extend((g, True) for g in grams)
            elif word not in STOP_WORDS and not (SINGLE_LETTERS and len(word) == 1 and word.isalpha()):
                terms.append((word, False))
        if not terms:
            # Every word is a common one ("the", "a AND"): a user's query is still
            # valid input, so search for those words themselves.
            terms = [(word, False) for word, _ in words]
        seen, self.terms = set(), []
        for key, cjk in terms:
            stem = key if cjk else ix.stem_of(key)
            if stem not in seen:
                seen.add(stem)
                self.terms.append((key, stem, cjk))
        if not self.terms:
            raise InputError("om: search query has no words (only punctuation or symbols)")
        last, _, last_cjk = self.terms[-1]
        # Prefix-match the last term: people type queries the way they type prompts
        # (an expansion's words are whole words, om.feedback).
        self.prefix = prefix and not last_cjk and len(last) >= 2
        self.words = words
        # phrases[i]: the (column, folded tokens, is prefix) whose matches make term i match.
        self.phrases = []
        for i, (key, stem, _cjk) in enumerate(self.terms):
            tokens = _tokens_of_folded(stem)
            own = [("stems", tokens, False)]
            if i == len(self.terms) - 1 and self.prefix:
                own.append(("text", [key], True))
            self.phrases.append(own)
        self.exprs = [_any(own) for own in self.phrases]
        self.and_expr = " AND ".join(self.exprs)
        self.or_expr = " OR ".join(self.exprs)
        self.exact = [("text", _tokens_of_folded(key), i == len(self.terms) - 1 and self.prefix)
                      for i, (key, _, _) in enumerate(self.terms)]
        self.exact_exprs = [_phrase(*p) for p in self.exact]
        self.phrase_expr = None
        # Folded token sequences used by the scan path and by snippets.
        self.phrase_tokens = [t for w, _ in words for t in _tokens_of_folded(w)]
        self.phrase_prefix = self.prefix and not words[-1][1] and words[-1][0] == last
        if len(words) > 1:
            self.phrase_expr = _phrase("text", self.phrase_tokens, self.phrase_prefix)


def _phrase(column, tokens, prefix):
    return f'{column} : "' + " ".join(tokens).replace('"', '""') + '"' + ("*" if prefix else "")


def _any(phrases):
    exprs = [_phrase(*p) for p in phrases]
    return exprs[0] if len(exprs) == 1 else "(" + " OR ".join(exprs) + ")"


def _tokens_of_folded(folded):
    return WORD.findall(ix.spread_cjk(folded))
