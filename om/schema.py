"""The capture input and the checkpoint, described once.

Invariants:
- `CAPTURE` and `CHECKPOINT` below are the only statement of the fields,
  types and input-only rules of `capture` and `apply` input, whichever front
  end it comes from (CLI stdin, MCP arguments, in-process callers of
  `Ledger.apply`). Adapters build their captures themselves and do not pay
  for this module on every event.
- `validate(description, value)` checks a decoded JSON value against one of
  them in a single walk (shape and values together), raises `InputError` with
  the first problem it meets, and returns the value normalised: absent
  optional fields filled in, text trimmed where the rule trims, id lists sorted
  and de-duplicated (the exact form IDs are hashed over). It never touches a
  ledger, so a rejected input creates nothing.
- `json_schema(description)` renders the same description as the JSON Schema
  the MCP server advertises; a field is listed as required exactly when
  leaving it out cannot validate.
- Rules that need the ledger (a cited id exists, is active, lies within the
  checkpoint's cursor) are named by `Ids.refers` and enforced by `om.ledger`
  inside the checkpoint's transaction, after this validation.

Null counts as absent for fields that may be absent (an omitted importance,
array or reason); for fields that must be present it is a type error. An
importance of `""` is the default too, as v1 stored it.
"""

from om.errors import InputError
from om.ids import trim_space
from om.jsonio import type_name

KINDS = ("user", "assistant", "tool")
IMPORTANCE = ("low", "medium", "high", "critical")
MAX_CAPTURE_CHARS = 1_000_000
MAX_ENTRY_TEXT = 2_000
MAX_REASON = 1_000
MAX_IDS = 100
#: Why a retirement cannot name what the same checkpoint creates: ids come from apply's receipt.
SAME_APPLY = ("an observation or reflection of this same checkpoint has no id yet: apply it first, then"
              " retire in a second apply with the id its receipt returned")

#: What an entry's `promote` flag means, for the MCP schema and the skill.
PROMOTE_ONE = ("true: also move this entry into the project memory, which every later session of this repository"
               " (Codex and Claude Code) starts with: for a decision, convention, trap or preference that outlives"
               " this task; never for in-flight work or guesses.")

_MISSING = object()


def _choices(values):
    return ", ".join(values[:-1]) + " or " + values[-1]


class _Where:
    """Where a value sits, in the words of the error messages."""

    __slots__ = ("record", "field", "in_record")

    def __init__(self, record, field, in_record):
        self.record = record  # "observations[0]", or "" at the top of an input
        self.field = field
        self.in_record = in_record  # " in observations[0]", " in capture input" or ""

    def shape(self, expected, value):
        return InputError(f"om: field {self.field!r}{self.in_record} must be {expected}, got {type_name(value)}")

    def value(self, problem):
        prefix = f"{self.record} " if self.record else ""
        return InputError(f"om: {prefix}{self.field} {problem}")


class Integer:
    """A JSON integer (not a boolean, not `2.0`)."""

    def check(self, value, where):
        if isinstance(value, bool) or not isinstance(value, int):
            literal = getattr(value, "literal", None)
            if literal is not None and literal.lstrip("-").isdigit():
                try:
                    return int(literal)  # "-0", or more digits than int() takes by default
                except ValueError:
                    pass
            raise where.shape("an integer", value)
        return value

    def json_schema(self):
        return {"type": "integer"}


class String:
    """Any string, empty included (a capture key)."""

    def check(self, value, where):
        if not isinstance(value, str):
            raise where.shape("a string", value)
        return value

    def json_schema(self):
        return {"type": "string"}


class Choice:
    """One of `values`. With a `default`, absent (None) and `""` mean it: v1's field
    was omit-empty, so `""` was stored as the default (the same id as leaving it out)."""

    def __init__(self, values, default=None):
        self.values, self.default = values, default

    def check(self, value, where):
        if (value is None or value == "") and self.default is not None:
            return self.default
        if not isinstance(value, str):
            raise where.shape("a string", value)
        if value not in self.values:
            raise where.value(f"must be {_choices(self.values)}, got {value!r}")
        return value

    def json_schema(self):
        return {"type": "string", "enum": list(self.values)}


