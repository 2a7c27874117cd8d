"""``fastslow eval``: play a set of episodes, stream events to DIR/events, write DIR/metrics.json (paper §4).

DIR layout:
  config.yaml      the resolved configuration
  run.json         the run's identity and selection (``rundir.RunRecord``): config hash, overrides,
                   warm-up, code versions, episode ids, AMM store and its size at each start
  events/*.jsonl   one event log per episode (``<task>-<variation>.jsonl``)
  metrics.json     computed from events/ when the run finishes (``records.RunMetrics``, versioned)
  memory.sqlite    AMM's store when the config names none (each run has its own)
  model_cache.sqlite  the answers of the run's temperature-0 model calls (``models.cache``), shared by
                   its workers and reused when the run is resumed; off with ``model.response_cache``
  warmup/events/   with ``--warmup``: the warm-up episodes that filled AMM's store (not in metrics);
                   warmup/run.json says which configuration played them
  stream/          with ``--stream``: the copy of the store each episode of the current round plays on,
                   removed once its records are merged (``eval.stream``)
  .fastslow.lock   held while a process works in DIR

Episodes run on ``workers`` processes, each owning one ScienceWorld JVM. Episodes whose log already
ends with ``episode_end`` are skipped, so rerunning the same command after a crash or ``kill -9``
finishes the run without repeating finished episodes; an unfinished log is replayed from scratch (and
the AMM records it wrote are removed first). A DIR made by another config, overrides, warm-up or code
is refused (``rundir``), and so is a DIR that holds no fastslow run but files a run would write.
``restart`` deletes only the files of the run recorded in DIR's run.json (``rundir.run_files``). Every
option and DIR itself are checked before anything is created or written. An episode the environment
broke (the JVM died) is retried a bounded number of times.
"""

from __future__ import annotations

import importlib.util
import json
import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastslow.build import check_models
from fastslow.config import RunConfig
from fastslow.env.episodes import Episode
from fastslow.errors import CorruptLogError, UsageError
from fastslow.eval.executors import EXECUTORS, run_episodes
from fastslow.eval.metrics import run_metrics, summarize_log, torn_line
from fastslow.eval.ray_cluster import check_ray_cluster
from fastslow.eval.records import METRICS_FILE
from fastslow.eval.rundir import (
    WARMUP_DIR,
    RunRecord,
    check_claim,
    claim_run,
    claimed_run,
    config_hash,
    note_warmup,
    run_lock,
    store_config,
    write_json,
)
from fastslow.eval.runner import EpisodeOutcome
from fastslow.eval.stream import STREAM_DIR, Stream, check_stream, stream_config
from fastslow.events import EndState
from fastslow.manifest import owned, record_removed, record_written
from fastslow.models.cache import CACHE_FILE


