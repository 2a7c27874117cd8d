"""Where episodes run: in this process, on local worker processes, or as Ray actors (paper §4 at scale).

Each worker owns one JVM of the config's world (``env.world``: ScienceWorld's, or TextWorldExpress's with
every game in it) and one agent (per seed) and reuses them across episodes; every episode writes its
own event log, so workers never share a file. An episode the environment broke (the JVM
died) is retried with a fresh JVM a bounded number of times; each failed attempt's log is kept in
``events/failed/``. Before each attempt the AMM records an earlier, unfinished attempt wrote are
removed, so a replay does not find its own ghost in the store. With Ray, DIR must be on storage every
node can write (a shared filesystem).

No orphans: a local worker watches its parent and exits the moment the eval process is gone, however
it died (its JVM follows: py4j's JVM exits when its stdin closes); an eval that fails cancels the
queued episodes and stops its workers instead of waiting for them. A worker ignores Ctrl-C: the
terminal sends it to the whole process group, and the parent alone decides (it stops its workers and
says so in one line). ``worker_pool`` gives other commands' pools (``attribute``) the same rules.

A stream run (``eval.stream``) plays round after round on the same workers: a round's episodes are
handed out only once the round before has finished and its records are merged; each episode is played
by an agent of its own on its copy of the run's store.
"""

from __future__ import annotations

import atexit
import errno
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastslow.agents import Agent
from fastslow.build import make_agent
from fastslow.config import RunConfig
from fastslow.env.episodes import Episode
from fastslow.env.world import get_world
from fastslow.errors import OutputError, UsageError
from fastslow.eval.runner import EpisodeOutcome, run_episode
from fastslow.eval.stream import Stream, StreamSlot
from fastslow.events import EndState, JsonlWriter
from fastslow.manifest import record_removed, record_written
from fastslow.models.cache import ResponseCache

log = logging.getLogger(__name__)

EXECUTORS = ("local", "ray")
_STORAGE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}
"""OS errors that mean "the output cannot be written" (as opposed to a bug or a broken connection)."""


def _ship(config: RunConfig) -> str:
    """The config as JSON for our own worker processes: with secrets (run records never carry them)."""
    return config.model_dump_json(context={"secrets": True})


def _purge_records(config: RunConfig, memory_key: str) -> None:
    """Remove the AMM records an unfinished attempt of this episode wrote (none on a first attempt)."""
    if not config.amm.enabled:
        return
    from fastslow.memory.stores import MemoryStoreError, shared_store

    try:
        shared_store(config.amm).delete_episode(memory_key)
    except MemoryStoreError as exc:
        # The store is failing: the episode's own writes will fall back and be counted; say it here.
        log.warning("could not remove the records of an earlier attempt of %s: %s", memory_key, exc)


class _Worker:
    """One JVM of the config's world and one agent, reused across the episodes a worker plays.
    ``model_cache``: the run's response cache file (``models.cache``), shared by the workers; None: no
    cache."""

    def __init__(
        self,
        config: RunConfig,
        events_dir: Path,
        retries: int,
        run_id: str = "",
        model_cache: Path | None = None,
    ) -> None:
        self.config, self.events_dir, self.retries, self.run_id = config, events_dir, retries, run_id
        self.cache = ResponseCache(model_cache) if model_cache is not None else None
        # One adapter for all the worker's episodes; run_episode puts the episode's step limit around it.
        self.env = get_world(config.env.world).make_env(config.env)
        self.agents: dict[int | None, tuple[RunConfig, Agent]] = {
            None: (config, make_agent(config, self.cache))
        }
        self._jvm: tuple[int | None, list[str]] = (None, [])
        """The current JVM's pid and the episodes it played (the header's ``jvm``, for forks)."""

    def _agent(self, seed: int | None) -> tuple[RunConfig, Agent]:
        """The agent for one seed, built on first use; loaded local models are shared between them."""
        if seed not in self.agents:
            seeded = self.config.with_seed(seed) if seed is not None else self.config
            self.agents[seed] = (seeded, make_agent(seeded, self.cache))
        return self.agents[seed]

    def play(self, episode: Episode, slot: StreamSlot | None = None) -> EpisodeOutcome:
        """Play one episode into its log; an episode the environment broke (JVM died) is retried with
        a fresh JVM, and each failed attempt's log is kept under events/failed/ for the record.

        ``slot``: the episode's place in a stream (``eval.stream``): an agent of its own plays it on its
        copy of the run's store (released when the episode ends), and its header records the position."""
        path = self.events_dir / f"{episode.episode_id}.jsonl"
        if slot is None:
            config, agent = self._agent(episode.seed)
            played = config
        else:
            config = self.config.with_seed(episode.seed) if episode.seed is not None else self.config
            played = config
            if slot.store is not None:
                played = config.model_copy(update={"amm": config.amm.model_copy(update={"path": slot.store})})
            agent = make_agent(played, self.cache)
        attempt = 0
        try:
            while True:
                attempt += 1
                path.unlink(missing_ok=True)  # an unfinished log from a crashed run is replayed from scratch
                if config.env.jvm_per_episode:
                    self.env.close()  # the next reset starts a fresh JVM
                _purge_records(played, self._memory_key(episode))
                history = self._history()
                with JsonlWriter(path) as writer:
                    outcome = run_episode(
                        self.env,
                        agent,
                        episode,
                        config,
                        writer,
                        run_id=self.run_id,
                        jvm_history=history,
                        stream_position=slot.position if slot is not None else None,
                    )
                self._played(episode)
                if outcome.end is not EndState.ERROR or attempt > self.retries:
                    return outcome
                failed = self.events_dir / "failed"
                failed.mkdir(exist_ok=True)
                kept = failed / f"{episode.episode_id}.attempt{attempt}.jsonl"
                path.rename(kept)
                record_removed(path)
                record_written(kept)
        except OSError as exc:
            # A full disk or a read-only file system: one line for the user; the logs already written
            # stay, and the unfinished one is replayed by the same command once there is room.
            if exc.errno not in _STORAGE_ERRNOS:
                raise
            raise OutputError(f"cannot write the event log {path}: {exc.strerror or exc}") from None
        finally:
            if slot is not None and slot.store is not None and played.amm.enabled:
                # The parent merges the copy once the round is over: this process lets go of it now.
                from fastslow.memory.stores import release_store

                release_store(played.amm)

    def _history(self) -> list[str]:
        """The episodes the adapter's current JVM played ([] before it starts, or after it died: the
        adapter drops a JVM whose call failed, and a new one starts at the next reset)."""
        pid, played = self._jvm
        return list(played) if pid is not None and pid == self.env.jvm_pid else []

    def _played(self, episode: Episode) -> None:
        pid = self.env.jvm_pid
        played = self._history() if pid == self._jvm[0] else []
        self._jvm = (pid, [*played, episode.episode_id]) if pid is not None else (None, [])

    def _memory_key(self, episode: Episode) -> str:
        return f"{self.run_id}/{episode.episode_id}" if self.run_id else episode.episode_id

    def close(self) -> None:
        self.env.close()
        if self.cache is not None:
            self.cache.close()