class Boolean:
    """true or false (absent and null: false)."""

    def check(self, value, where):
        if not isinstance(value, bool):
            raise where.shape("a boolean", value)
        return value

    def json_schema(self):
        return {"type": "boolean"}


class Text:
    """A string that is not blank after trimming and at most `max_chars` code points.

    `trim`: return the trimmed text (entries and reasons) or the text as given
    (captures keep their exact text). `bounds`: word a failure as one range
    ("must be 1 to N characters") rather than blank/too long.
    """

    def __init__(self, max_chars, trim=True, bounds=False):
        self.max_chars, self.trim, self.bounds = max_chars, trim, bounds

    def check(self, value, where):
        if not isinstance(value, str):
            raise where.shape("a string", value)
        trimmed = trim_space(value)
        measured = trimmed if self.trim else value
        if self.bounds and not 1 <= len(measured) <= self.max_chars:
            raise where.value(f"must be 1 to {self.max_chars} characters")
        if not trimmed:
            raise where.value("must not be blank")
        if len(measured) > self.max_chars:
            raise where.value(f"exceeds {self.max_chars} characters")
        return trimmed if self.trim else value

    def json_schema(self):
        return {"type": "string"}


class Ids:
    """1 to MAX_IDS ids, counted after sorting and removing duplicates.

    `refers`: what each id must name in the ledger ("source", "observation",
    "entry"); om.ledger checks that inside the transaction.
    """

    def __init__(self, refers, hint="", minimum=1):
        self.refers, self.hint, self.minimum = refers, hint, minimum

    def check(self, value, where):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InputError(f"om: field {where.field!r}{where.in_record} must be an array of strings")
        unique = sorted(set(value))
        if not self.minimum <= len(unique) <= MAX_IDS:
            raise where.value(f"must list {self.minimum} to {MAX_IDS} ids{self.hint}")
        return unique

    def json_schema(self):
        return {"type": "array", "items": {"type": "string"}, "minItems": self.minimum}


class Field:
    """One named field. `absent`: the value a missing (or null) field stands for;
    without one, a missing field is an error and null is a type error."""

    def __init__(self, name, kind, description=None, absent=_MISSING):
        self.name, self.kind, self.description, self.absent = name, kind, description, absent

    @property
    def required(self):
        if self.absent is _MISSING:
            return True
        try:
            self.kind.check(self.absent, _Where("", self.name, ""))
        except InputError:
            return True
        return False


class Record:
    """A JSON object with exactly these fields (unknown ones are errors).

    `title` names the object in messages about its fields ("unknown field 'x'
    in checkpoint"); `field_place` is how a field's type error places it ("",
    or " in capture input").
    """

    def __init__(self, title, fields, description=None, field_place=None):
        self.title, self.description = title, description
        self.fields = {f.name: f for f in fields}
        self.field_place = f" in {title}" if field_place is None else field_place

    def check(self, value, item=None):
        """Check one object; `item` names it when it sits in an array ("observations[0]")."""
        title = item or self.title
        if not isinstance(value, dict):
            if item is None:
                raise InputError(f"om: a {title} must be a JSON object, got {type_name(value)}")
            raise InputError(f"om: {title} must be an object, got {type_name(value)}")
        for key in value:
            if key not in self.fields:
                raise InputError(f"om: unknown field {key!r} in {title}")
        place = self.field_place if item is None else f" in {title}"
        record = item or ""
        out = {}
        for name, field in self.fields.items():
            got = value.get(name, _MISSING)
            if got is _MISSING or (got is None and field.absent is not _MISSING):
                if field.absent is _MISSING:
                    raise InputError(f"om: missing field {name!r} in {title}")
                got = field.absent
            out[name] = field.kind.check(got, _Where(record, name, place))
        return out

    def json_schema(self):
        schema: dict = {"type": "object"}
        if self.description:
            schema["description"] = self.description
        properties = {}
        for name, field in self.fields.items():
            prop = field.kind.json_schema()
            if field.description:
                prop["description"] = field.description
            properties[name] = prop
        schema["properties"] = properties
        schema["required"] = [name for name, field in self.fields.items() if field.required]
        schema["additionalProperties"] = False
        return schema


