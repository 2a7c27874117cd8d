"""The arbitration between Swift and Sage as an interface (paper §3): what the controller asks, once per
loop iteration, of whichever loop the configuration plays (``controller.loop``).

Two implementations, each owning its rules and fallbacks: ``escalation.SwiftSageArbiter`` (SwiftSage as
its paper describes it) and ``authors.AuthorsArbiter`` (the paper's authors' final loop). The controller
walks the same timestep for both (docs/controller.md) and never asks which one it holds.

An arbiter learns who acted from the executed step (``executed``): every action of the Swift branch
(Swift's ranking, a task procedure, a fallback) ends a run of Sage calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal, Protocol, TypeVar

from fastslow.agents.base import Decision
from fastslow.controller.resolver import IndexedView, Resolver
from fastslow.core.hooks import LoopHook
from fastslow.core.proposal import Proposal, RankedAction
from fastslow.core.semantics import SWIFTSAGE_FAILURES, WorldSemantics
from fastslow.core.step import StepResult
from fastslow.core.trajectory import Trajectory, Turn
from fastslow.vocab import SWIFT_BRANCH, ProcedureRule, StepSource


class Rule(StrEnum):
    """Why Sage was (or would have been) called; recorded in Escalation events and Decision.reason."""

    INVALID_ACTION = "invalid_action"
    FAILURE_MESSAGES = "failure_messages"
    FOCUS_BEFORE_SAGE = "focus_before_sage"
    NO_PROGRESS = "no_progress"
    NO_STEP = "no_env_step"
    """The authors' loop only (``controller.loop: authors``): iterations without an env step."""


class Block(StrEnum):
    """Why Sage was not called although a rule fired: Swift acts instead."""

    COOLDOWN = "cooldown"
    CONSECUTIVE = "consecutive_sage"
    PER_STEP = "per_step"
    """The authors' loop only: Sage already ran for this env step."""


def is_failure(semantics: WorldSemantics, observation: str, markers: Iterable[str] | None = None) -> bool:
    """SwiftSage's failure message test: the world's reply to an unknown action, or a refusal
    (``markers``: the run's refusal words; None: the world's default)."""
    return semantics.classify_feedback(observation, markers) in SWIFTSAGE_FAILURES


def branch(source: StepSource) -> StepSource:
    """The source the arbitration, the resolver's hooks and Gate-1 see: every action of the Swift branch
    (swift, procedure, fallback) is Swift's action to them, as in SwiftSage's and the authors' loops."""
    return "swift" if source in SWIFT_BRANCH else source


@dataclass(frozen=True)
class SageMiss:
    """Sage ran and gave nothing to run now: ``error`` (the call failed), ``empty`` (no action in the
    plan), ``none_runs`` (planned actions, none of which can run in this state)."""

    kind: Literal["error", "empty", "none_runs"]
    why: str


@dataclass(frozen=True)
class Chosen:
    """An action of the Swift branch and who decided it: Swift's ranking (``swift``); a task procedure or
    judgement whose action the safety policy put on top of that ranking (``procedure``, with its
    ``rule``; so even when Swift's model ranked the same action first: the rule decided it); or a
    fallback (``fallback``). The label travels with the action from the proposal's candidate
    (``RankedAction.decided_by``) to the step's ``Decision``."""

    action: str
    source: StepSource = "swift"
    rule: ProcedureRule | None = None

    @staticmethod
    def of(ranked: RankedAction, action: str) -> Chosen:
        """Proposal candidate ``ranked``, run as ``action`` (its text grounded or repaired)."""
        if ranked.decided_by is not None:
            return Chosen(action, "procedure", ranked.decided_by)
        return Chosen(action)

    @property
    def actor(self) -> str:
        """Who acts, for a reason: swift, the procedure's rule, or fallback."""
        return self.rule or self.source

    def decision(self, reason: str) -> Decision:
        return Decision(self.action, self.source, reason, self.rule)


@dataclass(frozen=True)
class Timestep:
    """What an arbiter works with in one loop iteration: the state's index, the resolver (grounding and
    the ``before_action`` hooks), the trajectory, and whether Sage may be called at all."""

    view: IndexedView
    resolver: Resolver
    traj: Trajectory
    sage_available: bool

    @property
    def step(self) -> int:
        """Env steps taken so far (``StepResult.steps``)."""
        return self.view.result.steps

    def first(self, candidates: Sequence[RankedAction]) -> Chosen | None:
        """The first of ``candidates`` (rank order) that resolves, labelled by who ranked it there."""
        hit = self.resolver.pick([c.action for c in candidates], "swift", self.view)
        return Chosen.of(candidates[hit[0]], hit[1]) if hit is not None else None


