"""Gate-1 focus rules on ScienceWorld's own task descriptions and gold focus actions."""

from __future__ import annotations

import pytest

from fastslow.reflection.focus import focus_limit_for, focus_target_allowed

MELT = (
    "Your task is to measure the melting point of chocolate, which is located around the kitchen. First, "
    "focus on the thermometer. Next, focus on the chocolate. If the melting point of chocolate is above "
    "200.0 degrees celsius, focus on the blue box. If the melting point of chocolate is below 200.0 degrees "
    "celsius, focus on the orange box. The boxes are located around the kitchen."
)
STAGES = "Your task is to focus on the 4 life stages of the turtle, starting from earliest to latest."
BOIL = (
    "Your task is to boil water. For compounds without a boiling point, combusting the substance is also "
    "acceptable. First, focus on the substance. Then, take actions that will cause it to change its state."
)
FIND = (
    "Your task is to find a(n) animal. First, focus on the thing. Then, move it to the red box in the kitchen"
)
MIX = (
    "Your task is to use chemistry to create the substance 'salt water'. A recipe and some of the "
    "ingredients might be found near the kitchen. When you are done, focus on the salt water."
)
PAINT = (
    "Your task is to use chemistry to create green-blue paint. When you are part-way done, focus on the "
    "intermediate (secondary color) paint you created.  When you are completely done, focus on the "
    "green-blue paint."
)


@pytest.mark.parametrize(
    ("task", "description", "target", "allowed"),
    [
        ("measure-melting-point-known-substance", MELT, "thermometer in inventory", True),
        ("measure-melting-point-known-substance", MELT, "chocolate", True),
        ("measure-melting-point-known-substance", MELT, "orange box", True),
        ("measure-melting-point-known-substance", MELT, "stove", False),
        ("measure-melting-point-known-substance", MELT, "lighter", False),
        ("identify-life-stages-1", STAGES, "egg turtle in outside", True),
        ("identify-life-stages-1", STAGES, "frog egg", False),
        ("boil", BOIL, "substance in metal pot", True),
        ("boil", BOIL, "metal pot", False),
        ("melt", "Your task is to melt lead. First, focus on the substance. Then, ...", "lead", True),
        ("measure-melting-point-known-substance", MELT, "substance in ceramic cup", True),
        ("chemistry-mix", MIX, "salt water", True),
        ("chemistry-mix", MIX, "instructions to make salt water", False),  # the recipe
        ("chemistry-mix", MIX, "sodium chloride", False),
        ("find-animal", FIND, "dove", True),
        ("chemistry-mix-paint-tertiary-color", PAINT, "green paint", True),
        ("chemistry-mix-paint-tertiary-color", PAINT, "green-blue paint", True),
        # Any shared word passes: loose on purpose (blocking a needed focus makes the task unsolvable).
        ("chemistry-mix-paint-tertiary-color", PAINT, "paint brush in art studio", True),
        ("chemistry-mix-paint-tertiary-color", PAINT, "wood cup containing red paint", False),
    ],
)
def test_focus_target_rule(task: str, description: str, target: str, allowed: bool) -> None:
    assert focus_target_allowed(task, description, target) is allowed


def test_focus_limits() -> None:
    assert focus_limit_for("measure-melting-point-known-substance", MELT) == 3
    assert focus_limit_for("identify-life-stages-1", STAGES) == 4  # read from the description
    assert focus_limit_for("chemistry-mix-paint-tertiary-color", PAINT) == 2
    assert focus_limit_for("boil", BOIL) == 1
