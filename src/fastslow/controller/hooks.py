"""The modules as hooks the controller walks (paper §3.1 AMM, §3.2 SRM, Swift's safety policy and the
hand-written task logic).

Each module is one ``LoopHook`` object with the methods it needs; every method has a no-op default, so
the controller calls all of them on every hook, in order, and never asks which modules are on:

- ``on_proposal(proposal, turn)``: Swift proposed. The safety policy re-ranks; the task logic (with
  ``procedures.enabled``) drops what its task's rules veto and puts a procedure's or judgement's
  action on top; AMM's T1 ladder retries a
  failed Swift with memories (``turn.retry`` runs Swift again through the hooks before this one). A
  hook may settle the proposal as the iteration's action (``turn.settled``: AMM's T1 in the authors'
  profile, also on an iteration a forcing rule sends to Sage, ``turn.forced``).
- ``before_action(candidate, view)``: a candidate is about to be resolved (``resolver.Resolver``).
  SRM's Gate-1 judges the proposed text; the safety policy refuses an answer completing a focus it forbids.
  A refusal may carry a failure message (``Candidate.failure``) the authors' loop records.
- ``on_refused(candidate, view)``: a ``before_action`` hook refused a candidate in this state. The
  policy and the task logic hear of Gate-1's drops there and stop proposing the dropped action until
  the state changes.
- ``plan_memories(traj)``: Sage is about to plan; AMM's T4 block ("" = the baseline prompt).
- ``after_step(step)``: after every env step (recorded in the trajectory). The policy and the task logic
  learn what changed nothing; AMM writes (salience gate) and runs T2/T3; SRM's detector may call the
  Critic, whose actions are returned for the FIFO buffer (``BufferActions(replace=True)``: they replace
  it). ``StepDone`` says whether the buffer was empty after the step.
- ``on_buffer_empty(traj)``: a loop iteration finds the buffer empty (it was, or its scan dropped every
  head); SRM's Critic may answer a report that waited for it (the authors' profile, ``critic.timing:
  empty_buffer``). Actions it hands over are the buffer, and the timestep goes round again.
- ``on_episode_end(traj)``: any end; SRM settles a Critic call still in its effect window.

``Modules`` holds what lives for a whole worker process (the AMM store, the Critic's model, the policy,
the task logic) and builds the hooks of one episode in their fixed order: policy, procedures, AMM, SRM.
AMM's Critic evidence reaches SRM through ``AmmHook`` itself (a typed per-episode object), read only
when an LLM Critic call is made.
"""

from __future__ import annotations

import atexit
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from fastslow.controller.resolver import Candidate, StepView, refuse
from fastslow.core.focus import FocusJudge
from fastslow.core.step import StepResult
from fastslow.core.trajectory import Trajectory
from fastslow.env.semantics import DEFAULT_FAILURE_MARKERS
from fastslow.events import EventSink
from fastslow.memory.config import AmmConfig
from fastslow.memory.hooks import Amm, AmmHooks
from fastslow.memory.records import MemoryRecord
from fastslow.memory.stores import BulkStore, open_store
from fastslow.models import ChatModel
from fastslow.procedures.logic import TaskLogic, general_focus_check
from fastslow.reflection.config import CriticConfig, SrmConfig
from fastslow.reflection.srm import Srm
from fastslow.swift.base import Candidate as Ranked
from fastslow.swift.base import Proposal, Proposer
from fastslow.swift.policy import SafetyPolicy

_STORES: dict[tuple[str, str | None, str, str | None, str], BulkStore] = {}
"""AMM stores opened by this process, one per location: every agent of a worker process shares it."""


def process_amm(cfg: AmmConfig) -> Amm:
    """The ``Amm`` of this worker process for ``cfg``'s store (opened once, closed at exit)."""
    key = (cfg.store, cfg.path, cfg.dsn, cfg.password_env, cfg.table)
    store = _STORES.get(key)
    if store is None:
        store = open_store(cfg)
        _STORES[key] = store
        atexit.register(store.close)
    return Amm(cfg, store)


@dataclass(frozen=True)
class StepDone:
    """One executed step, as the ``after_step`` hooks see it (already recorded in ``traj``)."""

    traj: Trajectory
    action: str
    source: str
    """Who chose the action as the loop sees it: swift (any action of the Swift branch: Swift's ranking,
    a procedure, a fallback; ``controller.branch``), sage or critic."""
    prev: StepResult
    result: StepResult
    buffer_empty: bool = True
    """The action buffer holds nothing after this step (before a LoopGuard clear of the same step):
    SRM's Critic with ``critic.timing: empty_buffer`` answers a report only then, else it waits."""


