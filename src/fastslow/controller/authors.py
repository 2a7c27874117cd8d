"""The paper's arbitration as its authors' code runs it (``controller.loop: authors``).

The paper (§3) describes SwiftSage's arbitration; its numbers come from the authors' final loop
(joaommeneses/Autonomous-Agent-with-Adaptive-Memory: ``eval_agent_fast_slow.py`` and
``eval_utils.findValidActionWithSystem2``), which differs from SwiftSage's text at points that change
results. ``escalation.SwiftSageArbiter`` is SwiftSage as described; this module is the authors' loop,
used by the ``paper*``, ``baseline``, ``amm``, ``srm`` and ``full`` configurations (docs/fidelity.md,
rows A1-A9):

- Swift is judged on its top prediction only, after the authors' rewrites (``AuthorsProfile.rewrite``); a
  top prediction repeating a ``wait`` right after a wait gives way to the next one.
- Forcing rules (they ignore the cooldown): two loop iterations without an env step, two failure
  messages since Sage last ran (cumulative, the authors' strict phrase test ``AuthorsProfile.failed``),
  or - without SRM - a Swift focus tried before Sage has focused (``FocusGate``).
- No valid Swift action: Sage at once, unless Sage ran in the last two steps; a valid one: Sage only on
  no progress (enough actions, Sage not recent, no reward lately, the action repeats a recent one).
- Sage is held back after two consecutive calls, at most once per env step, and the forcing rules are
  off for a step after the LoopGuard fired (repeated observation without reward, repeated Sage replans in
  one state, a wait/thermometer loop: the buffer is cleared).
- Nothing invalid is executed: held-back Sage -> the first valid of Swift's top three non-focus
  predictions, else the nearest valid action by embedding; Sage's failure -> the nearest valid action to
  Swift's top; Sage already ran this step and nothing it planned can run -> the authors' deterministic
  fallback (``AuthorsProfile.deterministic_fallback``).
- With SRM's authors profile (``srm.gate.drop_as_failure``, paper §3.2), a valid Swift action Gate-1
  drops is a failure message (``GATE_INVALID:<reason>``) and the iteration ends without an env step,
  so the no-step rule forces Sage on the next one; a second drop in the same env step is their
  gate-drop loop: Sage is forced once more (past the consecutive-call limit and the LoopGuard) if it has
  not run for this step, else their loop-break fallback runs (``AuthorsProfile.loopbreak_actions``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from fastslow.agents.base import Decision, EpisodeContext
from fastslow.controller.arbiter import (
    ArbiterBase,
    Block,
    Chosen,
    Profile,
    Rule,
    SageMiss,
    SwiftTurn,
    Timestep,
    branch,
    top_prediction,
)
from fastslow.controller.config import ControllerConfig, EscalationConfig
from fastslow.controller.parsing import ParsedAction
from fastslow.controller.resolver import Grounding, IndexedView
from fastslow.controller.sage import SagePlan
from fastslow.core.authors import AuthorsProfile
from fastslow.core.hooks import NO_ACTIONS, BufferActions, Candidate, LoopHook, StepDone, StepView, refuse
from fastslow.core.proposal import Proposal
from fastslow.core.semantics import WorldSemantics
from fastslow.core.step import StepResult
from fastslow.core.trajectory import Turn
from fastslow.errors import UsageError

STUCK_K = 3
"""The LoopGuard's streak length (the authors' ``STUCK_K``)."""
FOCUS_FREE_TRIES = 3
"""A Swift focus outside the task's focus targets runs on its third try (the authors' focus gate)."""
SAME_STATE_REPLANS = 2
"""Sage replanning this many times in one state counts as stuck (the LoopGuard)."""
GATE_DROP_LOOP = 2
"""Gate-1 drops of Swift's action in one env step that make the authors' gate-drop loop."""


def authors_grounding(text: str, view: IndexedView, cutoff: float) -> str | None:
    """The authors' grounding (``resolver.Grounding``; ``cutoff`` is not read): their rewrites
    (``AuthorsProfile.rewrite``), then exact membership."""
    result, profile = view.result, view.traj.semantics.authors
    if profile is None:  # configuration checks refuse the authors' loop in such a world
        raise UsageError(f"the authors' grounding does not exist for {view.traj.semantics.name}")
    action = profile.rewrite(text, view.valid_set, result.look, result.inventory)
    return action if action in view.valid_set else None


def state_signature(result: StepResult, profile: AuthorsProfile) -> tuple[str, str, str]:
    """The authors' "same state" for Sage replans: room, look (200 chars), inventory (80 chars)."""
    return (profile.current_room(result.look) or "", result.look[:200], result.inventory[:80])


