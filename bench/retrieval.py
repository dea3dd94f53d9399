"""Retrieval quality of `om search --sources` on LoCoMo's long conversations (bench/data/locomo).

Invariants:
- The task: each conversation is one session; each turn is captured as one
  source whose text is the session's date and time, the speaker and the
  turn (and the caption of an image the turn shared); each question is run
  as a query, and its evidence turns are the relevant documents. Questions
  whose evidence names no turn of the conversation (4 of 1,986) are left out.
- Metrics, averaged over questions: R@k is the share of a question's
  evidence turns among the first k results; MRR is the reciprocal rank of
  the first evidence turn within the first 10 (0 when none is).
- Two halves, fixed: conversations 0, 2, 4, 6, 8 are the half the ranking
  constants were chosen on, 1, 3, 5, 7, 9 the held-out half; both are
  always printed, with the whole.
- The BM25 baselines are computed here, in the same run, over the same texts:
  Robertson's BM25 (k1 1.2, b 0.75, idf ln(1 + (N - df + 0.5) / (df + 0.5)))
  on lower-cased words, with and without the stop words of the om being
  measured.
- `rankings(root)` runs in a child process that imports om from the tree at
  `root` (this one, or another commit's for a comparison): the same harness
  ranks with either tree's search. `rankings(root, without)` switches parts
  of this tree's rule off in that child (ABLATIONS), to show what each adds.
- The cross-session form (`rankings(root, across=...)`): the ten conversations
  are ten sessions of one store, and every question is asked of them all
  (`search --all-sessions --sources`); a result counts only when it is an
  evidence turn of the question's own conversation. `across="store"` ranks
  with the store index (one ranking for the store), `across="merge"` with no
  store index (each session searched alone, the lists merged by score): both
  in the same run, over the same store.

    python3 bench/retrieval.py ROOT [PART...]   # the child: prints {"rankings": [...], "seconds": [...]}
    python3 bench/retrieval.py ROOT --across store|merge
"""

import collections
import gzip
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# Compressed (a third of the size): the repository root is the plugin, and every install copies it.
DATA = os.path.join(HERE, "data", "locomo", "locomo10-retrieval.json.gz")
WORD = re.compile(r"[^\W_]+")
HALVES = (("tuned on", 0), ("held out", 1))
#: Parts of the rule a child can switch off, each undoing one change, in the order they were made.
ABLATIONS = ("feedback", "neighbour", "exact", "stop-words", "stems")
#: The stop words before word forms came in: the "stop-words" ablation restores them (and keeps single letters).
EARLIER_STOP_WORDS = frozenset(
    """a about an and any are as at be been but by can could did do does for from had has have how i if in
    into is it its me my of on or our so than that the their them then there these they this those to was
    we were what when where which who whom why will with would you your""".split()
)


