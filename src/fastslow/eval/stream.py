"""``fastslow eval --stream``: episodes as a stream, for the adaptation measurement (the online
memory of paper §3.1, whose records an episode writes for the episodes after it).

**Order.** Each task's episodes form a stream in the run's recorded order (run.json ``episodes``: the
set's own order, variations ascending, seed after seed with ``--seeds``; ``--extend`` appends, so a
recorded position never changes). An episode's *stream position* k is its index among its task's
episodes (0 = the task's first); every ``episode_start`` header records it (``stream_position``).

**What an episode at position k may read.** The records of the run's warm-up, those of every episode of
the run at a position below k (of every task: retrieval also reads other tasks' records), its own, and no
other. The order decides it, never the scheduling, whatever the number of workers:

- the episodes play in *rounds*: round k is every task's episode at position k; round k starts once
  round k-1 has finished and its records are in the run's store (a barrier: an episode at k needs every
  episode below k to be done);
- each episode of round k plays on a *copy* of the run's store (``DIR/stream/<episode>.sqlite``), made
  before the round from the store as round k-1 left it, with any record of this run's episodes at
  positions k and above removed (there are none, but after a resume that replayed an earlier episode
  there could be). The episode writes into its copy, so it reads its own records as in a run without
  stream; the other episodes of its round never see them;
- once the round has finished, each episode's own records are merged from its copy into the run's
  store (``SqliteStore.copy_episode``, vectors included), in the recorded order, and the copy is removed.

So the store an episode starts on, and every ranking it gets from it (BM25's statistics, the slice
counts that prune a search, the vectors), is the same with 1 worker or 10: the records are the same and
are merged in the same order. (Record ids are random, as in every run, and a search without content
words returns the newest records by wall-clock time, the one order left to the clock.)

**The agent.** Each stream episode gets an agent of its own, built on its copy of the store: nothing an
agent could carry from the episodes its worker happened to play before (which depends on scheduling)
reaches the next one. The store is the one thing that connects the episodes of a stream.

**The warm-up.** With ``--warmup`` the warm-up plays as a stream of its own before the evaluation's
(its copies in ``DIR/warmup/stream``): with the prior or T1 on, a warm-up episode's actions depend on
the records it reads, so warm-up episodes played side by side would leave a store that depends on the
scheduling, and every evaluation episode would start from it.

**Provenance.** A stream run turns on ``amm.provenance``: every ``memory_retrieval`` event names the
episode that wrote each record it returned (``writers``), which ``fastslow report`` counts
(``eval.curve``).

Without AMM (``swift-only``, the memory-off arm of the measurement) nothing connects the episodes: they
play in one round, in any order, and only their positions are recorded. An SQLite store is required (a
copy per episode); a PostgreSQL store is refused before anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fastslow.config import RunConfig
from fastslow.env.episodes import Episode
from fastslow.errors import UsageError
from fastslow.manifest import record_removed, record_writing

if TYPE_CHECKING:  # the store module loads numpy: imported where a store is opened
    from fastslow.memory.stores.sqlite import SqliteStore

STREAM_DIR = "stream"
"""DIR/stream: each playing episode's copy of the run's store (removed once merged)."""
_SQLITE_SUFFIXES = ("", "-wal", "-shm", "-journal")


@dataclass(frozen=True)
class StreamSlot:
    """Where one episode sits in the stream, handed to the worker that plays it."""

    position: int
    """The episode's stream position (its header's ``stream_position``)."""
    store: str | None
    """The episode's own copy of the run's store (the agent's ``amm.path``); None without AMM."""


def stream_positions(episode_ids: Sequence[str]) -> dict[str, int]:
    """Each episode's index among its task's episodes, in the order given (run.json's)."""
    seen: dict[int, int] = {}
    positions: dict[str, int] = {}
    for episode_id in episode_ids:
        task = Episode.from_id(episode_id).task_id
        positions[episode_id] = seen.get(task, 0)
        seen[task] = positions[episode_id] + 1
    return positions


def stream_config(config: RunConfig) -> RunConfig:
    """The configuration a stream run's episodes are played (and their headers written) with: the
    run's, with ``amm.provenance`` on when AMM is."""
    if not config.amm.enabled or config.amm.provenance:
        return config
    return config.model_copy(update={"amm": config.amm.model_copy(update={"provenance": True})})


def check_stream(config: RunConfig) -> None:
    """A one-line ``UsageError``, before anything is written, for a stream the store cannot give."""
    if config.amm.enabled and config.amm.store != "sqlite":
        raise UsageError(
            f"--stream plays every episode on a copy of the run's memory store: use an SQLite store "
            f"(amm.store is {config.amm.store})"
        )


class Stream:
    """The parent's side of a stream run: the rounds, the copies of the store, the merges.

    ``config``: the run's, its store placed (``rundir.store_config``); ``episode_ids``: run.json's
    selection (every episode, played or not: positions and merges are the whole stream's); ``folder``:
    where the copies go (default DIR/stream; the warm-up's stream uses DIR/warmup/stream)."""

    def __init__(
        self,
        config: RunConfig,
        out: Path,
        run_id: str,
        episode_ids: Sequence[str],
        folder: Path | None = None,
    ) -> None:
        check_stream(config)
        self.order = list(episode_ids)
        self.positions = stream_positions(self.order)
        self.folder = folder if folder is not None else out / STREAM_DIR
        self.run_id = run_id
        amm = config.amm
        self.store_path = Path(amm.path) if amm.enabled and amm.path else None
        self.max_terms, self.max_postings = amm.retrieval.query_terms, amm.retrieval.max_postings

    def key(self, episode_id: str) -> str:
        """The key the episode's records carry (``EpisodeContext.memory_key``)."""
        return f"{self.run_id}/{episode_id}" if self.run_id else episode_id

    def copy_path(self, episode_id: str) -> Path:
        return self.folder / f"{episode_id}.sqlite"

    def rounds(self, todo: Sequence[Episode]) -> list[tuple[int, list[Episode]]]:
        """``todo`` by round, in the recorded order within each: (k, the episodes at position k), for
        every position of the stream (a round with nothing to play may still have copies to merge, after
        a resume). Without AMM, one round of everything: nothing connects the episodes."""
        if self.store_path is None:
            return [(0, list(todo))]
        last = max(self.positions.values(), default=-1)
        return [(k, [e for e in todo if self.positions[e.episode_id] == k]) for k in range(last + 1)]

    def slot(self, episode: Episode) -> StreamSlot:
        copy = str(self.copy_path(episode.episode_id).resolve()) if self.store_path is not None else None
        return StreamSlot(self.positions[episode.episode_id], copy)

    def _open(self, path: Path) -> SqliteStore:
        from fastslow.memory.stores.sqlite import SqliteStore

        return SqliteStore(path, max_terms=self.max_terms, max_postings=self.max_postings)

    def _remove_copy(self, episode_id: str) -> None:
        for suffix in _SQLITE_SUFFIXES:
            path = self.copy_path(episode_id).with_name(f"{episode_id}.sqlite{suffix}")
            if path.exists():
                path.unlink()
                record_removed(path)

    def before(self, k: int, episodes: Sequence[Episode]) -> None:
        """Make the copy of the run's store each episode of round ``k`` plays on: the store as the
        rounds before left it, without any record of this run's episodes at position ``k`` or later."""
        if self.store_path is None or not episodes:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        store = self._open(self.store_path)  # creates an empty store before the first round if need be
        try:
            for episode in episodes:
                self._remove_copy(episode.episode_id)  # a copy an interrupted start left: made again
                target = self.copy_path(episode.episode_id)
                record_writing(*(target.with_name(f"{target.name}{s}") for s in _SQLITE_SUFFIXES))
                self.copy_as_seen(store, k, target)
        finally:
            store.close()

    def copy_as_seen(self, store: SqliteStore, k: int, target: Path) -> int:
        """Copy ``store`` (the run's) to ``target`` without the records of this run's episodes at
        position ``k`` or later: the store an episode at position ``k`` starts on. ``before`` makes
        each round's copies with it, and ``fastslow fork`` (``eval.fork.copy_store``) rebuilds a
        finished stream episode's store with it from the run's final one. Returns the records removed."""
        later = [self.key(i) for i, p in self.positions.items() if p >= k]
        store.copy_to(target)
        copy = self._open(target)
        try:
            return copy.delete_episodes(later)
        finally:
            copy.close()

    def after(self, k: int) -> int:
        """Merge into the run's store the records of every episode at position ``k`` that has a copy
        (played now, or before an interruption), in the recorded order, then remove the copies; returns
        the records merged. An episode whose copy is gone was merged already."""
        if self.store_path is None:
            return 0
        merged = 0
        pending = [i for i in self.order if self.positions[i] == k and self.copy_path(i).is_file()]
        if not pending:
            return 0
        store = self._open(self.store_path)
        try:
            for episode_id in pending:
                copy = self._open(self.copy_path(episode_id))
                try:
                    merged += store.copy_episode(copy, self.key(episode_id))
                finally:
                    copy.close()
                self._remove_copy(episode_id)
        finally:
            store.close()
        return merged
