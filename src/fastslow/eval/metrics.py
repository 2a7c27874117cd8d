"""Metrics computed from event logs only (paper §4 and Appendix C).

- final score: the score at termination. A failed task ends at -100 in ScienceWorld; like SwiftSage's
  evaluation we count it as 0 in ``mean_score`` and report the raw mean and the number of failures
  beside it.
- success: final score == 100.
- Steps@Succ: mean env steps of successful episodes.
- Aggregation: mean over the episodes of a task, then the macro mean over tasks; groups (Short /
  Medium / Long by oracle length) average the task means of their tasks.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import fmean
from typing import Any

from fastslow.env.tasks import get_task
from fastslow.events import EndState, EpisodeEnd, EpisodeStart, iter_events

SUCCESS_SCORE = 100


@dataclass(frozen=True)
class EpisodeSummary:
    episode_id: str
    task_id: int
    variation: int
    end: EndState
    final_score: int
    steps: int
    wall_s: float
    error: str | None

    @property
    def success(self) -> bool:
        return self.final_score >= SUCCESS_SCORE

    @property
    def score(self) -> float:
        """Score used for means: -100 (task failure) counts as 0."""
        return float(max(self.final_score, 0))


def summarize_log(path: Path) -> EpisodeSummary | None:
    """Summary of one episode log; None if the episode never finished (no episode_end)."""
    start: EpisodeStart | None = None
    end: EpisodeEnd | None = None
    for event in iter_events(path):
        if isinstance(event, EpisodeStart):
            start = event
        elif isinstance(event, EpisodeEnd):
            end = event
    if start is None or end is None:
        return None
    return EpisodeSummary(
        episode_id=start.episode_id,
        task_id=start.task_id,
        variation=start.variation,
        end=end.end,
        final_score=end.final_score,
        steps=end.steps,
        wall_s=end.wall_s,
        error=end.error,
    )


def summarize_dir(events_dir: Path) -> list[EpisodeSummary]:
    summaries = (summarize_log(p) for p in sorted(events_dir.glob("*.jsonl")))
    return [s for s in summaries if s is not None]


def _mean(values: Iterable[float]) -> float | None:
    vals = list(values)
    return round(fmean(vals), 4) if vals else None


def _block(episodes: list[EpisodeSummary]) -> dict[str, Any]:
    successes = [e for e in episodes if e.success]
    return {
        "episodes": len(episodes),
        "mean_score": _mean(e.score for e in episodes),
        "success_rate": _mean(float(e.success) for e in episodes),
        "steps_at_success": _mean(e.steps for e in successes),
        "failures": sum(e.end is EndState.FAILURE for e in episodes),
    }


def compute_metrics(episodes: list[EpisodeSummary]) -> dict[str, Any]:
    """The metrics.json payload: headline macro means plus per-task and per-group breakdowns."""
    by_task: dict[int, list[EpisodeSummary]] = defaultdict(list)
    for ep in episodes:
        by_task[ep.task_id].append(ep)
    per_task: dict[str, dict[str, Any]] = {}
    for task_id in sorted(by_task):
        info = get_task(task_id)
        per_task[str(task_id)] = {"name": info.name, "group": info.group, **_block(by_task[task_id])}

    def macro(task_ids: list[str], key: str) -> float | None:
        return _mean(v for t in task_ids if (v := per_task[t][key]) is not None)

    groups: dict[str, list[str]] = defaultdict(list)
    for key, row in per_task.items():
        groups[row["group"]].append(key)
    per_group = {
        group: {
            "tasks": [int(t) for t in ids],
            "episodes": sum(per_task[t]["episodes"] for t in ids),
            "mean_score": macro(ids, "mean_score"),
            "success_rate": macro(ids, "success_rate"),
            "steps_at_success": _mean(e.steps for e in episodes if e.success and str(e.task_id) in ids),
        }
        for group, ids in sorted(groups.items())
    }
    all_ids = list(per_task)
    ends: dict[str, int] = defaultdict(int)
    for ep in episodes:
        ends[ep.end.value] += 1
    return {
        "episodes": len(episodes),
        "tasks": len(per_task),
        "mean_score": macro(all_ids, "mean_score"),
        "mean_score_raw": _mean(fmean(e.final_score for e in by_task[int(t)]) for t in all_ids),
        "success_rate": macro(all_ids, "success_rate"),
        "success_rate_micro": _mean(float(e.success) for e in episodes),
        "steps_at_success": _mean(e.steps for e in episodes if e.success),
        "failures": sum(e.end is EndState.FAILURE for e in episodes),
        "errors": sum(e.end is EndState.ERROR for e in episodes),
        "end_states": dict(sorted(ends.items())),
        "wall_s_per_episode": _mean(e.wall_s for e in episodes),
        "per_group": per_group,
        "per_task": per_task,
        "episode_results": [asdict(e) | {"end": e.end.value} for e in episodes],
    }
