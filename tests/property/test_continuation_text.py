"""Properties of recognising om's own continuation in a prompt: every client wrapping of
the exact text is recognised, and nothing that differs from it is."""

from hypothesis import assume, given
from hypothesis import strategies as st

from om.adapter.operations import is_continuation

# Text rich in the characters XML escaping touches, and in entity look-alikes.
pieces = st.lists(
    st.one_of(st.text(max_size=8), st.sampled_from(["&", "<", ">", "&amp;", "&lt;", "&gt;", "&amp;lt;", ";",
                                                    "<hook_prompt>", "</hook_prompt>", "\n", " "])),
    min_size=1, max_size=20,
).map("".join)
reasons = pieces.filter(lambda text: text.strip())


def escape(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def wrap(text, run_id="0193-run"):
    return f'<hook_prompt hook_run_id="{run_id}">{escape(text)}</hook_prompt>'


@given(reasons, st.text(alphabet="0123456789abcdef-", max_size=16))
def test_the_exact_text_verbatim_or_wrapped_and_escaped_is_recognised(reason, run_id):
    assert is_continuation(reason, reason)
    assert is_continuation(" \n" + reason + "\n", reason)
    assert is_continuation(wrap(reason, run_id), reason)


@given(reasons, pieces)
def test_any_other_text_is_not_recognised(reason, other):
    assume(other.strip() != reason.strip() and not other.lstrip().startswith("<hook_prompt"))
    assert not is_continuation(other, reason)
    assert not is_continuation(wrap(other), reason)
