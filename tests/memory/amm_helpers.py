"""Play real ScienceWorld actions the way the controller will: step, record, then the AMM hooks."""

from __future__ import annotations

from collections.abc import Sequence

from fastslow.core.step import StepResult
from fastslow.core.trajectory import Trajectory
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.tasks import get_task
from fastslow.env.scienceworld.world import SEMANTICS
from fastslow.memory.episode import EpisodeMemory


def start(env: ScienceWorldAdapter, task: int, variation: int, gold: bool = False) -> Trajectory:
    result = env.reset(task, variation, gold=gold)
    return Trajectory(
        task, get_task(task).name, variation, result.task_description, result, semantics=SEMANTICS
    )


def play(
    env: ScienceWorldAdapter, traj: Trajectory, hooks: EpisodeMemory, actions: Sequence[str]
) -> StepResult:
    for action in actions:
        prev = traj.current
        result = env.step(action)
        traj.record(action, "scripted", result)
        hooks.after_step(traj, action, prev, result)
    return traj.current
