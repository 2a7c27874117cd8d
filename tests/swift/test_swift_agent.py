"""Swift-only agent: a fresh install plays with the packaged model, nothing trained first."""

from __future__ import annotations

from fastslow.agents import make_agent
from fastslow.agents.swift_agent import SwiftAgent
from fastslow.config import load_config
from fastslow.env.episodes import Episode
from fastslow.env.scienceworld import ScienceWorldAdapter
from fastslow.env.tasks import get_task
from fastslow.eval.runner import run_episode
from fastslow.events import EndState, EnvStep, EpisodeEnd, ListSink


def test_swift_only_plays_a_task0_test_variation(env: ScienceWorldAdapter) -> None:
    config = load_config("swift-only", ["env.step_limit=12"])
    assert config.agent.kind == "swift" and config.swift.backend == "imitation"
    agent = make_agent(config)
    assert isinstance(agent, SwiftAgent)
    sink = ListSink()
    variation = get_task(0).variations["test"][0]
    outcome = run_episode(env, agent, Episode(0, variation), config, sink)
    steps = [e for e in sink.events if isinstance(e, EnvStep)]
    assert steps and all(s.source == "swift" for s in steps)
    assert outcome.error is None
    assert isinstance(sink.events[-1], EpisodeEnd)
    assert outcome.end in (EndState.SUCCESS, EndState.FAILURE, EndState.STEP_LIMIT)
    assert outcome.steps == len(steps)
    # Every decision carries the model's confidence (or says why the fallback acted).
    assert all(s.reason.startswith("p=") or "candidate" in s.reason for s in steps)
