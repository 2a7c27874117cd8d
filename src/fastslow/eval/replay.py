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

Trials (``agents.base.Trials``: Reflexion): the parent's ``env_step`` events number on across its trials,
so step K counts every trial's steps, and the runner plays the fork's trials as any run's: at the end of
a trial the fork's agent is asked ``next_trial`` (its reflection call: under the parent's configuration
the parent's own answer, from the copied response cache), the env is reset to the same variation, and
the replay goes on with the parent's next step. The ends of trials inside the prefix (after a step
before K-1) are replayed too: each of the fork's must be the parent's (``TRIAL_CHECKED``: the same step,
trial, end, score, steps, and another trial after it), and a trial the parent ended where the fork's goes
on, or a parent's next trial that the fork's agent does not play, ends the fork like any mismatch. What
the fork's agent carries across them (Reflexion's reflections) is its own, built from the prefix like
every hook's state, never copied from the parent's log. A trial that ends with step K-1 ends in the
fork's own play: whether another trial follows, and what its agent reflects, are the fork's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum

from fastslow.agents import Decision
from fastslow.errors import FastslowError
from fastslow.events import EnvStep, ForkOrigin, ReplayEnd, TrialEnd

CHECKED = ("action", "observation", "score", "reward", "moves", "end", "n_valid")
"""The fields of each replayed step compared with the parent's log. The log keeps the number of
valid actions, not the list, so the list is compared by its length."""
TRIAL_CHECKED = ("trial", "end", "score", "steps", "next")
"""The fields of each ``trial_end`` inside the replayed prefix compared with the parent's (at the same
step)."""


class ReplayDivergence(FastslowError):
    """The replayed environment answered differently from the parent's log."""


@dataclass
class Replay:
    """The parent's steps 1..``origin.at``-1 and the bookkeeping of replaying them."""

    origin: ForkOrigin
    steps: Sequence[EnvStep]
    task_description: str
    trials: Sequence[TrialEnd] = ()
    """The parent's ``trial_end`` events (an agent that plays trials; none for any other), each one
    at a step before K-1 replayed (module docstring); the others are ignored."""
    agreed: int = field(default=0)
    history_steps: int = 0
    """Steps of earlier episodes replayed first to rebuild the parent JVM's state (``fork``)."""
    _ended: set[int] = field(default_factory=set, init=False, repr=False)
    """Steps after which the fork ended a trial inside the prefix (each matched to the parent's)."""

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
        theirs = self._boundary(step - 1)
        if theirs is not None and step - 1 not in self._ended:
            raise ReplayDivergence(
                f"replay diverged at step {step}: the parent's trial {theirs.trial} ended after step "
                f"{step - 1} ({theirs.end.value}), the fork's went on"
            )
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

    def trial_end(self, ours: TrialEnd) -> None:
        """Compare the end of one of the fork's trials with the parent's at the same step, when it lies
        inside the prefix (after a step before K-1; a later one is the fork's own)."""
        if ours.step >= self.length:
            return
        theirs = self._boundary(ours.step)
        if theirs is None:
            raise ReplayDivergence(
                f"replay diverged at step {ours.step}: the fork's trial {ours.trial} ended there "
                f"({ours.end.value}), the parent's went on"
            )
        where = f"replay diverged at the end of trial {theirs.trial} (step {ours.step})"
        if not ours.next:
            raise ReplayDivergence(f"{where}: the parent played another trial, the fork's agent did not")
        for name in TRIAL_CHECKED:
            mine, logged = getattr(ours, name), getattr(theirs, name)
            if mine != logged:
                mine, logged = (v.value if isinstance(v, Enum) else v for v in (mine, logged))
                raise ReplayDivergence(f"{where}: {name} {logged!r} in the parent's log, {mine!r} here")
        self._ended.add(ours.step)

    def one_trial(self, step: int) -> None:
        """The fork's agent plays no trials (``agents.base.Trials``) and its only trial ended after
        ``step``: a divergence if the parent played another trial inside the prefix."""
        later = [t for t in self.trials if t.next and t.step < self.length]
        if later:
            raise ReplayDivergence(
                f"replay diverged at step {step}: the parent played trial {later[0].trial + 1} after step "
                f"{later[0].step}, and the fork's agent plays one trial"
            )

    def _boundary(self, step: int) -> TrialEnd | None:
        """The parent's ``trial_end`` after ``step`` that started another trial inside the prefix."""
        if step >= self.length:
            return None
        return next((t for t in self.trials if t.step == step and t.next), None)

    def end(self) -> ReplayEnd:
        return ReplayEnd(
            step=self.length, checked=list(CHECKED), agreed=self.agreed, history_steps=self.history_steps
        )


def _short(value: object, limit: int = 120) -> object:
    if isinstance(value, str) and len(value) > limit:
        return value[:limit] + "..."
    return value