def top_prediction(proposal: Proposal, traj: Trajectory) -> RankedAction | None:
    """Swift's top prediction as the authors take it: the next one when it repeats a wait (the world's
    first idle action, ``WorldSemantics.idle_actions``, as a prefix) right after a wait."""
    candidates: Sequence[RankedAction] = proposal.candidates
    turns = traj.turns
    idle = traj.semantics.idle_actions[:1]
    if (
        idle
        and candidates
        and turns
        and turns[-1].action.startswith(idle[0])
        and candidates[0].action.startswith(idle[0])
    ):
        candidates = candidates[1:]
    return candidates[0] if candidates else None


P = TypeVar("P")


class Arbiter(Protocol):
    """One loop's arbitration between Swift and Sage, for one episode.

    Per env step the controller calls ``begin``; per loop iteration ``start_iteration``, then - after the
    buffer and Swift's proposal - ``swift_choice``, ``check``, ``blocked`` and, on an escalation,
    ``sage_called`` and the fallbacks; after the env step ``executed``."""

    grounding: Literal["fuzzy", "authors"]
    """How candidate text is grounded onto the valid actions (``controller.resolver.Resolver``)."""
    hooks: Sequence[LoopHook]
    """Hooks of the loop itself, walked before the modules' (the authors' focus gate)."""

    @property
    def forcing(self) -> bool:
        """A forcing rule holds for this iteration: Sage decides before Swift's choice counts."""
        ...

    def begin(self, step: int) -> None:
        """A timestep starts (its first loop iteration)."""

    def start_iteration(self, step: int) -> None:
        """A loop iteration starts."""

    def iteration_without_step(self) -> None:
        """A loop iteration ended without an action (the authors' loop only)."""

    def forced_label(self, step: int) -> str | None:
        """The rule a forced iteration is named after, for AMM's T1 (None: not forced)."""
        ...

    def swift_failed(self, proposal: Proposal, now: Timestep) -> bool:
        """Whether Swift failed on ``proposal`` (AMM's T1 trigger), before confidence is looked at."""
        ...

    def swift_choice(self, proposal: Proposal, now: Timestep) -> tuple[Chosen | None, str | None]:
        """Swift's action, and the valid action a hook held back (no env step this iteration), if any."""
        ...

    def check(self, swift_action: str | None, step: int) -> tuple[Rule, str] | None:
        """The rule that sends this iteration to Sage, with a detail; None keeps Swift's action."""
        ...

    def blocked(self, step: int, rule: Rule) -> Block | None:
        """Why Sage may not run although ``rule`` fired; None: it may."""
        ...

    def held_back(
        self, blocked: Block, rule: Rule, chosen: Chosen | None, proposal: Proposal, now: Timestep
    ) -> Decision:
        """The action when Sage was held back (``blocked``)."""
        ...

    def unresolved(self, proposal: Proposal, reason: str, now: Timestep) -> Decision:
        """The action when no Swift candidate resolved and Sage did not act."""
        ...

    def after_sage(
        self, miss: SageMiss, chosen: Chosen | None, proposal: Proposal, rule: Rule, now: Timestep
    ) -> Decision:
        """The action when Sage ran and nothing it planned runs now."""
        ...

    def exhausted(self, reason: str, now: Timestep) -> Decision:
        """The action when a timestep's loop iterations ran out."""
        ...

    def plan_actions(self, planned: Sequence[P], parsed: Sequence[P]) -> Sequence[P]:
        """Which of Sage's plan the buffer takes: the planned actions valid now, or all parsed ones."""
        ...

    def sage_called(self, step: int, result: StepResult) -> None:
        """Sage planned at ``step`` in the state ``result``."""

    def failures_for_prompt(self, turns: Sequence[Turn]) -> list[Turn]:
        """The failed steps Sage's prompt lists."""
        ...

    def executed(self, decision: Decision, result: StepResult) -> str | None:
        """Count an executed step; returns why the buffer must be cleared (a loop guard), or None."""
        ...