@dataclass(frozen=True)
class BufferActions:
    """Actions a hook hands the buffer after a step, and whether they replace what it holds (the
    authors' Critic output becomes the buffer) instead of queueing behind it. A plain ``list[str]``
    from a hook queues."""

    actions: tuple[str, ...]
    replace: bool = False


HookActions = list[str] | BufferActions
"""What ``after_step`` / ``on_buffer_empty`` return: actions for the buffer (usually none)."""


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
        """The forcing rule (``escalation.Rule`` value) sending this iteration to Sage before Swift's
        choice counts (the authors' loop); None when none holds."""
        self.again = again
        """A later loop iteration of the same env step: the hooks see the step's proposal once more,
        because a forcing rule now holds (a hook that acted on it already may leave it as it is)."""
        self.settled = False
        """Set by a hook: the proposal it returned is the iteration's Swift action, which no arbitration
        rule sends to Sage (AMM's T1 retry in the authors' profile, ``amm.retrieval.t1_settles``)."""

    def failed(self, proposal: Proposal) -> bool:
        """The controller's "Swift failed" test: no valid action, or confidence below the minimum."""
        return self._failed(proposal)

    def retry(self, memories: list[MemoryRecord]) -> Proposal:
        """Swift again, with ``memories``, through the hooks before the one asking (e.g. the policy)."""
        proposal = self.swift.propose(self.traj, memories)
        for hook in self.hooks[: self._position]:
            proposal, _ = hook.on_proposal(proposal, self)
        return proposal

    def run(self, proposal: Proposal | None = None) -> tuple[Proposal, str]:
        """Walk the hooks over ``proposal`` (None: ask Swift first); the final proposal and the notes."""
        if proposal is None:
            proposal = self.swift.propose(self.traj)
        notes = ""
        for i, hook in enumerate(self.hooks):
            self._position = i
            proposal, note = hook.on_proposal(proposal, self)
            notes += note
        return proposal, notes


class LoopHook:
    """A module's points of contact with the controller loop; every method is optional (no-op)."""

    def on_proposal(self, proposal: Proposal, turn: ProposalTurn) -> tuple[Proposal, str]:
        return proposal, ""

    def before_action(self, candidate: Candidate, view: StepView) -> Candidate:
        return candidate

    def on_refused(self, candidate: Candidate, view: StepView) -> None:
        """A ``before_action`` hook refused ``candidate`` in the state of ``view`` (``refused_by`` names
        it: ``gate`` for SRM's Gate-1)."""
        return None

    def plan_memories(self, traj: Trajectory) -> str:
        return ""

    def after_step(self, step: StepDone) -> HookActions:
        return []

    def on_buffer_empty(self, traj: Trajectory) -> HookActions:
        """The buffer holds nothing at the start of a loop iteration: it was empty, or its scan dropped
        every head (the authors' drained-buffer point, before Swift is asked)."""
        return []

    def on_episode_end(self, traj: Trajectory) -> None:
        return None


class PolicyHook(LoopHook):
    """Swift's safety policy (swift/policy.py): re-scores Swift's valid candidates, learns what changed
    nothing, and refuses an ambiguity answer that would complete a focus the focus rule forbids."""

    def __init__(self, policy: SafetyPolicy) -> None:
        self.policy = policy
        policy.reset()

    def on_proposal(self, proposal: Proposal, turn: ProposalTurn) -> tuple[Proposal, str]:
        valid = set(turn.result.valid_actions)
        cands = [c for c in proposal.candidates if c.action in valid]
        if not cands:
            return Proposal((), proposal.confidence), ""
        scores = self.policy.adjust(
            [c.action for c in cands],
            np.asarray([c.score for c in cands], dtype=np.float32),
            turn.result,
            turn.traj.task_name,
        )
        # A stable sort keeps Swift's own order among equal scores.
        order = sorted(range(len(cands)), key=lambda i: -float(scores[i]))
        kept = tuple(replace(cands[i], score=float(scores[i])) for i in order if np.isfinite(scores[i]))
        return Proposal(kept, proposal.confidence), ""

    def before_action(self, candidate: Candidate, view: StepView) -> Candidate:
        # The policy never focuses by answering an ambiguity prompt: the controller's default answer
        # picks the first of several same-named objects, which Swift never chose (swift/policy.py).
        completes = candidate.answers
        if self.policy.focus_rule and completes is not None and completes.startswith("focus on "):
            return refuse(candidate, "policy")
        return candidate

    def on_refused(self, candidate: Candidate, view: StepView) -> None:
        # What Gate-1 dropped here it drops again in this state: the policy stops proposing it until
        # the state changes.
        if candidate.refused_by == "gate":
            self.policy.refused(candidate.proposed, view.result)

    def after_step(self, step: StepDone) -> list[str]:
        self.policy.observe(step.prev, step.action, step.result)
        return []


