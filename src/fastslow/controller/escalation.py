"""SwiftSage's arbitration between Swift and Sage (paper §3, baseline controller).

Swift acts by default. Sage is called when a forcing rule fires (Swift has no valid action twice in a row,
two failure messages in a row, or Swift wants to ``focus`` before Sage has planned) or when progress has
stalled (enough actions taken, Sage not called recently, no reward lately, and Swift repeats one of its
last actions). Sage is held back by a cooldown and after consecutive calls, so it cannot take over.
The rules read counters kept here from the executed steps; the controller only asks ``check``.

A failure message is what SwiftSage counted as one: ScienceWorld's no-match reply or a refusal
(``Feedback.invalid`` / ``failure`` of ``fastslow.env.semantics``, with the run's ``env.failure_markers``).
An "Ambiguous request" is not one: the controller answers it at the next step.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from fastslow.controller.config import EscalationConfig
from fastslow.core.trajectory import Turn
from fastslow.env.semantics import DEFAULT_FAILURE_MARKERS, SWIFTSAGE_FAILURES, classify_feedback


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


def is_failure(observation: str, markers: Iterable[str] = DEFAULT_FAILURE_MARKERS) -> bool:
    """SwiftSage's failure message test: ScienceWorld's no-match reply, or a refusal (a marker word)."""
    return classify_feedback(observation, markers) in SWIFTSAGE_FAILURES


@dataclass
class Arbiter:
    """Counters over the executed steps, and the rules that read them."""

    cfg: EscalationConfig
    markers: tuple[str, ...] = DEFAULT_FAILURE_MARKERS
    """The run's failure markers (``env.failure_markers``) the failure streak counts with."""
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
        if (
            cfg.focus_needs_sage
            and self.sage_calls == 0
            and swift_action
            and swift_action.startswith("focus on")
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

    def begin(self, step: int) -> None:
        """A timestep starts (the authors' arbiter counts loop iterations; nothing to do here)."""

    forcing = False
    """Only the authors' arbiter decides on Sage before Swift's choice is known."""

    def start_iteration(self, step: int) -> None:
        """A loop iteration starts (the authors' arbiter tests its forcing rules here)."""

    def iteration_without_step(self) -> None:
        """Never happens in this controller's loop: every iteration ends in an action."""

    def swift_acted(self) -> None:
        """Swift's action was chosen (counted from the executed step in ``executed``)."""

    def failures_for_prompt(self, turns: Sequence[Turn]) -> list[Turn]:
        """The failed steps Sage's prompt lists: every failure message of the episode so far."""
        return [t for t in turns if is_failure(t.observation, self.markers)]

    def blocked(self, step: int, rule: Rule) -> Block | None:
        """Whether Sage may be called at this timestep (cooldown, consecutive-call limit)."""
        if self.cfg.max_consecutive_sage and self.consecutive_sage >= self.cfg.max_consecutive_sage:
            return Block.CONSECUTIVE
        if self.last_sage_step is not None and step - self.last_sage_step < max(self.cfg.sage_cooldown, 1):
            # max(..., 1): never two Sage calls for the same env step, whatever the cooldown says.
            return Block.COOLDOWN
        return None

    def sage_called(self, step: int, state: object = None) -> None:
        self.sage_calls += 1
        self.last_sage_step = step
        self.consecutive_sage += 1
        # The failure and no-action streaks describe what happened since Sage last planned.
        self.failure_streak = 0
        self.no_action_streak = 0

    def executed(self, action: str, source: str, observation: str, reward: int, step: int) -> str | None:
        """Count an executed step; returns why the buffer must be cleared (never, in this arbiter)."""
        self.actions.append(action)
        self.rewards.append(reward)
        if source == "swift":
            self.consecutive_sage = 0
        self.failure_streak = self.failure_streak + 1 if is_failure(observation, self.markers) else 0
        return None
