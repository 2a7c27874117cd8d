"""Scores are macro-averaged over tasks in both conventions (the paper's: never decreasing, -100 keeps the
last non-negative score; strict: -100 counts as 0), and the bootstrap interval brackets the mean."""

from __future__ import annotations

import statistics
from pathlib import Path

from fastslow.eval.metrics import compute_metrics, summarize_log, torn_line
from fastslow.eval.records import EpisodeResult
from fastslow.events import EndState, EnvStep, EpisodeEnd, EpisodeStart, Event, dump_events


def _ep(task: int, variation: int, score: int, steps: int = 10) -> EpisodeResult:
    end = EndState.SUCCESS if score == 100 else EndState.FAILURE if score < 0 else EndState.STEP_LIMIT
    return EpisodeResult(
        episode_id=f"{task:02d}-{variation:04d}",
        task_id=task,
        variation=variation,
        end=end,
        final_score=score,
        steps=steps,
        wall_s=1.0,
        error=None,
    )


def test_macro_mean_counts_failures_as_zero() -> None:
    # task 7 (short): 100, 50 -> 75; task 0 (long): -100, 100, 100, 100 -> 75; macro 75.
    eps = [_ep(7, 1, 100, 5), _ep(7, 2, 50), _ep(0, 1, -100), _ep(0, 2, 100, 40), _ep(0, 3, 100, 60)]
    eps.append(_ep(0, 4, 100, 50))
    m = compute_metrics(eps)
    assert m["mean_score"] == 75.0
    assert m["per_task"]["7"]["mean_score"] == 75.0 and m["per_task"]["0"]["mean_score"] == 75.0
    assert m["mean_score_raw"] == (75.0 + 50.0) / 2
    assert m["success_rate"] == (0.5 + 0.75) / 2 and m["success_rate_micro"] == round(4 / 6, 4)
    assert m["steps_at_success"] == (5 + 40 + 60 + 50) / 4
    assert m["failures"] == 1
    assert m["per_group"]["short"]["mean_score"] == 75.0 and m["per_group"]["long"]["tasks"] == [0]
    lo, hi = m["ci95"]["mean_score"]
    assert lo <= m["mean_score"] <= hi and lo < hi


def test_bootstrap_interval_collapses_without_variance_and_is_reproducible() -> None:
    eps = [_ep(7, v, 100) for v in range(5)] + [_ep(8, v, 100) for v in range(3)]
    assert compute_metrics(eps)["ci95"] == {
        "mean_score": [100.0, 100.0],
        "mean_score_strict": [100.0, 100.0],
        "success_rate": [1.0, 1.0],
    }
    # one episode per task: no interval rather than a zero-width one
    assert compute_metrics([_ep(7, 1, 100), _ep(8, 1, 0)])["ci95"] == {}
    mixed = [_ep(7, v, 100 if v % 2 else 0) for v in range(6)]
    assert compute_metrics(mixed)["ci95"] == compute_metrics(mixed)["ci95"]


def test_seed_spread_is_the_per_seed_macro_mean_and_its_std() -> None:
    def seeded(task: int, variation: int, score: int, seed: int) -> EpisodeResult:
        episode_id = f"{task:02d}-{variation:04d}-s{seed}"
        return _ep(task, variation, score).model_copy(update={"episode_id": episode_id, "seed": seed})

    # seed 0: task 7 -> 100, task 8 -> (50 + 0) / 2 = 25 -> macro 62.5; seed 1: 100 and 50 -> 75.
    eps = [seeded(7, 1, 100, 0), seeded(8, 1, 50, 0), seeded(8, 2, -100, 0)]
    eps += [seeded(7, 1, 100, 1), seeded(8, 1, 50, 1), seeded(8, 2, 50, 1)]
    m = compute_metrics(eps)
    spread = m["seeds"]
    assert spread["per_seed"]["0"] == {
        "episodes": 3,
        "mean_score": 62.5,
        "mean_score_strict": 62.5,
        "success_rate": 0.5,
    }
    assert spread["per_seed"]["1"]["mean_score"] == 75.0
    assert spread["mean_score"] == {"mean": 68.75, "std": round(statistics.stdev([62.5, 75.0]), 4)}
    # the headline pools the seeds within each task: task 8 = (50 + 0 + 50 + 50) / 4
    assert m["per_task"]["8"]["mean_score"] == 37.5 and m["mean_score"] == (100 + 37.5) / 2
    assert "seeds" not in compute_metrics([_ep(7, 1, 100)])


def _log(path: Path, scores: list[int], end: EndState) -> Path:
    """A crafted episode log: episode_start, one env_step per score, episode_end at the last score."""
    events: list[Event] = [
        EpisodeStart(
            episode_id="13-0001",
            task_id=13,
            task_name="t",
            variation=1,
            split="test",
            config_name="c",
            config={},
            versions={},
        )
    ]
    for step, score in enumerate(scores, 1):
        events.append(
            EnvStep(
                step=step,
                action="a",
                source="swift",
                reason="",
                observation="o",
                score=score,
                reward=0,
                moves=step,
                end=end if step == len(scores) else EndState.RUNNING,
                n_valid=1,
                duration_ms=1.0,
            )
        )
    events.append(
        EpisodeEnd(end=end, final_score=scores[-1], steps=len(scores), moves=len(scores), wall_s=1.0)
    )
    path.write_text(dump_events(events), encoding="utf-8")
    return path


def test_a_partial_score_then_a_failure_is_40_in_the_paper_convention_and_0_strict(tmp_path: Path) -> None:
    """SwiftSage's (and the paper's) episode score never decreases; a -100 keeps the last non-negative one."""
    summary = summarize_log(_log(tmp_path / "13-0001.jsonl", [0, 25, 40, -100], EndState.FAILURE))
    assert summary is not None
    assert (summary.score, summary.score_strict, summary.final_score) == (40.0, 0.0, -100)
    m = compute_metrics([summary])
    assert (m["mean_score"], m["mean_score_strict"], m["mean_score_raw"]) == (40.0, 0.0, -100.0)
    assert m["per_task"]["13"]["mean_score"] == 40.0 and m["per_task"]["13"]["mean_score_strict"] == 0.0
    group = m["per_group"][m["per_task"]["13"]["group"]]
    assert (group["mean_score"], group["mean_score_strict"]) == (40.0, 0.0)
    assert m["episode_results"][0]["best_score"] == 40 and not summary.success


def test_an_early_stop_keeps_the_best_score_reached_and_strict_keeps_the_final_one(tmp_path: Path) -> None:
    # ScienceWorld scores can drop (an undone subgoal): the paper's score keeps the best one reached.
    summary = summarize_log(_log(tmp_path / "13-0001.jsonl", [10, 50, 30], EndState.EARLY_STOP))
    assert summary is not None and (summary.score, summary.score_strict) == (50.0, 30.0)


def test_torn_line_names_the_last_line_only_when_the_file_ends_mid_line(tmp_path: Path) -> None:
    log = tmp_path / "x.jsonl"
    log.write_bytes(b"")
    assert torn_line(log) is None
    log.write_bytes(b'{"a": 1}\n{"b": 2}\n')
    assert torn_line(log) is None
    log.write_bytes(b'{"a": 1}\n{"b": 2}\n{"c"')
    assert torn_line(log) == 3
