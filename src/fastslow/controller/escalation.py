"""SwiftSage's arbitration between Swift and Sage (paper §3, baseline controller).

Swift acts by default. Sage is called when a forcing rule fires (Swift has no valid action twice in a row,
two failure messages in a row, or Swift wants to ``focus`` before Sage has planned) or when progress has
stalled (enough actions taken, Sage not called recently, no reward lately, and Swift repeats one of its
last actions). Sage is held back by a cooldown and after consecutive calls, so it cannot take over.
The rules read counters kept here from the executed steps; the controller only asks ``check``.

A failure message is what SwiftSage counted as one: ScienceWorld's no-match reply or a refusal
(``Feedback.invalid`` / ``failure`` of the world's ``classify_feedback``, with the run's
``env.failure_markers``).
An "Ambiguous request" is not one: the controller answers it at the next step.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from fastslow.agents.base import Decision, EpisodeContext
from fastslow.controller.arbiter import ArbiterBase, Block, Profile, Rule, branch, is_failure
from fastslow.controller.config import ControllerConfig, EscalationConfig
from fastslow.controller.parsing import ParsedAction
from fastslow.controller.sage import SagePlan
from fastslow.core.semantics import WorldSemantics
from fastslow.core.step import StepResult

log = logging.getLogger(__name__)


@dataclass
class SwiftSageArbiter(ArbiterBase):
    """SwiftSage's arbitration (``controller.loop: swiftsage``; ``arbiter.Arbiter``): counters over the
    executed steps and the rules that read them (``check``, ``blocked``). Everything else is
    ``ArbiterBase``'s SwiftSage-shaped default: Swift acts whenever Sage does not, and text no candidate
    grounds is sent as Swift wrote it unless Gate-1 is on."""

    cfg: EscalationConfig
    semantics: WorldSemantics
    """What the world's text means: its failure messages, its focus-like commitment."""
    markers: tuple[str, ...] | None = None
    """The run's failure markers (``env.failure_markers``) the failure streak counts with (None: the
    world's default)."""
    actions: list[str] = field(default_factory=list)
    rewards: list[int] = field(default_factory=list)
    no_action_streak: int = 0
    """Consecutive Swift proposals without a valid action."""
    failure_streak: int = 0
    """Consecutive failure observations since the last Sage call."""
    sage_calls: int = 0
    last_sage_step: int | None = None
    consecutive_sage: int = 0
    """Sage calls since the last action Swift chose."""

    def check(self, swift_action: str | None, step: int) -> tuple[Rule, str] | None:
        """The rule that sends this timestep to Sage, with a human-readable detail; None keeps Swift.

        ``swift_action`` is Swift's choice after grounding (None: nothing valid); ``step`` is the
        number of env steps taken so far."""
        cfg = self.cfg
        if swift_action is None:
            self.no_action_streak += 1
            if cfg.no_action_streak and self.no_action_streak >= cfg.no_action_streak:
                return (
                    Rule.INVALID_ACTION,
                    f"{self.no_action_streak} Swift proposals in a row had no valid action",
                )
        else:
            self.no_action_streak = 0
        if cfg.failure_streak and self.failure_streak >= cfg.failure_streak:
            return Rule.FAILURE_MESSAGES, f"{self.failure_streak} failure messages in a row"
        commit = self.semantics.commitment_verb
        if (
            cfg.focus_needs_sage
            and self.sage_calls == 0
            and swift_action
            and commit
            and swift_action.startswith(commit)
        ):
            return Rule.FOCUS_BEFORE_SAGE, f"Swift wants '{swift_action}' before Sage has planned"
        if swift_action is None:
            return None
        since_sage = step - self.last_sage_step if self.last_sage_step is not None else step
        keep = (
            len(self.actions) < cfg.min_actions
            or since_sage < cfg.sage_interval
            or any(r > 0 for r in self.rewards[-cfg.reward_window :])
            or swift_action not in self.actions[-cfg.repeat_window :]
        )
        if keep:
            return None
        return (
            Rule.NO_PROGRESS,
            f"no reward in {cfg.reward_window} steps and '{swift_action}' repeats one of the last "
            f"{cfg.repeat_window} actions",
        )

    def blocked(self, step: int, rule: Rule) -> Block | None:
        """Whether Sage may be called at this timestep (cooldown, consecutive-call limit)."""
        if self.cfg.max_consecutive_sage and self.consecutive_sage >= self.cfg.max_consecutive_sage:
            return Block.CONSECUTIVE
        if self.last_sage_step is not None and step - self.last_sage_step < max(self.cfg.sage_cooldown, 1):
            # max(..., 1): never two Sage calls for the same env step, whatever the cooldown says.
            return Block.COOLDOWN
        return None

    def sage_planned(self, plan: SagePlan, step: int, result: StepResult) -> Sequence[ParsedAction]:
        """Count the call; the streaks restart. The buffer takes Sage's planned actions (the base's)."""
        self.sage_calls += 1
        self.last_sage_step = step
        self.consecutive_sage += 1
        # The failure and no-action streaks describe what happened since Sage last planned.
        self.failure_streak = 0
        self.no_action_streak = 0
        return super().sage_planned(plan, step, result)

    def executed(self, decision: Decision, result: StepResult) -> str | None:
        """Count an executed step; this loop never clears the buffer."""
        self.actions.append(decision.action)
        self.rewards.append(result.reward)
        if branch(decision.source) == "swift":
            self.consecutive_sage = 0
        self.failure_streak = (
            self.failure_streak + 1 if is_failure(self.semantics, result.observation, self.markers) else 0
        )
        return None


def swiftsage_arbiter(
    cfg: ControllerConfig, ctx: EpisodeContext, first: StepResult, markers: tuple[str, ...] | None
) -> SwiftSageArbiter:
    """One episode's SwiftSage arbiter (``arbiter.ArbiterFactory``)."""
    return SwiftSageArbiter(cfg.escalation, ctx.semantics, markers)


PROFILE = Profile(swiftsage_arbiter)
"""SwiftSage's profile (``controller.loop: swiftsage``), as the registry in ``fastslow.build`` holds it."""
