"""The paper authors' profile of a world: the rules their loop and their Sage prompts read (paper §3;
docs/fidelity.md).

The paper's numbers come from its authors' code, a SwiftSage v1 fork written against ScienceWorld: their
arbitration (``controller.loop: authors``) judges Swift after their action rewrites, counts failure
messages with their phrase test and limits focus actions per task; their Sage prompts
(``controller.sage.prompt: authors``) write actions in a FUNC(args) grammar and show demo trajectories of
the task. Those rules are facts about ScienceWorld, so ScienceWorld's package implements them
(``fastslow.env.scienceworld.authors``) and the controller reaches them as ``WorldSemantics.authors``. A
world without such a profile answers None, and a configuration that asks for the authors' loop or
prompts is refused on it (``fastslow.build``).

The types the controller reads back (demo trajectories, history lines) are defined here, beside the
Protocol, so that the controller names no world.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from fastslow.core.trajectory import Trajectory, Turn


class HistoryGrammarError(ValueError):
    """A history action with no FUNC form: the authors' grounding prompt cannot be built (their
    ``formalize_action`` returns None and the next line fails), so their Sage round ends as an error."""


@dataclass(frozen=True)
class Demo:
    """One solved train episode, as the authors' prompts show it."""

    task_id: int
    variation: int
    task: str
    """The task description without the world's header ("Your task is to ...")."""
    lines: tuple[str, ...]
    """Action lines ``- (in <room>) Action: FUNC(args) --> <observation>`` and "Repeat" lines."""

    def as_json(self) -> dict[str, Any]:
        return {"variation": self.variation, "task": self.task, "lines": list(self.lines)}


@dataclass(frozen=True)
class PlanEntry:
    """One line of the planning prompt's history (the authors' numbered observations)."""

    observation: str = ""
    room: str = ""
    action: str = ""
    """Empty in lite form and for moves."""
    moved: bool = False
    """A move between rooms: the observation alone."""
    repeats: int = 0
    """> 0: "the step above was repeated this many times" (no observation)."""


@dataclass(frozen=True)
class GroundEntry:
    """One line of the grounding prompt's history: an action in FUNC form, or a repeat count."""

    room: str = ""
    func: str = ""
    observation: str = ""
    repeats: int = 0


class AuthorsProfile(Protocol):
    """What the authors' loop (``controller.authors``), resolver and Sage prompts (``controller.sage``)
    ask of a world. Pure functions of strings and trajectories; no episode state."""

    # -- arbitration (their eval loop) ---------------------------------------------------------------
    def rewrite(self, action: str, valid: Collection[str], look: str, inventory: str) -> str:
        """Their rewrites of a proposed action before the exact membership test."""
        ...

    def failed(self, observation: str) -> bool:
        """Their failure-message test (a phrase test on the observation)."""
        ...

    def current_room(self, look: str) -> str | None:
        """The room a look names, as their loop reads it; None when it names none."""
        ...

    def deterministic_fallback(self, valid: Collection[str], room: str | None) -> str | None:
        """Their last-resort action when neither Swift nor Sage gives one."""
        ...

    def is_action_text(self, text: str) -> bool:
        """Whether a buffered item's expected observation reads as an action (their alias rule)."""
        ...

    @property
    def loopbreak_actions(self) -> tuple[str, ...]:
        """Their loop-break fallback's actions after a gate-drop loop, in order of preference."""
        ...

    @property
    def wait_replies(self) -> tuple[str, ...]:
        """Observation phrases (lower case) their memory gate reads as a wait: a rewarded one is a
        delayed reward."""
        ...

    def waits(self, action: str) -> bool:
        """Whether an action (lower case) is one their LoopGuard lets repeat while time passes."""
        ...

    def relocates(self, action: str) -> bool:
        """Whether an action is the move their Gate-1 defers a focus on an unseen target behind (a
        buffered action's text as written)."""
        ...

    def focus_targets(self, task_description: str) -> list[str]:
        """What the description names after the world's commitment verb."""
        ...

    def focus_limit(self, task_id: int, task_description: str) -> int:
        """How many rewarded commitments the task takes."""
        ...

    def clean_unknown_substance(self, text: str) -> str:
        """``text`` with their "unknown substance" naming folded, for target comparisons."""
        ...

    # -- their FUNC(args) action grammar -------------------------------------------------------------
    def to_func(self, action: str) -> str | None:
        """An action in FUNC(args) form; None outside the grammar."""
        ...

    def from_func(self, text: str) -> str | None:
        """The action a FUNC(args) call names; None when it names none."""
        ...

    def func_call_pattern(self) -> str:
        """A FUNC(args) call as a regular expression (constrained decoding)."""
        ...

    def func_forms(self, actions: Iterable[str]) -> dict[str, str]:
        """``{action: FUNC form}`` of the actions that have one."""
        ...

    # -- their Sage prompts' content -----------------------------------------------------------------
    def demos(self, task_id: int) -> tuple[Demo, ...]:
        """The shipped demo trajectories of a task (built from train episodes only); () when none."""
        ...

    def plan_history(self, traj: Trajectory, lite: bool) -> list[PlanEntry]:
        """The planning prompt's history, oldest first."""
        ...

    def ground_history(
        self, traj: Trajectory, demo_lines: Sequence[str], last: int, strict: bool
    ) -> list[GroundEntry]:
        """The grounding prompt's history, the last ``last`` entries (``HistoryGrammarError`` with
        ``strict`` on an action outside the grammar)."""
        ...

    def clean_look(self, look: str, lite: bool) -> list[str]:
        """A look as the prompts list it."""
        ...

    def focused(self, traj: Trajectory) -> list[str]:
        """What the episode has committed to with a reward, as targets."""
        ...

    def failure_messages(self, failures: Sequence[Turn], traj: Trajectory) -> list[tuple[str, str, str]]:
        """(room, action, observation) of each failure since Sage last ran, duplicates once."""
        ...

    def action_types(self, demo_lines: Sequence[str]) -> list[tuple[str, str]]:
        """(signature, description) of the action types the grounding prompt allows."""
        ...

    def focus_whitelist(self, task: str) -> list[str]:
        """The only things the prompts allow a commitment on."""
        ...
