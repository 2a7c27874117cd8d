"""The arbitration between Swift and Sage as an interface (paper §3): what the controller asks, once per
loop iteration, of whichever profile the configuration plays (``controller.loop``).

The controller asks one decision per loop iteration (``Arbiter.arbitrate``: a ``Verdict``, act with this
action / hold / escalate to Sage, blocked or not) and, around it, a few questions with defaults in
``ArbiterBase`` (SwiftSage's), so a profile overrides only what it answers otherwise. Each profile is
one module owning its rules, fallbacks and strategies and exporting a ``Profile``; ``fastslow.build``
holds the registry by ``controller.loop`` name (``PROFILES``) and hands the controller the profile's
factory, so the controller never imports a profile nor asks which one it holds (docs/controller.md).

An arbiter learns who acted from the executed step (``executed``): every action of the Swift branch
(Swift's ranking, a task procedure, a fallback) ends a run of Sage calls.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal, Protocol

from fastslow.agents.base import Decision, EpisodeContext
from fastslow.controller.config import ControllerConfig
from fastslow.controller.parsing import ParsedAction
from fastslow.controller.resolver import Grounding, IndexedView, Resolver
from fastslow.controller.sage import SagePlan
from fastslow.core.hooks import LoopHook
from fastslow.core.proposal import Proposal, RankedAction
from fastslow.core.semantics import SWIFTSAGE_FAILURES, WorldSemantics
from fastslow.core.step import StepResult
from fastslow.core.trajectory import Trajectory, Turn
from fastslow.vocab import SWIFT_BRANCH, ProcedureRule, StepSource

log = logging.getLogger(__name__)


class Rule(StrEnum):
    """Why Sage was (or would have been) called; recorded in Escalation events and Decision.reason."""

    INVALID_ACTION = "invalid_action"
    FAILURE_MESSAGES = "failure_messages"
    FOCUS_BEFORE_SAGE = "focus_before_sage"
    NO_PROGRESS = "no_progress"
    NO_STEP = "no_env_step"
    """Loop iterations without an env step (a profile whose iterations may end without one)."""


class Block(StrEnum):
    """Why Sage was not called although a rule fired: Swift acts instead."""

    COOLDOWN = "cooldown"
    CONSECUTIVE = "consecutive_sage"
    PER_STEP = "per_step"
    """Sage already ran for this env step (a profile that goes round again after a Sage round)."""


def is_failure(semantics: WorldSemantics, observation: str, markers: Iterable[str] | None = None) -> bool:
    """SwiftSage's failure message test: the world's reply to an unknown action, or a refusal
    (``markers``: the run's refusal words; None: the world's default)."""
    return semantics.classify_feedback(observation, markers) in SWIFTSAGE_FAILURES


def branch(source: StepSource) -> StepSource:
    """The source the arbitration, the resolver's hooks and Gate-1 see: every action of the Swift branch
    (swift, procedure, fallback) is Swift's action to them, in every profile."""
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
    """Swift's top prediction, the next one when it repeats a wait (the world's first idle action,
    ``WorldSemantics.idle_actions``, as a prefix) right after a wait: the prediction a profile that
    judges Swift on its top one reads, and Sage's "instinct" (``PlanRequest.instinct``)."""
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


@dataclass(frozen=True)
class SwiftTurn:
    """Swift's part of one loop iteration, as the arbitration reads it: the proposal after the hooks,
    the arbiter's choice among it (None: nothing resolved, or a forcing rule kept Swift out), the valid
    action a hook held back, the hooks' note (AMM's T1 rung) and whether a hook settled the proposal as
    the iteration's action (``core.hooks.Revision``)."""

    proposal: Proposal
    chosen: Chosen | None = None
    held: str | None = None
    note: str = ""
    settles: bool = False

    @property
    def action(self) -> str | None:
        """The action the arbitration rules judge: the chosen one, else the held-back one."""
        return self.chosen.action if self.chosen is not None else self.held

    def reason(self, *, confidence: bool) -> str:
        """Why the Swift branch's chosen action runs: ``swift top`` (with Swift's confidence where Sage
        could have been called), the procedure's rule (its step's reason starts with it), or the
        loop-break fallback; then the hooks' notes (AMM's T1)."""
        chosen, note = self.chosen, self.note
        if chosen is not None and chosen.rule is not None:
            return f"{chosen.rule}{note}"
        if chosen is not None and chosen.source == "fallback":
            return f"gate-drop loop: loop-break fallback{note}"
        if confidence:
            return f"swift top (confidence {self.proposal.confidence:.2f}){note}"
        return f"swift top{note}"


@dataclass(frozen=True)
class Act:
    """The verdict: this action runs now (Swift's branch; no escalation)."""

    decision: Decision


@dataclass(frozen=True)
class Hold:
    """The verdict: no env step this iteration (a hook held Swift's action back); the timestep goes
    round again."""