class ProcedureHook(LoopHook):
    """The hand-written task logic (``fastslow.procedures``), after the safety policy: drops the
    candidates its task's rules veto and puts the action a procedure or judgement decides on top
    (``Candidate.decided_by`` names its rule, so the step that runs it is logged as ``procedure``). It
    keeps its own record of the episode (every executed step, Gate-1's drops)."""

    def __init__(self, logic: TaskLogic, policy: SafetyPolicy) -> None:
        self.logic = logic
        self.policy = policy
        """The general focus rule the life-stages judgement respects (``SafetyPolicy.focus_allowed``)."""
        logic.reset()

    def on_proposal(self, proposal: Proposal, turn: ProposalTurn) -> tuple[Proposal, str]:
        current, task_name = turn.result, turn.traj.task_name
        if not current.valid_actions:
            return proposal, ""
        kept = tuple(c for c in proposal.candidates if not self.logic.vetoed(c.action, current, task_name))
        general = general_focus_check(self.policy.focus_allowed, task_name)
        judged = self.logic.judged(current, task_name, general)
        if judged is not None:
            # A judgement rule outranks the imitation scores (its action may lie outside Swift's pool).
            # The candidate carries the rule: its step is a procedure step, even when Swift's model
            # ranked the same action first.
            top = max((r.score for r in kept), default=0.0) + 1.0
            decided = Ranked(judged.action, top, decided_by=judged.rule)
            kept = (decided, *(r for r in kept if r.action != judged.action))
        return Proposal(kept, proposal.confidence), ""

    def on_refused(self, candidate: Candidate, view: StepView) -> None:
        # A Gate-1 drop reaches the procedures too: they step aside from it until the state changes.
        if candidate.refused_by == "gate":
            self.logic.refused(candidate.proposed, view.result)

    def after_step(self, step: StepDone) -> list[str]:
        self.logic.observe(step.prev, step.action, step.result)
        return []


class AmmHook(LoopHook):
    """AMM for one episode (memory/hooks.py): T1 on Swift failure (authors' profile: also on a forced
    iteration), T2 at the authors' no-progress counts, T4 for Sage, the write hook with T2/T3 after
    each step, and the Critic's evidence for SRM."""

    def __init__(self, memory: AmmHooks) -> None:
        self.memory = memory

    def on_proposal(self, proposal: Proposal, turn: ProposalTurn) -> tuple[Proposal, str]:
        outcome = self.memory.swift_proposed(
            turn.traj,
            failed=turn.failed(proposal),
            forced=turn.forced,
            retry=lambda memories: self._retry(turn, memories),
            accept=lambda p: not turn.failed(p),
            again=turn.again,
        )
        if outcome is None or outcome.proposal is None:
            return proposal, ""
        turn.settled = self.memory.cfg.retrieval.t1_settles
        where = f" instead of forced sage ({turn.forced})" if turn.forced is not None else ""
        return outcome.proposal, f", T1 {outcome.rung}{where}"

    def _retry(self, turn: ProposalTurn, memories: list[MemoryRecord]) -> Proposal:
        # The retried Swift reads the trajectory as AMM's profile shows it (scores hidden: authors').
        with self.memory.retry_view(turn.traj):
            return turn.retry(memories)

    def plan_memories(self, traj: Trajectory) -> str:
        return self.memory.t4(traj).text or ""

    def after_step(self, step: StepDone) -> list[str]:
        self.memory.after_step(step.traj, step.action, step.prev, step.result)
        return []

    def critic_memories(self, traj: Trajectory, patterns: Sequence[str] | None = None) -> list[str]:
        """The Critic's memory block (``amm.retrieval.critic_evidence``: the cached T3, else T2, records,
        or a fresh search; ``patterns``: the stagnation report's, which decide whether an avoidance
        memory joins a fresh search); read (and logged) only by an LLM Critic call the budget allows,
        since reading consumes the cache."""
        text = self.memory.critic_evidence(traj, patterns).text
        return [text] if text else []


