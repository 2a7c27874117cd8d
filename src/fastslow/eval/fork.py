"""Counterfactual forks: continue a logged episode from step K under another configuration.

``fastslow fork RUN EPISODE --at K [--config C] --out DIR`` plays the episode of a finished run again in
a fresh environment: steps 1..K-1 execute the parent's logged actions, each checked against the log
(``eval/replay.py``: action, observation, score, reward, moves, end, number of valid actions; a
mismatch ends the fork with a line naming the step and the field), while the fork's agent is asked at
every one of them, so its hooks build their state from the prefix as they would have; from step K the
agent plays on its own to the end. Steps number on across the trials of an agent that plays several
(Reflexion): K counts every trial's steps, and the ends of trials inside the prefix are replayed and
checked too (``eval/replay.py``). Without ``--config`` the fork plays the parent's own resolved
configuration (the control: under ScienceWorld's determinism it repeats the parent).

AMM: the fork plays on a copy of the parent's SQLite store as it was at step K: records created after
the parent's step K-1 are removed, and so are the parent's records of this episode (the fork's agent
writes its own while it replays the prefix, through its configuration's write path). An episode of a
``--stream`` run (its header's ``stream_position`` k) read its round's copy of the store instead, which
held no record of the run's episodes at positions k and later: the fork's copy is rebuilt the same way
(``eval.stream.Stream.copy_as_seen``), whatever the clock says. The parent's
response cache is copied too, so a replayed prefix asks an LLM only what the parent did not.

DIR is a run directory like any other (run.json, config.yaml, events/, metrics.json); the episode's
header names the parent (``EpisodeStart.fork``) and a ``replay_end`` event separates the replayed
steps from the fork's own. What a fork guarantees and what it cannot: docs/forks.md.
"""

from __future__ import annotations

import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fastslow.config import RunConfig, apply_override, load_config
from fastslow.env.episodes import Episode
from fastslow.env.world import get_world
from fastslow.errors import CorruptLogError, UsageError
from fastslow.eval.evaluate import check_out_dir, prepare_out_dir
from fastslow.eval.metrics import run_metrics, summarize_log
from fastslow.eval.records import METRICS_FILE, EpisodeResult
from fastslow.eval.replay import Replay, ReplayDivergence
from fastslow.eval.rundir import (
    RUN_FILE,
    STORE_FILE,
    RunRecord,
    check_claim,
    claim_run,
    read_run_record,
    refuse_parents,
    run_lock,
    store_config,
    write_json,
)
from fastslow.eval.runner import EpisodeOutcome, run_episode
from fastslow.events import (
    EndState,
    EnvStep,
    EpisodeEnd,
    EpisodeStart,
    ForkOrigin,
    JsonlWriter,
    TrialEnd,
    read_events,
)
from fastslow.manifest import BOOKKEEPING
from fastslow.models.cache import CACHE_FILE


@dataclass(frozen=True)
class Parent:
    """A finished episode of a run, as its run.json and log say."""

    run_dir: Path
    record: RunRecord
    start: EpisodeStart
    steps: list[EnvStep]
    result: EpisodeResult
    trials: tuple[TrialEnd, ...] = ()
    """Its ``trial_end`` events (an agent that plays trials, ``agents.base.Trials``; none for any
    other): its ``env_step`` events number on across the trials."""

    @property
    def config(self) -> RunConfig:
        """The configuration that played it, resolved as its header holds it, with the run's per-run
        store unplaced (a fork gets its own copy). A header from before ``env.hash_codes`` existed was
        played on the JVM's own hash codes: it reads as ``hash_codes: default``."""
        data = self.start.config
        env = data.get("env")
        if isinstance(env, dict) and "hash_codes" not in env:
            data = {**data, "env": {**env, "hash_codes": "default"}}
        config = RunConfig.model_validate(data)
        store = self.record.store
        if config.amm.path and store is not None and store.per_run and config.amm.path == store.location:
            config = config.model_copy(update={"amm": config.amm.model_copy(update={"path": None})})
        return config

    @property
    def memory_key(self) -> str:
        return f"{self.record.run_id}/{self.start.episode_id}"

    def position(self, step: int) -> tuple[int, int]:
        """The parent's trial of env step ``step`` (from 1) and the step's number within that trial
        (``(1, step)`` for an agent without trials)."""
        ended = [t for t in self.trials if t.next and t.step < step]
        return len(ended) + 1, step - (ended[-1].step if ended else 0)


