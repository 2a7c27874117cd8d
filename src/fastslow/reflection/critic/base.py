"""The Critic's backend contract (paper §3.2): what the scheduler ``Critic`` calls and both backends,
``RulesCritic`` and ``LlmCritic``, satisfy.

A backend turns a stagnation report into a diagnosis and proposed actions, unfiltered: the scheduler
keeps only those it may inject, and Gate-1 checks each again when its turn in the buffer comes. A failed
model call is raised as ``ModelError``, which the scheduler records as the call's ``error``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from fastslow.core.trajectory import Trajectory
from fastslow.events import StagnationReport

MemoryFetch = Callable[[Sequence[str]], list[str]] | None
"""AMM's evidence for the Critic, fetched on demand with the report's patterns (they decide whether an
avoidance memory joins a fresh search): reading it consumes AMM's T2/T3 cache and logs an injection, so
only a backend that puts memories in a prompt (the LLM Critic) calls it."""


class CriticBackend(Protocol):
    """Turns a stagnation report into a diagnosis and proposed actions (unfiltered)."""

    kind: str

    def propose(
        self, report: StagnationReport, traj: Trajectory, memories: MemoryFetch
    ) -> tuple[str, list[str]]:
        """(diagnosis, actions). Raises ``ModelError`` when the model call fails."""
        ...
