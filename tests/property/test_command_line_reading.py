"""However a command line is read, it reads as the parser with every command's subparser reads it.

`om.commands.parse` reads plain lines without argparse and builds only the named
command's subparser for the rest. Hypothesis draws command lines from the words
that matter (every command, the scope options in all their spellings, abbreviations,
help, `--`, values that look like options) and compares the outcome with the full
parser's: the same namespace, or the same usage message, or the same help text
and exit status.
"""

import argparse
import contextlib
import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from om import commands
from om.errors import UsageError

NAMES = [c.name for c in commands.COMMANDS]
WORDS = NAMES + [
    "--store", "--session", "--store=a", "--session=b", "--store=", "--store=-x", "--sto", "--sess=b", "--sesion", "--sotre=a",
    "a", "b", "s-1", "-x", "", "--", "-h", "--help", "--version", "--all", "--json", "--project", "-y",
    "--remove", "--limit", "5", "--client", "codex", "--format", "md", "--to-session", "update",
]
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def full_parse(argv):
    """The reference: every subparser built, then the same before/after merge."""
    return commands.merge_scope(commands._parser().parse_args(argv))


def outcome(read, argv):
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = read(list(argv))
    except UsageError as e:
        return ("usage", str(e), e.exit_code)
    except SystemExit as e:
        return ("exit", e.code, out.getvalue(), err.getvalue())
    return ("ok", vars(args), out.getvalue(), err.getvalue())


def line(words):
    return st.lists(st.sampled_from(words), max_size=7)


# Lines near the plain form: what the argparse-free reading accepts, or almost.
NEAR_PLAIN = ["--store", "--session", "--store=a", "--session=b", "a", "b", "s-1", "-x", "--all"]


WITH_POSITIONALS = [c.name for c in commands.COMMANDS if c.plain and c.plain[0]]


def around_a_command(before, after, names=NAMES):
    return st.tuples(line(before), st.sampled_from(names), line(after)).map(lambda t: [*t[0], t[1], *t[2]])


@SETTINGS
@given(st.one_of(line(WORDS), around_a_command(WORDS[len(NAMES):], WORDS), around_a_command(NEAR_PLAIN, NEAR_PLAIN)))
def test_a_command_line_reads_as_the_full_parser_reads_it(argv):
    assert outcome(commands.parse, argv) == outcome(full_parse, argv)


@settings(SETTINGS, max_examples=100)
@given(st.tuples(st.sampled_from(WITH_POSITIONALS), st.lists(st.sampled_from(["a", "s-1", "--store", "--session=b", "-x"]),
                                                             min_size=3, max_size=6)).map(lambda t: [t[0], *t[1]]))
def test_positionals_split_by_options_read_as_the_full_parser_reads_them(argv):
    assert outcome(commands.parse, argv) == outcome(full_parse, argv)


def test_every_commands_help_is_the_same_from_its_lone_subparser():
    for name in NAMES:
        for argv in ([name, "--help"], ["--store", "s", name, "-h"]):
            lone = outcome(commands.parse, argv)
            assert lone[0] == "exit" and lone[1] == 0 and f"usage: om {name}" in lone[2], argv
            assert lone == outcome(full_parse, argv), argv


def test_plain_lines_are_read_without_argparse_and_the_rest_are_not():
    assert commands._scan(["--store", "s", "status", "--session=x"]) is not None
    assert commands._scan(["recall", "s-1", "--store", "s"]) is not None
    assert commands._scan(["search", "--store", "s", "two", "words"]).query == ["two", "words"]
    for argv in (["status", "--help"], ["view", "--all"], ["recall"], ["recall", "a", "b"], ["search"],
                 ["search", "a", "--store", "s", "b"], ["search", "q", "--limit", "5"],
                 ["--store", "s", "--store", "s", "status"], ["--sto", "s", "status"], ["status", "--store", "-x"]):
        assert commands._scan(argv) is None, argv


@pytest.mark.parametrize("columns", [None, "40", "200", "0", "-3", "wide"])
def test_help_is_wrapped_at_the_width_argparse_itself_would_use(monkeypatch, columns):
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert commands._parser()._get_formatter()._width == argparse.HelpFormatter("om")._width
