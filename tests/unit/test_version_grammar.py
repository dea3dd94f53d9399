"""Release tags: one grammar, ordered exactly as packaging.version.Version orders them."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.version import Version as Pep440

from om.selfupdate.version import CHANNELS, in_channel, nightly, parse, rc

numbers = st.integers(min_value=0, max_value=30) | st.integers(min_value=0, max_value=10**6)
stamps = st.integers(min_value=100000000000, max_value=999999999999).map(str)


@st.composite
def tags(draw):
    base = "%d.%d.%d" % (draw(numbers), draw(numbers), draw(numbers))
    kind = draw(st.sampled_from(["stable", "rc", "dev"]))
    if kind == "rc":
        base += "-rc.%d" % draw(st.integers(min_value=1, max_value=40))
    elif kind == "dev":
        base += "-dev." + draw(stamps)
    return draw(st.sampled_from(["", "v"])) + base


def sign(x):
    return (x > 0) - (x < 0)


@settings(max_examples=500)
@given(tags(), tags())
def test_ordering_agrees_with_packaging_version(a, b):
    pa, pb = parse(a), parse(b)
    va, vb = Pep440(a), Pep440(b)
    assert sign((pa > pb) - (pa < pb)) == sign((va > vb) - (va < vb))
    assert Pep440(pa.pep440) == va


@given(tags())
def test_formatting_round_trips_without_the_v(tag):
    v = parse(tag)
    assert str(v) == tag.lstrip("v")
    assert v.tag == "v" + str(v)
    assert parse(str(v)) == v


@given(tags())
def test_channel_membership_is_monotone_stable_within_rc_within_nightly(tag):
    v = parse(tag)
    member = [in_channel(v, c) for c in CHANNELS]
    assert member == sorted(member)  # once in a channel, in every wider one
    assert member[-1] is True
    assert in_channel(v, "stable") == (not v.is_prerelease)


@pytest.mark.parametrize("text", [
    "1.0", "1", "1.0.0.0", "01.0.0", "1.02.0", "1.0.0-rc1", "1.0.0-rc.0", "1.0.0-rc.01", "1.0.0-1",
    "1.0.0+local", "1.0.0-rc.1+build.5", "1.0.0.post1", "1.0.0-post.1", "1.0.0-alpha", "1.0.0-beta.2",
    "1.0.0-dev.2025", "1.0.0-dev.0202601011200", "1.0.0-dev20260101120", "1.0.0-nightly.202601011200",
    "nightly-20260101", "V1.0.0", " 1.0.0", "1.0.0\n", "1!1.0.0", "1.0.0-RC.1", "v", "", "1.٣.0",
])
def test_anything_outside_the_grammar_is_rejected(text):
    with pytest.raises(ValueError):
        parse(text)


@given(st.text(max_size=30))
def test_arbitrary_text_is_rejected_unless_it_is_in_the_grammar(text):
    try:
        v = parse(text)
    except ValueError:
        return
    assert str(v) == text.lstrip("v") and Pep440(text)


def test_the_documented_order_of_one_release_cycle():
    order = ["1.2.3", "1.3.0-dev.202601011200", "1.3.0-dev.202601021200", "1.3.0-rc.1", "1.3.0-rc.2",
             "1.3.0-rc.10", "1.3.0", "1.3.1-dev.202602011200"]
    assert sorted(order, key=parse) == order
    assert rc("1.3.0", 2) == parse("1.3.0-rc.2")
    assert nightly("v1.3.0", "202601011200").pep440 == "1.3.0.dev202601011200"


# SemVer 2.0.0's own regular expression (semver.org), applied to the tag without its "v".
SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)


@settings(max_examples=2000)
@given(st.text(alphabet="v0129.-rcdev+", max_size=28) | tags().map(lambda t: t + "0") | tags().map(lambda t: "0" + t))
def test_near_misses_are_accepted_only_when_valid_semver_and_pep440_alike(text):
    try:
        v = parse(text)
    except ValueError:
        return
    bare = text[1:] if text.startswith("v") else text
    assert SEMVER.match(bare), text
    assert Pep440(text) == Pep440(v.pep440) and str(v) == bare
