"""Porter's suffix-stripping stemmer (1980), for lower-case ASCII words.

Invariants:
- `stem(word)` is a pure function of its argument: the index (om.derived.fts,
  at insert time) and the query and the scan (om.search) call this one
  function, so a word and its inflections meet on the same stem whichever
  path ranks them.
- Words of one or two letters are returned unchanged; so is anything the
  caller does not pass as a lower-case ASCII word (om.derived.fts.stem_of
  decides what is stemmed).
- The steps and their conditions are those of M. F. Porter, "An algorithm for
  suffix stripping" (Program 14(3), 1980), with the two revisions of his own
  later reference version: `bli` -> `ble` and `logi` -> `log` in step 2.
"""

VOWELS = frozenset("aeiou")


def _cons(w, i):
    c = w[i]
    if c in VOWELS:
        return False
    if c == "y":
        return i == 0 or not _cons(w, i - 1)
    return True


def _measure(s):
    """Porter's m: the number of vowel-consonant runs in [C](VC)^m[V]."""
    m, i, n = 0, 0, len(s)
    while i < n and _cons(s, i):
        i += 1
    while i < n:
        while i < n and not _cons(s, i):
            i += 1
        if i >= n:
            break
        m += 1
        while i < n and _cons(s, i):
            i += 1
    return m


def _has_vowel(s):
    return any(not _cons(s, i) for i in range(len(s)))


def _double(s):
    return len(s) >= 2 and s[-1] == s[-2] and _cons(s, len(s) - 1)


def _cvc(s):
    n = len(s)
    return n >= 3 and _cons(s, n - 3) and not _cons(s, n - 2) and _cons(s, n - 1) and s[-1] not in "wxy"


STEP2 = (("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"),
         ("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"), ("ization", "ize"),
         ("ation", "ate"), ("ator", "ate"), ("alism", "al"), ("iveness", "ive"), ("fulness", "ful"),
         ("ousness", "ous"), ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"), ("logi", "log"))
STEP3 = (("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"), ("ful", ""),
         ("ness", ""))
STEP4 = ("al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou", "ism",
         "ate", "iti", "ous", "ive", "ize")


def stem(w):
    """The stem of a lower-case ASCII word (`retries`, `retried`, `retrying` -> `retri`)."""
    if len(w) <= 2:
        return w
    # Step 1a
    if w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("ies"):
        w = w[:-2]
    elif w.endswith("ss"):
        pass
    elif w.endswith("s"):
        w = w[:-1]
    # Step 1b
    again = False
    if w.endswith("eed"):
        if _measure(w[:-3]) > 0:
            w = w[:-1]
    elif w.endswith("ed") and _has_vowel(w[:-2]):
        w, again = w[:-2], True
    elif w.endswith("ing") and _has_vowel(w[:-3]):
        w, again = w[:-3], True
    if again:
        if w.endswith(("at", "bl", "iz")):
            w += "e"
        elif _double(w) and w[-1] not in "lsz":
            w = w[:-1]
        elif _measure(w) == 1 and _cvc(w):
            w += "e"
    # Step 1c
    if w.endswith("y") and _has_vowel(w[:-1]):
        w = w[:-1] + "i"
    # Step 2
    for suffix, repl in STEP2:
        if w.endswith(suffix):
            if _measure(w[: -len(suffix)]) > 0:
                w = w[: -len(suffix)] + repl
            break
    # Step 3
    for suffix, repl in STEP3:
        if w.endswith(suffix):
            if _measure(w[: -len(suffix)]) > 0:
                w = w[: -len(suffix)] + repl
            break
    # Step 4
    for suffix in STEP4:
        if w.endswith(suffix):
            base = w[: -len(suffix)]
            if _measure(base) > 1 and (suffix != "ion" or base.endswith(("s", "t"))):
                w = base
            break
    # Step 5a
    if w.endswith("e"):
        base = w[:-1]
        m = _measure(base)
        if m > 1 or (m == 1 and not _cvc(base)):
            w = base
    # Step 5b
    if _measure(w) > 1 and _double(w) and w.endswith("l"):
        w = w[:-1]
    return w
