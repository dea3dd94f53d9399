"""The complete JSON lines of a transcript that its client may still be writing.

Invariants:
- Only complete lines are read: an unterminated last line (the client may be
  writing it) is left for a later run and counted.
- Memory is bounded by the longest line read, and a line over MAX_LINE bytes is
  skipped, without being held, and counted.
- A line that is not UTF-8, not JSON or not a JSON object is skipped and
  counted; nothing here raises on a file's content (only the file's own I/O
  errors pass, as OSError).
- Numbers are kept as written (om.jsonio's literal numbers), as the hooks read
  their payloads, so a tool's input rebuilt from a line is the hook's to the digit.
- A reader may name `quiet` markers: a line whose first QUIET_WINDOW bytes
  hold one is passed over unparsed. A marker is a piece of JSON structure
  (quotes included) that only a line of a kind the reader ignores holds
  there; since quotes inside a JSON string are escaped, no text can imitate
  it, and a line written another way is merely parsed and ignored.
"""

from om.errors import InputError
from om.jsonio import loads

MAX_LINE = 8 * 1024 * 1024
QUIET_WINDOW = 512

UNFINISHED = "unfinished last line"
TOO_LONG = "line over 8 MB"
BAD_LINE = "not a JSON object line"


def records(stream, skip, quiet=()):
    """Yield each complete line of the binary `stream` that holds a JSON object, as a dict (but quiet lines)."""
    for line in complete_lines(stream, skip):
        if quiet:
            window = line[:QUIET_WINDOW]
            if any(marker in window for marker in quiet):
                continue
        try:
            value = loads(line.decode("utf-8"), literal_numbers=True)
        except (UnicodeDecodeError, InputError):
            skip(BAD_LINE)
            continue
        if isinstance(value, dict):
            yield value
        else:
            skip(BAD_LINE)


def string(record, key):
    """`record[key]` when it is a string, else None: a record's fields are whatever the file says."""
    value = record.get(key)
    return value if isinstance(value, str) else None


def items(record, key):
    """`record[key]` when it is a list, else an empty one."""
    value = record.get(key)
    return value if isinstance(value, list) else []


def complete_lines(stream, skip):
    """Yield each complete line (bytes, newline included) of the binary `stream`, up to MAX_LINE bytes."""
    while True:
        line = stream.readline(MAX_LINE + 1)
        if not line:
            return
        if line.endswith(b"\n"):
            if line.strip():
                yield line
            continue
        if len(line) <= MAX_LINE:
            skip(UNFINISHED)  # end of file in the middle of a line
            return
        while True:  # a line too long to hold: pass over it in pieces
            piece = stream.readline(MAX_LINE)
            if not piece:
                skip(UNFINISHED)
                return
            if piece.endswith(b"\n"):
                break
        skip(TOO_LONG)
