"""Task-specific focus rules as an interface: what SRM's Gate-1 and the Critic's prompt may be given.

The general rules of a world's irreversible commitment (what a focus targets, whether the world
confirmed it, what it landed on, how many a task asks for) are the world's
``core.semantics.CommitmentRules`` (``WorldSemantics.commitment``; None in a world without one).

The checks that guard ``focus on X`` are general (never twice on the same object, never on a room,
never on contents the task does not name) except for a few that know a task by its name or family: the
focus budget a task's train gold paths take, the rule that a target must be named in the task
description (which needs the list of tasks whose target is found by exploring), the life-stages order
and the thermometer tasks' box. Those belong to the world's hand-written task logic (ScienceWorld's
``fastslow.env.scienceworld.procedures``); the components that apply focus rules receive them as a
``FocusJudge`` (``fastslow.build`` asks the world, ``World.focus_judge``, when ``procedures.enabled`` is
on) and apply only their general rules without one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class FocusView:
    """A proposed ``focus on <target>`` in the state it would run in."""

    target: str
    """The focus target as written ("substance in metal pot")."""
    task_name: str
    task_description: str
    look: str
    inventory: str
    valid_actions: Sequence[str]
    foci: Sequence[str]
    """The focus targets of the episode so far, as the asking component counts them."""
    steps: Sequence[tuple[str, str]]
    """Every executed (action, observation) of the episode, in order."""


class FocusJudge(Protocol):
    """Task-specific focus rules (ScienceWorld's:
    ``fastslow.env.scienceworld.procedures.focus.TaskFocusRules``)."""

    def budget(self, task_name: str) -> int | None:
        """The focus actions the task takes, where the judge knows the task; None otherwise."""
        ...

    def names_target(self, task_name: str, task_description: str, target: str) -> bool:
        """The description names what to focus on and ``target`` is one of those things, or the task's
        target is found by exploring (the rule does not apply): True; else False."""
        ...

    def refusal(self, view: FocusView) -> str | None:
        """Why the task's own order or judgement refuses this focus now (the life stages from earliest
        to latest, the box the thermometer readings decide), or None."""
        ...
