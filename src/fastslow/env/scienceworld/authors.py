"""ScienceWorld's ``AuthorsProfile`` (``fastslow.core.authors``): the paper authors' rules as their code
applies them to ScienceWorld, gathered from the modules that hold them.

- their eval loop's rewrites, failure test, room reading, fallback and focus limits: ``valid``;
- their FUNC(args) action grammar: ``func_actions``;
- their Sage prompts' content (histories, looks, failures, action types): ``authors_prompts``;
- the demo trajectories the prompts show, built from train gold paths: ``demos``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING

from fastslow.core.authors import Demo, GroundEntry, PlanEntry
from fastslow.env.scienceworld import authors_prompts, demos, func_actions, valid
from fastslow.env.scienceworld.semantics import TELEPORT

if TYPE_CHECKING:
    from fastslow.core.authors import AuthorsProfile
    from fastslow.core.trajectory import Trajectory, Turn


class ScienceWorldAuthors:
    """The functions of the modules above, one namespace the controller reaches as
    ``WorldSemantics.authors``."""

    @staticmethod
    def rewrite(action: str, valid_actions: Collection[str], look: str, inventory: str) -> str:
        return valid.rewrite(action, valid_actions, look, inventory)

    @staticmethod
    def failed(observation: str) -> bool:
        return valid.authors_failed(observation)

    @staticmethod
    def current_room(look: str) -> str | None:
        return valid.current_room(look)

    @staticmethod
    def deterministic_fallback(valid_actions: Collection[str], room: str | None) -> str | None:
        return valid.deterministic_fallback(valid_actions, room)

    @staticmethod
    def is_action_text(text: str) -> bool:
        return valid.is_action_text(text)

    loopbreak_actions: tuple[str, ...] = ("look around", "inventory", "wait")
    wait_replies: tuple[str, ...] = ("decide to wait", "you wait", "waiting for", "wait for")

    @staticmethod
    def waits(action: str) -> bool:
        """A wait, or a thermometer reading (their measuring loops)."""
        return action.startswith("wait") or action.startswith("use thermometer on")

    @staticmethod
    def relocates(action: str) -> bool:
        """A teleport ("teleport to ...", as written)."""
        return action.startswith(TELEPORT)

    @staticmethod
    def focus_targets(task_description: str) -> list[str]:
        return valid.focus_targets(task_description)

    @staticmethod
    def focus_limit(task_id: int, task_description: str) -> int:
        return valid.focus_limit(task_id, task_description)

    @staticmethod
    def clean_unknown_substance(text: str) -> str:
        return valid.clean_unknown_substance(text)

    @staticmethod
    def to_func(action: str) -> str | None:
        return func_actions.to_func(action)

    @staticmethod
    def from_func(text: str) -> str | None:
        return func_actions.from_func(text)

    @staticmethod
    def func_call_pattern() -> str:
        return func_actions.func_call_pattern()

    @staticmethod
    def func_forms(actions: Iterable[str]) -> dict[str, str]:
        return func_actions.func_forms(actions)

    @staticmethod
    def demos(task_id: int) -> tuple[Demo, ...]:
        return demos.demos_for(task_id)

    @staticmethod
    def plan_history(traj: Trajectory, lite: bool) -> list[PlanEntry]:
        return authors_prompts.plan_history(traj, lite)

    @staticmethod
    def ground_history(
        traj: Trajectory, demo_lines: Sequence[str], last: int, strict: bool
    ) -> list[GroundEntry]:
        return authors_prompts.ground_history(traj, demo_lines, last, strict)

    @staticmethod
    def clean_look(look: str, lite: bool) -> list[str]:
        return authors_prompts.clean_look(look, lite)

    @staticmethod
    def focused(traj: Trajectory) -> list[str]:
        return authors_prompts.focused(traj)

    @staticmethod
    def failure_messages(failures: Sequence[Turn], traj: Trajectory) -> list[tuple[str, str, str]]:
        return authors_prompts.failure_messages(failures, traj)

    @staticmethod
    def action_types(demo_lines: Sequence[str]) -> list[tuple[str, str]]:
        return authors_prompts.action_types(demo_lines)

    @staticmethod
    def focus_whitelist(task: str) -> list[str]:
        return authors_prompts.focus_whitelist(task)


AUTHORS = ScienceWorldAuthors()

if TYPE_CHECKING:
    _checked: AuthorsProfile = AUTHORS
