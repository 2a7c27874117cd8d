"""The Ray executor: same episodes and metrics schema as the local executor (local ray.init, 2 CPUs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fastslow.config import load_config
from fastslow.env.episodes import with_seeds
from fastslow.env.scienceworld.episodes import select_episodes
from fastslow.eval.evaluate import evaluate

pytest.importorskip("ray")


def _shape(value: object) -> object:
    """The key structure of a metrics payload, without its numbers."""
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items() if k not in ("per_task", "episode_results")}
    return type(value).__name__ if value is not None else "None"


@pytest.mark.slow  # 1-3 min: starts a Ray cluster and two actors with their JVMs (make test-slow)
def test_ray_executor_matches_local_with_seeds(tmp_path: Path) -> None:
    """Same seeded episodes on Ray (2 actors, each building the seeded agents) and locally: the same ids,
    logs, metrics schema and per-seed metrics. One Ray start covers both properties."""
    config = load_config("oracle")
    episodes = with_seeds(select_episodes("test", tasks="7", limit_per_task=1), [0, 1])  # one per actor
    local = evaluate(config, episodes, tmp_path / "local")
    on_ray = evaluate(config, episodes, tmp_path / "ray", workers=2, executor="ray")
    ids = sorted(r["episode_id"] for r in local["episode_results"])
    assert ids == sorted(e.episode_id for e in episodes)
    assert sorted(r["episode_id"] for r in on_ray["episode_results"]) == ids
    assert sorted(p.stem for p in (tmp_path / "ray" / "events").glob("*.jsonl")) == ids
    assert _shape(on_ray) == _shape(local)
    assert on_ray["mean_score"] == local["mean_score"] == 100
    assert set(on_ray["per_task"]) == set(local["per_task"])
    assert on_ray["seeds"]["seeds"] == [0, 1] and on_ray["seeds"]["mean_score"] == {"mean": 100.0, "std": 0.0}
    assert on_ray["seeds"] == local["seeds"]