def read_parent(run_dir: Path, episode_id: str) -> Parent:
    """The parent episode, or a one-line UsageError (not a run, no such episode, an unfinished log)."""
    record = read_run_record(run_dir)
    if record is None:
        raise UsageError(f"{run_dir} is not a run directory (no {RUN_FILE})")
    log = run_dir / "events" / f"{episode_id}.jsonl"
    if not log.is_file():
        raise UsageError(f"{run_dir} has no log of episode {episode_id} ({log})")
    try:
        events = read_events(log)
    except CorruptLogError as exc:
        raise UsageError(f"cannot fork {log}: {exc}") from None
    result = summarize_log(log)
    if not events or not isinstance(events[0], EpisodeStart) or result is None:
        raise UsageError(f"cannot fork {log}: the episode did not finish (no episode_start or episode_end)")
    if not isinstance(events[-1], EpisodeEnd):
        raise UsageError(f"cannot fork {log}: events after its episode_end")
    steps = [e for e in events if isinstance(e, EnvStep)]
    if [s.step for s in steps] != list(range(1, len(steps) + 1)):
        raise UsageError(f"cannot fork {log}: its env_step events are not steps 1..{len(steps)}")
    trials = tuple(e for e in events if isinstance(e, TrialEnd))
    return Parent(run_dir, record, events[0], steps, result, trials)


def fork_config(parent: Parent, name: str | None, overrides: list[str] | None = None) -> RunConfig:
    """The fork's configuration: ``name`` (a built-in or a YAML file) with ``overrides``, or without a
    name the parent's own resolved configuration with them."""
    if name is not None:
        return load_config(name, overrides)
    if not overrides:
        return parent.config
    data = parent.config.model_dump(mode="json")
    for override in overrides:
        apply_override(data, override)
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise UsageError(f"the parent's config with the overrides: {where}: {err['msg']}") from None


def replay_jvm_history(parent: Parent, env: Any) -> int:
    """Play on ``env``'s fresh JVM what the parent's JVM played before the episode (the header's
    ``jvm``): each earlier episode's reset and logged actions, every observation checked. Returns the
    steps replayed; a ``ReplayDivergence`` names the episode and step that answered differently. A
    header without ``jvm`` (not played by a run's worker) replays nothing, and neither does a parent
    played with ``env.hash_codes: constant``: its episodes do not depend on the JVM's history."""
    history = parent.start.jvm
    if history is None or parent.config.env.hash_codes == "constant":
        return 0
    steps = 0
    for episode_id in history.episodes:
        log = parent.run_dir / "events" / f"{episode_id}.jsonl"
        if not log.is_file():
            raise UsageError(
                f"the parent's JVM played {episode_id} before {parent.start.episode_id}, and its log "
                f"is gone ({log}): the JVM's state cannot be rebuilt"
            )
        episode = Episode.from_id(episode_id)
        env.reset(episode.task_id, episode.variation, gold=history.gold)
        for logged in (e for e in read_events(log) if isinstance(e, EnvStep)):
            result = env.step(logged.action)
            steps += 1
            if result.observation != logged.observation:
                raise ReplayDivergence(
                    f"replaying the parent JVM's history diverged at episode {episode_id} step "
                    f"{logged.step}: the observation differs from its log"
                )
    return steps