def check_out_dir(out: Path) -> None:
    """A one-line UsageError when DIR cannot be a run directory (a file, not writable); reads only."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a directory")
    probe = out
    while not probe.exists():
        probe = probe.parent
    if not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"--out {out} is not writable")


MAX_WORKERS = 64
"""Most ``--workers`` a run may ask for: each is a process with its own ScienceWorld JVM (about 1 GB),
so a mistyped count would start hundreds. A run never starts more workers than it has episodes."""


def check_workers(workers: int) -> None:
    """A one-line UsageError for a worker count below 1 or above ``MAX_WORKERS``."""
    if not 1 <= workers <= MAX_WORKERS:
        raise UsageError(f"--workers must be 1 to {MAX_WORKERS} (one JVM each), got {workers}")


def check_executor(workers: int, executor: str, ray_address: str | None) -> None:
    """A one-line UsageError, before anything is written, for workers, executor or Ray address that
    cannot run: a worker count outside 1..``MAX_WORKERS``, an unknown executor, ``ray`` without Ray
    installed, a Ray address for another executor, or one where no Ray cluster can be joined
    (``ray_cluster.check_ray_cluster``: a bounded wait, never the minutes ``ray.init`` would retry)."""
    check_workers(workers)
    if executor not in EXECUTORS:
        raise UsageError(f"unknown executor '{executor}': choose one of {', '.join(EXECUTORS)}")
    if ray_address is not None and executor != "ray":
        raise UsageError(
            f"--ray-address joins a Ray cluster: add --executor ray (the executor is {executor})"
        )
    if executor == "ray" and importlib.util.find_spec("ray") is None:
        raise UsageError("--executor ray needs Ray: pip install 'fastslow[ray]'")
    if ray_address is not None:
        check_ray_cluster(ray_address)


def prepare_out_dir(out: Path) -> None:
    """Create DIR (and DIR/events) or fail with a one-line UsageError before anything is written."""
    check_out_dir(out)
    try:
        (out / "events").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {out} cannot be created: {exc.strerror}") from exc


def is_finished(path: Path, note: Callable[[str], None] | None = None) -> bool:
    """A log counts as done when it ends with episode_end and the environment did not break it.

    Any other existing log is replayed, and ``note`` hears one line naming the log and why: a log with
    a corrupted line (not a torn last line), or one that is not one episode (another episode's header,
    two logs run together: ``events.iter_events``), is moved to ``events/failed/`` (kept, not deleted;
    the line says where, and which line is bad and how); a log without episode_end (the run stopped
    mid-episode, or the file was cut: its torn last line is named) and one the environment broke are
    replayed over."""
    if not path.exists():
        return False
    try:
        summary = summarize_log(path)
    except CorruptLogError as exc:
        failed = path.parent / "failed"
        failed.mkdir(exist_ok=True)
        kept = failed / f"{path.stem}.corrupt-{uuid.uuid4().hex[:6]}.jsonl"
        ours = owned(path)
        path.rename(kept)
        if ours:  # still the run's own, under another name
            record_removed(path)
            record_written(kept)
        why = str(exc).removeprefix(f"event log {path} ")
        _say(note, f"event log {path} set aside as {kept} ({why}); replaying {path.stem}")
        return False
    if summary is None:
        torn = torn_line(path)
        why = f"it ends mid-line {torn}: the file was cut" if torn else "the run stopped mid-episode"
        _say(note, f"event log {path} has no episode_end ({why}); replaying {path.stem}")
        return False
    if summary.end is EndState.ERROR:
        broken = f"ended in an environment error ({summary.error})"
        _say(note, f"event log {path} {broken}; replaying {path.stem}")
        return False
    return True


def _say(note: Callable[[str], None] | None, line: str) -> None:
    if note is not None:
        note(line)


def warmup_spec(config: RunConfig, agent: RunConfig | None) -> dict[str, Any]:
    """The warm-up part of a run's identity: who plays it, with which settings."""
    player = agent if agent is not None else config
    return {"played_by": player.name, "config_hash": config_hash(player)}


@contextmanager
def claim(
    config: RunConfig,
    episodes: list[Episode],
    out: Path,
    *,
    workers: int = 1,
    executor: str = "local",
    ray_address: str | None = None,
    warmup: bool = False,
    warmup_agent: RunConfig | None = None,
    overrides: list[str] | None = None,
    restart: bool = False,
    extend: bool = False,
    stream: bool = False,
) -> Iterator[RunRecord]:
    """Claim DIR for a run of ``episodes`` and hold it: yields the run's record (``rundir.RunRecord``;
    its ``episodes`` are the ones to play) with DIR's lock held until the block ends. The one sequence
    by which a run takes DIR, for ``evaluate`` and for ``fastslow eval`` (which claims first, to play
    the warm-up and print the store under the claim): every refusal (workers and executor, stream,
    warm-up and the config's memory regime, the models, DIR, then everything ``rundir.claim_run``
    would refuse) comes before DIR is created or anything in it is written; then DIR is created,
    locked and claimed (config.yaml and run.json written, a ``restart``'s files discarded).

    Inside a claim this process already holds on DIR (``evaluate`` called by ``fastslow eval``), the
    run is what that claim's run.json says: its record is yielded as it is, and the options given here
    (the nested ``evaluate`` passes no warm-up) are not judged again."""
    held = claimed_run(out)
    if held is not None:
        with run_lock(out):
            yield held
        return
    check_executor(workers, executor, ray_address)
    if stream:
        check_stream(config)
    if warmup:
        check_warmup(config, warmup_agent)
    check_memory_regime(config, warmup)
    # the models, before anything is written (and before hours of warm-up are spent): a model server
    # that is down fails here
    check_models(config)
    if warmup and warmup_agent is not None:
        check_models(warmup_agent)
    check_out_dir(out)
    ids = [e.episode_id for e in episodes]
    spec = warmup_spec(config, warmup_agent) if warmup else None
    check_claim(
        out, config, ids, overrides=overrides, warmup=spec, restart=restart, extend=extend, stream=stream
    )
    prepare_out_dir(out)
    with run_lock(out):
        yield claim_run(
            out,
            config,
            ids,
            overrides=overrides,
            warmup=spec,
            workers=workers,
            executor=executor,
            restart=restart,
            extend=extend,
            stream=stream,
        )


