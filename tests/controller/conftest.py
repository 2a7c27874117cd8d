"""A fixture that plays one episode with a scripted Swift and Sage against real ScienceWorld."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from controller.helpers import Run, ScriptedSwift
from fastslow.build import build_swiftsage
from fastslow.config import AgentConfig, EnvConfig, RunConfig
from fastslow.controller.config import ControllerConfig
from fastslow.env.episodes import Episode
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.eval.runner import run_episode
from fastslow.events import ListSink
from fastslow.models.base import Message
from fastslow.models.scripted import ScriptedModel


@pytest.fixture
def play(env: ScienceWorldAdapter) -> Callable[..., Run]:
    """Play one episode with a scripted Swift and Sage through the real runner."""

    def _play(
        swift: ScriptedSwift,
        sage: Sequence[str] | Callable[[Sequence[Message]], str],
        *,
        task: int = 13,
        variation: int = 0,
        step_limit: int = 40,
        **controller: Any,
    ) -> Run:
        cfg = ControllerConfig.model_validate(controller)
        model = ScriptedModel(sage)
        config = RunConfig(
            name="test-controller",
            env=EnvConfig(step_limit=step_limit),
            agent=AgentConfig(kind="swiftsage"),
            controller=cfg,
        )
        agent = build_swiftsage(config, swift=swift, sage_model=model)
        sink = ListSink()
        outcome = run_episode(env, agent, Episode(task, variation), config, sink)
        run = Run(outcome, sink.events, agent, model)
        run.steps = run.of("env_step")
        return run

    return _play
