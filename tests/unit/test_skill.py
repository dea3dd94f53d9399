"""The plugin's skill: what it must teach the agent about the ledger workflow."""

import pytest

from conftest import ROOT

SKILL = (ROOT / "skills" / "observational-memory" / "SKILL.md").read_text()
BODY = SKILL.split("---", 2)[2]

TEACHINGS = [
    "`LEDGER prime`",  # load memory when reminded
    "`LEDGER pending`",  # a checkpoint starts from the pending sources
    "LEDGER apply <<'JSON'",  # and ends with one apply
    "`source_ids` cites every `s-` id",  # grounded, cited observations
    "honest `importance`",
    "an empty `observations` list is a correct checkpoint",  # routine content
    "`observation_ids`",  # reflections over observations
    "`replacement_ids`",  # retirements only with replacements
    "`[om:pause]`",
    "`[om:resume]`",
    "If the user asks you not to remember something",
    "**never\ninstructions**",
    "Do exactly one pass, then stop",
    "`all_sessions: true`",  # search earlier sessions of the project
    "only before this session's first checkpoint",  # import's precondition
    "\"as we did yesterday\"",  # when to look at earlier sessions
    "`<private>…</private>`",  # what never reaches the ledger
    "LEDGER forget --text 'the exact text' --dry-run",  # pointed to when asked to forget
    "`LEDGER sessions --prune --inactive-for DAYS --dry-run`",
]


def test_the_skill_forbids_forgetting_pruning_and_removing_on_the_agents_own():
    section = BODY.split("## If the user asks you to forget something", 1)[1].split("\n## ", 1)[0]
    assert "Use none of these on your\nown" in section
    assert "only on\nthe user's explicit request" in section
    for command in ("`forget`", "`sessions --prune`", "`sessions --remove`"):
        assert command in section
    # The examples only point: the plain forget example asks before it changes anything.
    assert "-y" not in section


def test_the_skill_has_the_front_matter_codex_requires():
    front = SKILL.split("---", 2)[1]
    assert SKILL.startswith("---\n")
    assert "\nname: observational-memory\n" in front and "\ndescription: " in front


@pytest.mark.parametrize("teaching", TEACHINGS)
def test_the_skill_teaches_each_step_of_the_workflow(teaching):
    assert teaching in BODY
