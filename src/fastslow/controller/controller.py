"""The SwiftSage controller: one decision per env step from the buffer, Swift or Sage (paper §3, baseline).

Each timestep, top to bottom, every candidate going through the one resolver (``resolver.Resolver``):
1. ScienceWorld asked which object was meant ("Ambiguous request") -> answer it (SwiftSage: 0), the
   answer judged as the action it completes.
2. The buffer holds actions -> execute the next one that resolves (the others are skipped).
3. Ask Swift (through the ``on_proposal`` hooks); if an arbitration rule fires and Sage may be called,
   Sage plans into the buffer and the first planned action runs now; otherwise (or if Sage fails) the
   first of Swift's ranked candidates that resolves runs, else the resolver's fallback.
SwiftSage's early stop (no reward for a long time) raises ``EarlyStop``; success, -100 failure and the
step limit end the episode in the runner. Everything observable goes to the event sink, each step with
who chose its action (``vocab.StepSource``): the learned Swift's ranking (``swift``), a hand-written task
procedure or judgement whose action sat on top of it (``procedure``, its rule first in the reason), the
controller's fallback (``fallback``), or the buffer (``sage``, ``critic``). To the arbitration, the hooks
and Gate-1 all three of the Swift branch are Swift's action (``branch``), as in both loops modelled here.

``controller.loop`` picks the arbitration: ``swiftsage`` (``escalation.Arbiter``, SwiftSage as its paper
describes it) or ``authors`` (``authors.AuthorsArbiter``, the paper's authors' final loop: Swift's top
prediction only, exact membership after their rewrites, never invalid text, their fallbacks, focus gate
and LoopGuard). In the authors' loop an iteration can end without an action (a gated Swift focus); the
timestep then goes round again, as their ``while`` loop does, and their forcing rule counts it.

AMM (§3.1), SRM (§3.2) and Swift's safety policy are hooks (``hooks.LoopHook``) the loop walks in order:
``on_proposal`` (policy re-ranking, AMM's T1 ladder), ``before_action`` (inside the resolver: Gate-1,
the policy's focus rule on answers), ``plan_memories`` (AMM's T4), ``after_step`` (policy, AMM's write
hook, SRM's detector and Critic, whose actions enter the same buffer) and ``on_episode_end``. With no
hooks the loop is the baseline's; the loop itself never asks which modules are on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from fastslow.agents.base import Decision, EarlyStop, EpisodeContext
from fastslow.controller.authors import LOOPBREAK_ACTIONS, AuthorsArbiter, FocusGate, state_signature
from fastslow.controller.buffer import ActionBuffer, Buffered
from fastslow.controller.config import ControllerConfig
from fastslow.controller.escalation import Arbiter, Block, Rule, is_failure
from fastslow.controller.hooks import BufferActions, HookActions, LoopHook, Modules, ProposalTurn, StepDone
from fastslow.controller.resolver import Resolver, StepView
from fastslow.controller.sage import Planner, PlanRequest
from fastslow.core.step import StepResult
from fastslow.core.trajectory import Trajectory, Turn
from fastslow.env import valid as authors
from fastslow.env.semantics import DEFAULT_FAILURE_MARKERS, FOCUS
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
from fastslow.swift.base import Candidate as Ranked
from fastslow.swift.base import Proposal, Proposer
from fastslow.vocab import SWIFT_BRANCH, ProcedureRule, StepSource

log = logging.getLogger(__name__)


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
    ``rule``; so even when Swift's model ranked the same action first: the rule decided it); or the
    authors' loop-break fallback (``fallback``). The label travels with the action from the proposal's
    candidate (``Candidate.decided_by``) to the step's ``Decision``."""

    action: str
    source: StepSource = "swift"
    rule: ProcedureRule | None = None

    @staticmethod
    def of(ranked: Ranked, action: str) -> Chosen:
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