@dataclass(frozen=True)
class Escalate:
    """The verdict: ``rule`` sends the iteration to Sage (an ``escalation`` event), unless ``blocked``
    says why Sage may not run; then ``instead`` makes the action that runs in its place. The controller
    calls it after it has logged the escalation (the resolves it makes may wake hooks that log)."""

    rule: Rule
    detail: str
    blocked: Block | None = None
    instead: Callable[[], Decision] | None = None

    def __post_init__(self) -> None:
        if (self.blocked is None) != (self.instead is None):
            raise ValueError("an escalation names the action instead of Sage exactly when Sage is blocked")


Verdict = Act | Hold | Escalate
"""One loop iteration's decision (docs/controller.md, "One timestep")."""


class Arbiter(Protocol):
    """One profile's arbitration between Swift and Sage, for one episode (paper §3): the questions the
    controller asks, in the order of a timestep (docs/controller.md, "One timestep").

    Per loop iteration ``start_iteration`` (whether a forcing rule holds); after the buffer and Swift's
    proposal (``swift_failed`` is asked by the proposal hooks) ``swift_choice`` and ``arbitrate`` (the
    verdict); on an escalation Sage's request lists ``failures_for_prompt``, after the round
    ``sage_planned`` and, when nothing it planned runs, ``sage_missed``; when the iterations run out
    ``exhausted``; after the env step ``executed``. ``ArbiterBase`` answers every one as SwiftSage does."""

    grounding: str | Grounding
    """How candidate text is grounded onto the valid actions, read once per episode by the resolver (a
    ``resolver.GROUNDINGS`` name, or a ``Grounding`` of the profile's own)."""
    hooks: Sequence[LoopHook]
    """Hooks of the loop itself, read once per episode and walked before the modules' (a profile's
    focus gate)."""

    def start_iteration(self, step: int, iteration: int) -> str | None:
        """Loop iteration ``iteration`` of the timestep after ``step`` env steps starts (0: the timestep's
        first; more: the one before ended without an action). Returns the forcing rule that holds for
        it (Sage decides before Swift's choice counts; its name is AMM's T1 label), None when none does."""
        ...

    def swift_failed(self, proposal: Proposal, now: Timestep) -> bool:
        """Whether Swift failed on ``proposal`` (AMM's T1 trigger), before confidence is looked at."""
        ...

    def swift_choice(self, proposal: Proposal, now: Timestep) -> tuple[Chosen | None, str | None]:
        """Swift's action (None: nothing resolved), and the valid action a hook held back (no env step
        this iteration), if any. Not asked when a forcing rule holds."""
        ...

    def arbitrate(self, turn: SwiftTurn, now: Timestep) -> Verdict:
        """The iteration's decision on Swift's ``turn``: act, hold, or escalate to Sage (with the action
        that runs instead when Sage is blocked)."""
        ...

    def sage_planned(self, plan: SagePlan, step: int, result: StepResult) -> Sequence[ParsedAction]:
        """Sage ran a round at ``step`` in the state ``result`` (its ``plan``, an error or not): count it,
        and return the actions the buffer takes in place of what it held (read unless the round failed;
        empty: Sage gave nothing to run)."""
        ...

    def sage_missed(self, miss: SageMiss, rule: Rule, turn: SwiftTurn, now: Timestep) -> Decision:
        """The action when Sage ran (``rule`` fired) and nothing it planned runs now."""
        ...

    def exhausted(self, reason: str, now: Timestep) -> Decision:
        """The action when a timestep's loop iterations ran out."""
        ...

    def failures_for_prompt(self, turns: Sequence[Turn]) -> list[Turn]:
        """The failed steps of ``turns`` (the episode so far) that Sage's prompt lists."""
        ...

    def executed(self, decision: Decision, result: StepResult) -> str | None:
        """Count an executed step; returns why the buffer must be cleared (a loop guard), or None."""
        ...


