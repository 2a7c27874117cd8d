"""A fixture that plays one episode through the controller with AMM / SRM switched on by config
overrides, a scripted Swift, scripted Sage and Critic models, and real ScienceWorld."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from controller.helpers import Run
from fastslow.build import build_swiftsage
from fastslow.config import load_config
from fastslow.core.proposal import Proposer
from fastslow.env.episodes import Episode
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.eval.runner import run_episode
from fastslow.events import ListSink
from fastslow.memory.records import MemoryRecord
from fastslow.memory.stores.sqlite import SqliteStore
from fastslow.models.base import Message
from fastslow.models.scripted import ScriptedModel

Reply = Sequence[str] | Callable[[Sequence[Message]], str]


@pytest.fixture
def play_modules(env: ScienceWorldAdapter, tmp_path: Path) -> Callable[..., Run]:
    """Play one episode of the ``swiftsage`` config (the baseline's models with SwiftSage's arbitration as
    described, whose rules these tests pin) plus ``overrides`` (amm.path points into tmp_path);
    ``config="baseline"`` plays the paper authors' loop instead."""

    def _play(
        swift: Proposer,
        sage: Reply = (),
        *,
        overrides: Sequence[str] = (),
        memories: Sequence[MemoryRecord] = (),
        critic: Reply = (),
        task: int = 13,
        variation: int = 0,
        step_limit: int = 10,
        store_name: str = "memory.sqlite",
        config_name: str = "swiftsage",
    ) -> Run:
        path = tmp_path / store_name
        config = load_config(config_name, [f"env.step_limit={step_limit}", f"amm.path={path}", *overrides])
        store = None
        if config.amm.enabled:
            store = SqliteStore(str(path), max_terms=config.amm.retrieval.query_terms)  # as open_store
            store.add_many(list(memories))
        model = ScriptedModel(sage)
        agent = build_swiftsage(
            config, swift=swift, sage_model=model, critic_model=ScriptedModel(critic), store=store
        )
        sink = ListSink()
        try:
            outcome = run_episode(env, agent, Episode(task, variation), config, sink)
        finally:
            if store is not None:
                store.close()
        run = Run(outcome, sink.events, agent, model)
        run.steps = run.of("env_step")
        return run

    return _play
