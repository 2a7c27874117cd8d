"""Replaying a logged episode's first steps before a fork plays on (``fastslow fork``, ``eval/fork.py``).

A fork continues an episode of a finished run from step K under a configuration of its own. The
runner (``runner.run_episode``) plays steps 1..K-1 as the parent did: each step it still asks the fork's
agent (so its hooks see the proposals, drops, memories and counters they would have), then executes
the parent's action instead of the agent's answer, and checks what ScienceWorld returns against the
parent's log. On the JVM's own identity hash codes (``env.hash_codes: default``) ScienceWorld 1.2.3 is
not deterministic across JVMs (it iterates its hash sets of objects in hash-code order, and those codes
depend on what the JVM ran before and on timing), so a mismatch is possible; on constant codes (the
default) none is expected. Either way a mismatch ends the fork with a line naming the step and the
field, never a silent continuation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from fastslow.agents import Decision
from fastslow.errors import FastslowError
from fastslow.events import EnvStep, ForkOrigin, ReplayEnd

CHECKED = ("action", "observation", "score", "reward", "moves", "end", "n_valid")
"""The fields of each replayed step compared with the parent's log. The log keeps the number of
valid actions, not the list, so the list is compared by its length."""


class ReplayDivergence(FastslowError):
    """The replayed environment answered differently from the parent's log."""


@dataclass
class Replay:
    """The parent's steps 1..``origin.at``-1 and the bookkeeping of replaying them."""

    origin: ForkOrigin
    steps: Sequence[EnvStep]
    task_description: str
    agreed: int = field(default=0)
    history_steps: int = 0
    """Steps of earlier episodes replayed first to rebuild the parent JVM's state (``fork``)."""

    @property
    def length(self) -> int:
        return self.origin.at - 1

    def start(self, task_description: str) -> None:
        """Check the reset: the same task description (variation) as the parent's."""
        if task_description != self.task_description:
            raise ReplayDivergence(
                "replay diverged at the reset: the task description differs from the parent's "
                f"({_short(self.task_description)!r} there, {_short(task_description)!r} here)"
            )

    def decision(self, asked: Decision, step: int) -> Decision:
        """The decision executed at env step ``step`` (1-based): the parent's while replaying (its
        source and reason as logged), else the agent's own ``asked``."""
        if step > self.length:
            return asked
        logged = self.steps[step - 1]
        if asked.action == logged.action:
            self.agreed += 1
        return Decision(logged.action, logged.source, logged.reason)

    def check(self, ours: EnvStep) -> ReplayEnd | None:
        """Compare a replayed step with the parent's; the ``ReplayEnd`` after the last one."""
        if ours.step > self.length:
            return None
        logged = self.steps[ours.step - 1]
        for name in CHECKED:
            theirs, mine = getattr(logged, name), getattr(ours, name)
            if theirs != mine:
                raise ReplayDivergence(
                    f"replay diverged at step {ours.step}: {name} {_short(theirs)!r} in the parent's log, "
                    f"{_short(mine)!r} here"
                )
        return self.end() if ours.step == self.length else None

    def end(self) -> ReplayEnd:
        return ReplayEnd(
            step=self.length, checked=list(CHECKED), agreed=self.agreed, history_steps=self.history_steps
        )


def _short(value: object, limit: int = 120) -> object:
    if isinstance(value, str) and len(value) > limit:
        return value[:limit] + "..."
    return value
