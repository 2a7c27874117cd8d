"""Helpers for the SRM tests: real ScienceWorld states reached by fixed routes (taken from gold paths)."""

from __future__ import annotations

from dataclasses import dataclass

from fastslow.core.step import StepResult
from fastslow.core.trajectory import Trajectory
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.tasks import get_task
from fastslow.env.scienceworld.world import SEMANTICS


@dataclass(frozen=True)
class State:
    """One real state: the last StepResult and the trajectory that led to it."""

    key: str
    result: StepResult
    traj: Trajectory


# ScienceWorld replays a fixed action list deterministically, but the gold path it generates for a
# variation can differ from one load to the next (e.g. tin cup vs metal pot in chemistry-mix), so the
# states are reached with fixed routes taken from gold paths rather than by gold-step index.
_MIX = ["teleport to kitchen", "open cupboard", "pick up tin cup"]
_SALT = [
    "open glass jar",
    "pick up sodium chloride",
    "move sodium chloride to cup containing nothing in inventory",
    "move cup containing sodium chloride to sink",
    "activate sink",
    "deactivate sink",
    "pick up cup containing sodium chloride and water",
    "mix cup containing sodium chloride and water",
]
_MELT = ["teleport to kitchen", "pick up thermometer", "focus on thermometer in inventory"]
PLAN: dict[str, tuple[int, int, list[str]]] = {
    # chemistry-mix (salt water), starting in the hallway
    "mix:hallway": (2, 0, []),
    "mix:kitchen": (2, 0, _MIX),  # tin cup in the inventory
    "mix:ready": (2, 0, _MIX + _SALT),  # salt water made, not yet focused on
    # measure-melting-point-known-substance (chocolate): 3 focus actions
    "melt:focus1": (20, 0, _MELT),  # thermometer focused
    "melt:focus2": (20, 0, [*_MELT, "open fridge", "focus on chocolate"]),  # ... and the chocolate
    # find-animal: the focus target is found, not named in the task
    "animal:outside": (5, 0, ["teleport to outside"]),
}


def new_trajectory(env: ScienceWorldAdapter, task: int, variation: int, first: StepResult) -> Trajectory:
    info = get_task(task)
    return Trajectory(info.task_id, info.name, variation, first.task_description, first, semantics=SEMANTICS)


def play(env: ScienceWorldAdapter, task: int, variation: int, actions: list[str]) -> State:
    first = env.reset(task, variation)
    traj = new_trajectory(env, task, variation, first)
    for action in actions:
        result = env.step(action)
        assert not result.observation.startswith("No known action"), (task, action)
        traj.record(action, "scripted", result)
    return State(f"{task}-{variation}+{len(actions)}", traj.current, traj)


def start(env: ScienceWorldAdapter, task: int = 2, variation: int = 0) -> Trajectory:
    """A fresh episode (no gold path: cheap) and its trajectory."""
    first = env.reset(task, variation)
    return new_trajectory(env, task, variation, first)


def act(env: ScienceWorldAdapter, traj: Trajectory, action: str, source: str = "test") -> StepResult:
    """One real env step, recorded in the trajectory."""
    result = env.step(action)
    traj.record(action, source, result)
    return result