_WORKER: _Worker | None = None
"""The worker of a local worker process (set by the pool initializer)."""


PARENT_POLL_S = 0.5
"""How often a worker checks that the eval process that started it is still alive."""


def _exit_with_parent(parent: int) -> None:
    """End this worker as soon as ``parent`` is gone (reparented: the eval was killed, even with -9).

    A thread polling the parent pid works whatever killed it and on any POSIX system; ``os._exit``
    skips cleanup that could block on the dead parent's pipes, and the JVM exits with our stdin."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(3)

    threading.Thread(target=watch, name="fastslow-parent-watch", daemon=True).start()


def _as_worker_of(parent: int) -> None:
    """Make this process a worker of ``parent``: it ignores Ctrl-C (the terminal sends SIGINT to the
    whole process group; the parent stops its workers itself, and a worker's traceback would bury the
    parent's one line) and exits as soon as ``parent`` is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _exit_with_parent(parent)


POOL_STOP_S = 10.0
"""How long ``stop_pool`` waits for the pool's manager thread once the workers are terminated."""


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel ``pool``'s queued calls and terminate its workers without waiting for the calls in
    flight (their JVMs exit with the workers' stdin); returns once the pool's manager thread has
    gone (at most ``POOL_STOP_S``)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.terminate()
    # The pool's manager thread notices the terminated workers and closes its wake-up pipe. Wait for it:
    # left running into interpreter exit, it races concurrent.futures' exit hook, which then writes to
    # the pipe as it closes ("Bad file descriptor" printed under Ctrl-C's one line, CPython 3.11).
    manager = getattr(pool, "_executor_manager_thread", None)
    if manager is not None:
        manager.join(timeout=POOL_STOP_S)


@contextmanager
def worker_pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    """A pool of ``workers`` local processes with eval's rules: spawned (each starts its own py4j
    gateway and JVM from a clean interpreter), each exits when this process is gone however it died,
    ignores Ctrl-C; an exception or Ctrl-C in the ``with`` body stops them (``stop_pool``) instead of
    waiting for the calls in flight."""
    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(workers, ctx, _as_worker_of, (os.getpid(),))
    try:
        yield pool
    except BaseException:
        stop_pool(pool)
        raise
    pool.shutdown(wait=True)


def _init_worker(
    config_json: str, events_dir: str, retries: int, run_id: str, parent: int, model_cache: str | None
) -> None:
    global _WORKER
    _as_worker_of(parent)
    cache = Path(model_cache) if model_cache is not None else None
    _WORKER = _Worker(RunConfig.model_validate_json(config_json), Path(events_dir), retries, run_id, cache)
    atexit.register(_WORKER.close)


def _play_in_worker(episode: Episode, slot: StreamSlot | None = None) -> EpisodeOutcome:
    assert _WORKER is not None, "worker not initialised"
    return _WORKER.play(episode, slot)


Round = tuple[list[tuple[Episode, StreamSlot | None]], int | None]
"""One round of work: the episodes with their stream slots, and the stream position whose records are
merged when the round is over (None: not a stream)."""


def _rounds(todo: list[Episode], stream: Stream | None) -> list[Round]:
    """``todo`` as rounds: one round of everything without a stream, else ``Stream.rounds``."""
    if stream is None:
        return [([(e, None) for e in todo], None)]
    return [([(e, stream.slot(e)) for e in episodes], k) for k, episodes in stream.rounds(todo)]


def _play_rounds(
    rounds: list[Round],
    stream: Stream | None,
    play: Callable[[list[tuple[Episode, StreamSlot | None]]], None],
) -> None:
    """Each round in turn: its copies of the store made, its episodes played (``play`` returns once
    all are finished), its records merged."""
    for work, k in rounds:
        if stream is not None and k is not None:
            stream.before(k, [e for e, _ in work])
        if work:
            play(work)
        if stream is not None and k is not None:
            stream.after(k)


def _run_local(
    config: RunConfig,
    todo: list[Episode],
    events_dir: Path,
    workers: int,
    retries: int,
    on_outcome: Callable[[EpisodeOutcome], None],
    run_id: str,
    model_cache: Path | None,
    stream: Stream | None = None,
) -> None:
    rounds = _rounds(todo, stream)
    widest = max(len(work) for work, _ in rounds)
    if workers == 1 or widest <= 1:
        worker = _Worker(config, events_dir, retries, run_id, model_cache)

        def play_here(work: list[tuple[Episode, StreamSlot | None]]) -> None:
            for episode, slot in work:
                on_outcome(worker.play(episode, slot))

        try:
            _play_rounds(rounds, stream, play_here)
        finally:
            worker.close()
        return
    # spawn, not fork: each worker starts its own py4j gateway and JVM from a clean interpreter.
    ctx = multiprocessing.get_context("spawn")
    cache = str(model_cache) if model_cache is not None else None
    initargs = (_ship(config), str(events_dir), retries, run_id, os.getpid(), cache)
    pool = ProcessPoolExecutor(min(workers, widest), ctx, _init_worker, initargs)

    def play_there(work: list[tuple[Episode, StreamSlot | None]]) -> None:
        # as_completed returns once every episode of the round is done: the round's barrier.
        for future in as_completed([pool.submit(_play_in_worker, e, slot) for e, slot in work]):
            on_outcome(future.result())

    try:
        _play_rounds(rounds, stream, play_there)
    except BaseException:
        # An error (disk full, a bug) or Ctrl-C: do not play the queued episodes into the folder, and
        # do not wait for the ones in flight; their logs stay unfinished and are replayed on resume.
        stop_pool(pool)
        raise
    pool.shutdown(wait=True)


class _RayWorker:
    """A Ray actor body: owns one JVM and agent, closes them when asked or when the actor exits."""

    def __init__(
        self, config_json: str, events_dir: str, retries: int, run_id: str, model_cache: str | None
    ) -> None:
        cache = Path(model_cache) if model_cache is not None else None
        config = RunConfig.model_validate_json(config_json)
        self.worker = _Worker(config, Path(events_dir), retries, run_id, cache)
        atexit.register(self.worker.close)

    def play(self, episode: Episode, slot: StreamSlot | None = None) -> EpisodeOutcome:
        return self.worker.play(episode, slot)

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
    run_id: str,
    model_cache: Path | None,
    stream: Stream | None = None,
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
    cache = str(model_cache.resolve()) if model_cache is not None else None
    rounds = _rounds(todo, stream)
    actors = [
        actor_cls.remote(_ship(config), str(events_dir.resolve()), retries, run_id, cache)
        for _ in range(min(workers, max(len(work) for work, _ in rounds)))
    ]

    def play(work: list[tuple[Episode, StreamSlot | None]]) -> None:
        pool = ActorPool(actors)
        for outcome in pool.map_unordered(lambda actor, item: actor.play.remote(*item), work):
            on_outcome(outcome)

    try:
        _play_rounds(rounds, stream, play)
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
    run_id: str = "",
    model_cache: Path | None = None,
    stream: Stream | None = None,
) -> None:
    """Play ``todo`` into ``events_dir``, calling ``on_outcome`` as each episode finishes.

    ``run_id`` qualifies the AMM records the episodes write (``<run_id>/<episode_id>``), so a store
    shared by several runs on purpose can still tell whose attempt a record came from. ``model_cache``
    is the run's response cache file (``models.cache``), shared by all its workers; None: no cache.
    ``stream``: play ``todo`` as a stream (``eval.stream``), round after round; with nothing left to
    play, the copies of the store an interrupted start left are still merged."""
    if not todo:
        if stream is not None:
            _play_rounds(_rounds(todo, stream), stream, lambda work: None)
        return
    if executor == "ray":
        _run_ray(
            config, todo, events_dir, workers, retries, on_outcome, ray_address, run_id, model_cache, stream
        )
    else:
        _run_local(config, todo, events_dir, workers, retries, on_outcome, run_id, model_cache, stream)
