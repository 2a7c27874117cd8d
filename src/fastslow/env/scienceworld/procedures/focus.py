"""The task-specific focus rules SRM's Gate-1 and its Critic receive (``core.focus.FocusJudge``).

- **Budget**: the most ``focus on`` actions a gold path of the task's train variations takes, read from
  the knowledge file ``procedures/data/focus_budgets.json`` (``fastslow data focus-budgets``; its header
  names the variations). A number the task description states comes first (``reflection.focus``).
- **Named target**: where the task description names what to focus on (``focus on the salt water``,
  ``focus on the thermometer``, ``focus on the blue box``), the target's head noun phrase must share a word
  with those phrases or with the task's first sentence (checked against the 386 gold focus actions of
  the 290 train variations the focus budgets read, 306 of them outside the exempt tasks: none blocked;
  ``tests/procedures/test_focus_rules.py`` rechecks 2 train variations of every task). Tasks whose target is
  found by exploring (``OPEN_FOCUS_TASKS``: "find a(n) animal ... focus on the thing", the lifespan
  tasks) are exempt.
- **Task order**: in the life-stages tasks the earliest stage left first (``tasks.life_stage_violation``);
  in the thermometer tasks the thermometer, the subject, then the box the readings decide
  (``tasks.measurement_violation``).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path

from fastslow.core.focus import FocusView
from fastslow.env.scienceworld.procedures.tasks import (
    LIFE_STAGE_TASKS,
    MEASUREMENT_TASKS,
    life_stage_violation,
    measurement_task,
    measurement_violation,
)
from fastslow.env.scienceworld.semantics import (
    content_words,
    focus_confirmed,
    focus_head,
    focus_words,
    is_focus,
)

FOCUS_BUDGETS_FILE = "focus_budgets.json"
"""The shipped focus budgets, next to the other knowledge files in ``procedures/data``."""

OPEN_FOCUS_TASKS = frozenset(
    {
        "find-animal",
        "find-living-thing",
        "find-non-living-thing",
        "find-plant",
        "lifespan-longest-lived",
        "lifespan-longest-lived-then-shortest-lived",
        "lifespan-shortest-lived",
    }
)
"""Tasks whose focus target is discovered, not named, in the task description."""


def focus_budgets_path() -> Path:
    """Where the shipped focus budgets live (``fastslow data focus-budgets`` writes there by default)."""
    return Path(str(resources.files("fastslow.env.scienceworld.procedures") / "data" / FOCUS_BUDGETS_FILE))


@cache
def focus_budgets() -> dict[str, int]:
    """Task name -> the most ``focus on`` actions a train gold path of the task takes (the shipped file)."""
    data = json.loads(focus_budgets_path().read_text(encoding="utf-8"))
    return {name: int(n) for name, n in data["budgets"].items()}


def focus_target_allowed(task_name: str, task_description: str, target: str) -> bool:
    """The target's head shares a word with a ``focus on ...`` phrase of the task (``OPEN_FOCUS_TASKS``
    exempt): "instructions to make salt water" is not "the salt water".

    Deliberately loose (any shared word): blocking a focus the task needs would make it unsolvable,
    while a wrong focus that slips through is what SwiftSage would have done anyway."""
    if task_name in OPEN_FOCUS_TASKS:
        return True
    return bool(content_words(focus_head(target)) & focus_words(task_description))


def task_focus_refusal(view: FocusView) -> str | None:
    """The life-stages order and the thermometer tasks' judgement on ``view`` (Gate-1's wording)."""
    if view.task_name in LIFE_STAGE_TASKS:
        why = life_stage_violation(
            view.target, view.valid_actions, list(view.foci), view.task_description, view.look
        )
        if why is not None:
            return f"life stages go from earliest to latest: {why}"
    measure = measurement_task(view.task_description) if view.task_name in MEASUREMENT_TASKS else None
    if measure is not None:
        confirmed = sum(1 for a, o in view.steps if is_focus(a) and focus_confirmed(o))
        why = measurement_violation(measure, focus_head(view.target), view.steps, confirmed)
        if why is not None:
            return f"measurement task: {why}"
    return None


class TaskFocusRules:
    """The task-specific focus rules (module docstring), as a ``core.focus.FocusJudge``."""

    def budget(self, task_name: str) -> int | None:
        return focus_budgets().get(task_name)

    def names_target(self, task_name: str, task_description: str, target: str) -> bool:
        return focus_target_allowed(task_name, task_description, target)

    def refusal(self, view: FocusView) -> str | None:
        return task_focus_refusal(view)
