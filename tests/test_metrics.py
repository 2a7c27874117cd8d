"""Scores are macro-averaged over tasks, -100 counts as 0, and the bootstrap interval brackets the mean."""

from __future__ import annotations

import statistics
from dataclasses import replace

from fastslow.eval.metrics import EpisodeSummary, compute_metrics
from fastslow.events import EndState


def _ep(task: int, variation: int, score: int, steps: int = 10) -> EpisodeSummary:
    end = EndState.SUCCESS if score == 100 else EndState.FAILURE if score < 0 else EndState.STEP_LIMIT
    return EpisodeSummary(f"{task:02d}-{variation:04d}", task, variation, end, score, steps, 1.0, None)


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
    assert compute_metrics(eps)["ci95"] == {"mean_score": [100.0, 100.0], "success_rate": [1.0, 1.0]}
    # one episode per task: no interval rather than a zero-width one
    assert compute_metrics([_ep(7, 1, 100), _ep(8, 1, 0)])["ci95"] == {}
    mixed = [_ep(7, v, 100 if v % 2 else 0) for v in range(6)]
    assert compute_metrics(mixed)["ci95"] == compute_metrics(mixed)["ci95"]


def test_seed_spread_is_the_per_seed_macro_mean_and_its_std() -> None:
    def seeded(task: int, variation: int, score: int, seed: int) -> EpisodeSummary:
        episode_id = f"{task:02d}-{variation:04d}-s{seed}"
        return replace(_ep(task, variation, score), episode_id=episode_id, seed=seed)

    # seed 0: task 7 -> 100, task 8 -> (50 + 0) / 2 = 25 -> macro 62.5; seed 1: 100 and 50 -> 75.
    eps = [seeded(7, 1, 100, 0), seeded(8, 1, 50, 0), seeded(8, 2, -100, 0)]
    eps += [seeded(7, 1, 100, 1), seeded(8, 1, 50, 1), seeded(8, 2, 50, 1)]
    m = compute_metrics(eps)
    spread = m["seeds"]
    assert spread["per_seed"]["0"] == {"episodes": 3, "mean_score": 62.5, "success_rate": 0.5}
    assert spread["per_seed"]["1"]["mean_score"] == 75.0
    assert spread["mean_score"] == {"mean": 68.75, "std": round(statistics.stdev([62.5, 75.0]), 4)}
    # the headline pools the seeds within each task: task 8 = (50 + 0 + 50 + 50) / 4
    assert m["per_task"]["8"]["mean_score"] == 37.5 and m["mean_score"] == (100 + 37.5) / 2
    assert "seeds" not in compute_metrics([_ep(7, 1, 100)])
