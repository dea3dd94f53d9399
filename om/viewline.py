"""One entry's view line: its text, its UTF-8 size and its rank in the view.

Invariants: defined once, so the size the derived view-order table stores is
exactly the size of the line om.render prints; pure functions of an entry
(no SQLite, no I/O), which keeps storage free of presentation.
"""

from om.jsonio import dumps

_RANK = {"critical": 0, "high": 1, "medium": 2, "low": 3}
# Characters some renderers treat as line breaks; json escapes C0 controls but not these.
_BREAKS = {"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085", "\x7f": "\\u007f"}


def quote(text):
    """`text` as a one-line string literal (JSON syntax, line separators escaped)."""
    out = dumps(text)
    if any(ch in out for ch in _BREAKS):
        out = "".join(_BREAKS.get(ch, ch) for ch in out)
    return out


def _size(text):
    return len(text.encode("utf-8"))


def entry_line(entry):
    return (
        f"- {entry['id']} {entry['kind']} importance={entry['importance']}"
        f" at {quote(entry['timestamp'])}: {quote(entry['text'])}\n"
    )


def priority(entry):
    """Sort key: importance first, reflections before observations, then newest first."""
    return (_RANK.get(entry["importance"], 2), 0 if entry["kind"] == "reflection" else 1, -entry["seq"])


def sort_key(entry):
    """`priority` as one integer (smaller first), for storing beside the ledger.

    Importance rank, then reflection before observation, then newest first;
    sequence numbers stay below 2**40.
    """
    rank, observation, neg_seq = priority(entry)
    return (rank << 41) | (observation << 40) | ((1 << 40) - 1 + neg_seq)


def line_size(entry):
    return _size(entry_line(entry))


#: No line is shorter: an id of at least 2 bytes, a 10-letter kind, a
#: 3-letter importance, an empty quoted timestamp and a 1-byte text.
MIN_LINE = len('- o- reflection importance=low at "": "x"\n')


def list_oracle(entries):
    """A `next_fitting` over a list of entries held in memory."""
    ranked = sorted(((sort_key(e), line_size(e), e) for e in entries), key=lambda t: t[0])

    def next_fitting(after, remaining):
        for key, size, entry in ranked:
            if (after is None or key > after) and size <= remaining:
                return key, entry
        return None

    return next_fitting
