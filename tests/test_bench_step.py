"""``fastslow bench step`` times what it says on real episodes (no speed is asserted here: the command
prints its ratios, measured side by side in one run)."""

from __future__ import annotations

import json
import math

import pytest

from fastslow.bench.step import DEFAULT_EPISODES, bench_step, profile_summary
from fastslow.cli import main
from fastslow.config import load_config
from fastslow.env.episodes import Episode
from fastslow.env.scienceworld.tasks import get_task


def test_default_episodes_are_fixed_test_episodes() -> None:
    assert len(DEFAULT_EPISODES) == len({e.task_id for e in DEFAULT_EPISODES}) >= 8
    assert all(get_task(e.task_id).split_of(e.variation) == "test" for e in DEFAULT_EPISODES)


def test_bench_step_times_every_step_and_reset() -> None:
    import cProfile

    config = load_config("swift-srm", ["env.step_limit=6"])
    profile = cProfile.Profile()
    episodes = (Episode(17, 93), Episode(13, 6))
    result = bench_step(config, episodes, resets=2, profile=profile)
    head = result.headline()
    assert head["episodes"] == 2 and head["resets"] == 4
    # one agent and one env sample per step; the 6-step limit caps the longer episode
    assert 2 <= head["steps"] == len(result.env_ms) == len(result.valid_actions) <= 12
    assert all(ms > 0 for ms in result.agent_ms + result.env_ms + result.reset_ms)
    assert head["agent_env_ratio"] == round(sum(result.agent_ms) / sum(result.env_ms), 3)
    assert head["agent_ms_p50"] <= head["agent_ms_p95"] and head["env_ms_p50"] <= head["env_ms_p95"]
    assert head["mean_valid_actions"] > 50 and head["profiled"] is True
    assert all(isinstance(v, str | bool) or math.isfinite(v) for v in head.values())
    # the profile saw the agent's act, and nothing of the environment's step
    summary = profile_summary(profile, 30)
    assert "(act)" in summary and "(advance)" not in summary


def test_bench_step_refuses_the_oracle(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["bench", "step", "--config", "oracle"])
    assert exc.value.code == 2 and "deciding agent" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["bench", "step", "--resets", "0"])
    assert exc.value.code == 2


def test_headline_is_one_json_line_of_numbers() -> None:
    from fastslow.bench.step import StepBench

    bench = StepBench("x", episodes=1, agent_ms=[1.0, 3.0], env_ms=[4.0, 4.0], valid_actions=[10, 20])
    bench.reset_ms = [30.0, 50.0]
    head = json.loads(json.dumps(bench.headline()))
    assert (
        head["agent_env_ratio"] == 0.5
        and head["agent_ms_per_step"] == 2.0
        and head["mean_valid_actions"] == 15
    )
    assert head["reset_ms_p50"] == 40.0 and head["steps"] == 2
