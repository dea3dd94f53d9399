"""When a checkpoint is due: the one cadence policy of every client.

Invariants:
- A checkpoint is due when the pending evidence reaches OM_CHECKPOINT_BYTES
  UTF-8 bytes (default 40,000), or when the oldest pending source has waited
  OM_CHECKPOINT_TURNS completed turns (default 3). A setting that is not a
  positive integer counts as unset.
- A turn end is recorded only by a Stop that completes a turn (not by the Stop
  after a continuation), as the highest source seq at that moment; at most
  MAX_TURN_ENDS are kept, and ends already covered by the cursor are dropped.
- The policy only decides; the caller owns the transaction and the
  once-per-turn bookkeeping.
"""

import os

DEFAULT_CHECKPOINT_BYTES = 40000
DEFAULT_CHECKPOINT_TURNS = 3
MAX_TURN_ENDS = 256


def env_int(name, default):
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        number = int(value)
    except ValueError:
        return default
    return number if number > 0 else default


def backlog_bytes():
    return env_int("OM_CHECKPOINT_BYTES", DEFAULT_CHECKPOINT_BYTES)


def turn_ends(value, cursor):
    """The remembered turn ends (comma-separated seqs) still beyond the cursor."""
    ends = []
    for part in (value or "").split(","):
        if part.isdigit():
            seq = int(part)
            if seq > cursor:
                ends.append(seq)
    return ends


def encode_turn_ends(ends):
    return ",".join(str(n) for n in ends[-MAX_TURN_ENDS:])


def is_due(size, oldest, ends):
    """Due by size, or by the number of completed turns the oldest pending source has waited."""
    if size >= backlog_bytes():
        return True
    waited = sum(1 for end in ends if oldest is not None and end >= oldest)
    return waited >= env_int("OM_CHECKPOINT_TURNS", DEFAULT_CHECKPOINT_TURNS)