class SrmHook(LoopHook):
    """SRM for one episode (reflection/srm.py): Gate-1 on every candidate; after each step the
    stagnation detector and, on a report, the bounded Critic."""

    def __init__(self, srm: Srm, evidence: AmmHook | None) -> None:
        self.srm = srm
        self.evidence = evidence

    def before_action(self, candidate: Candidate, view: StepView) -> Candidate:
        gate = self.srm.gate
        if gate is None:
            return candidate
        constraints = self.srm.constraints(view.traj)
        if candidate.answers is not None:
            # An option number is judged as the action it completes (a bare "0" is not harmless).
            decision = gate.check_answer(
                candidate.proposed,
                candidate.answers,
                view.result,
                view.traj,
                constraints,
                source=candidate.source,
            )
        else:
            decision = gate.check(
                candidate.proposed, view.result, view.traj, constraints, source=candidate.source
            )
        if decision.accepted:
            return replace(candidate, action=decision.action)
        # srm.gate.drop_as_failure: a Swift action the authors' final gate drops is one of their
        # failure messages; the loop records it (controller.authors.AuthorsArbiter.gate_dropped).
        failure = None
        if gate.config.drop_as_failure and candidate.source == "swift":
            failure = f"GATE_INVALID:{decision.reason}"
        return refuse(candidate, "gate", failure)

    def _memories(self, traj: Trajectory) -> Callable[[Sequence[str]], list[str]] | None:
        evidence = self.evidence
        if evidence is None:
            return None
        return lambda patterns: evidence.critic_memories(traj, patterns)

    def _actions(self, actions: list[str]) -> HookActions:
        if actions and self.srm.replaces_buffer:
            return BufferActions(tuple(actions), replace=True)
        return actions

    def after_step(self, step: StepDone) -> HookActions:
        return self._actions(
            self.srm.after_step(step.traj, self._memories(step.traj), buffer_empty=step.buffer_empty)
        )

    def on_buffer_empty(self, traj: Trajectory) -> HookActions:
        return self._actions(self.srm.on_buffer_empty(traj, self._memories(traj)))

    def on_episode_end(self, traj: Trajectory) -> None:
        self.srm.finish(traj)


@dataclass
class Modules:
    """Process-wide module parts, built once by ``fastslow.build``; all None = the baseline."""

    srm: SrmConfig | None = None
    """SRM's section (Gate-1, stagnation, Critic switch); None = no SRM hook."""
    critic: CriticConfig = field(default_factory=CriticConfig)
    """The Critic's budget, cooldown, kind and model (used with ``srm``)."""
    amm: Amm | None = None
    """AMM with the process's store; None when ``amm.enabled`` is off (AMM is never constructed)."""
    critic_model: ChatModel | None = None
    """Shared model of the LLM Critic (Sage's own when both name the same model)."""
    policy: SafetyPolicy | None = None
    """Swift's safety policy (``controller.swift_policy``); None leaves Swift's ranking as proposed."""
    procedures: TaskLogic | None = None
    """The hand-written task logic (``procedures.enabled``, with the policy); None: no procedure hook."""
    focus_judge: FocusJudge | None = None
    """The task-specific focus rules SRM applies (``procedures.enabled``); None: its general rules."""
    warmup: bool = False
    """These episodes fill the store (``fastslow eval --warmup``): they write even in frozen mode."""
    markers: tuple[str, ...] = DEFAULT_FAILURE_MARKERS
    """The run's failure markers (``env.failure_markers``), for SRM's stagnation detector."""

    def episode(self, memory_key: str, sink: EventSink, first: StepResult) -> list[LoopHook]:
        """The hooks of one episode, in the order the controller walks them: policy, procedures, AMM,
        SRM."""
        hooks: list[LoopHook] = []
        if self.policy is not None:
            hooks.append(PolicyHook(self.policy))
            if self.procedures is not None:
                hooks.append(ProcedureHook(self.procedures, self.policy))
        amm = (
            AmmHook(self.amm.episode(memory_key, sink, warmup=self.warmup)) if self.amm is not None else None
        )
        if amm is not None:
            hooks.append(amm)
        srm = (
            Srm.for_episode(
                self.srm,
                self.critic,
                first,
                sink=sink,
                model=self.critic_model,
                markers=self.markers,
                judge=self.focus_judge,
            )
            if self.srm is not None
            else None
        )
        if srm is not None:
            hooks.append(SrmHook(srm, amm))
        return hooks
