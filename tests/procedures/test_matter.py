"""The matter tasks' procedure (``procedures.matter``, ``procedures.tasks.matter_task``) and the
grow-plant one (``procedures.grow``) on real
ScienceWorld: swift-only plays dev variations whose substances no train variation shows (lead and
rubber kept in the workshop, ice cream in the freezer, soap beside a broken stove) and the procedure
finds the substance, focuses on it first, puts it into the metal pot and heats or cools it as the task
asks. Dev variations are what the fast pathway is tuned on; test variations are never played here."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.procedures.tasks import (
    GrowTask,
    MatterChange,
    grow_task,
    matter_task,
    object_line,
    subject_names,
)
from fastslow.env.scienceworld.semantics import object_names
from fastslow.env.scienceworld.tasks import get_task
from fastslow.eval.runner import EpisodeOutcome
from fastslow.events import EnvStep


def test_the_task_descriptions_parse(env: ScienceWorldAdapter) -> None:
    goals = {0: "gas", 1: "any", 9: "solid", 22: "liquid"}
    for task, goal in goals.items():
        variation = get_task(task).variations["dev"][-1]  # lead in every matter task's dev split
        assert matter_task(env.reset(task, variation).task_description) == MatterChange("lead", goal)
    ice_cream = get_task(1).variations["dev"][0]
    assert matter_task(env.reset(1, ice_cream).task_description) == MatterChange("ice cream", "any")
    assert matter_task(env.reset(20, 1).task_description) is None  # a thermometer task


def test_the_look_names_the_subject_in_its_states(env: ScienceWorldAdapter) -> None:
    env.reset(22, get_task(22).variations["dev"][-1])
    workshop = env.step("teleport to workshop").look
    assert "lead" in object_names(workshop) and subject_names(workshop, "lead") == ["lead"]
    assert subject_names(workshop, "tin") == []
    foundry = env.step("teleport to foundry").look
    furnace = object_line(foundry, "blast furnace")
    assert furnace.startswith("blast furnace, which is turned off") and "door is closed" in furnace
    # a melted substance in the pot on a device's line: the state word stays with the name
    line = (
        "a blast furnace, which is turned on. In the blast furnace is: "
        "a metal pot (containing a substance called liquid lead)."
    )
    assert subject_names(line, "lead") == ["liquid lead"]
    assert object_names(line)[-2:] == ["metal pot", "liquid lead"]


Play = Callable[[int, int], tuple[EpisodeOutcome, list[EnvStep]]]
"""The ``play_swift_only`` fixture (tests/procedures/conftest.py)."""


def _play(play: Play, task: int, variation: int) -> tuple[list[str], list[str], int]:
    outcome, steps = play(task, variation)
    return [s.action for s in steps], [s.observation for s in steps], outcome.final_score


# (task, dev variation, what the episode shows)
EPISODES = [
    (22, 20, "melt lead: the stove does not melt it, the blast furnace does"),
    (9, 20, "freeze lead: melted in the blast furnace first, then cooled in the freezer"),
    (0, 18, "boil rubber: searched for in the kitchen, found in the workshop"),
    (1, 14, "change the state of ice cream: found in the kitchen's freezer"),
]


@pytest.mark.parametrize(("task", "variation", "what"), EPISODES)
def test_swift_only_changes_an_unseen_substance(
    play_swift_only: Play, task: int, variation: int, what: str
) -> None:
    assert variation in get_task(task).variations["dev"]
    actions, _, score = _play(play_swift_only, task, variation)
    assert score == 100, what
    focus = next(i for i, a in enumerate(actions) if a.startswith("focus on "))
    # the substance is focused on first ("First, focus on the substance."), and only once
    assert sum(a.startswith("focus on ") for a in actions) == 1
    assert not any(a.startswith(("move ", "pour ", "activate ")) for a in actions[:focus])
    heated = [a for a in actions if a.startswith("move metal pot to ")]
    assert heated and heated[0] == "move metal pot to stove"  # the mildest heater first
    if task in (22, 9):  # lead: the stove's patience runs out, the blast furnace melts it
        assert "move metal pot to blast furnace" in heated
    if task == 9:
        assert heated[-1] == "move metal pot to freezer"
    if task == 0:
        assert actions.index("teleport to workshop") < focus


def test_a_broken_stove_hands_the_pot_to_the_oven(play_swift_only: Play) -> None:
    """Soap's dev variation 17 has a broken stove: the next heater is tried at once (what is left: the
    oven melts soap too slowly for the procedure's patience, and the blast furnace melts the pot)."""
    actions, observations, _ = _play(play_swift_only, 22, 17)
    broken = next(i for i, o in enumerate(observations) if "broken" in o)
    assert actions[broken] == "activate stove"
    assert actions[broken + 1 : broken + 4] == ["pick up metal pot", "open oven", "move metal pot to oven"]


def test_swift_only_grows_a_plant_from_a_seed_in_another_room(
    env: ScienceWorldAdapter, play_swift_only: Play
) -> None:
    """grow-plant (``procedures.grow``), dev variation 63: the seeds are in the bedroom, where the valid list
    names the seed jar only by its material, so a seed is taken out of it; sown in the greenhouse,
    focused on, its pot watered from the sink until the plant reproduces."""
    task = grow_task(env.reset(11, 63).task_description)
    assert task == GrowTask("cherry", "bedroom")
    actions, observations, score = _play(play_swift_only, 11, 63)
    assert score == 100
    assert actions[0] == "teleport to bedroom" and "teleport to greenhouse" in actions
    sown = next(
        i for i, o in enumerate(observations) if o.startswith("You move the cherry seed to the flower pot")
    )
    focus = actions.index("focus on cherry seed")
    assert sown < focus and observations[focus] == "You focus on the cherry seed."
    assert "pour jug into flower pot 1" in actions[focus:]
