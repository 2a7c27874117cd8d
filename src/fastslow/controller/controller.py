"""The SwiftSage controller: one decision per env step from the buffer, Swift or Sage (paper §3, baseline).

Each timestep, top to bottom, every candidate going through the one resolver (``resolver.Resolver``):
1. ScienceWorld asked which object was meant ("Ambiguous request") -> answer it (SwiftSage: 0), the
   answer judged as the action it completes.
2. The buffer holds actions -> execute the next one that resolves (the others are skipped).
3. Ask Swift (through the ``on_proposal`` hooks); if an arbitration rule fires and Sage may be called,
   Sage plans into the buffer and the first planned action runs now; otherwise (or if Sage fails) the
   arbiter's choice among Swift's candidates runs, else its fallback.
SwiftSage's early stop (no reward for a long time) raises ``EarlyStop``; success, -100 failure and the
step limit end the episode in the runner. Everything observable goes to the event sink, each step with
who chose its action (``vocab.StepSource``): the learned Swift's ranking (``swift``), a hand-written task
procedure or judgement whose action sat on top of it (``procedure``, its rule first in the reason), a
fallback (``fallback``), or the buffer (``sage``, ``critic``). To the arbitration, the hooks and Gate-1
all three of the Swift branch are Swift's action (``arbiter.branch``).

``controller.loop`` picks the arbitration (``arbiter.Arbiter``): the profile ``fastslow.build.PROFILES``
names, whose arbiter the loop asks its few questions, never which profile it is. An iteration can end
without an action (a hook held Swift's action back, or refilled the buffer); the timestep then goes round
again, up to ``MAX_ITERATIONS`` times.

The modules are hooks (``core.hooks.LoopHook``) the loop walks in order, made per episode by the
``HookFactory`` that ``fastslow.build`` composes; with none the loop is the baseline's, and the loop
itself never asks which modules are on. docs/controller.md draws one timestep.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from fastslow.agents.base import Decision, EarlyStop, EpisodeContext
from fastslow.controller.arbiter import (
    Act,
    Arbiter,
    ArbiterFactory,
    Hold,
    Rule,
    SageMiss,
    SwiftTurn,
    Timestep,
    branch,
    is_failure,
    top_prediction,
)
from fastslow.controller.buffer import ActionBuffer, Buffered, handed
from fastslow.controller.config import ControllerConfig
from fastslow.controller.resolver import IndexedView, Resolver
from fastslow.controller.sage import Planner, PlanRequest
from fastslow.core.hooks import (
    BufferActions,
    HookFactory,
    LoopHook,
    NoHooks,
    ProposalTurn,
    Revision,
    StepDone,
)
from fastslow.core.proposal import Proposal, Proposer
from fastslow.core.step import StepResult
from fastslow.core.trajectory import Trajectory, Turn
from fastslow.events import (
    BufferClear,
    BufferPop,
    BufferPush,
    Escalation,
    EventSink,
    ListSink,
    SageCall,
    SwiftProposal,
)
from fastslow.vocab import StepSource

log = logging.getLogger(__name__)


MAX_ITERATIONS = 8
"""Loop iterations one timestep may take before the arbiter's last fallback runs (``Arbiter.exhausted``).
An iteration without an action is one whose Swift action a hook held back (a gated focus: the focus
gate lets Swift's third try pass, so 4 suffice in practice) or in which a hook refilled the buffer."""


class SwiftSageAgent:
    """SwiftSage's fast/slow controller over any Swift ``Proposer`` and Sage ``Planner``."""

    needs_gold = False

    def __init__(
        self,
        swift: Proposer,
        sage: Planner | None,
        cfg: ControllerConfig | None = None,
        *,
        arbiter: ArbiterFactory,
        hooks: HookFactory | None = None,
        min_confidence: float = 0.0,
        unresolved_fallback: bool = False,
        markers: tuple[str, ...] | None = None,
    ) -> None:
        self.swift = swift
        self.sage = sage
        """None, or ``controller.sage_enabled: false``: Swift acts alone."""
        self.cfg = cfg or ControllerConfig()
        self.arbiter_factory = arbiter
        """Makes each episode's arbiter: the profile of ``controller.loop`` (``fastslow.build.PROFILES``)."""
        self.hook_factory: HookFactory = hooks or NoHooks()
        self.min_confidence = min_confidence
        """Below this top-candidate confidence Swift counts as failed (AMM's T1 trigger)."""
        self.unresolved_fallback = unresolved_fallback
        """True (SRM's Gate-1 on): never send text no check admitted (``Resolver.unresolved``)."""
        self.markers = markers
        """The run's failure markers (``env.failure_markers``): failure messages for escalation, Sage's
        prompt and the buffer's failure limit (None: the world's default)."""
        self.buffer = ActionBuffer(self.cfg.buffer.size)
        self.arbiter: Arbiter
        """The episode's arbiter (``arbiter_factory``), made at each reset."""
        self.sink: EventSink = ListSink()
        self.traj: Trajectory | None = None
        self.hooks: list[LoopHook] = []
        self.resolver = Resolver(self.cfg.ground_cutoff, [], fallback_when_unresolved=unresolved_fallback)
        self._last: Decision | None = None
        self._finished = False
        self._proposal: tuple[int, Revision] | None = None
        """Swift's proposal of the current timestep after the hooks (Swift is asked once per env step)."""

    @property
    def sage_available(self) -> bool:
        return self.sage is not None and self.cfg.sage_enabled

    def reset(self, ctx: EpisodeContext, first: StepResult) -> None:
        self.sink = ctx.sink
        self.traj = Trajectory(
            ctx.task.task_id, ctx.task.name, ctx.variation, first.task_description, first, ctx.semantics
        )
        self.buffer = ActionBuffer(self.cfg.buffer.size)
        self.arbiter = self.arbiter_factory(self.cfg, ctx, first, self.markers)
        self.hooks = [*self.arbiter.hooks, *self.hook_factory.episode(ctx.memory_key, ctx.sink, first)]
        self.resolver = Resolver(
            self.cfg.ground_cutoff,
            list(self.hooks),
            fallback_when_unresolved=self.unresolved_fallback,
            grounding=self.arbiter.grounding,
        )
        self._last = None
        self._finished = False
        self._proposal = None

    # -- one timestep ---------------------------------------------------------------------------------
    def act(self, result: StepResult) -> Decision:
        step = result.steps
        self._check_early_stop(step)
        now = Timestep(
            self.resolver.view(result, self._traj()), self.resolver, self._traj(), self.sage_available
        )
        if now.view.ambiguous:
            # The answer completes the last action's request: it carries that action's source and rule.
            last = self._last or Decision("", "swift")
            answer = self.resolver.resolve(self.cfg.ambiguous_answer, branch(last.source), now.view)
            if answer is not None:
                completes = now.view.options.get(answer, "")
                reason = f"ambiguous request: answer {answer} ({completes})"
                reason = f"{last.rule}: {reason}" if last.rule is not None else reason
                return Decision(answer, last.source, reason, last.rule)
        for iteration in range(MAX_ITERATIONS):
            decision = self._iteration(now, iteration)
            if decision is not None:
                return decision
        return self.arbiter.exhausted(f"{MAX_ITERATIONS} loop iterations without an action", now)

    def _iteration(self, now: Timestep, iteration: int) -> Decision | None:
        """One pass of the loop (docs/controller.md, "One timestep"): the buffer, Swift, the arbiter's
        verdict, Sage. None: no action this time round (a hook held Swift's action back, or a hook
        refilled the buffer); the timestep goes round again."""
        step = now.step
        forced = self.arbiter.start_iteration(step, iteration)
        # 2. the buffer
        dry = True
        if self.buffer:
            buffered, dry = self._from_buffer(now.view)
            if buffered is not None:
                return buffered
        if dry and self._push_hooks([hook.on_buffer_empty(self._traj()) for hook in self.hooks], step):
            return None  # a hook's actions are the buffer now (SRM's Critic)
        # 3. Swift, then the verdict
        revision, first = self._propose(now, forced)
        turn = self._swift_turn(revision, now, forced=forced is not None)
        if first:
            self._emit_proposal(step, revision.proposal, turn.action)
        verdict = self.arbiter.arbitrate(turn, now)
        if isinstance(verdict, Act):
            return verdict.decision
        if isinstance(verdict, Hold):
            return None  # a hook held Swift's action back: no env step this iteration
        rule = verdict.rule
        self.sink.emit(Escalation(step=step, rule=rule.value, detail=verdict.detail, blocked=verdict.blocked))
        if verdict.instead is not None:
            return verdict.instead()  # Sage is blocked: the arbiter's action in its place
        # 4. Sage
        planned = self._call_sage(rule, revision.proposal, now, forced=forced is not None)
        if isinstance(planned, Decision):
            return planned
        return self.arbiter.sage_missed(planned, rule, turn, now)

    def _swift_turn(self, revision: Revision, now: Timestep, *, forced: bool) -> SwiftTurn:
        """Swift's part of the iteration: the arbiter's choice among its proposal, unless a forcing rule
        sends the iteration to Sage before Swift's choice counts (and no hook settled the proposal as
        the iteration's action)."""
        keep_out = forced and not revision.settles
        chosen, held = (None, None) if keep_out else self.arbiter.swift_choice(revision.proposal, now)
        return SwiftTurn(revision.proposal, chosen, held, revision.note, revision.settles)

    def _propose(self, now: Timestep, forced: str | None) -> tuple[Revision, bool]:
        """Swift's proposal for this env step after the hooks, and whether it is new. Swift is asked once
        per env step; a later loop iteration reuses its proposal, and walks the hooks over it again when a
        forcing rule holds (AMM's T1 on a forced iteration: a profile with forcing rules asks T1 on every
        iteration). ``forced``: the iteration's forcing rule (AMM's T1 label), None when none holds."""
        step = now.step
        cached = self._proposal if self._proposal is not None and self._proposal[0] == step else None
        if cached is not None and forced is None:
            return Revision(cached[1].proposal, cached[1].note, cached[1].settles), False
        turn = ProposalTurn(
            self.swift,
            self._traj(),
            now.view.result,
            self.hooks,
            self._failed(now),
            forced=forced,
            again=cached is not None,
        )
        revision = turn.run(cached[1].proposal if cached is not None else None)
        self._proposal = (step, revision)
        return revision, cached is None

    def _failed(self, now: Timestep) -> Callable[[Proposal], bool]:
        """The controller's "Swift failed" test: confidence below ``min_confidence``, or the arbiter's
        test (no valid action)."""
        return lambda proposal: (
            proposal.confidence < self.min_confidence or self.arbiter.swift_failed(proposal, now)
        )

    def _emit_proposal(self, step: int, proposal: Proposal, action: str | None) -> None:
        self.sink.emit(
            SwiftProposal(
                step=step,
                proposer=self.swift.name,
                candidates=[c.action for c in proposal.candidates[:5]],
                scores=[c.score for c in proposal.candidates[:5]],
                confidence=proposal.confidence,
                chosen=action,
            )
        )

    def observe(self, decision: Decision, result: StepResult) -> None:
        traj = self._traj()
        prev = traj.current
        traj.record(decision.action, decision.source, result)
        buffer_empty = not self.buffer  # as it was before the arbiter's loop guard may clear it
        stuck = self.arbiter.executed(decision, result)
        if stuck is not None:  # logged even with an empty buffer: the LoopGuard also blocks forced Sage
            self.sink.emit(
                BufferClear(step=result.steps, reason=stuck, dropped=[b.action for b in self.buffer.clear()])
            )
        self._last = decision
        if decision.source in ("sage", "critic"):
            failed = is_failure(traj.semantics, result.observation, self.markers)
            dropped = self.buffer.record_outcome(failed, self.cfg.buffer.failure_limit)
            if dropped:
                self.sink.emit(
                    BufferClear(
                        step=result.steps,
                        reason=f"{self.cfg.buffer.failure_limit} buffered actions in a row failed",
                        dropped=[b.action for b in dropped],
                    )
                )
        done = StepDone(
            traj, decision.action, branch(decision.source), prev, result, buffer_empty=buffer_empty
        )
        handed = [hook.after_step(done) for hook in self.hooks]
        late = [a for out in handed for a in out.actions]
        if stuck is not None and late:
            # The loop guard of this step outranks what the hooks hand over after it: it runs after
            # the Critic and clears what the Critic just put in the buffer (docs/fidelity.md).
            self.sink.emit(BufferClear(step=result.steps, reason=stuck, dropped=late))
            handed = []
        self._push_hooks(handed, result.steps)
        if result.done:
            self._finish()

    # -- parts ----------------------------------------------------------------------------------------
    def _traj(self) -> Trajectory:
        if self.traj is None:
            raise RuntimeError("SwiftSageAgent.act called before reset")
        return self.traj

    def _check_early_stop(self, step: int) -> None:
        cfg = self.cfg
        if not cfg.early_stop_min_steps or step < cfg.early_stop_min_steps:
            return
        recent = self._traj().recent(cfg.early_stop_window)
        if not any(t.reward > 0 for t in recent):
            self._finish()
            raise EarlyStop(
                f"no reward in the last {cfg.early_stop_window} of {step} steps (SwiftSage early stop)"
            )

    def _finish(self) -> None:
        if not self._finished:
            self._finished = True
            for hook in self.hooks:
                hook.on_episode_end(self._traj())

    def _from_buffer(self, view: IndexedView) -> tuple[Decision | None, bool]:
        """The next buffered action that runs now, and whether the scan ran the buffer dry (every head
        dropped, none left: the drained-buffer point ``on_buffer_empty`` hears of; a clear of heads
        beyond the scan limit is not). Heads that cannot run are dropped. With ``buffer.scan_limit``
        (the paper configurations: 5) at most that many heads are tried, the rest is cleared; with
        ``buffer.expected_alias`` a head is tried once more as its expected observation when that text
        is itself an action in the world's ``AuthorsProfile`` (a guessed-observation alias); with
        ``buffer.defer_unseen_focus`` a focus on a target not seen yet waits for the next teleport."""
        profile = self._traj().semantics.authors
        alias = self.cfg.buffer.expected_alias and profile is not None

        def admit(item: Buffered) -> str | None:
            action = self.resolver.resolve(item.action, item.source, view)
            if action is None and alias and profile is not None and profile.is_action_text(item.expected):
                action = self.resolver.resolve(item.expected.lower(), item.source, view)
            return action

        def unseen_focus(item: Buffered) -> bool:
            commit = self._traj().semantics.commitment_verb
            if commit is None or not item.action.startswith(commit):
                return False
            return self.resolver.ground(item.action, view) is None

        defer = unseen_focus if self.cfg.buffer.defer_unseen_focus else None
        popped = self.buffer.pop_admitted(
            admit,
            limit=self.cfg.buffer.scan_limit,
            defer=defer,
            relocates=profile.relocates if profile is not None else None,
        )
        self.sink.emit(
            BufferPop(
                step=view.result.steps,
                action=popped.item.action if popped.item else None,
                skipped=[b.action for b in popped.skipped],
                deferred=[b.action for b in popped.deferred],
                remaining=len(self.buffer),
            )
        )
        if popped.item is None:
            dry = not self.buffer
            if not dry:
                limit = self.cfg.buffer.scan_limit
                dropped = [b.action for b in self.buffer.clear()]
                reason = f"none of {limit} buffered heads could run"
                self.sink.emit(BufferClear(step=view.result.steps, reason=reason, dropped=dropped))
            return None, dry
        return Decision(popped.item.action, popped.item.source, popped.item.reason), False

    def _push_hooks(self, batches: Sequence[BufferActions], step: int) -> bool:
        """The actions the ``after_step`` / ``on_buffer_empty`` hooks handed the buffer, queued under
        their source, or replacing the buffer when a hook asks (``BufferActions.replace``); whether any
        came."""
        given = handed(batches, step)
        if given is None:
            return False
        self._push(given.items, given.source, step, replace=given.replace)
        return True

    def _push(
        self, items: Sequence[Buffered], source: StepSource, step: int, *, replace: bool = False
    ) -> None:
        if replace and self.buffer:
            left = [b.action for b in self.buffer.clear()]
            self.sink.emit(
                BufferClear(step=step, reason=f"{source} actions replace the buffer", dropped=left)
            )
        dropped = self.buffer.push(items)
        self.sink.emit(
            BufferPush(
                step=step,
                source=source,
                actions=[b.action for b in self.buffer.items],
                dropped=[b.action for b in dropped],
            )
        )

    def _instinct(self, proposal: Proposal, now: Timestep, *, forced: bool) -> str | None:
        """Swift's top prediction when it is valid now (grounding only, no hooks), for Sage's prompt;
        None when a forcing rule kept Swift out of this iteration (Swift was not asked for it)."""
        if forced:
            return None
        top = top_prediction(proposal, now.traj)
        return self.resolver.ground(top.action, now.view) if top is not None else None

    def _failures(self) -> Sequence[Turn]:
        return self.arbiter.failures_for_prompt(self._traj().turns)

    def _call_sage(
        self, rule: Rule, proposal: Proposal, now: Timestep, *, forced: bool
    ) -> Decision | SageMiss:
        """Sage's first planned action, or why there is none (then the arbiter's fallback acts)."""
        assert self.sage is not None  # sage_available
        step = now.step
        traj = self._traj()
        request = PlanRequest(
            traj=traj,
            step=step,
            failures=self._failures()[-self.cfg.sage.max_failures :],
            suggestion=[c.action for c in proposal.candidates[: self.cfg.sage.swift_candidates]],
            ground=lambda text: self.resolver.ground(text, now.view),
            memory_block="".join(hook.plan_memories(traj) for hook in self.hooks),
            instinct=self._instinct(proposal, now, forced=forced),
        )
        plan = self.sage.plan(request, self.sink)
        actions = self.arbiter.sage_planned(plan, step, now.view.result)
        self.sink.emit(
            SageCall(
                step=step,
                rule=rule.value,
                model_calls=plan.model_calls,
                parsed=[a.action for a in plan.parsed],
                actions=[a.action for a in plan.actions],
                retried=plan.retried,
                error=plan.error,
                latency_s=plan.latency_s,
            )
        )
        if plan.error:
            return SageMiss("error", f"sage failed ({plan.error})")
        if not actions:
            return SageMiss("empty", "sage gave no valid action")
        planned = min(len(actions), self.buffer.size)
        items = [
            Buffered(a.action, "sage", a.expected, f"sage plan @{step} ({rule.value}) {i}/{planned}")
            for i, a in enumerate(actions, 1)
        ]
        self.buffer.clear()  # a new plan replaces whatever was left of an old one
        self._push(items, "sage", step)
        first, _ = self._from_buffer(now.view)
        return first or SageMiss("none_runs", "sage's actions were all invalid")
