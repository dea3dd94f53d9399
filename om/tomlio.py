"""Reading TOML (Codex's config.toml): `tomllib` where it exists, a strict subset before 3.11.

Invariants:
- On Python 3.11+ `loads` is `tomllib.loads`; nothing else reads TOML there.
- On 3.9/3.10 `subset_loads` reads the part of TOML that Codex writes: comments,
  `[table]` headers, bare/quoted/dotted keys, basic and literal strings, decimal
  integers, booleans, arrays (over several lines too) and inline tables. Whatever
  it accepts, it reads exactly as `tomllib` does; anything else (floats, dates,
  multi-line strings, arrays of tables, other integer forms, redefinitions it
  cannot prove legal) raises `TomlError` naming the line, never a guess.
- Errors are one line; `TomlError.unsupported` tells "valid TOML this reader
  cannot read" from "not TOML".
"""

import sys


class TomlError(ValueError):
    def __init__(self, message, unsupported=False):
        super().__init__(message)
        self.unsupported = unsupported


def loads(text):
    """The TOML document `text` as dicts, lists, str, int and bool; TomlError if it cannot be read."""
    if sys.version_info >= (3, 11):
        import tomllib

        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise TomlError(f"not valid TOML: {e}") from None
    return subset_loads(text)


_BARE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_DIGITS = frozenset("0123456789")
# Characters that may end a value on its line.
_AFTER_VALUE = frozenset(" \t\r\n,]}#")
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}


class _Table(dict):
    """A table while parsing, with how it came to exist (TOML forbids some redefinitions)."""

    __slots__ = ("how", "section")

    def __init__(self, how, section=None):
        super().__init__()
        self.how = how  # "root", "header", "implicit" (a header's parent), "dotted", "inline"
        self.section = section  # for "dotted": the header table whose lines created it


