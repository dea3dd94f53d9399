"""Pseudo-relevance feedback: when a search finds fewer results than asked for, the
strongest words of its best hits look for more.

Invariants:
- Only when the first pass is weak: it found at least one result but fewer than the
  `limit` asked for, and none of them holds every term of the query (the whole-number
  part of a score is the terms covered, plus the number of terms for an exact phrase).
  A query whose words occur together somewhere, a one-word query, or a first pass that
  fills its limit is returned as it is: the expansion never changes which results a
  full list shows, and never adds loosely related text to a search that found its words.
- It never buries a match: each result found only through the expansion comes after
  every result of the first pass and scores below 1, because it covers none of the
  query's own terms (a first-pass result covers at least one, so it scores 1 or more).
  Such a result carries `"expansion": true`, and the response names the words added.
- The words (RM1's weights, then a floor): from the whole texts of the FEEDBACK best
  first-pass results, each word weighs the sum over those texts of its frequency in the
  text over the text's length, times 1 / (rank + 1). Stop words, single characters,
  numbers and the stems of the query's own terms are left out, and a word counts only
  when it occurs at least twice in those texts: one mention is no evidence of a topic.
  At most WORDS words, heaviest first.
- One rule for one session's search and for the store-wide list
  (om.sessions.crosssearch), which expands once, from its merged first pass.

Measured on LoCoMo (bench/search.py): its questions nearly always fill their limit on
the first pass, so the rule rarely fires there and leaves R@5 and MRR as they were;
always-on expansion (RM3 mixing the words into every query) lost 0.019 R@5 and 0.027
MRR, which is why it waits for a weak first pass.
"""

from om.derived.fts import WORD_PATTERN, fold, pattern, stem_of

#: First-pass results whose texts give the words.
FEEDBACK = 3
#: Most words an expansion adds.
WORDS = 5


def weak(results, limit, terms):
    """Whether a first pass (best first) of a query of `terms` terms calls for feedback."""
    return 0 < len(results) < limit and int(results[0]["score"]) < terms


def words_for(query_stems, texts, stop_words):
    """The expansion words for texts ranked best first (see the module invariants)."""
    weights, mentions, surface = {}, {}, {}
    for rank, text in enumerate(texts[:FEEDBACK]):
        words = [fold(w) for w in pattern(WORD_PATTERN).findall(text or "")]
        if not words:
            continue
        share = 1.0 / (len(words) * (rank + 1))
        for word in words:
            if len(word) < 2 or word.isdigit() or word in stop_words:
                continue
            stem = stem_of(word)
            if stem in query_stems:
                continue
            weights[stem] = weights.get(stem, 0.0) + share
            mentions[stem] = mentions.get(stem, 0) + 1
            surface.setdefault(stem, {})
            surface[stem][word] = surface[stem].get(word, 0) + 1
    chosen = sorted((s for s in weights if mentions[s] >= 2), key=lambda s: (-weights[s], s))[:WORDS]
    # Each stem as the form the texts use most (then the first in order): it is also what snippets mark.
    return [max(sorted(surface[s]), key=lambda w: surface[s][w]) for s in chosen]


def appended(first, more, limit):
    """`first` followed by the results of `more` it lacks, scored below 1, up to `limit` in all."""
    seen = {_identity(r) for r in first}
    out = list(first)
    for result in more:
        if len(out) >= limit:
            break
        if _identity(result) in seen:
            continue
        seen.add(_identity(result))
        s = result["score"]
        out.append(dict(result, score=round(s / (1.0 + s), 4), expansion=True))
    return out


def _identity(result):
    return result.get("session"), result["id"]
