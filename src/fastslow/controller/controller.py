"""The SwiftSage controller: one decision per env step from the buffer, Swift or Sage (paper §3, baseline).

Each timestep, top to bottom, every candidate going through the one resolver (``resolver.Resolver``):
1. ScienceWorld asked which object was meant ("Ambiguous request") -> answer it (SwiftSage: 0), the
   answer judged as the action it completes.
2. The buffer holds actions -> execute the next one that resolves (the others are skipped).
3. Ask Swift (through the ``on_proposal`` hooks); if an arbitration rule fires and Sage may be called,
   Sage plans into the buffer and the first planned action runs now; otherwise (or if Sage fails) the
   first of Swift's ranked candidates that resolves runs, else the resolver's fallback.
SwiftSage's early stop (no reward for a long time) raises ``EarlyStop``; success, -100 failure and the
step limit end the episode in the runner. Everything observable goes to the event sink.

AMM (§3.1), SRM (§3.2) and Swift's safety policy are hooks (``hooks.LoopHook``) the loop walks in order:
``on_proposal`` (policy re-ranking, AMM's T1 ladder), ``before_action`` (inside the resolver: Gate-1,
the policy's focus rule on answers), ``plan_memories`` (AMM's T4), ``after_step`` (policy, AMM's write
hook, SRM's detector and Critic, whose actions enter the same buffer) and ``on_episode_end``. With no
hooks the loop is the baseline's; the loop itself never asks which modules are on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from fastslow.agents.base import Decision, EarlyStop, EpisodeContext
from fastslow.controller.buffer import ActionBuffer, Buffered
from fastslow.controller.config import ControllerConfig
from fastslow.controller.escalation import Arbiter, Rule, is_failure
from fastslow.controller.hooks import LoopHook, Modules, ProposalTurn, StepDone
from fastslow.controller.resolver import Resolver, StepView
from fastslow.controller.sage import Planner, PlanRequest
from fastslow.core.step import StepResult
from fastslow.core.trajectory import Trajectory, Turn
from fastslow.env.semantics import DEFAULT_FAILURE_MARKERS
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
from fastslow.swift.base import Proposal, Proposer

log = logging.getLogger(__name__)


class SwiftSageAgent:
    """SwiftSage's fast/slow controller over any Swift ``Proposer`` and Sage ``Planner``."""

    needs_gold = False

    def __init__(
        self,
        swift: Proposer,
        sage: Planner | None,
        cfg: ControllerConfig | None = None,
        *,
        modules: Modules | None = None,
        min_confidence: float = 0.0,
        unresolved_fallback: bool = False,
        markers: tuple[str, ...] = DEFAULT_FAILURE_MARKERS,
    ) -> None:
        self.swift = swift
        self.sage = sage
        """None, or ``controller.sage_enabled: false``: Swift acts alone."""
        self.cfg = cfg or ControllerConfig()
        self.modules = modules or Modules()
        self.min_confidence = min_confidence
        """Below this top-candidate confidence Swift counts as failed (AMM's T1 trigger)."""
        self.unresolved_fallback = unresolved_fallback
        """True (SRM's Gate-1 on): never send text no check admitted (``Resolver.unresolved``)."""
        self.markers = markers
        """The run's failure markers (``env.failure_markers``): failure messages for escalation, Sage's
        prompt and the buffer's failure limit."""
        self.buffer = ActionBuffer(self.cfg.buffer.size)
        self.arbiter = Arbiter(self.cfg.escalation, markers)
        self.sink: EventSink = ListSink()
        self.traj: Trajectory | None = None
        self.hooks: list[LoopHook] = []
        self.resolver = Resolver(self.cfg.ground_cutoff, [], fallback_when_unresolved=unresolved_fallback)
        self._last: Decision | None = None
        self._finished = False

    def reset(self, ctx: EpisodeContext, first: StepResult) -> None:
        self.sink = ctx.sink
        self.traj = Trajectory(ctx.task.task_id, ctx.task.name, ctx.variation, first.task_description, first)
        self.buffer = ActionBuffer(self.cfg.buffer.size)
        self.arbiter = Arbiter(self.cfg.escalation, self.markers)
        self.hooks = self.modules.episode(ctx.memory_key, ctx.sink, first)
        self.resolver = Resolver(
            self.cfg.ground_cutoff, list(self.hooks), fallback_when_unresolved=self.unresolved_fallback
        )
        self._last = None
        self._finished = False

    # -- one timestep ---------------------------------------------------------------------------------
    def act(self, result: StepResult) -> Decision:
        traj = self._traj()
        step = result.steps
        self._check_early_stop(step)
        view = self.resolver.view(result, traj)
        if view.ambiguous:
            source = self._last.source if self._last else "swift"
            answer = self.resolver.resolve(self.cfg.ambiguous_answer, source, view)
            if answer is not None:
                completes = view.options.get(answer, "")
                return Decision(answer, source, f"ambiguous request: answer {answer} ({completes})")
        if self.buffer:
            buffered = self._from_buffer(view)
            if buffered is not None:
                return buffered
        proposal, note = ProposalTurn(self.swift, traj, result, self.hooks, self._failed(view)).run()
        chosen = self.resolver.first([c.action for c in proposal.candidates], "swift", view)
        self.sink.emit(
            SwiftProposal(
                step=step,
                proposer=self.swift.name,
                candidates=[c.action for c in proposal.candidates[:5]],
                scores=[c.score for c in proposal.candidates[:5]],
                confidence=proposal.confidence,
                chosen=chosen,
            )
        )
        if self.sage is None or not self.cfg.sage_enabled:
            return self._swift_decision(chosen, proposal, view, f"swift top{note}")
        fired = self.arbiter.check(chosen, step)
        if fired is None:
            return self._swift_decision(
                chosen, proposal, view, f"swift top (confidence {proposal.confidence:.2f}){note}"
            )
        rule, detail = fired
        blocked = self.arbiter.blocked(step)
        self.sink.emit(Escalation(step=step, rule=rule.value, detail=detail, blocked=blocked))
        if blocked is not None:
            return self._swift_decision(
                chosen, proposal, view, f"{rule.value} but sage {blocked.value}: swift acts"
            )
        decision = self._call_sage(self.sage, rule, proposal, view)
        if isinstance(decision, Decision):
            return decision
        return self._swift_decision(chosen, proposal, view, f"{rule.value}: {decision}, swift acts")

    def observe(self, decision: Decision, result: StepResult) -> None:
        traj = self._traj()
        prev = traj.current
        traj.record(decision.action, decision.source, result)
        self.arbiter.executed(decision.action, decision.source, result.observation, result.reward)
        self._last = decision
        if decision.source in ("sage", "critic"):
            failed = is_failure(result.observation, self.markers)
            dropped = self.buffer.record_outcome(failed, self.cfg.buffer.failure_limit)
            if dropped:
                self.sink.emit(
                    BufferClear(
                        step=result.steps,
                        reason=f"{self.cfg.buffer.failure_limit} buffered actions in a row failed",
                        dropped=[b.action for b in dropped],
                    )
                )
        done = StepDone(traj, decision.action, decision.source, prev, result)
        critic = [action for hook in self.hooks for action in hook.after_step(done)]
        if critic:
            self._push(
                [
                    Buffered(a, "critic", "", f"critic @{result.steps} {i}/{len(critic)}")
                    for i, a in enumerate(critic, 1)
                ],
                "critic",
                result.steps,
            )
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

    def _failed(self, view: StepView) -> Callable[[Proposal], bool]:
        """The controller's "Swift failed" test: no valid action among its candidates (the top one
        grounded by similarity if need be), or confidence below ``min_confidence``."""

        def failed(proposal: Proposal) -> bool:
            if proposal.confidence < self.min_confidence:
                return True
            if any(c.action in view.result.valid_actions for c in proposal.candidates):
                return False
            return proposal.top is None or self.resolver.ground(proposal.top, view) is None

        return failed

    def _swift_decision(
        self, chosen: str | None, proposal: Proposal, view: StepView, reason: str
    ) -> Decision:
        if chosen is not None:
            return Decision(chosen, "swift", reason)
        action = self.resolver.unresolved(proposal.top, view)
        if action != proposal.top:
            log.info("step %d: no candidate resolved, falling back to '%s'", view.result.steps, action)
            reason = f"{reason}; no candidate resolved: fallback {action}"
        return Decision(action, "swift", reason)

    def _from_buffer(self, view: StepView) -> Decision | None:
        popped = self.buffer.pop_admitted(lambda b: self.resolver.resolve(b.action, b.source, view))
        self.sink.emit(
            BufferPop(
                step=view.result.steps,
                action=popped.item.action if popped.item else None,
                skipped=[b.action for b in popped.skipped],
                remaining=len(self.buffer),
            )
        )
        if popped.item is None:
            return None
        return Decision(popped.item.action, popped.item.source, popped.item.reason)

    def _push(self, items: Sequence[Buffered], source: str, step: int) -> None:
        dropped = self.buffer.push(items)
        self.sink.emit(
            BufferPush(
                step=step,
                source=source,
                actions=[b.action for b in self.buffer.items],
                dropped=[b.action for b in dropped],
            )
        )

    def _failures(self) -> Sequence[Turn]:
        return [t for t in self._traj().turns if is_failure(t.observation, self.markers)]

    def _call_sage(self, sage: Planner, rule: Rule, proposal: Proposal, view: StepView) -> Decision | str:
        """Sage's first planned action, or why there is none (then Swift acts)."""
        step = view.result.steps
        traj = self._traj()
        request = PlanRequest(
            traj=traj,
            step=step,
            failures=self._failures()[-self.cfg.sage.max_failures :],
            suggestion=[c.action for c in proposal.candidates[: self.cfg.sage.swift_candidates]],
            ground=lambda text: self.resolver.ground(text, view),
            memory_block="".join(hook.plan_memories(traj) for hook in self.hooks),
        )
        plan = sage.plan(request, self.sink)
        self.arbiter.sage_called(step)
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
            return f"sage failed ({plan.error})"
        if not plan.actions:
            return "sage gave no valid action"
        planned = min(len(plan.actions), self.buffer.size)
        items = [
            Buffered(a.action, "sage", a.expected, f"sage plan @{step} ({rule.value}) {i}/{planned}")
            for i, a in enumerate(plan.actions, 1)
        ]
        self.buffer.clear()  # a new plan replaces whatever was left of an old one
        self._push(items, "sage", step)
        return self._from_buffer(view) or "sage's actions were all invalid"