def evaluate(
    config: RunConfig,
    episodes: list[Episode],
    out: Path,
    *,
    workers: int = 1,
    retries: int = 2,
    executor: str = "local",
    ray_address: str | None = None,
    on_episode: Callable[[EpisodeOutcome | None, int, int], None] | None = None,
    warmup: bool = False,
    warmup_episodes: list[Episode] | None = None,
    warmup_agent: RunConfig | None = None,
    overrides: list[str] | None = None,
    restart: bool = False,
    extend: bool = False,
    on_note: Callable[[str], None] | None = None,
    stream: bool = False,
) -> dict[str, Any]:
    """Run ``episodes`` into ``out`` on ``workers`` processes (one JVM each) and return the metrics
    written to metrics.json, as that file's JSON object (``RunMetrics.to_json()``).

    ``on_episode(outcome, done, total)`` is called after each episode (outcome None = already done);
    ``on_note(line)`` for each log a resume sets aside or replays (``is_finished``). ``warmup``: first
    play ``warmup_episodes`` (default: the ``warmup`` set) into DIR/warmup (``run_warmup``), with
    ``warmup_agent`` playing them when given. ``restart`` discards a run already in DIR (only the
    files its run.json says it wrote); ``extend`` adds this selection to it (``rundir.claim_run``);
    ``overrides`` are recorded in run.json. ``stream``: play each task's episodes as a stream
    (``eval.stream``: the order decides what each episode's memory may read; headers record the
    positions); a run claimed already (the CLI claims first) plays as its run.json says. DIR is taken
    by ``claim``: every refusal (options, models, DIR, store) comes before DIR is created or anything
    in it is written.
    """
    with claim(
        config,
        episodes,
        out,
        workers=workers,
        executor=executor,
        ray_address=ray_address,
        warmup=warmup,
        warmup_agent=warmup_agent,
        overrides=overrides,
        restart=restart,
        extend=extend,
        stream=stream,
    ) as record:
        placed = store_config(config, out)
        if warmup:
            run_warmup(
                placed,
                out,
                warmup_episodes,
                agent=warmup_agent,
                workers=workers,
                retries=retries,
                executor=executor,
                ray_address=ray_address,
                on_note=on_note,
                stream=record.stream,
            )
        selection = [Episode.from_id(i) for i in record.episodes]
        events_dir = out / "events"
        todo = [e for e in selection if not is_finished(events_dir / f"{e.episode_id}.jsonl", on_note)]
        finished = _progress(on_episode, len(selection) - len(todo), len(selection))
        flow = Stream(placed, out, record.run_id, record.episodes) if record.stream else None
        run_episodes(
            stream_config(placed) if flow is not None else placed,
            todo,
            events_dir,
            workers=workers,
            retries=retries,
            executor=executor,
            ray_address=ray_address,
            on_outcome=finished,
            run_id=record.run_id,
            model_cache=out / CACHE_FILE,
            stream=flow,
        )
        metrics = run_metrics(events_dir, record.episodes).to_json()
        write_json(out / METRICS_FILE, metrics)
    return metrics


def _progress(
    on_episode: Callable[[EpisodeOutcome | None, int, int], None] | None, skipped: int, total: int
) -> Callable[[EpisodeOutcome], None]:
    """Tell ``on_episode`` about the ``skipped`` (already finished) episodes now, and return the callback
    that counts each episode played from here on."""
    done = skipped
    if on_episode:
        for i in range(skipped):
            on_episode(None, i + 1, total)

    def finished(outcome: EpisodeOutcome) -> None:
        nonlocal done
        done += 1
        if on_episode:
            on_episode(outcome, done, total)

    return finished


def check_memory_regime(config: RunConfig, warmup: bool) -> None:
    """A UsageError before anything is written when ``--warmup`` contradicts the configuration's
    ``warmup`` regime (the paper's populated store vs. its weak-memory sensitivity run)."""
    if config.warmup == "required" and not warmup:
        raise UsageError(
            f"config {config.name} is measured with a populated memory store: add --warmup "
            "(or use a config with warmup: any)"
        )
    if config.warmup == "refused" and warmup:
        raise UsageError(
            f"config {config.name} is the weak-memory regime (the store starts empty): "
            "run it without --warmup"
        )


