"""ScienceWorld's episode sets (paper §4 evaluation protocol; AMM warm-up, paper §3.1): see
``fastslow.env.episodes`` for the set names and selections."""

from __future__ import annotations

from fastslow.env.episodes import SET_NAMES, WARMUP_PER_TASK, Episode, SetName, parse_int_ranges
from fastslow.env.scienceworld.tasks import TEST_EPISODES_PER_TASK, all_tasks, get_task
from fastslow.env.tasks import Split, TaskInfo
from fastslow.errors import UsageError


def _set_variations(task: TaskInfo, set_name: SetName) -> tuple[int, ...]:
    split_of: dict[SetName, Split] = {"test": "test", "dev": "dev", "warmup": "train", "train": "train"}
    if set_name == "all":
        return tuple(range(task.n_variations))
    variations = task.variations[split_of[set_name]]
    if set_name in ("test", "dev"):
        return variations[:TEST_EPISODES_PER_TASK]
    if set_name == "warmup":
        return variations[:WARMUP_PER_TASK]
    return variations


def select_episodes(
    set_name: str = "test",
    tasks: str | None = None,
    variations: str | None = None,
    limit_per_task: int | None = None,
) -> list[Episode]:
    """The episodes of a named set, narrowed by an explicit selection. Bad input raises UsageError."""
    if set_name not in SET_NAMES:
        raise UsageError(f"unknown episode set '{set_name}': choose one of {', '.join(SET_NAMES)}")
    if limit_per_task is not None and limit_per_task < 1:
        raise UsageError(f"--limit-per-task must be >= 1, got {limit_per_task}")
    known = all_tasks()
    task_infos = (
        [get_task(t) for t in parse_int_ranges(tasks, "task", top=len(known) - 1)]
        if tasks is not None
        else list(known)
    )
    wanted: set[int] | None = None
    if variations is not None:
        # no selected task has a variation above ``top``: a bigger number would select nothing but memory
        top = max(t.n_variations for t in task_infos) - 1
        scope = f" in tasks {tasks}" if tasks is not None else " in the task with the most"
        wanted = set(parse_int_ranges(variations, "variation", top=top, scope=scope))
    episodes: list[Episode] = []
    for task in task_infos:
        chosen = list(_set_variations(task, set_name))
        if wanted is not None:
            chosen = [v for v in chosen if v in wanted]
        if limit_per_task is not None:
            chosen = chosen[:limit_per_task]
        episodes.extend(Episode(task.task_id, v) for v in chosen)
    episodes = list(dict.fromkeys(episodes))  # `--tasks 3,3,13` plays task 3 once, in its first place
    if not episodes:
        raise UsageError(
            f"the selection is empty: set '{set_name}' has no variation {variations} "
            f"for tasks {tasks or '0-29'}"
        )
    return episodes
