"""ScienceWorld task table (paper §4; SwiftSage's task grouping).

Task ids 0-29 are the ScienceWorld task names sorted alphabetically, as in SwiftSage and the paper.
Per-task variation splits and oracle (gold-path) lengths are computed once from ScienceWorld by
``fastslow data tasks`` and shipped as ``env/data/tasks.json``; the length group of a task (Short
<= 20 < Medium <= 50 < Long) comes from the mean gold-path length over its test-set episodes.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from fastslow.env.tasks import SPLITS, TaskInfo
from fastslow.errors import UsageError

TASKS_FILE = "tasks.json"
#: Episodes per task in the paper's evaluation set: the first <=10 test variations.
TEST_EPISODES_PER_TASK = 10


def _from_json(row: dict[str, Any]) -> TaskInfo:
    return TaskInfo(
        task_id=row["task_id"],
        name=row["name"],
        swiftsage_id=row["swiftsage_id"],
        title=row["title"],
        n_variations=row["n_variations"],
        variations={s: tuple(row["variations"][s]) for s in SPLITS},
        oracle_lengths={int(k): v for k, v in row["oracle_lengths"].items()},
    )


@cache
def all_tasks() -> tuple[TaskInfo, ...]:
    text = (resources.files("fastslow.env.scienceworld") / "data" / TASKS_FILE).read_text(encoding="utf-8")
    rows = json.loads(text)["tasks"]
    return tuple(_from_json(r) for r in rows)


def get_task(task: int | str) -> TaskInfo:
    """Look a task up by id (0-29, int or digit string), ScienceWorld name, or SwiftSage id ("1-1")."""
    tasks = all_tasks()
    if isinstance(task, int) or (isinstance(task, str) and task.strip().isdigit()):
        idx = int(task)
        if 0 <= idx < len(tasks):
            return tasks[idx]
        raise UsageError(f"unknown task id {task}: valid ids are 0-{len(tasks) - 1}")
    for info in tasks:
        if task in (info.name, info.swiftsage_id):
            return info
    raise UsageError(
        f"unknown task '{task}': use an id 0-{len(tasks) - 1}, a ScienceWorld name or an id like 1-1"
    )
