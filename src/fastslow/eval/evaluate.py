"""``fastslow eval``: play a set of episodes, stream events to DIR/events, write DIR/metrics.json (paper §4).

DIR layout:
  config.yaml      the resolved configuration
  run.json         command, versions, git commit, episode list
  events/*.jsonl   one event log per episode (``<task>-<variation>.jsonl``)
  metrics.json     computed from events/ when the run finishes
  warmup/events/   with ``--warmup``: the warm-up episodes that filled AMM's store (not in metrics);
                   warmup/run.json says which configuration played them

Episodes run on ``workers`` processes, each owning one ScienceWorld JVM. Episodes whose log already
ends with ``episode_end`` are skipped, so rerunning the same command after a crash or ``kill -9``
finishes the run without repeating finished episodes; an unfinished log is replayed from scratch.
An episode the environment broke (the JVM died) is retried a bounded number of times.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from fastslow.config import RunConfig
from fastslow.controller.controller import check_models
from fastslow.env.episodes import Episode
from fastslow.errors import UsageError
from fastslow.eval.executors import EXECUTORS, run_episodes
from fastslow.eval.metrics import run_metrics, summarize_log
from fastslow.eval.runner import EpisodeOutcome, git_commit, versions
from fastslow.events import EndState


def prepare_out_dir(out: Path) -> None:
    """Create DIR (and DIR/events) or fail with a one-line UsageError before anything is written."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a directory")
    probe = out
    while not probe.exists():
        probe = probe.parent
    if not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"--out {out} is not writable")
    try:
        (out / "events").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {out} cannot be created: {exc.strerror}") from exc


def _write_json(path: Path, payload: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def is_finished(path: Path) -> bool:
    """A log counts as done when it ends with episode_end and the environment did not break it."""
    if not path.exists():
        return False
    summary = summarize_log(path)
    return summary is not None and summary.end is not EndState.ERROR


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
) -> dict[str, Any]:
    """Run ``episodes`` into ``out`` on ``workers`` processes (one JVM each) and return the metrics,
    also written to metrics.json.

    ``on_episode(outcome, done, total)`` is called after each episode (outcome None = already done).
    ``warmup``: first play ``warmup_episodes`` (default: the ``warmup`` set) into DIR/warmup
    (``run_warmup``), with ``warmup_agent`` playing them when given.
    """
    if workers < 1:
        raise UsageError(f"--workers must be >= 1, got {workers}")
    if executor not in EXECUTORS:
        raise UsageError(f"unknown executor '{executor}': choose one of {', '.join(EXECUTORS)}")
    check_models(config)  # a model server that is down fails here, before anything is written
    if warmup:
        run_warmup(
            config,
            out,
            warmup_episodes,
            agent=warmup_agent,
            workers=workers,
            retries=retries,
            executor=executor,
            ray_address=ray_address,
        )
    prepare_out_dir(out)
    events_dir = out / "events"
    (out / "config.yaml").write_text(yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False))
    _write_json(
        out / "run.json",
        {
            "command": sys.argv,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "config_name": config.name,
            "workers": workers,
            "executor": executor,
            "versions": versions(),
            "git_commit": git_commit(),
            "episodes": [str(e) for e in episodes],
        },
    )
    todo = [e for e in episodes if not is_finished(events_dir / f"{e.episode_id}.jsonl")]
    done = len(episodes) - len(todo)
    if on_episode:
        for i in range(done):
            on_episode(None, i + 1, len(episodes))

    def finished(outcome: EpisodeOutcome) -> None:
        nonlocal done
        done += 1
        if on_episode:
            on_episode(outcome, done, len(episodes))

    run_episodes(
        config,
        todo,
        events_dir,
        workers=workers,
        retries=retries,
        executor=executor,
        ray_address=ray_address,
        on_outcome=finished,
    )
    metrics = run_metrics(events_dir, [e.episode_id for e in episodes])
    _write_json(out / "metrics.json", metrics)
    return metrics


WARMUP_DIR = "warmup"


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
) -> list[EpisodeOutcome]:
    """AMM warm-up (paper §4): play the ``warmup`` set (2 train variations per task, 60 episodes) so the
    memory store holds records before the evaluation starts.

    By default the run's own configuration plays the warm-up, as in the paper. ``agent`` swaps in
    another configuration's agent (env, Swift, Sage, controller, SRM) while keeping the run's ``amm``
    section - same store, salience gate and record format - e.g. the fast pathway ``swift-amm``, which
    fills the store in about a minute where the embedded LLM needs hours on 2 cores. The records are
    then those the fast pathway found worth keeping (a different memory regime; README says which).

    Logs go to DIR/warmup/events (never into DIR/events, so metrics never see them); finished episodes
    are skipped on a rerun, as in the main run. The episodes run with ``controller.warmup`` set, which
    lets them write even when ``amm.mode`` is frozen (read-only afterwards). ``on_episode`` as in
    ``evaluate``."""
    from fastslow.env.episodes import select_episodes

    if not config.amm.enabled:
        raise UsageError("--warmup fills AMM's memory store: use a config with amm.enabled (e.g. amm, full)")
    player = agent if agent is not None else config
    if player.agent.kind != "swiftsage":
        raise UsageError(
            f"--warmup needs agent.kind swiftsage (the one with AMM), not {player.agent.kind} "
            f"(config {player.name})"
        )
    chosen = episodes if episodes is not None else select_episodes("warmup", None, None, None)
    target = out / WARMUP_DIR
    prepare_out_dir(target)
    events_dir = target / "events"
    todo = [e for e in chosen if not is_finished(events_dir / f"{e.episode_id}.jsonl")]
    warm = player.model_copy(
        update={
            "amm": config.amm,
            "controller": player.controller.model_copy(update={"warmup": True}),
        }
    )
    if agent is not None:
        check_models(warm)
    _write_json(
        target / "run.json",
        {
            "played_by": warm.name,
            "store": config.amm.model_dump(mode="json"),
            "episodes": [str(e) for e in chosen],
        },
    )
    outcomes: list[EpisodeOutcome] = []
    skipped = len(chosen) - len(todo)
    if on_episode:
        for i in range(skipped):
            on_episode(None, i + 1, len(chosen))

    def finished(outcome: EpisodeOutcome) -> None:
        outcomes.append(outcome)
        if on_episode:
            on_episode(outcome, skipped + len(outcomes), len(chosen))

    run_episodes(
        warm,
        todo,
        events_dir,
        workers=workers,
        retries=retries,
        executor=executor,
        ray_address=ray_address,
        on_outcome=finished,
    )
    return outcomes
