"""Fixtures for the hand-written task logic's tests: one episode played by the packaged swift-only agent
(its procedures on)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from fastslow.env.scienceworld.adapter import ScienceWorldAdapter

if TYPE_CHECKING:
    from fastslow.eval.runner import EpisodeOutcome
    from fastslow.events import EnvStep


Played = tuple["EpisodeOutcome", list["EnvStep"]]


@pytest.fixture
def play_swift_only(env: ScienceWorldAdapter) -> Callable[[int, int], Played]:
    """Play one episode with the packaged swift-only agent: (outcome, its env steps)."""
    from fastslow.build import make_agent
    from fastslow.config import load_config
    from fastslow.env.episodes import Episode
    from fastslow.eval.runner import run_episode
    from fastslow.events import EnvStep, ListSink

    def play(task: int, variation: int) -> Played:
        config = load_config("expert")
        sink = ListSink()
        outcome = run_episode(env, make_agent(config), Episode(task, variation), config, sink)
        return outcome, [e for e in sink.events if isinstance(e, EnvStep)]

    return play