def check_fork(parent: Parent, at: int, config: RunConfig) -> None:
    """Every refusal before anything is written."""
    if not 1 <= at <= len(parent.steps):
        raise UsageError(
            f"--at {at}: episode {parent.start.episode_id} of {parent.run_dir} has steps "
            f"1..{len(parent.steps)}"
        )
    if config.env.world != parent.start.world:
        raise UsageError(
            f"env.world {config.env.world} is not the parent's ({parent.start.world}): its episode "
            f"{parent.start.episode_id} is another world's"
        )
    world = get_world(config.env.world)
    limit = world.step_limit(parent.start.task_id, config.env.step_limit)
    trial, own = parent.position(at)
    if limit < own:
        where = f" (step {own} of the parent's trial {trial})" if trial > 1 else ""
        raise UsageError(
            f"--at {at}{where} is past the fork's env.step_limit ({limit}): it would stop before its "
            "first own step"
        )
    parents_limit = world.step_limit(parent.start.task_id, parent.config.env.step_limit)
    for ended in parent.trials:
        # a trial the fork replays to its end must end where the parent's did (the step limit counts
        # each trial's steps); one ending with step K-1 ends in the fork's own play
        replayed = ended.next and ended.step < at - 1
        if replayed and (limit < ended.steps or (ended.end == EndState.STEP_LIMIT and limit != ended.steps)):
            raise UsageError(
                f"env.step_limit {limit} would not end the parent's trial {ended.trial} where it ended "
                f"(after {ended.steps} steps, {ended.end.value}), and the fork replays it: use the "
                f"parent's (-o env.step_limit={parents_limit})"
            )
    if config.env.simplification != parent.config.env.simplification:
        raise UsageError(
            f"env.simplification {config.env.simplification!r} is not the parent's "
            f"({parent.config.env.simplification!r}): the logged actions would not replay"
        )
    if config.env.hash_codes != parent.config.env.hash_codes:
        raise UsageError(
            f"env.hash_codes {config.env.hash_codes!r} is not the parent's "
            f"({parent.config.env.hash_codes!r}): ScienceWorld would order its objects differently "
            f"(-o env.hash_codes={parent.config.env.hash_codes})"
        )
    amm = config.amm
    if amm.enabled and (amm.store != "sqlite" or amm.path):
        raise UsageError(
            "a fork plays on a copy of its parent's store, in its own directory: use an SQLite store "
            "without amm.path"
        )
    store = parent.record.store
    if amm.enabled and store is not None and store.kind != "sqlite":
        raise UsageError(f"the parent's store is {store.kind}: forks copy SQLite stores only")
    if amm.enabled and store is not None and not Path(store.location).is_file():
        raise UsageError(f"the parent's memory store is gone: {store.location}")
    position = parent.start.stream_position
    if amm.enabled and store is not None and position is not None:
        known = parent.record.episodes
        if not parent.record.stream or parent.start.episode_id not in known:
            # e.g. a --stream warm-up's episode: its run.json does not say whose records it read
            raise UsageError(
                f"episode {parent.start.episode_id} played at stream position {position}, and "
                f"{parent.run_dir}'s run.json does not record the stream it played in: the store it "
                "read cannot be rebuilt"
            )


def copy_store(parent: Parent, at: int, target: Path) -> dict[str, int]:
    """The parent's store as it was at step ``at`` (module docstring), written to ``target``; counts of
    what was copied and removed. A parent without a store gives an empty one (nothing is copied)."""
    from fastslow.memory.stores.sqlite import SqliteStore

    store = parent.record.store
    if store is None:
        return {"copied": 0, "removed_later": 0, "removed_own": 0}
    source = sqlite3.connect(f"file:{store.location}?mode=ro", uri=True)
    dest = sqlite3.connect(target)
    try:
        source.backup(dest)
    finally:
        dest.close()
        source.close()
    copy = SqliteStore(str(target))
    try:
        copied = copy.count()
        own = copy.delete_episode(parent.memory_key)
        if parent.start.stream_position is not None:
            # A stream episode read the store its round's copy held (``eval.stream``): the records of
            # the episodes at its position and later are gone, whenever they were written (one of its
            # own round may have written before its step K-1), and nothing else.
            copy.close()
            later = _stream_store(parent, target)
            copy = SqliteStore(str(target))
        else:
            cutoff = parent.steps[at - 2].t if at >= 2 else parent.start.t
            later = copy.delete_created_after(cutoff)
    finally:
        copy.close()
    return {"copied": copied, "removed_later": later, "removed_own": own}


