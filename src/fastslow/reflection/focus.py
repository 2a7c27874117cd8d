"""SRM Gate-1 focus rules, paper §3.2 (runtime constraints) and SwiftSage's focus handling.

``focus on X`` is the one irreversible action in ScienceWorld: focusing on the wrong object fails the
task (score -100). Gate-1's general rules guard it (``reflection.gate``): never focus twice on the same
object, never on a place or on contents the task does not name, and no more foci than the budget:

- the number of things the task description says to focus on (``focus on the 4 life stages of the
  turtle``), where it states one;
- else the task's own budget where a ``core.focus.FocusJudge`` knows the task (the hand-written task
  logic's train gold-path budgets, ScienceWorld's ``procedures.focus``, with ``procedures.enabled``);
- else the number of focus instructions the description gives (``CommitmentRules.instructed_count``:
  "First, focus on the thermometer. Next, focus on the chocolate. If ..., focus on the blue box. If ...,
  focus on the orange box." is 3), at least 1 (one focus: the safe side of an irreversible action).

The task-specific rules (the named-target rule with its tasks whose target is discovered, the life-stages
order, the thermometer tasks' box) come from that judge too; without one they are not applied.

What a focus action targets, how the world confirms it and how many a description asks for are the
world's ``core.semantics.CommitmentRules`` (the episode's ``traj.semantics.commitment``; ScienceWorld's
in its own package). A world without a commitment (TextWorldExpress: ``commitment`` is None) has no
focus to count: no targets, no confirmed foci, and a budget of 1 (or the judge's) that nothing uses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from fastslow.core.focus import FocusJudge
from fastslow.core.semantics import WorldSemantics
from fastslow.core.trajectory import Trajectory


def focus_limit_for(
    semantics: WorldSemantics, task_name: str, task_description: str = "", judge: FocusJudge | None = None
) -> int:
    """Focus actions the task needs: the number of things the description says to focus on (``focus on
    the 3 life stages of the wolf``), else the judge's budget for the task, else the description's
    focus instructions, at least 1 (module docstring). ``semantics``: the task's world's."""
    rules = semantics.commitment
    stated = rules.stated_count(task_description) if rules is not None else None
    if stated is not None:
        return stated
    budget = judge.budget(task_name) if judge is not None else None
    if budget is not None:
        return budget
    return max(1, rules.instructed_count(task_description)) if rules is not None else 1


def focus_usage(
    traj: Trajectory, budget: str = "gold", limit: int | None = None, judge: FocusJudge | None = None
) -> tuple[int, int]:
    """(focus actions used, focus actions allowed) under a Gate-1 ``focus_budget``.

    gold: the confirmed distinct targets against ``focus_limit_for``. authors: every executed focus
    action (the authors' loop counts each one it sends, whatever the world answers) against their
    per-task count (``CommitmentRules.authors_budget``, ScienceWorld's ``focus_on_count``; 1 for an
    unknown task id, as their lookup defaults). ``limit`` overrides the allowed number; ``judge``: the
    task-specific budgets, if any. In a world without a commitment: (0, ``limit`` or 0)."""
    rules, verb = traj.semantics.commitment, traj.semantics.commitment_verb
    if rules is None or verb is None:
        return 0, 0 if limit is None else limit
    used, allowed = FOCUS_BUDGETS[budget].usage(traj, verb, rules.authors_budget, judge)
    return used, allowed if limit is None else limit


class FocusBudget(Protocol):
    """Where Gate-1's focus budget comes from (``srm.gate.focus_budget``; paper §3.2)."""

    checked_first: bool
    """The budget is checked before every other focus rule (the authors': every focus sent counts)."""

    def usage(
        self, traj: Trajectory, verb: str, authors_budget: Callable[[int], int], judge: FocusJudge | None
    ) -> tuple[int, int]:
        """(focus actions used, focus actions allowed) in ``traj`` (``verb``: the world's commitment;
        ``authors_budget``: the world's per-task count by the authors' table)."""
        ...


class GoldBudget:
    """The confirmed distinct targets against ``focus_limit_for`` (``focus_budget: gold``)."""

    checked_first = False

    def usage(
        self, traj: Trajectory, verb: str, authors_budget: Callable[[int], int], judge: FocusJudge | None
    ) -> tuple[int, int]:
        allowed = focus_limit_for(traj.semantics, traj.task_name, traj.task_description, judge)
        return len(focused_targets(traj)), allowed


class AuthorsBudget:
    """Every executed focus action against the authors' per-task count (``focus_budget: authors``)."""

    checked_first = True

    def usage(
        self, traj: Trajectory, verb: str, authors_budget: Callable[[int], int], judge: FocusJudge | None
    ) -> tuple[int, int]:
        used = sum(1 for turn in traj.turns if turn.action.lower().startswith(verb + " "))
        return used, authors_budget(traj.task_id)


FOCUS_BUDGETS: dict[str, FocusBudget] = {"gold": GoldBudget(), "authors": AuthorsBudget()}
"""The focus budgets by ``srm.gate.focus_budget``."""


def focused_targets(traj: Trajectory) -> set[str]:
    """Heads of the objects focused on so far (a focus counts once the world confirms it)."""
    rules = traj.semantics.commitment
    return set() if rules is None else {rules.head(target) for target in confirmed_foci(traj)}


def confirmed_foci(traj: Trajectory) -> list[str]:
    """The targets of the focus actions the world confirmed so far, as written, in order."""
    rules = traj.semantics.commitment
    if rules is None:
        return []
    return [
        target
        for turn in traj.turns
        if (target := rules.target(turn.action)) is not None and rules.confirmed(turn.observation) is not None
    ]
