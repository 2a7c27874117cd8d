"""Swift, SwiftSage's fast System-1 proposer (paper §3): the seam every Swift model meets.

A Swift model ranks candidate actions for the current state and says how sure it is. The controller
treats Swift as failed when no candidate is valid or confidence is low, and then escalates (or, with
AMM, first retries with memories: trigger T1, paper §3.1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from fastslow.core.trajectory import Trajectory
from fastslow.vocab import ProcedureRule


class MemoryHint(Protocol):
    """What Swift may read from a retrieved AMM memory (the AMM record type satisfies this)."""

    @property
    def action(self) -> str: ...

    @property
    def observation(self) -> str: ...

    @property
    def tag(self) -> str:
        """success, near-miss or avoidance."""
        ...


@dataclass(frozen=True)
class RankedAction:
    """One action in Swift's ranking, with its score and - when hand-written logic put it there - the rule."""

    action: str
    score: float
    """Model score of this candidate (higher is better; comparable within one proposal only)."""
    decided_by: ProcedureRule | None = None
    """The hand-written rule that put this action in the ranking (a task procedure or a judgement of the
    safety policy, ``vocab.ProcedureRule``): the step it runs is a ``procedure`` step, even when Swift's
    model ranked the same action first. None: Swift's model ranked it."""


@dataclass(frozen=True)
class Proposal:
    candidates: tuple[RankedAction, ...]
    """Ranked best first."""
    confidence: float
    """Probability-like confidence in the top candidate, 0-1."""

    @property
    def top(self) -> str | None:
        return self.candidates[0].action if self.candidates else None


class Proposer(Protocol):
    name: str
    """Short name recorded in events (imitation, t5, scripted)."""

    def propose(self, traj: Trajectory, memories: Sequence[MemoryHint] | None = None) -> Proposal: ...
