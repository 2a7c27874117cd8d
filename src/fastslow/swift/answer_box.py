"""Reading numbers against the task: the answer-box features of the imitation Swift (paper §3, Swift).

Judgement decisions are where an imitation policy ends episodes at -100 (docs/swift.md, "Measurements":
a wrong focus in judgement tasks): "if the melting point is above 50 degrees, focus on the blue box".
A linear model over action words cannot compare a thermometer reading with a threshold, so these two
dense features do it for it: does a candidate's answer box agree with what the readings prove (+1 /
-1), or is nothing proven yet.

They are hand-written task logic, a reading of the world's tasks' thresholds (ScienceWorld's thermometer
tasks: ``WorldEvidence.answer_boxes``, in its package), so they are filled only with
``procedures.enabled`` (``ImitationSwift.box_features``); with it off, and in a world without evidence
(TextWorldExpress), both columns stay 0.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastslow.swift.features import ActionTable, FloatArray, IntArray, SwiftState

AGREES_COL = 12
UNMEASURED_COL = 13
"""Columns of ``features.DENSE`` (box_agrees, box_unmeasured) these features fill."""


def box_features(table: ActionTable, ids: IntArray, state: SwiftState, x: FloatArray) -> None:
    """Numbers read against the task (module docstring: judgement decisions end episodes at -100):
    does a candidate's answer box agree with the readings and the task's threshold?"""
    evidence = table.semantics.evidence
    boxes = None if evidence is None else evidence.answer_boxes(state.task_description, state.history)
    if boxes is None:
        return
    strings = table.strings
    for j, i in enumerate(ids.tolist()):
        action = strings[i]
        if " box" not in action:
            continue
        box = boxes.above if boxes.above in action else boxes.below if boxes.below in action else None
        if box is None:
            continue
        if boxes.proven is None:
            x[j, UNMEASURED_COL] = 1.0
        else:
            x[j, AGREES_COL] = 1.0 if box == boxes.proven else -1.0