def top_reason(chosen: Chosen | None, proposal: Proposal, note: str, *, confidence: bool) -> str:
    """Why the Swift branch's chosen action runs: ``swift top`` (with Swift's confidence where Sage could
    have been called), the procedure's rule (its step's reason starts with it), or the loop-break
    fallback; then the hooks' notes (AMM's T1)."""
    if chosen is not None and chosen.rule is not None:
        return f"{chosen.rule}{note}"
    if chosen is not None and chosen.source == "fallback":
        return f"gate-drop loop: loop-break fallback{note}"
    return f"swift top (confidence {proposal.confidence:.2f}){note}" if confidence else f"swift top{note}"


def branch(source: StepSource) -> str:
    """The source the arbitration, the resolver's hooks and Gate-1 see: every action of the Swift branch
    (swift, procedure, fallback) is Swift's action to them, as in SwiftSage's and the authors' loops."""
    return "swift" if source in SWIFT_BRANCH else source


MAX_ITERATIONS = 8
"""Loop iterations one timestep may take in the authors' loop before the deterministic fallback runs
(each gated Swift focus is one; Swift's third focus try passes the gate, so 4 suffice in practice)."""


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
        self.arbiter: Arbiter | AuthorsArbiter = Arbiter(self.cfg.escalation, markers)
        self.sink: EventSink = ListSink()
        self.traj: Trajectory | None = None
        self.hooks: list[LoopHook] = []
        self.resolver = self._resolver([])
        self._last: Decision | None = None
        self._finished = False
        self._proposal: tuple[int, Proposal, str, bool] | None = None
        """Swift's proposal of the current timestep (Swift is asked once per env step) after the hooks:
        step, proposal, the hooks' notes, whether a hook settled it."""

    @property
    def authors_loop(self) -> bool:
        return self.cfg.loop == "authors"

    def _resolver(self, hooks: list[LoopHook]) -> Resolver:
        return Resolver(
            self.cfg.ground_cutoff,
            list(hooks),
            fallback_when_unresolved=self.unresolved_fallback,
            grounding="authors" if self.authors_loop else "fuzzy",
        )

    def reset(self, ctx: EpisodeContext, first: StepResult) -> None:
        self.sink = ctx.sink
        self.traj = Trajectory(ctx.task.task_id, ctx.task.name, ctx.variation, first.task_description, first)
        self.buffer = ActionBuffer(self.cfg.buffer.size)
        self.hooks = self.modules.episode(ctx.memory_key, ctx.sink, first)
        if self.authors_loop:
            arbiter = AuthorsArbiter(self.cfg.escalation)
            if self.cfg.focus_gate:
                arbiter.focus = FocusGate(ctx.task.task_id, first.task_description)
                self.hooks.insert(0, arbiter.focus)
            self.arbiter = arbiter
        else:
            self.arbiter = Arbiter(self.cfg.escalation, self.markers)
        self.resolver = self._resolver(self.hooks)
        self._last = None
        self._finished = False
        self._proposal = None

    # -- one timestep ---------------------------------------------------------------------------------
    def act(self, result: StepResult) -> Decision:
        step = result.steps
        self._check_early_stop(step)
        view = self.resolver.view(result, self._traj())
        if view.ambiguous:
            # The answer completes the last action's request: it carries that action's source and rule.
            last = self._last or Decision("", "swift")
            answer = self.resolver.resolve(self.cfg.ambiguous_answer, branch(last.source), view)
            if answer is not None:
                completes = view.options.get(answer, "")
                reason = f"ambiguous request: answer {answer} ({completes})"
                reason = f"{last.rule}: {reason}" if last.rule is not None else reason
                return Decision(answer, last.source, reason, last.rule)
        self.arbiter.begin(step)
        for _ in range(MAX_ITERATIONS):
            decision = self._iteration(view)
            if decision is not None:
                return decision
            self.arbiter.iteration_without_step()
        return self._deterministic(view, f"{MAX_ITERATIONS} loop iterations without an action")

    def _iteration(self, view: StepView) -> Decision | None:
        """One pass of the loop: buffer, Swift, arbitration, Sage. None: no action this time round (the
        authors' loop only: Swift's focus was gated), the timestep goes round again."""
        step = view.result.steps
        self.arbiter.start_iteration(step)
        dry = True
        if self.buffer:
            buffered, dry = self._from_buffer(view)
            if buffered is not None:
                return buffered
        if dry and self._push_critic([hook.on_buffer_empty(self._traj()) for hook in self.hooks], step):
            # A report that waited for the buffer to run dry was answered (SRM's Critic, authors'
            # profile): its actions are the buffer now and the timestep goes round again, as their
            # loop's `continue` after a drained-buffer call.
            return None
        proposal, note, first, settled = self._propose(view)
        # A forcing rule of the authors' loop sends the iteration to Sage before Swift's choice counts,
        # unless a hook settled Swift's proposal as the iteration's action.
        forcing = self.arbiter.forcing and not settled
        chosen, gated = (None, None) if forcing else self._swift_choice(proposal, view)
        action = chosen.action if chosen is not None else gated
        if first:
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
        if self.sage is None or not self.cfg.sage_enabled:
            return self._swift_decision(
                chosen, proposal, view, top_reason(chosen, proposal, note, confidence=False)
            )
        if settled and action:
            if gated is not None:
                return None  # held back like any Swift action: no env step this iteration
            self.arbiter.swift_acted()
            reason = top_reason(chosen, proposal, note, confidence=True)
            return self._swift_decision(chosen, proposal, view, reason)
        fired = self.arbiter.check(action, step)
        if fired is None:
            if gated is not None:
                return None  # the authors skip a gated focus: no env step this iteration
            self.arbiter.swift_acted()
            reason = top_reason(chosen, proposal, note, confidence=True)
            return self._swift_decision(chosen, proposal, view, reason)
        rule, detail = fired
        blocked = self.arbiter.blocked(step, rule)
        self.sink.emit(Escalation(step=step, rule=rule.value, detail=detail, blocked=blocked))
        if blocked is not None:
            return self._held_back(blocked, rule, chosen, proposal, view)
        decision = self._call_sage(self.sage, rule, proposal, view)
        if isinstance(decision, Decision):
            return decision
        return self._after_sage(decision, chosen, proposal, view, rule)

    def _propose(self, view: StepView) -> tuple[Proposal, str, bool, bool]:
        """Swift's proposal for this env step, whether it is new, and whether a hook settled it as the
        iteration's action. Swift is asked once per env step; a later loop iteration of the authors'
        loop reuses its proposal, and walks the hooks over it again when a forcing rule holds (AMM's T1
        on a forced iteration, as the authors' loop asks its T1 on every iteration)."""
        step = view.result.steps
        forced: str | None = None
        if self.arbiter.forcing:
            rule = self.arbiter.check(None, step)
            focus = self.arbiter.focus if isinstance(self.arbiter, AuthorsArbiter) else None
            # The authors name a forced iteration after their focus rule whenever it holds (its reason
            # is assigned last), which exempts the iteration from T1.
            if focus is not None and focus.swift_tries >= 1 and not focus.sage_focused:
                forced = Rule.FOCUS_BEFORE_SAGE.value
            elif rule is not None:
                forced = rule[0].value
        cached = self._proposal if self._proposal is not None and self._proposal[0] == step else None
        if cached is not None and forced is None:
            return cached[1], cached[2], False, cached[3]
        turn = ProposalTurn(
            self.swift,
            self._traj(),
            view.result,
            self.hooks,
            self._failed(view),
            forced=forced,
            again=cached is not None,
        )
        start = cached[1] if cached is not None else self.swift.propose(self._traj())
        proposal, note = turn.run(start)
        self._proposal = (step, proposal, note, turn.settled)
        return proposal, note, cached is None, turn.settled

    def _first(self, candidates: Sequence[Ranked], view: StepView) -> Chosen | None:
        """The first of ``candidates`` (rank order) that resolves, labelled by who ranked it there."""
        hit = self.resolver.pick([c.action for c in candidates], "swift", view)
        return Chosen.of(candidates[hit[0]], hit[1]) if hit is not None else None

    def _swift_choice(self, proposal: Proposal, view: StepView) -> tuple[Chosen | None, str | None]:
        """Swift's action, and - authors' loop - the valid action a hook held back (else None): the
        focus gate's focus, or one whose refusal is a failure message (Gate-1 with
        ``srm.gate.drop_as_failure``). A held-back action ends the iteration without an env step.

        SwiftSage: the first ranked candidate that resolves. Authors: the top prediction only (the next
        one if it repeats a ``wait`` right after a wait), after their rewrites."""
        if not self.authors_loop:
            return self._first(proposal.candidates, view), None
        ranked = self._authors_top(proposal.candidates)
        if ranked is None:
            return None, None
        top = ranked.action
        candidate = self.resolver.candidate(top, "swift", view)
        if candidate.refused_by == "focus_gate":
            return None, self.resolver.ground(top, view)
        if candidate.failure is None or not isinstance(self.arbiter, AuthorsArbiter):
            return (Chosen.of(ranked, candidate.action) if candidate.action is not None else None), None
        grounded = self.resolver.ground(top, view)
        if grounded is None:  # not valid as the authors test it: their invalid-action path, not the gate
            return None, None
        sage = self.sage is not None and self.cfg.sage_enabled
        outcome = self.arbiter.gate_dropped(
            grounded, candidate.failure, view.result.steps, sage_available=sage
        )
        pick = self._loopbreak(view) if outcome == "fallback" else None
        return (pick, None) if pick is not None else (None, grounded)

    def _loopbreak(self, view: StepView) -> Chosen | None:
        """The authors' loop-break fallback after a gate-drop loop: the first of look around, inventory,
        wait that is valid and passes the hooks, else the deterministic fallback's pick (None: nothing
        passes, the iteration ends without a step)."""
        valid = view.result.valid_actions
        picks = [a for a in LOOPBREAK_ACTIONS if a in valid]
        if not picks:
            pick = authors.deterministic_fallback(set(valid), authors.current_room(view.result.look))
            picks = [pick] if pick is not None else []
        action = self.resolver.first(picks, "swift", view)
        return Chosen(action, "fallback") if action is not None else None

    def _authors_top(self, candidates: Sequence[Ranked]) -> Ranked | None:
        """Swift's top prediction as the authors take it: the next one when it repeats a ``wait`` right
        after a wait."""
        turns = self._traj().turns
        if (
            candidates
            and turns
            and turns[-1].action.startswith("wait")
            and candidates[0].action.startswith("wait")
        ):
            candidates = candidates[1:]
        return candidates[0] if candidates else None

    def _authors_top_text(self, proposal: Proposal) -> str | None:
        top = self._authors_top(proposal.candidates)
        return top.action if top is not None else None

    def _held_back(
        self, blocked: Block, rule: Rule, chosen: Chosen | None, proposal: Proposal, view: StepView
    ) -> Decision:
        """Sage may not run although ``rule`` fired."""
        reason = f"{rule.value} but sage {blocked.value}"
        if not self.authors_loop:
            actor = chosen.actor if chosen is not None else "swift"
            return self._swift_decision(chosen, proposal, view, f"{reason}: {actor} acts")
        if blocked is Block.PER_STEP:
            return self._deterministic(view, reason)
        # The authors' held-back Swift: the first valid of its top three non-focus predictions.
        trial = self._first([c for c in proposal.candidates if not c.action.startswith(FOCUS)][:3], view)
        self.arbiter.swift_acted()
        if trial is not None:
            return trial.decision(f"{reason}: {trial.actor}'s first valid non-focus prediction")
        return self._nearest(proposal, view, f"{reason}: no valid swift prediction")

    def _after_sage(
        self, miss: SageMiss, chosen: Chosen | None, proposal: Proposal, view: StepView, rule: Rule
    ) -> Decision:
        """Sage ran and nothing it planned runs now (``miss``)."""
        why = miss.why
        if not self.authors_loop:
            actor = chosen.actor if chosen is not None else "swift"
            return self._swift_decision(chosen, proposal, view, f"{rule.value}: {why}, {actor} acts")
        self.arbiter.swift_acted()
        if miss.kind in ("error", "empty"):
            # The authors: a planning error or an empty plan -> the nearest valid action to Swift's top.
            return self._nearest(proposal, view, f"{rule.value}: {why}")
        # A plan none of whose actions can run: their loop goes round once more, and Sage has already run
        # for this env step, so their deterministic fallback acts.
        return self._deterministic(view, f"{rule.value}: {why}")

    def _nearest(self, proposal: Proposal, view: StepView, reason: str) -> Decision:
        """The valid action nearest to Swift's rewritten top prediction by sentence embedding (the
        authors' SBERT search; ``fastslow.models.embeddings``: MiniLM, or its lexical stand-in)."""
        from fastslow.models.embeddings import default_embedder, similarity_sums

        result = view.result
        top = self._authors_top_text(proposal)
        valid = list(result.valid_actions)
        if top is None or not valid:
            return self._deterministic(view, f"{reason}; no prediction to search from")
        query = authors.rewrite(top, view.valid_set, result.look, result.inventory)
        embedder = default_embedder("auto")
        sums = similarity_sums([query], valid, embedder)
        # Best first; a stable sort keeps the valid set's order among equal scores.
        ranked = [valid[i] for i in sorted(range(len(valid)), key=lambda i: -float(sums[i]))]
        action = self.resolver.first(ranked[:20], "swift", view)
        if action is None:
            return self._deterministic(view, f"{reason}; no near valid action may run")
        self.arbiter.swift_acted()
        return Decision(action, "fallback", f"{reason}: nearest valid to '{query}' ({embedder.name})")

    def _deterministic(self, view: StepView, reason: str) -> Decision:
        """The authors' deterministic fallback (look around, inventory, a move, else the first action)."""
        result = view.result
        room = authors.current_room(result.look)
        left = set(result.valid_actions)
        self.arbiter.swift_acted()
        for _ in range(5):  # a hook (Gate-1) may refuse the pick: the next one in the same order
            pick = authors.deterministic_fallback(left, room)
            if pick is None:
                break
            action = self.resolver.resolve(pick, "swift", view)
            if action is not None:
                return Decision(action, "fallback", f"{reason}: deterministic fallback")
            left.discard(pick)
        return Decision(self.resolver.unresolved(None, view), "fallback", f"{reason}: deterministic fallback")

    def observe(self, decision: Decision, result: StepResult) -> None:
        traj = self._traj()
        prev = traj.current
        traj.record(decision.action, decision.source, result)
        buffer_empty = not self.buffer  # the authors test it before their LoopGuard clears the buffer
        stuck = self.arbiter.executed(
            decision.action, branch(decision.source), result.observation, result.reward, result.steps
        )
        if stuck is not None:  # logged even with an empty buffer: the LoopGuard also blocks forced Sage
            self.sink.emit(
                BufferClear(step=result.steps, reason=stuck, dropped=[b.action for b in self.buffer.clear()])
            )
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
        done = StepDone(
            traj, decision.action, branch(decision.source), prev, result, buffer_empty=buffer_empty
        )
        handed = [hook.after_step(done) for hook in self.hooks]
        late = [a for out in handed for a in (out.actions if isinstance(out, BufferActions) else out)]
        if stuck is not None and late:
            # The authors' LoopGuard runs after their Critic and clears what it just put in the buffer.
            self.sink.emit(BufferClear(step=result.steps, reason=stuck, dropped=late))
            handed = []
        self._push_critic(handed, result.steps)
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
            if self.authors_loop:  # the authors judge Swift on its top prediction only
                top = self._authors_top_text(proposal)
                return top is None or self.resolver.ground(top, view) is None
            if any(c.action in view.result.valid_actions for c in proposal.candidates):
                return False
            return proposal.top is None or self.resolver.ground(proposal.top, view) is None

        return failed

    def _swift_decision(
        self, chosen: Chosen | None, proposal: Proposal, view: StepView, reason: str
    ) -> Decision:
        """The Swift branch's step: ``chosen`` (labelled swift, procedure or fallback), else - nothing
        resolved - the authors' nearest valid action, or SwiftSage's top text as written (labelled by
        who ranked it there), or the resolver's harmless action (``fallback``)."""
        if chosen is not None:
            return chosen.decision(reason)
        if self.authors_loop:  # never invalid text: the nearest valid action instead
            return self._nearest(proposal, view, f"{reason}; no valid swift prediction")
        action = self.resolver.unresolved(proposal.top, view)
        if action != proposal.top:
            log.info("step %d: no candidate resolved, falling back to '%s'", view.result.steps, action)
            return Decision(action, "fallback", f"{reason}; no candidate resolved: fallback {action}")
        return Chosen.of(proposal.candidates[0], action).decision(reason)

    def _from_buffer(self, view: StepView) -> tuple[Decision | None, bool]:
        """The next buffered action that runs now, and whether the scan ran the buffer dry (every head
        dropped, none left: the authors' drained-buffer point; a clear of heads beyond the scan limit
        is not). Heads that cannot run are dropped. With
        ``buffer.scan_limit`` (the authors: 5) at most that many heads are tried, the rest is cleared;
        with ``buffer.expected_alias`` a head is tried once more as its expected observation when that
        text is itself an action (the authors' guessed-observation alias); with
        ``buffer.defer_unseen_focus`` a focus on a target not seen yet waits for the next teleport."""
        alias = self.cfg.buffer.expected_alias

        def admit(item: Buffered) -> str | None:
            action = self.resolver.resolve(item.action, item.source, view)
            if action is None and alias and authors.is_action_text(item.expected):
                action = self.resolver.resolve(item.expected.lower(), item.source, view)
            return action

        def unseen_focus(item: Buffered) -> bool:
            return item.action.startswith(FOCUS) and self.resolver.ground(item.action, view) is None

        defer = unseen_focus if self.cfg.buffer.defer_unseen_focus else None
        popped = self.buffer.pop_admitted(admit, limit=self.cfg.buffer.scan_limit, defer=defer)
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

    def _push_critic(self, handed: Sequence[HookActions], step: int) -> bool:
        """The actions the ``after_step`` / ``on_buffer_empty`` hooks handed the buffer (the Critic's),
        queued, or replacing the buffer when a hook asks (``BufferActions.replace``); whether any came."""
        batches = [out if isinstance(out, BufferActions) else BufferActions(tuple(out)) for out in handed]
        actions = [a for batch in batches for a in batch.actions]
        if not actions:
            return False
        items = [
            Buffered(a, "critic", "", f"critic @{step} {i}/{len(actions)}") for i, a in enumerate(actions, 1)
        ]
        self._push(items, "critic", step, replace=any(batch.replace for batch in batches))
        return True

    def _push(self, items: Sequence[Buffered], source: str, step: int, *, replace: bool = False) -> None:
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

    def _instinct(self, proposal: Proposal, view: StepView) -> str | None:
        """Swift's top prediction when it is valid now (grounding only, no hooks), for Sage's prompt;
        None when a forcing rule kept Swift out of this iteration (the authors do not run Swift then)."""
        if self.arbiter.forcing:
            return None
        top = self._authors_top_text(proposal)
        return self.resolver.ground(top, view) if top is not None else None

    def _failures(self) -> Sequence[Turn]:
        return self.arbiter.failures_for_prompt(self._traj().turns)

    def _call_sage(
        self, sage: Planner, rule: Rule, proposal: Proposal, view: StepView
    ) -> Decision | SageMiss:
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
            instinct=self._instinct(proposal, view),
        )
        plan = sage.plan(request, self.sink)
        self.arbiter.sage_called(step, state_signature(view.result))
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
        # The authors' buffer takes the plan as parsed, valid now or not: its scan drops what cannot run.
        actions = plan.actions or (plan.parsed if self.authors_loop else ())
        if not actions:
            return SageMiss("empty", "sage gave no valid action")
        planned = min(len(actions), self.buffer.size)
        items = [
            Buffered(a.action, "sage", a.expected, f"sage plan @{step} ({rule.value}) {i}/{planned}")
            for i, a in enumerate(actions, 1)
        ]
        self.buffer.clear()  # a new plan replaces whatever was left of an old one
        self._push(items, "sage", step)
        first, _ = self._from_buffer(view)
        return first or SageMiss("none_runs", "sage's actions were all invalid")
