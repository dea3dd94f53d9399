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
]


def test_the_skill_has_the_front_matter_codex_requires():
    front = SKILL.split("---", 2)[1]
    assert SKILL.startswith("---\n")
    assert "\nname: observational-memory\n" in front and "\ndescription: " in front


@pytest.mark.parametrize("teaching", TEACHINGS)
def test_the_skill_teaches_each_step_of_the_workflow(teaching):
    assert teaching in BODY
