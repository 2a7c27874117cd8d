"""The SwiftSage controller: one decision per env step from the buffer, Swift or Sage (paper §3, baseline).

Each timestep, top to bottom:
1. ScienceWorld asked which object was meant ("Ambiguous request") -> answer it (SwiftSage: 0).
2. The buffer holds actions -> execute the next one still valid (invalid ones are skipped).
3. Ask Swift; if an arbitration rule fires and Sage may be called, Sage plans into the buffer and the
   first planned action runs now; otherwise (or if Sage fails) Swift's action runs.
SwiftSage's early stop (no reward for a long time) raises ``EarlyStop``; success, -100 failure and the
step limit end the episode in the runner. Everything observable goes to the event sink.

AMM (§3.1), SRM (§3.2) and Swift's safety policy plug in through ``hooks.EpisodeModules``: Gate-1 admits
(or drops) every action before it leaves ``act``, the T1 ladder retries a failed Swift with memories,
T4 adds memories to Sage's planning prompt, and after each step AMM writes and SRM's Critic may push
actions into the same buffer. With every module off the loop is the baseline's.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from fastslow.agents.base import Decision, EarlyStop, EpisodeContext
from fastslow.agents.state import Trajectory, Turn
from fastslow.config import RunConfig
from fastslow.controller.buffer import ActionBuffer, Buffered
from fastslow.controller.config import ControllerConfig
from fastslow.controller.escalation import Arbiter, Rule, is_failure
from fastslow.controller.grounding import Grounder
from fastslow.controller.hooks import EpisodeModules, Modules, process_amm
from fastslow.controller.sage import Planner, PlanRequest, Sage
from fastslow.env.scienceworld import StepResult
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
from fastslow.models import make_model
from fastslow.models.config import ModelConfig
from fastslow.swift.base import Proposal, Proposer

log = logging.getLogger(__name__)

AMBIGUOUS = "Ambiguous request"
FALLBACK_ACTION = "look around"
"""Executed only when Swift proposes nothing at all (or Gate-1 dropped every candidate) and Sage cannot
be called: a harmless observation."""


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
    ) -> None:
        self.swift = swift
        self.sage = sage
        """None, or ``controller.sage_enabled: false``: Swift acts alone."""
        self.cfg = cfg or ControllerConfig()
        self.modules = modules or Modules()
        self.min_confidence = min_confidence
        """Below this top-candidate confidence Swift counts as failed (AMM's T1 trigger)."""
        self.buffer = ActionBuffer(self.cfg.buffer.size)
        self.arbiter = Arbiter(self.cfg.escalation)
        self.sink: EventSink = ListSink()
        self.traj: Trajectory | None = None
        self.mods = EpisodeModules(None, None, None)
        self._last: Decision | None = None
        self._finished = False

    def reset(self, ctx: EpisodeContext, first: StepResult) -> None:
        self.sink = ctx.sink
        self.traj = Trajectory(ctx.task.task_id, ctx.task.name, ctx.variation, first.task_description, first)
        self.buffer = ActionBuffer(self.cfg.buffer.size)
        self.arbiter = Arbiter(self.cfg.escalation)
        self.mods = self.modules.episode(ctx.memory_key, ctx.sink, first)
        self._last = None
        self._finished = False

    # -- one timestep ---------------------------------------------------------------------------------
    def act(self, result: StepResult) -> Decision:
        traj = self._traj()
        step = result.steps
        self._check_early_stop(step)
        grounder = Grounder(result.valid_actions)
        if result.observation.startswith(AMBIGUOUS):
            source = self._last.source if self._last else "swift"
            answer = self.mods.admit(self.cfg.ambiguous_answer, source, result, traj)
            if answer is not None:
                return Decision(answer, source, f"ambiguous request: answer {answer}")
        if self.buffer:
            buffered = self._from_buffer(grounder, result)
            if buffered is not None:
                return buffered
        proposal, note = self._propose(traj, result, grounder)
        chosen = self._swift_choice(proposal, grounder, result)
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
            return self._swift_decision(chosen, proposal, result, f"swift top{note}")
        fired = self.arbiter.check(chosen, step)
        if fired is None:
            return self._swift_decision(
                chosen, proposal, result, f"swift top (confidence {proposal.confidence:.2f}){note}"
            )
        rule, detail = fired
        blocked = self.arbiter.blocked(step)
        self.sink.emit(Escalation(step=step, rule=rule.value, detail=detail, blocked=blocked))
        if blocked is not None:
            return self._swift_decision(
                chosen, proposal, result, f"{rule.value} but sage {blocked.value}: swift acts"
            )
        decision = self._call_sage(self.sage, rule, proposal, grounder, result)
        if isinstance(decision, Decision):
            return decision
        return self._swift_decision(chosen, proposal, result, f"{rule.value}: {decision}, swift acts")

    def observe(self, decision: Decision, result: StepResult) -> None:
        traj = self._traj()
        prev = traj.current
        self.mods.observe_policy(prev, decision.action, result)
        traj.record(decision.action, decision.source, result)
        self.arbiter.executed(decision.action, decision.source, result.observation, result.reward)
        self._last = decision
        if decision.source in ("sage", "critic"):
            failed = is_failure(result.observation, self.cfg.escalation.failure_markers)
            dropped = self.buffer.record_outcome(failed, self.cfg.buffer.failure_limit)
            if dropped:
                self.sink.emit(
                    BufferClear(
                        step=result.steps,
                        reason=f"{self.cfg.buffer.failure_limit} buffered actions in a row failed",
                        dropped=[b.action for b in dropped],
                    )
                )
        critic = self.mods.after_step(traj, decision.action, prev, result)
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
            self.mods.finish(self._traj())

    def _admit(self, text: str, source: str, grounder: Grounder, result: StepResult) -> str | None:
        """The action ``text`` becomes when executed now: grounded onto the valid set as in the
        baseline, then SRM Gate-1 (which may repair the text or drop it: None)."""
        hit = grounder.ground(text, self.cfg.ground_cutoff)
        if hit is None and not self.mods.gated:
            return None
        return self.mods.admit(hit.action if hit else text, source, result, self._traj())

    def _propose(self, traj: Trajectory, result: StepResult, grounder: Grounder) -> tuple[Proposal, str]:
        """Swift's proposal (re-ranked by the safety policy if on); when it fails and AMM is on, the T1
        ladder's memory-conditioned retry replaces it (``note`` says which rung)."""
        proposal = self.mods.rerank(self.swift.propose(traj), result, traj)
        if not self._swift_failed(proposal, grounder):
            return proposal, ""
        t1 = self.mods.t1(
            traj,
            retry=lambda memories: self.mods.rerank(self.swift.propose(traj, memories), result, traj),
            accept=lambda p: not self._swift_failed(p, grounder),
        )
        if t1 is None:
            return proposal, ""
        return t1[0], f", T1 {t1[1]}"

    def _swift_failed(self, proposal: Proposal, grounder: Grounder) -> bool:
        """The controller's "Swift ok" test: a valid action and enough confidence."""
        return self._valid_choice(proposal, grounder) is None or proposal.confidence < self.min_confidence

    def _valid_choice(self, proposal: Proposal, grounder: Grounder) -> str | None:
        """Swift's best candidate that is a valid action (its top one grounded by similarity if need be)."""
        for cand in proposal.candidates:
            if cand.action in grounder.valid:
                return cand.action
        top = proposal.top
        hit = grounder.ground(top, self.cfg.ground_cutoff) if top else None
        return hit.action if hit else None

    def _swift_choice(self, proposal: Proposal, grounder: Grounder, result: StepResult) -> str | None:
        """Swift's choice: without Gate-1 its best valid candidate; with Gate-1 its first candidate (in
        rank order) the gate admits, each drop costing no env step. None: no action this timestep."""
        if not self.mods.gated:
            return self._valid_choice(proposal, grounder)
        for cand in proposal.candidates:
            admitted = self._admit(cand.action, "swift", grounder, result)
            if admitted is not None:
                return admitted
        return None

    def _swift_decision(
        self, chosen: str | None, proposal: Proposal, result: StepResult, reason: str
    ) -> Decision:
        if chosen is not None:
            return Decision(chosen, "swift", reason)
        if not self.mods.gated:
            # The baseline executes Swift's top text as written (ScienceWorld answers "No known action").
            return Decision(proposal.top or FALLBACK_ACTION, "swift", reason)
        # Gate-1 dropped every candidate: never send a dropped action; a harmless look keeps the episode
        # going, and the arbiter has counted this timestep as one without a valid Swift action.
        valid = result.valid_actions
        action = FALLBACK_ACTION if FALLBACK_ACTION in valid or not valid else valid[0]
        log.info("step %d: Gate-1 dropped every candidate, falling back to '%s'", result.steps, action)
        return Decision(action, "swift", f"{reason}; every candidate dropped by Gate-1: fallback {action}")

    def _from_buffer(self, grounder: Grounder, result: StepResult) -> Decision | None:
        popped = self.buffer.pop_admitted(lambda b: self._admit(b.action, b.source, grounder, result))
        self.sink.emit(
            BufferPop(
                step=result.steps,
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
        markers = self.cfg.escalation.failure_markers
        return [t for t in self._traj().turns if is_failure(t.observation, markers)]

    def _call_sage(
        self, sage: Planner, rule: Rule, proposal: Proposal, grounder: Grounder, result: StepResult
    ) -> Decision | str:
        """Sage's first planned action, or why there is none (then Swift acts)."""
        step = result.steps
        traj = self._traj()
        request = PlanRequest(
            traj=traj,
            step=step,
            failures=self._failures()[-self.cfg.sage.max_failures :],
            suggestion=[c.action for c in proposal.candidates[: self.cfg.sage.swift_candidates]],
            memory_block=self.mods.t4(traj),
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
        return self._from_buffer(grounder, result) or "sage's actions were all invalid"


def required_models(config: RunConfig) -> dict[str, ModelConfig]:
    """The language models a swiftsage config will call, by role (sage, critic)."""
    if config.agent.kind != "swiftsage":
        return {}
    models = {"sage": config.sage.model} if config.controller.sage_enabled else {}
    srm = config.srm
    if srm.enabled and srm.stagnation.enabled and srm.critic.enabled and config.critic.kind == "llm":
        models["critic"] = config.critic.model
    return models


def check_models(config: RunConfig) -> None:
    """Fail fast, before any episode starts, if a model the config needs cannot answer
    (``ModelUnavailableError``: a server that is down, a missing GGUF file or API key) or its Swift
    checkpoint is missing (``UsageError``)."""
    if config.agent.kind in ("swift", "swiftsage"):
        from fastslow.swift import check_swift

        check_swift(config.swift)
    checked: list[ModelConfig] = []
    for model_cfg in required_models(config).values():
        if model_cfg not in checked:
            make_model(model_cfg).check_available()
            checked.append(model_cfg)


def build_swiftsage(config: RunConfig) -> SwiftSageAgent:
    """The agent of a run config: ``swift:`` proposer, ``sage.model``, ``controller:`` rules, and the
    modules the config switches on (``amm:``, ``srm:`` + ``critic:``, ``controller.swift_policy``)."""
    from fastslow.swift import make_policy, make_proposer

    ctl = config.controller
    needed = required_models(config)
    sage_model = make_model(needed["sage"]) if "sage" in needed else None
    sage = (
        Sage(sage_model, ctl.sage, max_actions=ctl.buffer.size, cutoff=ctl.ground_cutoff)
        if sage_model is not None
        else None
    )
    srm = config.srm
    critic_model = None
    if "critic" in needed:
        # One model per process: the Critic shares Sage's when both name the same model.
        same = sage_model is not None and needed["critic"] == config.sage.model
        critic_model = sage_model if same else make_model(needed["critic"])
    modules = Modules(
        config=config if srm.enabled else None,
        amm=process_amm(config.amm) if config.amm.enabled else None,
        critic_model=critic_model,
        policy=make_policy(config.swift) if ctl.swift_policy else None,
        warmup=ctl.warmup,
    )
    top_k = config.swift.rerank_pool if ctl.swift_policy else None
    return SwiftSageAgent(
        make_proposer(config.swift, top_k=top_k),
        sage,
        ctl,
        modules=modules,
        min_confidence=config.swift.min_confidence,
    )
