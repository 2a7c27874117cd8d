"""ScienceWorld (paper §4): the adapter, the task table, episode sets and its semantics.

The adapter module (py4j, the JVM) is loaded only when it is used: ``from fastslow.env import
ScienceWorldAdapter`` works, but importing ``fastslow.env.semantics`` or ``fastslow.env.tasks`` does not
pull it in."""

from __future__ import annotations

from typing import Any

from fastslow.env.tasks import TaskInfo, all_tasks, get_task

__all__ = ["ScienceWorldAdapter", "StepResult", "TaskInfo", "all_tasks", "get_task"]


def __getattr__(name: str) -> Any:
    if name == "ScienceWorldAdapter":
        from fastslow.env.scienceworld import ScienceWorldAdapter

        return ScienceWorldAdapter
    if name == "StepResult":
        from fastslow.core.step import StepResult

        return StepResult
    raise AttributeError(name)
