"""Where episodes run: in this process, on local worker processes, or as Ray actors (paper §4 at scale).

Each worker owns one ScienceWorld JVM and one agent (per seed) and reuses them across episodes; every episode
writes its own event log, so workers never share a file. An episode the environment broke (the JVM
died) is retried with a fresh JVM a bounded number of times; each failed attempt's log is kept in
``events/failed/``. With Ray, DIR must be on storage every node can write (a shared filesystem).
"""

from __future__ import annotations

import atexit
import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from fastslow.agents import Agent, make_agent
from fastslow.config import RunConfig
from fastslow.env.episodes import Episode
from fastslow.env.scienceworld import ScienceWorldAdapter
from fastslow.errors import UsageError
from fastslow.eval.runner import EpisodeOutcome, run_episode
from fastslow.events import EndState, JsonlWriter

EXECUTORS = ("local", "ray")


class _Worker:
    """One ScienceWorld JVM and one agent, reused across the episodes a worker plays."""

    def __init__(self, config: RunConfig, events_dir: Path, retries: int) -> None:
        self.config, self.events_dir, self.retries = config, events_dir, retries
        env_cfg = config.env
        self.env = ScienceWorldAdapter(env_cfg.simplification, env_cfg.step_limit, env_cfg.jvm_timeout_s)
        self.agents: dict[int | None, tuple[RunConfig, Agent]] = {None: (config, make_agent(config))}

    def _agent(self, seed: int | None) -> tuple[RunConfig, Agent]:
        """The agent for one seed, built on first use; loaded local models are shared between them."""
        if seed not in self.agents:
            seeded = self.config.with_seed(seed) if seed is not None else self.config
            self.agents[seed] = (seeded, make_agent(seeded))
        return self.agents[seed]

    def play(self, episode: Episode) -> EpisodeOutcome:
        """Play one episode into its log; an episode the environment broke (JVM died) is retried with
        a fresh JVM, and each failed attempt's log is kept under events/failed/ for the record."""
        path = self.events_dir / f"{episode.episode_id}.jsonl"
        config, agent = self._agent(episode.seed)
        attempt = 0
        while True:
            attempt += 1
            path.unlink(missing_ok=True)  # an unfinished log from a crashed run is replayed from scratch
            with JsonlWriter(path) as writer:
                outcome = run_episode(self.env, agent, episode, config, writer)
            if outcome.end is not EndState.ERROR or attempt > self.retries:
                return outcome
            failed = self.events_dir / "failed"
            failed.mkdir(exist_ok=True)
            path.rename(failed / f"{episode.episode_id}.attempt{attempt}.jsonl")

    def close(self) -> None:
        self.env.close()


_WORKER: _Worker | None = None
"""The worker of a local worker process (set by the pool initializer)."""


def _init_worker(config_json: str, events_dir: str, retries: int) -> None:
    global _WORKER
    _WORKER = _Worker(RunConfig.model_validate_json(config_json), Path(events_dir), retries)
    atexit.register(_WORKER.close)


def _play_in_worker(episode: Episode) -> EpisodeOutcome:
    assert _WORKER is not None, "worker not initialised"
    return _WORKER.play(episode)


def _run_local(
    config: RunConfig,
    todo: list[Episode],
    events_dir: Path,
    workers: int,
    retries: int,
    on_outcome: Callable[[EpisodeOutcome], None],
) -> None:
    if workers == 1 or len(todo) <= 1:
        worker = _Worker(config, events_dir, retries)
        try:
            for episode in todo:
                on_outcome(worker.play(episode))
        finally:
            worker.close()
        return
    # spawn, not fork: each worker starts its own py4j gateway and JVM from a clean interpreter.
    ctx = multiprocessing.get_context("spawn")
    initargs = (config.model_dump_json(), str(events_dir), retries)
    with ProcessPoolExecutor(min(workers, len(todo)), ctx, _init_worker, initargs) as pool:
        for future in as_completed([pool.submit(_play_in_worker, e) for e in todo]):
            on_outcome(future.result())


class _RayWorker:
    """A Ray actor body: owns one JVM and agent, closes them when asked or when the actor exits."""

    def __init__(self, config_json: str, events_dir: str, retries: int) -> None:
        self.worker = _Worker(RunConfig.model_validate_json(config_json), Path(events_dir), retries)
        atexit.register(self.worker.close)

    def play(self, episode: Episode) -> EpisodeOutcome:
        return self.worker.play(episode)

    def close(self) -> None:
        self.worker.close()


def _run_ray(
    config: RunConfig,
    todo: list[Episode],
    events_dir: Path,
    workers: int,
    retries: int,
    on_outcome: Callable[[EpisodeOutcome], None],
    address: str | None,
) -> None:
    try:
        import ray
        from ray.util import ActorPool
    except ImportError as exc:
        raise UsageError("--executor ray needs Ray: pip install 'fastslow[ray]'") from exc
    started_here = not ray.is_initialized()
    if started_here:
        if address:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    actor_cls: Any = ray.remote(num_cpus=1)(_RayWorker)
    actors = [
        actor_cls.remote(config.model_dump_json(), str(events_dir.resolve()), retries)
        for _ in range(min(workers, len(todo)))
    ]
    try:
        pool = ActorPool(actors)
        for outcome in pool.map_unordered(lambda actor, episode: actor.play.remote(episode), todo):
            on_outcome(outcome)
    finally:
        ray.get([actor.close.remote() for actor in actors])
        for actor in actors:
            ray.kill(actor)
        if started_here:
            ray.shutdown()


def run_episodes(
    config: RunConfig,
    todo: list[Episode],
    events_dir: Path,
    *,
    workers: int,
    retries: int,
    executor: str,
    ray_address: str | None,
    on_outcome: Callable[[EpisodeOutcome], None],
) -> None:
    """Play ``todo`` into ``events_dir``, calling ``on_outcome`` as each episode finishes."""
    if not todo:
        return
    if executor == "ray":
        _run_ray(config, todo, events_dir, workers, retries, on_outcome, ray_address)
    else:
        _run_local(config, todo, events_dir, workers, retries, on_outcome)
