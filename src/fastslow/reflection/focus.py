"""SRM Gate-1 focus rules, paper §3.2 (runtime constraints) and SwiftSage's focus handling.

``focus on X`` is the one irreversible action in ScienceWorld: focusing on the wrong object fails the
task (score -100). Gate-1's general rules guard it (``reflection.gate``): never focus twice on the same
object, never on a place or on contents the task does not name, and no more foci than the budget:

- the number of things the task description says to focus on (``focus on the 4 life stages of the
  turtle``), where it states one;
- else the task's own budget where a ``core.focus.FocusJudge`` knows the task (the hand-written task
  logic's train gold-path budgets, ``procedures.focus``, with ``procedures.enabled``);
- else the number of focus instructions the description gives (``env.semantics.instructed_focus_count``:
  "First, focus on the thermometer. Next, focus on the chocolate. If ..., focus on the blue box. If ...,
  focus on the orange box." is 3), at least 1 (one focus: the safe side of an irreversible action).

The task-specific rules (the named-target rule with its tasks whose target is discovered, the life-stages
order, the thermometer tasks' box) come from that judge too; without one they are not applied.

What a focus action targets and how ScienceWorld confirms it (``focus_target``, ``focus_head``,
``focus_confirmed``) is ScienceWorld's semantics, defined in ``fastslow.env.scienceworld.semantics``.
"""

from __future__ import annotations

from fastslow.core.focus import FocusJudge
from fastslow.core.trajectory import Trajectory

# Re-exported: the rules Critic (reflection/critic/rules.py) imports content_words from here.
from fastslow.env.scienceworld.semantics import content_words as content_words
from fastslow.env.scienceworld.semantics import (
    focus_confirmed,
    focus_target,
    instructed_focus_count,
    is_focus,
    stated_focus_count,
)
from fastslow.env.scienceworld.semantics import focus_head as focus_head
from fastslow.env.scienceworld.valid import FOCUS_COUNT


def focus_limit_for(task_name: str, task_description: str = "", judge: FocusJudge | None = None) -> int:
    """Focus actions the task needs: the number of things the description says to focus on (``focus on
    the 3 life stages of the wolf``), else the judge's budget for the task, else the description's
    focus instructions, at least 1 (module docstring)."""
    stated = stated_focus_count(task_description)
    if stated is not None:
        return stated
    budget = judge.budget(task_name) if judge is not None else None
    return budget if budget is not None else max(1, instructed_focus_count(task_description))


def focus_usage(
    traj: Trajectory, budget: str = "gold", limit: int | None = None, judge: FocusJudge | None = None
) -> tuple[int, int]:
    """(focus actions used, focus actions allowed) under a Gate-1 ``focus_budget``.

    gold: the confirmed distinct targets against ``focus_limit_for``. authors: every executed ``focus
    on`` action (the authors' loop counts each one it sends, whatever ScienceWorld answers) against their
    per-task ``focus_on_count`` (``env.valid.FOCUS_COUNT``; 1 for an unknown task id, as their lookup
    defaults). ``limit`` overrides the allowed number; ``judge``: the task-specific budgets, if any."""
    if budget == "authors":
        used = sum(1 for turn in traj.turns if is_focus(turn.action.lower()))
        allowed = FOCUS_COUNT.get(traj.task_id, 1)
    else:
        used = len(focused_targets(traj))
        allowed = focus_limit_for(traj.task_name, traj.task_description, judge)
    return used, allowed if limit is None else limit


def focused_targets(traj: Trajectory) -> set[str]:
    """Heads of the objects focused on so far (a focus counts once ScienceWorld confirms it)."""
    return {focus_head(target) for target in confirmed_foci(traj)}


def confirmed_foci(traj: Trajectory) -> list[str]:
    """The targets of the focus actions ScienceWorld confirmed so far, as written, in order."""
    return [
        target
        for turn in traj.turns
        if (target := focus_target(turn.action)) is not None and focus_confirmed(turn.observation) is not None
    ]
