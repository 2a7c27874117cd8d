"""Reading numbers against the task: the answer-box features of the imitation Swift (paper §3, Swift).

Judgement decisions are where an imitation policy ends episodes at -100 (docs/swift.md, "Measurements":
a wrong focus in judgement tasks): "if the melting point is above 50 degrees, focus on the blue box".
A linear model over action words cannot compare a thermometer reading with a threshold, so these two
dense features do it for it: does a candidate's answer box agree with what the readings prove (+1 /
-1), or is nothing proven yet.

They are hand-written task logic (a reading of the thermometer tasks' thresholds), so they are filled
only with ``procedures.enabled`` (``ImitationSwift.box_features``); with it off both columns stay 0.
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING

from fastslow.env.scienceworld.semantics import thermometer_reading

if TYPE_CHECKING:
    from fastslow.swift.features import ActionTable, FloatArray, IntArray, SwiftState

AGREES_COL = 12
UNMEASURED_COL = 13
"""Columns of ``features.DENSE`` (box_agrees, box_unmeasured) these features fill."""

_CLAUSE = r"{side} (-?\d+(?:\.\d+)?) degrees celsius, (?:focus on|place it in) the ([a-z ]+?) box"


@cache
def _box_rule(task_description: str) -> tuple[float, str, str] | None:
    """(threshold, box if above, box if below) of a measure-and-sort task, else None."""
    above = re.search(_CLAUSE.format(side="above"), task_description)
    below = re.search(_CLAUSE.format(side="below"), task_description)
    if not above or not below:
        return None
    return float(above.group(1)), above.group(2) + " box", below.group(2) + " box"


def _right_box(state: SwiftState, threshold: float, box_above: str, box_below: str) -> str | None:
    """The answer box the thermometer readings prove, or None while they prove nothing yet.

    A temperature task compares the latest reading with the threshold. In a melting-point task a
    reading taken on the liquid approximates the melting point; a reading on the still-solid
    substance above the threshold already proves "above" (it melts higher still)."""
    melting = "melting point" in state.task_description
    for action, observation, _ in reversed(state.history):
        reading = thermometer_reading(observation)
        if reading is None:
            continue
        if not melting or " liquid " in f" {action} ":
            return box_above if reading > threshold else box_below
        return box_above if reading > threshold else None
    return None


def box_features(table: ActionTable, ids: IntArray, state: SwiftState, x: FloatArray) -> None:
    """Numbers read against the task (module docstring: judgement decisions end episodes at -100):
    does a candidate's answer box agree with the thermometer reading and the task's threshold?"""
    rule = _box_rule(state.task_description)
    if rule is None:
        return
    threshold, box_above, box_below = rule
    right = _right_box(state, threshold, box_above, box_below)
    strings = table.strings
    for j, i in enumerate(ids.tolist()):
        action = strings[i]
        if " box" not in action:
            continue
        box = box_above if box_above in action else box_below if box_below in action else None
        if box is None:
            continue
        if right is None:
            x[j, UNMEASURED_COL] = 1.0
        else:
            x[j, AGREES_COL] = 1.0 if box == right else -1.0