def subset_loads(text):
    """Read `text` with the subset reader (see the module invariants); TomlError otherwise."""
    return _plain(_Parser(text).document())


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class _Parser:
    def __init__(self, text):
        self.text = text
        self.i = 0
        for ch in text:
            if (ch < " " and ch not in "\t\n\r") or ch == "\x7f":
                self.fail(f"control character U+{ord(ch):04X}")

    # -- errors and low-level scanning -----------------------------------------------

    def line(self):
        return self.text.count("\n", 0, self.i) + 1

    def fail(self, what):
        # Errors are one line whatever the document holds (a quoted newline, say).
        what = what.replace("\r", "\\r").replace("\n", "\\n")
        raise TomlError(f"not valid TOML: {what} (line {self.line()})")

    def unsupported(self, what):
        version = "%d.%d" % sys.version_info[:2]
        raise TomlError(
            f"om cannot read {what} in TOML on Python {version} (line {self.line()}); Python 3.11 or later reads it",
            unsupported=True,
        )

    def peek(self, n=1):
        return self.text[self.i:self.i + n]

    def spaces(self):
        while self.i < len(self.text) and self.text[self.i] in " \t":
            self.i += 1

    def end_of_line(self):
        """Spaces, an optional comment, then a newline or the end of the text."""
        self.spaces()
        if self.peek() == "#":
            while self.i < len(self.text) and self.text[self.i] not in "\r\n":
                self.i += 1
        if self.i == len(self.text):
            return
        if self.peek(2) == "\r\n":
            self.i += 2
        elif self.peek() == "\n":
            self.i += 1
        else:
            self.fail(f"unexpected {self.peek()!r} after a value")

    def blank(self):
        """Spaces, newlines and comments (inside arrays)."""
        while True:
            self.spaces()
            ch = self.peek()
            if ch == "#" or ch == "\n" or self.peek(2) == "\r\n":
                self.end_of_line()
            elif ch == "\r":
                self.fail("a carriage return without a line feed")
            else:
                return

    # -- document ---------------------------------------------------------------------

    def document(self):
        root = _Table("root")
        section = root
        while True:
            self.blank()
            if self.i == len(self.text):
                return root
            if self.peek(2) == "[[":
                self.unsupported("an array of tables")
            if self.peek() == "[":
                self.i += 1
                self.spaces()
                keys = self.key()
                self.spaces()
                if self.peek() != "]":
                    self.fail("expected ']' at the end of a table header")
                self.i += 1
                section = self.open_header(root, keys)
            else:
                self.key_value(section, section)
            self.end_of_line()

    def open_header(self, root, keys):
        table = root
        for key in keys[:-1]:
            child = table.get(key)
            if child is None:
                child = table[key] = _Table("implicit")
            elif not isinstance(child, _Table) or child.how not in ("implicit", "header"):
                self.unsupported_or_invalid(child, key)
            table = child
        last = table.get(keys[-1])
        if last is None:
            last = table[keys[-1]] = _Table("header")
        elif isinstance(last, _Table) and last.how == "implicit":
            last.how = "header"
        elif isinstance(last, _Table) and last.how == "dotted":
            self.unsupported(f"a [table] header for the dotted-key table {keys[-1]!r}")
        else:
            self.fail(f"table {'.'.join(keys)!r} defined twice")
        return last

    def unsupported_or_invalid(self, value, key):
        if isinstance(value, _Table) and value.how == "dotted":
            self.unsupported(f"a [table] header inside the dotted-key table {key!r}")
        if isinstance(value, list):
            self.unsupported(f"a [table] header inside the array {key!r}")
        self.fail(f"{key!r} is not a table that can be extended")

    def key_value(self, table, section):
        keys = self.key()
        self.spaces()
        if self.peek() != "=":
            self.fail("expected '=' after a key")
        self.i += 1
        self.spaces()
        self.assign(table, keys, self.value(), section)

    def assign(self, table, keys, value, section):
        for key in keys[:-1]:
            child = table.get(key)
            if child is None:
                child = table[key] = _Table("dotted", section)
            elif not isinstance(child, _Table) or child.how == "inline":
                self.fail(f"cannot add keys to {key!r}: it is not a table that can be extended")
            elif not (child.how == "dotted" and child.section is section):
                self.unsupported(f"extending the table {key!r} with a dotted key here")
            table = child
        if keys[-1] in table:
            self.fail(f"key {keys[-1]!r} defined twice")
        table[keys[-1]] = value

    # -- keys -------------------------------------------------------------------------

    def key(self):
        keys = [self.simple_key()]
        while True:
            self.spaces()
            if self.peek() != ".":
                return keys
            self.i += 1
            self.spaces()
            keys.append(self.simple_key())

    def simple_key(self):
        ch = self.peek()
        if ch == '"':
            if self.peek(3) == '"""':
                self.fail("a multi-line string cannot be a key")
            return self.basic_string()
        if ch == "'":
            if self.peek(3) == "'''":
                self.fail("a multi-line string cannot be a key")
            return self.literal_string()
        start = self.i
        while self.i < len(self.text) and self.text[self.i] in _BARE:
            self.i += 1
        if self.i == start:
            self.fail("expected a key")
        return self.text[start:self.i]

    # -- values -----------------------------------------------------------------------

    def value(self):
        ch = self.peek()
        if ch == '"':
            if self.peek(3) == '"""':
                self.unsupported("a multi-line string")
            return self.basic_string()
        if ch == "'":
            if self.peek(3) == "'''":
                self.unsupported("a multi-line string")
            return self.literal_string()
        if ch == "[":
            return self.array()
        if ch == "{":
            return self.inline_table()
        for word, result in (("true", True), ("false", False)):
            if self.text.startswith(word, self.i):
                end = self.i + len(word)
                if end == len(self.text) or self.text[end] in _AFTER_VALUE:
                    self.i = end
                    return result
        if ch and ch in "0123456789+-":
            return self.integer()
        if self.text.startswith(("inf", "nan"), self.i):
            self.unsupported("a float")
        self.fail("expected a value")

    def integer(self):
        start = self.i
        end = start
        while end < len(self.text) and self.text[end] not in _AFTER_VALUE:
            end += 1
        word = self.text[start:end]
        digits = word[1:] if word[:1] in "+-" else word
        if digits.startswith(("0x", "0o", "0b")):
            self.unsupported("a hexadecimal, octal or binary integer")
        plain = digits.replace("_", "")
        is_int = (
            plain != "" and all(c in _DIGITS for c in plain)
            and not digits.startswith("_") and not digits.endswith("_") and "__" not in digits
            and (plain == "0" or not digits.startswith("0"))
        )
        if not is_int:
            if any(c in word for c in ".eE:") or (word[:1] in _DIGITS and "-" in word[1:]) or "inf" in word \
                    or "nan" in word:
                self.unsupported(f"the value {word!r} (floats, dates and times)")
            self.fail(f"invalid value {word!r}")
        self.i = end
        return int(word.replace("_", ""))

    def basic_string(self):
        self.i += 1
        out = []
        text = self.text
        while True:
            if self.i >= len(text) or text[self.i] in "\r\n":
                self.fail("unterminated string")
            ch = text[self.i]
            if ch == '"':
                self.i += 1
                return "".join(out)
            if ch == "\\":
                code = text[self.i + 1:self.i + 2]
                if code in _ESCAPES:
                    out.append(_ESCAPES[code])
                    self.i += 2
                elif code in ("u", "U"):
                    width = 4 if code == "u" else 8
                    digits = text[self.i + 2:self.i + 2 + width]
                    if len(digits) != width or any(c not in "0123456789abcdefABCDEF" for c in digits):
                        self.fail("invalid unicode escape")
                    point = int(digits, 16)
                    if 0xD800 <= point <= 0xDFFF or point > 0x10FFFF:
                        self.fail("escape of a non-scalar code point")
                    out.append(chr(point))
                    self.i += 2 + width
                else:
                    self.fail("invalid escape " + repr("\\" + code))
                continue
            out.append(ch)
            self.i += 1

    def literal_string(self):
        self.i += 1
        end = self.i
        while end < len(self.text) and self.text[end] not in "'\r\n":
            end += 1
        if end == len(self.text) or self.text[end] != "'":
            self.fail("unterminated string")
        value = self.text[self.i:end]
        self.i = end + 1
        return value

    def array(self):
        self.i += 1
        items = []
        while True:
            self.blank()
            if self.peek() == "]":
                self.i += 1
                return items
            items.append(self.value())
            self.blank()
            if self.peek() == ",":
                self.i += 1
            elif self.peek() == "]":
                self.i += 1
                return items
            else:
                self.fail("expected ',' or ']' in an array")

    def inline_table(self):
        self.i += 1
        table = _Table("inline")
        self.spaces()
        if self.peek() == "}":
            self.i += 1
            return table
        while True:
            keys = self.key()
            self.spaces()
            if self.peek() != "=":
                self.fail("expected '=' in an inline table")
            self.i += 1
            self.spaces()
            self.assign(table, keys, self.value(), table)
            self.spaces()
            if self.peek() == ",":
                self.i += 1
                self.spaces()
            elif self.peek() == "}":
                self.i += 1
                return table
            else:
                self.fail("expected ',' or '}' in an inline table")