class Records:
    """An array of `record` objects, each named `<field>[i]` in messages."""

    def __init__(self, record):
        self.record = record

    def check(self, value, where):
        if not isinstance(value, list):
            raise InputError(f"om: field {where.field!r} must be an array, got {type_name(value)}")
        out = []
        for i, element in enumerate(value):
            out.append(self.record.check(element, item=f"{where.field}[{i}]"))
        return out

    def json_schema(self):
        return {"type": "array", "items": self.record.json_schema()}


CAPTURE = Record(
    "capture input",
    [
        Field("kind", Choice(KINDS), "user, assistant or tool."),
        Field("text", Text(MAX_CAPTURE_CHARS, trim=False),
              "The evidence, not blank, at most 1,000,000 characters (over 24,000 its head and tail are kept)."),
        Field("key", String(), "The capture's origin (a turn or tool call id); required, and may be empty (\"\")."),
    ],
)

OBSERVATION = Record(
    "observation",
    [
        Field("text", Text(MAX_ENTRY_TEXT), "One self-contained fact, at most 2,000 characters."),
        Field("importance", Choice(IMPORTANCE, default="medium"), absent=None),
        Field("source_ids", Ids("source"),
              "1 to 100 source ids (s-...) exactly as pending or recall returned them.", absent=[]),
        Field("promote", Boolean(), PROMOTE_ONE, absent=False),
    ],
)

REFLECTION = Record(
    "reflection",
    [
        Field("text", Text(MAX_ENTRY_TEXT)),
        Field("observation_ids", Ids("observation"), "1 to 100 ids (o-...) of active observations.", absent=[]),
        Field("promote", Boolean(), PROMOTE_ONE, absent=False),
    ],
)

RETIREMENT = Record(
    "retirement",
    [
        Field("id", String(), "The entry (o-... or r-...) to retire."),
        Field("reason", Text(MAX_REASON, bounds=True), "Why, 1 to 1,000 characters.", absent=""),
        Field("replacement_ids", Ids("entry", f" of entries that exist already ({SAME_APPLY})"),
              "1 to 100 newer active entries that replace it, by the ids an earlier apply returned.", absent=[]),
    ],
)

CHECKPOINT = Record(
    "checkpoint",
    [
        Field("through", Integer(),
              "Copy 'through' from the latest pending result (the last source seq you read)."),
        Field("observations", Records(OBSERVATION), "New durable facts distilled from the pending sources.",
              absent=[]),
        Field("reflections", Records(REFLECTION),
              "Higher-level conclusions drawn from several active observations.", absent=[]),
        Field("retire", Records(RETIREMENT), "Entries that are now wrong or superseded.", absent=[]),
        Field("promote", Ids("entry", minimum=0),
              "Ids (o-... or r-...) of entries active earlier in this session to move into the project memory.",
              absent=[]),
    ],
    description=(
        "A checkpoint: {through, observations?, reflections?, retire?, promote?}. 'through' is the 'through'"
        " value returned by the pending call you just made."
    ),
    field_place="",
)


class Valid(dict):
    """A value `validate` returned: already normalised, not to be checked again."""

    __slots__ = ()


def validate(description, value):
    """`value` checked against `description` and normalised (see the module docstring)."""
    if isinstance(value, Valid):
        return value
    return Valid(description.check(value))


def json_schema(description):
    """`description` as JSON Schema (for the MCP tool listing)."""
    return description.json_schema()