def conversations():
    with gzip.open(DATA, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def documents(conversation):
    """[(dialog id, text)] in the order the turns were said."""
    out = []
    for session in conversation["sessions"]:
        for turn in session["turns"]:
            dia, speaker, text = turn[:3]
            line = f"[{session['date_time']}] {speaker}: {text}"
            if len(turn) > 3:
                line += f" [shares {turn[3]}]"
            out.append((dia, line))
    return out


def questions(conversation):
    """[(question, set of evidence dialog ids)], questions without evidence in the conversation left out."""
    known = {dia for dia, _ in documents(conversation)}
    out = []
    for qa in conversation["qa"]:
        gold = {g for g in qa["evidence"] if g in known}
        if gold:
            out.append((qa["question"], gold))
    return out


def rankings(root, without=(), across=None):
    """{"rankings": [[dialog ids] per question, conversation by conversation], "seconds": [per question],
    "expanded": questions whose search was expanded (om.feedback)}; `across` ("store" or "merge"): the
    cross-session form, each dialog id "conversation:dialog"."""
    extra = ("--across", across) if across else tuple(without)
    p = subprocess.run([sys.executable, os.path.abspath(__file__), root, *extra], capture_output=True,
                       env=dict(os.environ, PYTHONPATH=root))
    if p.returncode != 0:
        raise SystemExit(f"ranking with {root} failed: {p.stderr.decode()}")
    return json.loads(p.stdout)


def _switch_off(parts):
    from om import search

    if "feedback" in parts:
        search.expand = lambda *args: None
    if "neighbour" in parts:
        search.NEIGHBOUR = 0.0
    if "exact" in parts:
        search.EXACT = 0.0
    if "stop-words" in parts:
        from om import query

        # The query's terms (om.query) and the expansion's words (om.search) both.
        query.STOP_WORDS = search.STOP_WORDS = EARLIER_STOP_WORDS
        query.SINGLE_LETTERS = False
    if "stems" in parts:
        search.ix.stem_of = lambda word: word


def _rank_with_this_om():
    from om.ledger import Ledger
    from om.search import search

    out, seconds, expanded = [], [], 0
    with tempfile.TemporaryDirectory(prefix="om-bench-retrieval-") as store:
        for i, conversation in enumerate(conversations()):
            with Ledger.open(store, f"locomo-{i}") as ledger:
                ids = {}
                with ledger.transaction():
                    for dia, text in documents(conversation):
                        ids[ledger.capture("user", text, dia)] = dia
                search(ledger, "warm up the index", sources=True)
                for question, _ in questions(conversation):
                    t = time.perf_counter()
                    found = search(ledger, question, sources=True, limit=10)
                    seconds.append(time.perf_counter() - t)
                    results = found["results"]
                    expanded += "expansion" in found
                    out.append([ids[r["id"]] for r in results])
    return {"rankings": out, "seconds": seconds, "expanded": expanded}


def _rank_across_sessions(how):
    """The cross-session form (see the module invariants), ranked `how`: "store" or "merge"."""
    from om.derived import store_index
    from om.ledger import Ledger
    from om.sessions.crosssearch import search_all

    if how == "merge":
        store_index.open_index = lambda *args, **kwargs: None  # no store index: each session alone, merged
    out, seconds, expanded = [], [], 0
    with tempfile.TemporaryDirectory(prefix="om-bench-retrieval-") as store:
        ids = {}
        for i, conversation in enumerate(conversations()):
            with Ledger.open(store, f"locomo-{i}") as ledger:
                with ledger.transaction():
                    for dia, text in documents(conversation):
                        ids[f"locomo-{i}", ledger.capture("user", text, dia)] = f"{i}:{dia}"
        search_all(store, "warm up the index", sources=True)
        for conversation in conversations():
            for question, _ in questions(conversation):
                t = time.perf_counter()
                found = search_all(store, question, sources=True, limit=10)
                seconds.append(time.perf_counter() - t)
                expanded += "expansion" in found
                out.append([ids[r["session"], r["id"]] for r in found["results"]])
    return {"rankings": out, "seconds": seconds, "expanded": expanded}


def bm25_rankings(stop_words=frozenset(), k1=1.2, b=0.75):
    out = []
    for conversation in conversations():
        docs = documents(conversation)
        words = [[w.lower() for w in WORD.findall(text)] for _, text in docs]
        tfs = [collections.Counter(w) for w in words]
        df = collections.Counter(w for tf in tfs for w in tf)
        n, avgdl = len(docs), sum(map(len, words)) / len(docs)
        for question, _ in questions(conversation):
            terms = [w.lower() for w in WORD.findall(question)]
            terms = list(dict.fromkeys([w for w in terms if w not in stop_words] or terms))
            idf = {w: math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5)) for w in terms}
            scored = []
            for i, tf in enumerate(tfs):
                norm = k1 * (1 - b + b * len(words[i]) / avgdl)
                s = sum(idf[w] * tf[w] * (k1 + 1) / (tf[w] + norm) for w in terms if tf[w])
                if s > 0:
                    scored.append((-s, i))
            scored.sort()
            out.append([docs[i][0] for _, i in scored[:10]])
    return out


def metrics(ranked, across=False):
    """{half: {"R@1", "R@5", "R@10", "MRR", "n"}} for the halves and "all"; `across`: of the cross-session
    form, whose dialog ids name their conversation."""
    rows = collections.defaultdict(list)
    it = iter(ranked)
    for i, conversation in enumerate(conversations()):
        for _, gold in questions(conversation):
            row = (next(it), {f"{i}:{g}" for g in gold} if across else gold)
            rows[HALVES[i % 2][0]].append(row)
            rows["all"].append(row)
    out = {}
    for half, pairs in rows.items():
        m = {f"R@{k}": sum(len(set(r[:k]) & g) / len(g) for r, g in pairs) / len(pairs) for k in (1, 5, 10)}
        m["MRR"] = sum(next((1 / (j + 1) for j, d in enumerate(r[:10]) if d in g), 0.0) for r, g in pairs) / len(pairs)
        m["n"] = len(pairs)
        out[half] = m
    return out


def line(name, m):
    cells = "  ".join(
        f"{half} R@1 {m[half]['R@1']:.3f} R@5 {m[half]['R@5']:.3f} R@10 {m[half]['R@10']:.3f} MRR {m[half]['MRR']:.3f}"
        for half in ("tuned on", "held out", "all")
    )
    return f"{name:<24} {cells}"


if __name__ == "__main__":
    sys.path.insert(0, sys.argv[1])
    if sys.argv[2:3] == ["--across"]:
        json.dump(_rank_across_sessions(sys.argv[3]), sys.stdout)
    else:
        _switch_off(sys.argv[2:])
        json.dump(_rank_with_this_om(), sys.stdout)
