"""The step limit is a wrapper around the env (``env/wrappers.TimeLimit``), and the runner's event logs are
what they were when the adapter ended episodes itself: compared against logs recorded with that code."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from fastslow.agents import Decision, EpisodeContext
from fastslow.config import EnvConfig, RunConfig
from fastslow.core.step import StepResult
from fastslow.env.episodes import Episode
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.wrappers import TimeLimit
from fastslow.eval.runner import run_episode
from fastslow.events import EndState, ListSink

FIXTURE = Path(__file__).parent / "data" / "step_limit_episodes.json"
"""Event logs of ``CASES`` recorded with the adapter that enforced the limit itself (before
``TimeLimit``), with wall-clock times, durations and the machine-specific header fields left out."""

GOLD_7_0 = [
    "open door to kitchen",
    "go to kitchen",
    "look around",
    "focus on counter",
    "move counter to red box",
]
"""Gold path of find-non-living-thing (task 7) variation 0."""

CASES: dict[str, tuple[int, int, list[str], int]] = {
    # name: (task, variation, actions, step limit)
    "limit-before-success": (7, 0, GOLD_7_0, 3),  # step_limit at step 3
    "success-at-limit": (7, 0, GOLD_7_0, 5),  # success wins over the limit on the same step
    "failure-at-limit": (17, 93, ["look around", "focus on agent"], 2),  # -100 wins over the limit
    "limit-one": (7, 0, ["look around"], 1),
    "under-limit": (7, 0, GOLD_7_0, 50),  # ends by success long before the limit
}

VOLATILE = {"t", "duration_ms", "wall_s", "config", "versions", "git_commit"}
"""Fields that differ between any two runs (times) or machines (versions, commit, resolved config)."""


@dataclass
class ScriptedAgent:
    """Plays a fixed list of actions (the last one repeats): no model, nothing that could change."""

    actions: list[str]
    needs_gold: bool = False
    played: list[str] = field(default_factory=list)

    def reset(self, ctx: EpisodeContext, first: StepResult) -> None:
        self.played = []

    def act(self, result: StepResult) -> Decision:
        action = self.actions[min(len(self.played), len(self.actions) - 1)]
        self.played.append(action)
        return Decision(action, "scripted", f"script {len(self.played)}")

    def observe(self, decision: Decision, result: StepResult) -> None:
        pass


def play(env: ScienceWorldAdapter, case: str) -> list[dict[str, Any]]:
    """One case through the real runner, as JSON-ready events without ``VOLATILE`` fields."""
    task, variation, actions, limit = CASES[case]
    config = RunConfig(name="test-wrappers", env=EnvConfig(step_limit=limit))
    sink = ListSink()
    run_episode(env, ScriptedAgent(actions), Episode(task, variation), config, sink)
    return [{k: v for k, v in e.model_dump(mode="json").items() if k not in VOLATILE} for e in sink.events]


def record(env: ScienceWorldAdapter) -> dict[str, list[dict[str, Any]]]:
    return {case: play(env, case) for case in CASES}


def _set(event: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in event.items() if v is not None}


@pytest.mark.parametrize("case", list(CASES))
def test_runner_logs_match_the_recording(env: ScienceWorldAdapter, case: str) -> None:
    recorded = json.loads(FIXTURE.read_text(encoding="utf-8"))[case]
    # A field written as null counts as absent (scripts/compare_events.py's rule): a header field added
    # after the recording, at its default, changes nothing the runner decided.
    assert [_set(e) for e in play(env, case)] == [_set(e) for e in recorded]


def test_recorded_ends_are_the_expected_ones() -> None:
    """What the recording holds, in words: the end state and the step it came at, per case."""
    recorded = json.loads(FIXTURE.read_text(encoding="utf-8"))
    ends = {
        case: [(e["step"], e["action"], e["end"]) for e in events if e["event"] == "env_step"][-1]
        for case, events in recorded.items()
    }
    assert ends == {
        "limit-before-success": (3, "look around", "step_limit"),
        "success-at-limit": (5, "move counter to red box", "success"),
        "failure-at-limit": (2, "focus on agent", "failure"),
        "limit-one": (1, "look around", "step_limit"),
        "under-limit": (5, "move counter to red box", "success"),
    }
    assert all(events[-1]["event"] == "episode_end" for events in recorded.values())
    assert recorded["limit-before-success"][-1]["end"] == EndState.STEP_LIMIT.value


def test_time_limit_counts_from_each_reset_and_passes_the_rest_through(env: ScienceWorldAdapter) -> None:
    limited = TimeLimit(env, 2)
    assert limited.unwrapped is env and TimeLimit(limited, 5).unwrapped is env
    for _ in range(2):  # the count starts again at every reset: one wrapper serves many episodes
        first = limited.reset(7, 0, gold=True)
        assert first.steps == 0 and first.end is EndState.RUNNING
        assert limited.gold_actions == env.gold_actions and len(limited.gold_actions) == 5
        a, b = limited.step("look around"), limited.step("look around")
        assert (a.end, b.end, b.steps) == (EndState.RUNNING, EndState.STEP_LIMIT, 2)
    # everything but the end state is the adapter's own result
    inner = env.reset(7, 0)
    inner = env.step("look around")
    inner = env.step("look around")
    assert b == replace(inner, end=EndState.STEP_LIMIT)


def test_time_limit_needs_a_positive_limit(env: ScienceWorldAdapter) -> None:
    with pytest.raises(ValueError, match="max_steps must be >= 1"):
        TimeLimit(env, 0)
