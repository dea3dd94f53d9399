"""Properties of the checkpoint continuation over generated event sequences, through each
client's real hook command: at most one continuation per turn, one at every turn end when
each turn is due, never while a continuation is running, and every reply captured but the one
that ends om's own continuation."""

import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hook_drivers import DRIVERS

# One turn: a prompt, some tool calls, a Stop, and maybe the continuation's Stop and a stray one.
turns = st.lists(
    st.tuples(st.booleans(), st.integers(0, 2), st.booleans(), st.booleans()),
    min_size=1, max_size=5,
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(client=st.sampled_from(sorted(DRIVERS)), plan=turns, every=st.booleans())
def test_each_turn_gets_at_most_one_continuation_and_only_outside_one(client, plan, every):
    env = {"OM_CHECKPOINT_TURNS": "1"} if every else {}
    with tempfile.TemporaryDirectory() as tmp:
        hook = DRIVERS[client](tmp + "/store")
        replies = []
        for n, (has_prompt, tools, continued, stray) in enumerate(plan):
            turn = f"turn-{n}"
            if has_prompt:
                hook(hook.prompt(f"prompt {n}", turn=turn))
            for t in range(tools):
                hook(hook.tool(f"echo {n}-{t}", call=f"call-{n}-{t}", turn=turn))
            asked = 0
            response = hook(hook.stop(f"reply {n}", turn=turn), env=env)
            replies.append(f"reply {n}")
            asked += response is not None
            if continued:
                assert hook(hook.stop(f"after {n}", turn=turn, active=True), env=env) is None
                if response is None:  # the reply that ends om's own continuation is no evidence
                    replies.append(f"after {n}")
            if stray:
                asked += hook(hook.stop(f"stray {n}", turn=turn), env=env) is not None
                replies.append(f"stray {n}")
            assert asked <= 1
            if every:  # with OM_CHECKPOINT_TURNS=1 every turn end with evidence pending is due
                assert response is not None
            if response is not None:
                assert hook.continuation_text(response)
        texts = [s["text"] for s in hook.sources()]
        assert [t for t in texts if t.split(" ")[0] in ("reply", "after", "stray")] == replies