class ArbiterBase:
    """Defaults for every ``Arbiter`` member, SwiftSage's shape (paper §3): fuzzy grounding, no forcing
    rules, every iteration acts, Swift's first ranked candidate that resolves, Sage whenever ``check``
    names a rule and ``blocked`` does not stop it, Swift's action whenever Sage does not act, Sage's plan
    as far as it is valid now, no loop guard. A profile overrides the questions it answers otherwise;
    ``arbitrate`` reads ``check`` and ``blocked`` (the rules), ``held_back`` (the action when Sage is
    blocked) and ``unresolved`` (when no Swift candidate resolved), which are the base's own questions
    a profile may answer otherwise without rewriting the verdict."""

    grounding: str | Grounding = "fuzzy"
    hooks: Sequence[LoopHook] = ()
    semantics: WorldSemantics
    markers: tuple[str, ...] | None = None

    def start_iteration(self, step: int, iteration: int) -> str | None:
        """No forcing rules by default."""
        return None

    def swift_failed(self, proposal: Proposal, now: Timestep) -> bool:
        """No valid action among Swift's candidates (the top one grounded if need be)."""
        if any(c.action in now.view.result.valid_actions for c in proposal.candidates):
            return False
        return proposal.top is None or now.resolver.ground(proposal.top, now.view) is None

    def swift_choice(self, proposal: Proposal, now: Timestep) -> tuple[Chosen | None, str | None]:
        """The first ranked candidate that resolves; nothing is held back."""
        return now.first(proposal.candidates), None

    def check(self, swift_action: str | None, step: int) -> tuple[Rule, str] | None:
        """The rule that sends this iteration to Sage, with a detail; None (the default) keeps Swift."""
        return None

    def blocked(self, step: int, rule: Rule) -> Block | None:
        """Why Sage may not run although ``rule`` fired; None (the default): it may."""
        return None

    def arbitrate(self, turn: SwiftTurn, now: Timestep) -> Verdict:
        """Swift acts when Sage is off; else ``check`` (skipped when a hook settled a valid proposal):
        no rule -> Swift acts (or the iteration holds, a hook having held its action back); a rule ->
        escalate, ``blocked`` or not."""
        if not now.sage_available:
            return Act(self.swift_acts(turn, turn.reason(confidence=False), now))
        fired = None if turn.settles and turn.action else self.check(turn.action, now.step)
        if fired is None:
            if turn.held is not None:
                return Hold()
            return Act(self.swift_acts(turn, turn.reason(confidence=True), now))
        rule, detail = fired
        block = self.blocked(now.step, rule)
        if block is None:
            return Escalate(rule, detail)
        return Escalate(rule, detail, block, lambda: self.held_back(block, rule, turn, now))

    def swift_acts(self, turn: SwiftTurn, reason: str, now: Timestep) -> Decision:
        """The Swift branch's step: the chosen action, else ``unresolved``."""
        if turn.chosen is not None:
            return turn.chosen.decision(reason)
        return self.unresolved(turn.proposal, reason, now)

    def held_back(self, blocked: Block, rule: Rule, turn: SwiftTurn, now: Timestep) -> Decision:
        """The action when ``rule`` fired and Sage was ``blocked`` (``Escalate.instead``): Swift acts
        (SwiftSage's held-back Sage)."""
        actor = turn.chosen.actor if turn.chosen is not None else "swift"
        return self.swift_acts(turn, f"{rule.value} but sage {blocked.value}: {actor} acts", now)

    def sage_missed(self, miss: SageMiss, rule: Rule, turn: SwiftTurn, now: Timestep) -> Decision:
        """Swift acts (SwiftSage's failed Sage round)."""
        actor = turn.chosen.actor if turn.chosen is not None else "swift"
        return self.swift_acts(turn, f"{rule.value}: {miss.why}, {actor} acts", now)

    def unresolved(self, proposal: Proposal, reason: str, now: Timestep) -> Decision:
        """Swift's top text as written (labelled by who ranked it there), or the resolver's harmless
        action (``fallback``) when Gate-1 never sends unadmitted text."""
        action = now.resolver.unresolved(proposal.top, now.view)
        if action != proposal.top:
            log.info("step %d: no candidate resolved, falling back to '%s'", now.step, action)
            return Decision(action, "fallback", f"{reason}; no candidate resolved: fallback {action}")
        return Chosen.of(proposal.candidates[0], action).decision(reason)

    def exhausted(self, reason: str, now: Timestep) -> Decision:
        """The resolver's harmless action (unreachable where every iteration acts)."""
        return Decision(now.resolver.unresolved(None, now.view), "fallback", reason)

    def sage_planned(self, plan: SagePlan, step: int, result: StepResult) -> Sequence[ParsedAction]:
        """Nothing to count; Sage's planned actions, if at least one of them is valid now."""
        return plan.actions

    def failures_for_prompt(self, turns: Sequence[Turn]) -> list[Turn]:
        """The failed steps Sage's prompt lists: every failure message of the episode so far."""
        return [t for t in turns if is_failure(self.semantics, t.observation, self.markers)]

    def executed(self, decision: Decision, result: StepResult) -> str | None:
        """No loop guard by default."""
        return None


class ArbiterFactory(Protocol):
    """Makes one episode's arbiter: the controller's settings, the episode, its first state and the
    run's failure markers (``env.failure_markers``; None: the world's default)."""

    def __call__(
        self, cfg: ControllerConfig, ctx: EpisodeContext, first: StepResult, markers: tuple[str, ...] | None
    ) -> Arbiter: ...


@dataclass(frozen=True)
class Profile:
    """An arbitration profile as the registry knows it (``fastslow.build.PROFILES``; docs/controller.md,
    "A third profile"): the factory of its episode arbiter, and whether it needs the world's
    ``AuthorsProfile`` (``WorldSemantics.authors``; configuration checks refuse it in a world without
    one)."""

    make: ArbiterFactory
    authors_only: bool = False
