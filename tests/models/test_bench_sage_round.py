"""``fastslow bench llm``'s Sage round (``bench.sage.bench_sage_round``): one planning + grounding round
of a configuration's own Sage on a real dev state, cold and with each kind of reuse side by side."""

from __future__ import annotations

import pytest

from fastslow.bench.sage import ROUND_AT, TASK, bench_sage_round, fixture_rounds
from fastslow.config import load_config
from fastslow.env.scienceworld.episodes import select_episodes
from fastslow.events import ListSink, ModelCall
from fastslow.models import ModelConfig


def test_the_rounds_are_two_states_of_a_dev_episode_one_action_apart() -> None:
    rounds = fixture_rounds()
    dev = {e.variation for e in select_episodes("dev", tasks=str(TASK))}
    test = {e.variation for e in select_episodes("test", tasks=str(TASK))}
    assert rounds.variation in dev and rounds.variation not in test
    first, second = rounds.first.traj, rounds.second.traj
    assert (first.current.steps, second.current.steps) == (ROUND_AT, ROUND_AT + 1)
    assert [t.action for t in second.turns[:-1]] == [t.action for t in first.turns]
    assert rounds.first.instinct == second.turns[-1].action  # the next gold action


def test_a_server_round_has_no_cold_or_prefix_figure_and_the_cache_answers_it() -> None:
    config = load_config("baseline")
    scripted = ModelConfig(kind="scripted", replies=["Action 1: SEE() --> a room"], cycle=True)
    config = config.model_copy(update={"sage": config.sage.model_copy(update={"model": scripted})})
    sink = ListSink()
    result = bench_sage_round(config, sink=sink)
    assert result["cold_s"] is None and result["prefix_s"] is None and result["prefix_states"] is None
    assert result["reuse_s"] >= 0 and result["cached_s"] >= 0 and result["cache_hits"] == 2
    assert (result["profile"], result["constrain"], result["parsed"], result["admitted"]) == (
        "authors",
        "none",
        1,
        1,
    )
    assert result["same_answers"] is True and len(result["prompt_tokens"]) == 2
    calls = [e for e in sink.events if isinstance(e, ModelCall) and e.role != "bench_warmup"]
    assert [e.role for e in calls] == ["sage_plan", "sage_ground"] * 3
    assert [e.cached for e in calls] == [False] * 4 + [True] * 2


@pytest.mark.slow
def test_the_embedded_models_round_is_faster_with_prefix_states_and_the_cache() -> None:
    caps = ["controller.sage.plan_max_tokens=8", "controller.sage.ground_max_tokens=8"]
    result = bench_sage_round(load_config("baseline", caps))
    assert min(result["prompt_tokens"]) > 1500
    assert result["prefix_s"] < 0.75 * result["cold_s"]  # a shared prefix is not evaluated again
    assert result["cached_s"] < 0.1 and result["cache_hits"] == 2