@dataclass
class AuthorsArbiter(ArbiterBase):
    """The authors' loop (``controller.loop: authors``; ``arbiter.Arbiter``): their counters over the
    loop, the rules that read them, and their fallbacks."""

    cfg: EscalationConfig
    profile: AuthorsProfile
    """The world's authors' rules (``WorldSemantics.authors``)."""
    commitment: str
    """The world's commitment verb their focus rules count (``WorldSemantics.commitment_verb``)."""
    actions: list[str] = field(default_factory=list)
    rewards: list[int] = field(default_factory=list)
    failures: list[Turn] = field(default_factory=list)
    """Failure messages since Sage last ran (the authors' ``failed_messages``: cleared only by Sage)."""
    no_step: int = 0
    """Loop iterations without an env step (the authors' ``no_action_done``; 1 in a plain iteration)."""
    sage_calls: int = 0
    last_sage_step: int = -1
    """The authors' ``last_time_system2`` (-1 before the first call: Sage is "recent" at steps 0-1)."""
    consecutive_sage: int = 0
    sage_calls_this_step: int = 0
    forced_off_until: int = -1
    """The LoopGuard turned the forcing rules off before this step (the authors' disable_system2 step)."""
    focus: FocusGate | None = None
    """The non-SRM focus gate whose state the focus forcing rule reads (None: no gate)."""
    # the LoopGuard's streaks
    no_reward_streak: int = 0
    repeat_obs_streak: int = 0
    repeat_action_streak: int = 0
    same_state_replans: int = 0
    _last_obs: str = ""
    _last_action: str = ""
    _last_sage_state: tuple[str, str, str] | None = None
    gate_drops: int = 0
    """Swift actions Gate-1 dropped in this env step (the authors' ``gate_drop_streak``)."""
    _step: int = -1
    _forced: tuple[Rule, str] | None = None
    _drop_loop: bool = False
    """The gate-drop loop forces Sage at the next iteration (the authors' ``force_system2_once``)."""
    _drop_loop_now: bool = False
    """This iteration's forcing is the gate-drop loop's: no consecutive-call limit holds it back."""
    _gate_hold: bool = False
    """Gate-1 dropped Swift's action in this iteration: no arbitration rule sends it to Sage."""

    grounding: str | Grounding = authors_grounding
    """Their rewrites, then exact membership (``authors_grounding``)."""
    hooks: Sequence[LoopHook] = ()
    """The focus gate, when on (``controller.focus_gate``)."""

    @staticmethod
    def for_episode(
        cfg: EscalationConfig, semantics: WorldSemantics, focus_gate: bool, task_id: int, description: str
    ) -> AuthorsArbiter:
        """The arbiter of one episode; with ``focus_gate`` its ``FocusGate`` is the first hook.
        ``UsageError`` in a world without the authors' profile or a commitment verb (configuration
        checks refuse ``controller.loop: authors`` there before a run starts)."""
        profile, commitment = semantics.authors, semantics.commitment_verb
        if profile is None or commitment is None:
            raise UsageError(f"the authors' loop does not exist for {semantics.name}")
        arbiter = AuthorsArbiter(cfg, profile, commitment)
        if focus_gate:
            arbiter.focus = FocusGate(task_id, description, profile, commitment)
            arbiter.hooks = (arbiter.focus,)
        return arbiter

    def start_iteration(self, step: int, iteration: int) -> str | None:
        """A new env step's first iteration restarts the per-step counters; a later one counts the
        iteration before it, which ended without an env step (the authors' ``no_action_done``). The
        authors test the forcing rules at the top of each loop iteration, before Swift runs (a focus
        Swift tries in this iteration forces Sage in the next one); returns the forced iteration's label
        (``forced_label``) or None."""
        if iteration == 0:
            if step != self._step:
                self._step = step
                self.sage_calls_this_step = 0
                self.no_step = 1
                self.gate_drops = 0
        else:
            self.no_step += 1
        self._gate_hold = False
        self._drop_loop_now = self._drop_loop
        self._drop_loop = False
        if self._drop_loop_now:
            # Their once-only forcing is applied after the consecutive-call and LoopGuard rules.
            self._forced = Rule.NO_STEP, "gate-drop loop: Gate-1 dropped Swift's action twice this step"
        else:
            self._forced = self.forced(step)
        return self.forced_label(step)

    def gate_dropped(self, action: str, failure: str, step: int, *, sage_available: bool) -> str:
        """Gate-1 dropped Swift's valid ``action``; returns what the iteration does: ``retry`` (no env
        step: the no-step rule forces Sage next), ``sage`` (the step's second drop with Sage still
        available: Sage is forced at the next iteration) or ``fallback`` (the second drop with Sage
        already run for this step: the loop-break fallback acts now)."""
        # Swift's action was chosen before the gate judged it: the consecutive-Sage streak ends there.
        self._swift_acted()
        self.failures.append(Turn(step, action, "swift", failure, 0, 0))
        self.gate_drops += 1
        self._gate_hold = True
        if self.gate_drops < GATE_DROP_LOOP:
            return "retry"
        if sage_available and self.sage_calls_this_step < 1:
            self._drop_loop = True
            return "sage"
        return "fallback"

    @property
    def forcing(self) -> bool:
        """A forcing rule holds for this iteration: the authors do not ask Swift (its focus is not tried)."""
        return self._forced is not None

    def forced(self, step: int) -> tuple[Rule, str] | None:
        if step < self.forced_off_until:
            return None
        if self.no_step >= 2:
            return Rule.NO_STEP, f"{self.no_step - 1} loop iteration(s) without an env step"
        if len(self.failures) >= 2:
            return Rule.FAILURE_MESSAGES, f"{len(self.failures)} failure messages since Sage last ran"
        if self.focus is not None and self.focus.swift_tries >= 1 and not self.focus.sage_focused:
            return Rule.FOCUS_BEFORE_SAGE, "Swift tried a focus before Sage has focused"
        return None

    def check(self, swift_action: str | None, step: int) -> tuple[Rule, str] | None:
        """The rule that sends this iteration to Sage; None keeps Swift's (valid) top action."""
        if self._forced is not None:
            return self._forced
        if self._gate_hold:
            return None  # the authors' final gate ends the iteration before any rule is asked
        if swift_action is None:
            return Rule.INVALID_ACTION, "Swift's top prediction is not a valid action"
        cfg = self.cfg
        since = step - self.last_sage_step
        keep = (
            len(self.actions) + 1 < cfg.min_actions  # the authors' history starts with "look around"
            or since < cfg.sage_interval
            or any(r > 0 for r in self.rewards[-cfg.reward_window :])
            or swift_action not in self.actions[-cfg.repeat_window :]
        )
        if keep:
            return None
        return Rule.NO_PROGRESS, f"no reward lately and '{swift_action}' repeats a recent action"

    def blocked(self, step: int, rule: Rule) -> Block | None:
        if self.sage_calls_this_step >= 1:
            return Block.PER_STEP
        if self._drop_loop_now:
            return None
        if self.cfg.max_consecutive_sage and self.consecutive_sage >= self.cfg.max_consecutive_sage:
            return Block.CONSECUTIVE
        if rule is Rule.INVALID_ACTION and step - self.last_sage_step <= self.cfg.sage_cooldown:
            return Block.COOLDOWN
        return None

    def sage_planned(self, plan: SagePlan, step: int, result: StepResult) -> Sequence[ParsedAction]:
        """Count the call (the failures since Sage last ran restart, the loop goes round once more,
        same-state replans count towards the LoopGuard). Their buffer takes the plan as parsed, valid
        now or not: its scan drops what cannot run."""
        state = state_signature(result, self.profile)
        self.sage_calls += 1
        self.sage_calls_this_step += 1
        self.last_sage_step = step
        self.consecutive_sage += 1
        self.failures.clear()
        self.no_step += 1  # the authors' loop goes round once more to read the new buffer
        self.same_state_replans = self.same_state_replans + 1 if state == self._last_sage_state else 1
        self._last_sage_state = state
        return plan.actions or plan.parsed

    def _swift_acted(self) -> None:
        """Swift's (or a fallback's) action was chosen: the consecutive-Sage and replan streaks end."""
        self.consecutive_sage = 0
        self.same_state_replans = 0

    def failures_for_prompt(self, turns: Sequence[Turn]) -> list[Turn]:
        return list(self.failures)

    def forced_label(self, step: int) -> str | None:
        """A forced iteration is named after the focus rule whenever it holds (the authors assign its
        reason last), which exempts the iteration from AMM's T1."""
        if self._forced is None:
            return None
        if self.focus is not None and self.focus.swift_tries >= 1 and not self.focus.sage_focused:
            return Rule.FOCUS_BEFORE_SAGE.value
        return self._forced[0].value

    def swift_failed(self, proposal: Proposal, now: Timestep) -> bool:
        """The authors judge Swift on its top prediction only, after their rewrites."""
        top = top_prediction(proposal, now.traj)
        return top is None or now.resolver.ground(top.action, now.view) is None

    def swift_choice(self, proposal: Proposal, now: Timestep) -> tuple[Chosen | None, str | None]:
        """Swift's top prediction (the next one if it repeats a ``wait`` right after a wait), after their
        rewrites, and the valid action a hook held back: the focus gate's focus, or one whose refusal is
        a failure message (Gate-1 with ``srm.gate.drop_as_failure``)."""
        ranked = top_prediction(proposal, now.traj)
        if ranked is None:
            return None, None
        top = ranked.action
        candidate = now.resolver.candidate(top, "swift", now.view)
        if candidate.refused_by == "focus_gate":
            return None, now.resolver.ground(top, now.view)
        if candidate.failure is None:
            return (Chosen.of(ranked, candidate.action) if candidate.action is not None else None), None
        grounded = now.resolver.ground(top, now.view)
        if grounded is None:  # not valid as the authors test it: their invalid-action path, not the gate
            return None, None
        outcome = self.gate_dropped(grounded, candidate.failure, now.step, sage_available=now.sage_available)
        pick = self._loopbreak(now) if outcome == "fallback" else None
        return (pick, None) if pick is not None else (None, grounded)

    def held_back(self, blocked: Block, rule: Rule, turn: SwiftTurn, now: Timestep) -> Decision:
        """Sage already ran for this step: the deterministic fallback; else the authors' held-back Swift:
        the first valid of its top three non-focus predictions, else the nearest valid action."""
        reason = f"{rule.value} but sage {blocked.value}"
        if blocked is Block.PER_STEP:
            return self.exhausted(reason, now)
        candidates = turn.proposal.candidates
        trial = now.first([c for c in candidates if not c.action.startswith(self.commitment)][:3])
        if trial is not None:
            return trial.decision(f"{reason}: {trial.actor}'s first valid non-focus prediction")
        return self._nearest(turn.proposal, f"{reason}: no valid swift prediction", now)

    def unresolved(self, proposal: Proposal, reason: str, now: Timestep) -> Decision:
        """Never invalid text: the nearest valid action instead."""
        return self._nearest(proposal, f"{reason}; no valid swift prediction", now)

    def sage_missed(self, miss: SageMiss, rule: Rule, turn: SwiftTurn, now: Timestep) -> Decision:
        """A planning error or an empty plan: the nearest valid action to Swift's top. A plan none of
        whose actions can run: their loop goes round once more, and Sage has already run for this env
        step, so their deterministic fallback acts."""
        if miss.kind in ("error", "empty"):
            return self._nearest(turn.proposal, f"{rule.value}: {miss.why}", now)
        return self.exhausted(f"{rule.value}: {miss.why}", now)

    def exhausted(self, reason: str, now: Timestep) -> Decision:
        """The authors' deterministic fallback (look around, inventory, a move, else the first action)."""
        result = now.view.result
        room = self.profile.current_room(result.look)
        left = set(result.valid_actions)
        for _ in range(5):  # a hook (Gate-1) may refuse the pick: the next one in the same order
            pick = self.profile.deterministic_fallback(left, room)
            if pick is None:
                break
            action = now.resolver.resolve(pick, "swift", now.view)
            if action is not None:
                return Decision(action, "fallback", f"{reason}: deterministic fallback")
            left.discard(pick)
        return Decision(
            now.resolver.unresolved(None, now.view), "fallback", f"{reason}: deterministic fallback"
        )

    def _nearest(self, proposal: Proposal, reason: str, now: Timestep) -> Decision:
        """The valid action nearest to Swift's rewritten top prediction by sentence embedding (the
        authors' SBERT search; ``fastslow.models.embeddings``: MiniLM, or its lexical stand-in)."""
        from fastslow.models.embeddings import default_embedder, similarity_sums

        result = now.view.result
        top = top_prediction(proposal, now.traj)
        actions = list(result.valid_actions)
        if top is None or not actions:
            return self.exhausted(f"{reason}; no prediction to search from", now)
        query = self.profile.rewrite(top.action, now.view.valid_set, result.look, result.inventory)
        embedder = default_embedder("auto")
        sums = similarity_sums([query], actions, embedder)
        # Best first; a stable sort keeps the valid set's order among equal scores.
        ranked = [actions[i] for i in sorted(range(len(actions)), key=lambda i: -float(sums[i]))]
        action = now.resolver.first(ranked[:20], "swift", now.view)
        if action is None:
            return self.exhausted(f"{reason}; no near valid action may run", now)
        return Decision(action, "fallback", f"{reason}: nearest valid to '{query}' ({embedder.name})")

    def _loopbreak(self, now: Timestep) -> Chosen | None:
        """The loop-break fallback after a gate-drop loop: the first of look around, inventory, wait
        that is valid and passes the hooks, else the deterministic fallback's pick (None: nothing
        passes, the iteration ends without a step)."""
        result = now.view.result
        picks = [a for a in self.profile.loopbreak_actions if a in result.valid_actions]
        if not picks:
            room = self.profile.current_room(result.look)
            pick = self.profile.deterministic_fallback(set(result.valid_actions), room)
            picks = [pick] if pick is not None else []
        action = now.resolver.first(picks, "swift", now.view)
        return Chosen(action, "fallback") if action is not None else None

    def executed(self, decision: Decision, result: StepResult) -> str | None:
        """Count an executed step; returns why the LoopGuard clears the buffer, or None."""
        action, source = decision.action, branch(decision.source)
        observation, reward, step = result.observation, result.reward, result.steps
        if source == "swift":
            self._swift_acted()
        self.actions.append(action)
        self.rewards.append(reward)
        if self.profile.failed(observation):
            self.failures.append(Turn(step, action, source, observation, 0, reward))
        self.no_reward_streak = self.no_reward_streak + 1 if reward <= 0 else 0
        obs = " ".join(observation.split())  # the authors compare sanitised text: whitespace aside
        norm = action.strip().lower()
        self.repeat_obs_streak = self.repeat_obs_streak + 1 if obs == self._last_obs else 1
        self.repeat_action_streak = self.repeat_action_streak + 1 if norm == self._last_action else 1
        self._last_obs, self._last_action = obs, norm
        waiting = self.profile.waits(norm)
        reason = None
        if self.repeat_obs_streak >= STUCK_K and self.no_reward_streak >= STUCK_K:
            reason = f"the same observation {self.repeat_obs_streak} times without reward"
        elif self.same_state_replans >= SAME_STATE_REPLANS and source == "sage":
            reason = f"Sage replanned {self.same_state_replans} times in the same state"
        elif waiting and self.repeat_action_streak >= STUCK_K and self.repeat_obs_streak >= STUCK_K:
            reason = f"'{action}' {self.repeat_action_streak} times with the same observation"
        if reason is not None:
            # The authors' step index of this step is step - 1; forcing stays off for the next one.
            self.forced_off_until = max(self.forced_off_until, step - 1 + self.cfg.sage_cooldown)
            self.same_state_replans = 0
            return f"LoopGuard: {reason}"
        return None


