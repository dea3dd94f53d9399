"""Release versions and tags: one strict grammar, ordered the same way by SemVer and PEP 440.

Invariant: `parse` accepts exactly
    stable   vX.Y.Z
    rc       vX.Y.Z-rc.N                (N >= 1)
    nightly  vX.Y.Z-dev.YYYYMMDDHHMM    (12 digits, UTC)
with or without the leading ``v``, no leading zeros, and rejects everything else.
Inside this grammar SemVer precedence and `packaging.version.Version` (after the
mapping X.Y.ZrcN / X.Y.Z.devN) agree, so the sort key below is unambiguous;
outside it the two standards disagree (rc9 vs rc10, -1, +build), which is why
those tags are refused instead of guessed at.
"""

import re

CHANNELS = ("stable", "rc", "nightly")

_GRAMMAR = re.compile(
    r"v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-(?:(rc)\.([1-9][0-9]*)|(dev)\.([1-9][0-9]{11})))?"
)
# dev sorts below rc, rc below the final release (SemVer: "dev" < "rc" in ASCII).
_PHASE = {"dev": 0, "rc": 1, None: 2}


class Version(tuple):
    """(major, minor, patch, phase, number): compares like SemVer and PEP 440."""

    __slots__ = ()

    @property
    def base(self):
        return "%d.%d.%d" % self[:3]

    @property
    def label(self):
        return {0: "dev", 1: "rc", 2: None}[self[3]]

    @property
    def channel(self):
        """The narrowest channel that offers this version."""
        return {0: "nightly", 1: "rc", 2: "stable"}[self[3]]

    @property
    def is_prerelease(self):
        return self[3] != 2

    def __str__(self):
        if self.label is None:
            return self.base
        return "%s-%s.%d" % (self.base, self.label, self[4])

    @property
    def tag(self):
        return "v" + str(self)

    @property
    def pep440(self):
        if self.label is None:
            return self.base
        if self.label == "rc":
            return "%src%d" % (self.base, self[4])
        return "%s.dev%d" % (self.base, self[4])

    def __repr__(self):
        return "Version(%r)" % str(self)


def parse(text):
    """Return the Version of a tag or version string; ValueError outside the grammar."""
    if not isinstance(text, str):
        raise ValueError("not an om version: %r" % (text,))
    m = _GRAMMAR.fullmatch(text)
    if m is None:
        raise ValueError("not an om version: %r" % (text,))
    major, minor, patch, rc, rc_n, dev, dev_n = m.groups()
    label = rc or dev
    number = int(rc_n or dev_n or 0)
    return Version((int(major), int(minor), int(patch), _PHASE[label], number))


def try_parse(text):
    try:
        return parse(text)
    except ValueError:
        return None


def in_channel(version, channel):
    """stable ⊂ rc ⊂ nightly: a channel offers its own versions and every steadier one."""
    if channel not in CHANNELS:
        raise ValueError("unknown channel: %r" % (channel,))
    return CHANNELS.index(version.channel) <= CHANNELS.index(channel)


def rc(base, number):
    return parse("%s-rc.%d" % (parse(base).base, number))


def nightly(base, stamp):
    """The nightly of the next version `base` built at `stamp` (YYYYMMDDHHMM, UTC)."""
    return parse("%s-dev.%s" % (parse(base).base, stamp))
