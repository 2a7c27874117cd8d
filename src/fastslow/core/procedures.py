"""A world's hand-written task logic as an interface: what the procedure hook drives (``procedures.enabled``).

The task procedures and judgements know a task by its name and read the world's text (ScienceWorld's:
``fastslow.env.scienceworld.procedures``), so they live in the world's package. The rest of the agent
sees them through this interface only: ``fastslow.env.world.World.task_procedures`` makes the world's
(None for a world without any, TextWorldExpress), ``fastslow.build`` hands it to the world-neutral
``fastslow.procedures.hook.ProcedureHook``, which puts the action it decides on top of Swift's proposal
(the step is logged ``procedure``, ``vocab.StepSource``) and drops the candidates it vetoes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from fastslow.core.step import StepResult
from fastslow.vocab import ProcedureRule

FocusCheck = Callable[[str, StepResult], bool]
"""The general focus rule (the safety policy's): may this commitment action be proposed in this state?"""

FocusAllowed = Callable[[str, str, str, set[str], StepResult], bool]
"""Swift's safety policy's ``focus_allowed(action, task_name, task_description, rooms, current)``."""


@dataclass(frozen=True)
class Judged:
    """An action hand-written task logic decided, and the rule that decided it (``TaskProcedures.judged``)."""

    action: str
    rule: ProcedureRule


class TaskProcedures(Protocol):
    """One worker's hand-written task logic; it keeps a record of the episode it plays (``reset`` at the
    start of each one, ``observe`` after every step)."""

    def reset(self) -> None:
        """Forget the episode: the next call is about a new one."""
        ...

    def observe(self, before: StepResult, action: str, after: StepResult) -> None:
        """Record an executed step (every step of the episode, whoever chose it)."""
        ...

    def refused(self, action: str, current: StepResult) -> None:
        """A later check (SRM's Gate-1) refused ``action`` in the state ``current``."""
        ...

    def vetoed(self, action: str, current: StepResult, task_name: str) -> bool:
        """The task's own rules refuse ``action`` now."""
        ...

    def judged(self, current: StepResult, task_name: str, focus_allowed: FocusCheck) -> Judged | None:
        """The step the task's procedure or judgement decides now, with its rule; None where none applies
        (Swift then acts). ``focus_allowed``: the general focus rule a judgement respects too."""
        ...

    def focus_check(self, allowed: FocusAllowed, task_name: str) -> FocusCheck:
        """The safety policy's ``focus_allowed`` as the ``FocusCheck`` of ``judged`` in a task."""
        ...