def _stream_store(parent: Parent, target: Path) -> int:
    """Rewrite ``target`` (a copy of the parent run's store) as the parent's stream episode started on
    it: ``Stream.copy_as_seen`` at the episode's stream position, the same code that made the round's
    copy. Returns the records removed."""
    from fastslow.eval.stream import Stream
    from fastslow.memory.stores.sqlite import SqliteStore

    position = parent.start.stream_position
    assert position is not None
    config = parent.config
    config = config.model_copy(update={"amm": config.amm.model_copy(update={"path": str(target)})})
    stream = Stream(config, target.parent, parent.record.run_id, parent.record.episodes)
    staged = target.with_name(f"{target.name}.stream")
    store = SqliteStore(str(target), readonly=True)
    try:
        removed = stream.copy_as_seen(store, position, staged)
    finally:
        store.close()
    staged.replace(target)
    return removed


@dataclass(frozen=True)
class ForkResult:
    parent: Parent
    outcome: EpisodeOutcome
    fork: EpisodeResult | None
    metrics: dict[str, Any]
    store: dict[str, int] | None


def fork_episode(
    parent: Parent,
    at: int,
    config: RunConfig,
    out: Path,
    overrides: list[str] | None = None,
) -> ForkResult:
    """Play the fork into ``out`` (a new or empty directory) and write its metrics.json."""
    from fastslow.build import make_agent
    from fastslow.models.cache import ResponseCache

    check_fork(parent, at, config)
    check_out_dir(out)
    refuse_parents(out, (parent.run_dir,))
    # a lock and a manifest alone (a directory ``attribute`` emptied to replay a fork) hold nothing
    if out.exists() and any(p.name not in BOOKKEEPING for p in out.iterdir()):
        raise UsageError(f"--out {out} is not empty: a fork writes into a new or empty directory")
    episode_id = parent.start.episode_id
    check_claim(out, config, [episode_id], overrides=overrides)
    prepare_out_dir(out)
    with run_lock(out):
        record = claim_run(out, config, [episode_id], overrides=overrides)
        placed = store_config(config, out)
        counts = None
        if placed.amm.enabled:
            counts = copy_store(parent, at, out / STORE_FILE)
            kept = counts["copied"] - counts["removed_later"] - counts["removed_own"]
            record.starts[-1].store_records = kept
            write_json(out / RUN_FILE, record.model_dump(mode="json"))
        if (parent.run_dir / CACHE_FILE).is_file():
            shutil.copyfile(parent.run_dir / CACHE_FILE, out / CACHE_FILE)
        origin = ForkOrigin(
            run_dir=str(parent.run_dir),
            run_id=parent.record.run_id,
            config_name=parent.start.config_name,
            at=at,
        )
        replay = Replay(origin, parent.steps[: at - 1], parent.start.task_description, parent.trials)
        episode = Episode(parent.start.task_id, parent.start.variation, parent.start.seed)
        if episode.seed is not None:
            placed = placed.with_seed(episode.seed)  # the parent's own config already is: a no-op
        cache = ResponseCache(out / CACHE_FILE)
        env = get_world(placed.env.world).make_env(placed.env)
        log = out / "events" / f"{episode_id}.jsonl"
        try:
            replay.history_steps = replay_jvm_history(parent, env)
            agent = make_agent(placed, cache)
            with JsonlWriter(log) as writer:
                outcome = run_episode(env, agent, episode, placed, writer, record.run_id, replay=replay)
        finally:
            env.close()
            cache.close()
        metrics = run_metrics(out / "events", [episode_id]).to_json()
        write_json(out / METRICS_FILE, metrics)
    return ForkResult(parent, outcome, summarize_log(log), metrics, counts)
