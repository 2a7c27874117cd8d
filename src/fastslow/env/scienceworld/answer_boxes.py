"""ScienceWorld's measure-and-sort tasks read against their thermometer readings (``WorldEvidence.
answer_boxes``, Swift's answer-box features; paper §3, Swift; docs/swift.md, "Measurements").

"If the melting point of tin is above 150.0 degrees celsius, focus on the blue box. If it is below,
focus on the orange box.": a linear model over action words cannot compare a reading with a threshold,
so this reads the two boxes and which one the readings so far prove. Hand-written task logic of
ScienceWorld's thermometer tasks, moved here from ``swift.answer_box`` unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache

from fastslow.core.semantics import AnswerBoxes
from fastslow.env.scienceworld.semantics import thermometer_reading

# The two clauses of a measure-and-sort task; its boxes are focused on or have the object placed in them.
_CLAUSE = r"{side} (-?\d+(?:\.\d+)?) degrees celsius, (?:focus on|place it in) the ([a-z ]+?) box"


@cache
def _box_rule(task_description: str) -> tuple[float, str, str] | None:
    """(threshold, box if above, box if below) of a measure-and-sort task, else None."""
    above = re.search(_CLAUSE.format(side="above"), task_description)
    below = re.search(_CLAUSE.format(side="below"), task_description)
    if not above or not below:
        return None
    return float(above.group(1)), above.group(2) + " box", below.group(2) + " box"


def _right_box(
    task_description: str, history: Sequence[tuple[str, str, int]], threshold: float, above: str, below: str
) -> str | None:
    """The answer box the thermometer readings prove, or None while they prove nothing yet.

    A temperature task compares the latest reading with the threshold. In a melting-point task a
    reading taken on the liquid approximates the melting point; a reading on the still-solid
    substance above the threshold already proves "above" (it melts higher still)."""
    melting = "melting point" in task_description
    for action, observation, _ in reversed(history):
        reading = thermometer_reading(observation)
        if reading is None:
            continue
        if not melting or " liquid " in f" {action} ":
            return above if reading > threshold else below
        return above if reading > threshold else None
    return None


def answer_boxes(task_description: str, history: Sequence[tuple[str, str, int]]) -> AnswerBoxes | None:
    """The task's answer boxes and the proven one (module docstring); None for any other task."""
    rule = _box_rule(task_description)
    if rule is None:
        return None
    threshold, above, below = rule
    return AnswerBoxes(above, below, _right_box(task_description, history, threshold, above, below))