def authors_arbiter(
    cfg: ControllerConfig, ctx: EpisodeContext, first: StepResult, markers: tuple[str, ...] | None
) -> AuthorsArbiter:
    """One episode's arbiter of the authors' loop (``arbiter.ArbiterFactory``; their failure test is
    their own phrase list, so the run's ``markers`` are not read), with ``controller.focus_gate``."""
    return AuthorsArbiter.for_episode(
        cfg.escalation, ctx.semantics, cfg.focus_gate, ctx.task.task_id, first.task_description
    )


PROFILE = Profile(authors_arbiter, authors_only=True)
"""The authors' profile (``controller.loop: authors``), as the registry in ``fastslow.build`` holds it."""


class FocusGate(LoopHook):
    """The authors' focus rules without SRM (with SRM, Gate-1's focus limit replaces them).

    Before Sage has focused, a Swift focus runs only if its target names one of the task's focus targets
    (``focus on X`` phrases of the description) or on Swift's third focus try; once the task's focus
    count of rewarded focus actions is reached (``AuthorsProfile.focus_limit``: ScienceWorld's
    ``valid.FOCUS_COUNT``, or the description's number of "focus" if larger), every further focus is
    dropped."""

    def __init__(self, task_id: int, description: str, profile: AuthorsProfile, commitment: str) -> None:
        self.profile, self.commitment = profile, commitment
        self.targets = [profile.clean_unknown_substance(t) for t in profile.focus_targets(description)]
        self.limit = profile.focus_limit(task_id, description)
        self.swift_tries = 0
        self.sage_focused = False
        self.useful: list[str] = []

    @property
    def done(self) -> bool:
        return len(self.useful) >= self.limit

    def before_action(self, candidate: Candidate, view: StepView) -> Candidate:
        action = candidate.answers or candidate.action
        if action is None or not action.startswith(self.commitment):
            return candidate
        if self.done:
            return refuse(candidate, "focus_done")
        if candidate.source != "swift" or self.sage_focused:
            return candidate
        self.swift_tries += 1
        named = any(t in self.profile.clean_unknown_substance(action) for t in self.targets)
        if named or self.swift_tries >= FOCUS_FREE_TRIES:
            return candidate
        return refuse(candidate, "focus_gate")

    def after_step(self, step: StepDone) -> BufferActions:
        if step.action.startswith(self.commitment):
            if step.source == "sage":
                self.sage_focused = True
            if step.result.reward > 0:
                self.useful.append(step.action)
        return NO_ACTIONS
