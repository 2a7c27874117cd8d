"""ScienceWorld environment: adapter, task table, episode sets (paper §4)."""

from fastslow.env.scienceworld import ScienceWorldAdapter, StepResult
from fastslow.env.tasks import TaskInfo, all_tasks, get_task

__all__ = ["ScienceWorldAdapter", "StepResult", "TaskInfo", "all_tasks", "get_task"]