def check_warmup(config: RunConfig, agent: RunConfig | None) -> RunConfig:
    """The warm-up's player, or a UsageError before anything is written."""
    if not config.amm.enabled:
        raise UsageError("--warmup fills AMM's memory store: use a config with amm.enabled (e.g. amm, full)")
    player = agent if agent is not None else config
    if player.agent.kind == "oracle":
        raise UsageError(
            f"--warmup needs an agent that walks AMM's hooks (swiftsage, or a plug-in agent such as "
            f"react), not oracle (config {player.name})"
        )
    if player.env.world != config.env.world:
        raise UsageError(
            f"--warmup-config {player.name} plays env.world={player.env.world}, the run "
            f"env.world={config.env.world}: the warm-up must fill the store in the run's world"
        )
    return player


def _warmup_run_id(out: Path) -> str:
    """The run id the warm-up's records carry: the claimed run's, or the warm-up's own when it is
    played alone (``run_warmup`` called directly), kept in warmup/run.json across resumes."""
    record = claimed_run(out)
    if record is not None:
        return record.run_id
    previous = out / WARMUP_DIR / "run.json"
    if previous.is_file():
        try:
            known = json.loads(previous.read_text(encoding="utf-8")).get("run_id")
        except (OSError, ValueError):
            known = None
        if isinstance(known, str) and known:
            return known
    return uuid.uuid4().hex[:12]


def run_warmup(
    config: RunConfig,
    out: Path,
    episodes: list[Episode] | None = None,
    *,
    agent: RunConfig | None = None,
    workers: int = 1,
    retries: int = 2,
    executor: str = "local",
    ray_address: str | None = None,
    on_episode: Callable[[EpisodeOutcome | None, int, int], None] | None = None,
    on_note: Callable[[str], None] | None = None,
    stream: bool = False,
) -> list[EpisodeOutcome]:
    """AMM warm-up (paper §4): play the ``warmup`` set (2 train variations per task, 60 episodes) so the
    memory store holds records before the evaluation starts.

    By default the run's own configuration plays the warm-up, as in the paper. ``agent`` swaps in
    another configuration's agent (env, Swift, Sage, controller, SRM) while keeping the run's ``amm``
    section - same store, salience gate and record format - e.g. the fast pathway ``swift-amm``, which
    fills the store in about a minute where the embedded LLM needs hours on 2 cores. The records are
    then those the fast pathway found worth keeping (a different memory regime; README says which).

    The store is the run's: ``DIR/memory.sqlite`` unless ``amm.path`` names one. Logs go to
    DIR/warmup/events (never into DIR/events, so metrics never see them); finished episodes are
    skipped on a rerun, as in the main run. The episodes run with ``controller.warmup`` set, which
    lets them write even when ``amm.mode`` is frozen (read-only afterwards). ``on_episode`` and ``on_note`` as
    in ``evaluate``. ``stream``: play them as a stream (``eval.stream``; a stream run's warm-up), so the
    store they leave is the same whatever the number of workers."""
    from fastslow.env.world import get_world

    player = check_warmup(config, agent)
    chosen = episodes if episodes is not None else get_world(config.env.world).select("warmup")
    config = store_config(config, out)
    target = out / WARMUP_DIR
    warm = player.model_copy(
        update={
            "amm": config.amm,
            "controller": player.controller.model_copy(update={"warmup": True}),
        }
    )
    if agent is not None:
        check_models(warm)
    prepare_out_dir(target)
    with run_lock(out):
        run_id = _warmup_run_id(out)
        events_dir = target / "events"
        todo = [e for e in chosen if not is_finished(events_dir / f"{e.episode_id}.jsonl", on_note)]
        write_json(
            target / "run.json",
            {
                "run_id": run_id,
                "played_by": warm.name,
                "store": config.amm.model_dump(mode="json"),
                "episodes": [e.episode_id for e in chosen],
            },
        )
        outcomes: list[EpisodeOutcome] = []
        report = _progress(on_episode, len(chosen) - len(todo), len(chosen))

        def finished(outcome: EpisodeOutcome) -> None:
            outcomes.append(outcome)
            report(outcome)

        flow = (
            Stream(config, out, f"{run_id}/{WARMUP_DIR}", [e.episode_id for e in chosen], target / STREAM_DIR)
            if stream
            else None
        )
        run_episodes(
            stream_config(warm) if flow is not None else warm,
            todo,
            events_dir,
            workers=workers,
            retries=retries,
            executor=executor,
            ray_address=ray_address,
            on_outcome=finished,
            run_id=f"{run_id}/{WARMUP_DIR}",
            model_cache=out / CACHE_FILE,
            stream=flow,
        )
        note_warmup(out, config)
    return outcomes
