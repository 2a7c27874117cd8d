"""``fastslow eval``: play a set of episodes, stream events to DIR/events, write DIR/metrics.json (paper §4).

DIR layout:
  config.yaml      the resolved configuration
  run.json         command, versions, git commit, episode list
  events/*.jsonl   one event log per episode (``<task>-<variation>.jsonl``)
  metrics.json     computed from events/ when the run finishes

Episodes whose log already ends with ``episode_end`` are skipped, so rerunning the same command
after a crash finishes the run without repeating finished episodes; an unfinished log is replayed.
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

from fastslow.agents import make_agent
from fastslow.config import RunConfig
from fastslow.env.episodes import Episode
from fastslow.env.scienceworld import ScienceWorldAdapter
from fastslow.errors import UsageError
from fastslow.eval.metrics import compute_metrics, summarize_dir, summarize_log
from fastslow.eval.runner import EpisodeOutcome, git_commit, run_episode, versions
from fastslow.events import JsonlWriter


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


def evaluate(
    config: RunConfig,
    episodes: list[Episode],
    out: Path,
    *,
    on_episode: Callable[[EpisodeOutcome | None, int, int], None] | None = None,
) -> dict[str, Any]:
    """Run ``episodes`` sequentially into ``out`` and return the metrics (also written to metrics.json).

    ``on_episode(outcome, done, total)`` is called after each episode (outcome None = skipped as done).
    """
    prepare_out_dir(out)
    events_dir = out / "events"
    (out / "config.yaml").write_text(yaml.safe_dump(config.model_dump(mode="json"), sort_keys=False))
    _write_json(
        out / "run.json",
        {
            "command": sys.argv,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "config_name": config.name,
            "versions": versions(),
            "git_commit": git_commit(),
            "episodes": [str(e) for e in episodes],
        },
    )
    agent = make_agent(config)
    with ScienceWorldAdapter(
        config.env.simplification, config.env.step_limit, config.env.jvm_timeout_s
    ) as env:
        for done, episode in enumerate(episodes, start=1):
            path = events_dir / f"{episode.episode_id}.jsonl"
            if path.exists() and summarize_log(path) is not None:
                if on_episode:
                    on_episode(None, done, len(episodes))
                continue
            path.unlink(missing_ok=True)  # an unfinished log from a crashed run is replayed from scratch
            with JsonlWriter(path) as writer:
                outcome = run_episode(env, agent, episode, config, writer)
            if on_episode:
                on_episode(outcome, done, len(episodes))
    wanted = {e.episode_id for e in episodes}
    summaries = [s for s in summarize_dir(events_dir) if s.episode_id in wanted]
    metrics = compute_metrics(summaries)
    _write_json(out / "metrics.json", metrics)
    return metrics
