"""The seam between the controller loop and the modules (paper §3.1 AMM, §3.2 SRM, Swift's safety policy
and the hand-written task logic): what a module may see and what it may hand back.

Each module is one ``LoopHook`` object with the methods it needs; every method has a no-op default, so
the controller calls all of them on every hook, in order, and never asks which modules are on. A module
owns its hook (``memory/hook.py``, ``reflection/hook.py``, ``swift/hook.py``, ``procedures/hook.py``);
``fastslow.build`` composes them into a ``HookFactory`` the controller calls once per episode.

- ``on_proposal(proposal, turn)``: Swift proposed. Returns a ``Revision``: the proposal as this hook
  leaves it, a note for the step's reason, and whether it settles the proposal as the iteration's Swift
  action (AMM's T1 in the authors' profile). ``turn.retry`` runs Swift again through the hooks before
  the asking one.
- ``before_action(candidate, view)``: a candidate is about to be resolved; the hook accepts, replaces
  or refuses it (``refuse``). A refusal may carry a failure message (``Candidate.failure``).
- ``on_refused(candidate, view)``: a ``before_action`` hook refused a candidate in this state.
- ``plan_memories(traj)``: Sage is about to plan; AMM's T4 block ("" = the baseline prompt).
- ``after_step(step)``: after every env step (already recorded in the trajectory); actions returned go
  to the action buffer (``BufferActions``).
- ``on_buffer_empty(traj)``: a loop iteration finds the buffer empty; actions returned are the buffer.
- ``on_episode_end(traj)``: any end.

Steps: ``StepResult.steps`` is the number of env steps taken so far (``reset`` is 0); an event's
``step`` field is the step it describes (``fastslow.events``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal, Protocol

from fastslow.core.proposal import MemoryHint, Proposal, Proposer
from fastslow.core.step import StepResult
from fastslow.core.trajectory import Trajectory
from fastslow.events import EventSink
from fastslow.vocab import Refuser, StepSource


@dataclass(frozen=True)
class Candidate:
    """One candidate action on its way to the environment (``controller.resolver``)."""

    proposed: str
    """The text exactly as its source proposed it (what Gate-1 judges and logs as ``original``)."""
    source: StepSource
    """Who proposed it as the loop sees it: swift (the whole Swift branch), sage, critic; an ambiguity
    answer carries the source of the request it completes."""
    action: str | None
    """What it would execute now: the grounded valid action, or None (refused / not groundable)."""
    answers: str | None = None
    """In an ambiguous state: the action this option number completes (else None)."""
    refused_by: Refuser | None = None
    """The hook that refused it; later hooks leave a refused candidate as it is."""
    failure: str | None = None
    """A refusal the refusing hook wants counted as a failure message (the authors' loop records it, e.g.
    SRM Gate-1's ``GATE_INVALID:<reason>``); None: the refusal only makes the candidate unusable."""
    why: str = ""
    """Why the refusing hook refused it, in words a proposer can be shown (Gate-1: its reason code and
    evidence; a single-process agent tells its model, ``fastslow.plugins``); "" when not refused."""


def refuse(candidate: Candidate, by: Refuser, failure: str | None = None, why: str = "") -> Candidate:
    """``candidate`` refused by the hook ``by`` (no later hook may admit it again); ``failure``: the
    failure message the refusal stands for, if any (``Candidate.failure``); ``why``: the refusal in
    words (``Candidate.why``)."""
    return replace(candidate, action=None, refused_by=by, failure=failure, why=why)


class StepView(Protocol):
    """The state a candidate is judged in (the resolver's per-state index satisfies it)."""

    @property
    def result(self) -> StepResult: ...

    @property
    def traj(self) -> Trajectory: ...


@dataclass(frozen=True)
class StepDone:
    """One executed step, as the ``after_step`` hooks see it (already recorded in ``traj``)."""

    traj: Trajectory
    action: str
    source: StepSource
    """Who chose the action as the loop sees it: swift (any action of the Swift branch: Swift's ranking,
    a procedure, a fallback), sage or critic."""
    prev: StepResult
    result: StepResult
    buffer_empty: bool = True
    """The action buffer holds nothing after this step (before a LoopGuard clear of the same step):
    SRM's Critic with ``critic.timing: empty_buffer`` answers a report only then, else it waits."""


@dataclass(frozen=True)
class BufferActions:
    """Actions a hook hands the buffer, who they come from, and whether they replace what it holds (the
    authors' Critic output becomes the buffer) instead of queueing behind it."""

    actions: tuple[str, ...] = ()
    source: StepSource = "critic"
    replace: bool = False


NO_ACTIONS = BufferActions()
"""What a hook hands the buffer when it has nothing to add."""


@dataclass(frozen=True)
class Revision:
    """What an ``on_proposal`` hook makes of Swift's proposal."""

    proposal: Proposal
    note: str = ""
    """Appended to the step's reason (AMM: ``, T1 <rung>``)."""
    settles: bool = False
    """The proposal is the iteration's Swift action: no arbitration rule sends it to Sage (AMM's T1 retry
    in the authors' profile, ``amm.retrieval.t1_settles``)."""


class ProposalTurn:
    """Swift's proposal of one timestep passing the ``on_proposal`` hooks in order."""

    def __init__(
        self,
        swift: Proposer,
        traj: Trajectory,
        result: StepResult,
        hooks: Sequence[LoopHook],
        failed: Callable[[Proposal], bool],
        *,
        forced: str | None = None,
        again: bool = False,
    ) -> None:
        self.swift, self.traj, self.result, self.hooks = swift, traj, result, hooks
        self._failed = failed
        self._position = 0
        self.forced = forced
        """The forcing rule (``controller.arbiter.Rule`` value) sending this iteration to Sage before Swift's
        choice counts (the authors' loop); None when none holds."""
        self.again = again
        """A later loop iteration of the same env step: the hooks see the step's proposal once more,
        because a forcing rule now holds (a hook that acted on it already may leave it as it is)."""

    def failed(self, proposal: Proposal) -> bool:
        """The controller's "Swift failed" test: no valid action, or confidence below the minimum."""
        return self._failed(proposal)

    def retry(self, memories: Sequence[MemoryHint]) -> Proposal:
        """Swift again, with ``memories``, through the hooks before the one asking (e.g. the policy)."""
        proposal = self.swift.propose(self.traj, memories)
        for hook in self.hooks[: self._position]:
            proposal = hook.on_proposal(proposal, self).proposal
        return proposal

    def run(self, proposal: Proposal | None = None) -> Revision:
        """Walk the hooks over ``proposal`` (None: ask Swift first): the final proposal, the notes, and
        whether a hook settled it."""
        if proposal is None:
            proposal = self.swift.propose(self.traj)
        notes = ""
        settles = False
        for i, hook in enumerate(self.hooks):
            self._position = i
            revision = hook.on_proposal(proposal, self)
            proposal, notes = revision.proposal, notes + revision.note
            settles = settles or revision.settles
        return Revision(proposal, notes, settles)


class LoopHook:
    """A module's points of contact with the controller loop; every method is optional (no-op)."""

    def on_proposal(self, proposal: Proposal, turn: ProposalTurn) -> Revision:
        return Revision(proposal)

    def before_action(self, candidate: Candidate, view: StepView) -> Candidate:
        return candidate

    def on_refused(self, candidate: Candidate, view: StepView) -> None:
        """A ``before_action`` hook refused ``candidate`` in the state of ``view`` (``refused_by`` names
        it: ``gate`` for SRM's Gate-1)."""
        return None

    def plan_memories(self, traj: Trajectory) -> str:
        return ""

    def after_step(self, step: StepDone) -> BufferActions:
        return NO_ACTIONS

    def on_buffer_empty(self, traj: Trajectory) -> BufferActions:
        """The buffer holds nothing at the start of a loop iteration: it was empty, or its scan dropped
        every head (the authors' drained-buffer point, before Swift is asked)."""
        return NO_ACTIONS

    def on_episode_end(self, traj: Trajectory) -> None:
        return None


SwitchPoint = Literal["before_action", "buffer_actions", "on_proposal", "plan_memories"]


class SwitchedOff(LoopHook):
    """``inner`` with one of its mechanisms off at one step (``config.Intervention``; ``fastslow
    attribute``), every other call passed through. ``at``: env steps taken when the mechanism would act.

    - ``before_action`` (``gate``): not consulted while the loop chooses step ``at + 1``: the candidate
      goes on as proposed.
    - ``buffer_actions`` (``critic``): what ``after_step`` / ``on_buffer_empty`` hand over at ``at`` steps
      taken is discarded (the hook still runs, so its own state and budgets advance as they did).
    - ``on_proposal`` (``t1``): not consulted on Swift's proposal for step ``at + 1``.
    - ``plan_memories`` (``t4``): a Sage round planning at ``at`` steps taken gets no memory block (the
      baseline prompt; AMM's T4 retrieval is not run).
    """

    def __init__(self, inner: LoopHook, what: SwitchPoint, at: int) -> None:
        self.inner, self.what, self.at = inner, what, at

    def on_proposal(self, proposal: Proposal, turn: ProposalTurn) -> Revision:
        if self.what == "on_proposal" and turn.result.steps == self.at:
            return Revision(proposal)
        return self.inner.on_proposal(proposal, turn)

    def before_action(self, candidate: Candidate, view: StepView) -> Candidate:
        if self.what == "before_action" and view.result.steps == self.at:
            return candidate
        return self.inner.before_action(candidate, view)

    def on_refused(self, candidate: Candidate, view: StepView) -> None:
        self.inner.on_refused(candidate, view)

    def plan_memories(self, traj: Trajectory) -> str:
        if self.what == "plan_memories" and traj.current.steps == self.at:
            return ""
        return self.inner.plan_memories(traj)

    def after_step(self, step: StepDone) -> BufferActions:
        handed = self.inner.after_step(step)
        return NO_ACTIONS if self.what == "buffer_actions" and step.result.steps == self.at else handed

    def on_buffer_empty(self, traj: Trajectory) -> BufferActions:
        handed = self.inner.on_buffer_empty(traj)
        return NO_ACTIONS if self.what == "buffer_actions" and traj.current.steps == self.at else handed

    def on_episode_end(self, traj: Trajectory) -> None:
        self.inner.on_episode_end(traj)


class HookFactory(Protocol):
    """The hooks of one episode, in the order the controller walks them (``fastslow.build`` composes
    them from the modules that are on; none: the baseline loop)."""

    def episode(self, memory_key: str, sink: EventSink, first: StepResult) -> list[LoopHook]: ...


class NoHooks:
    """The baseline: no module hooks."""

    def episode(self, memory_key: str, sink: EventSink, first: StepResult) -> list[LoopHook]:
        return []
