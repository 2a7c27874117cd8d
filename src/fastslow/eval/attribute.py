"""Mechanism attribution by counterfactual forks (``fastslow attribute``; docs/forks.md).

The paper's mechanism analysis is correlational: it counts Gate-1 drops, Critic calls and memory
injections beside scores. This asks each logged mechanism event "had it not acted, how would the
episode have ended?": for every event of one kind in a finished run (or a seeded sample), two forks of
its episode at the event's step play on to the end under the run's own configuration, one as it is
(the control) and one with that mechanism switched off at that step only (``config.Intervention``).
The difference control - off is what the mechanism did there.

Per point: both forks' scores in the paper and strict conventions, and whether the control repeated
the parent exactly (the replay-exactness rate: ScienceWorld and the models are deterministic only as
far as that). Aggregates: better / same / worse, the mean difference with a seeded bootstrap interval,
"prevented a -100" (the fork without the mechanism failed, the control did not) and "cost the episode"
(the fork without it scored higher). Forks run in parallel processes (each with its own JVM) and a
rerun skips the points already played.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fastslow.config import Intervention
from fastslow.errors import UsageError
from fastslow.eval.fork import Parent, fork_episode, read_parent
from fastslow.eval.metrics import summarize_log
from fastslow.eval.records import METRICS_FILE, EpisodeResult
from fastslow.eval.replay import ReplayDivergence
from fastslow.eval.rundir import write_json
from fastslow.events import (
    CriticCall,
    EndState,
    EnvStep,
    EpisodeEnd,
    Event,
    GateDecision,
    GateOutcome,
    MemoryInjection,
    SageCall,
    read_events,
)
from fastslow.vocab import Mechanism

RESULT_FILE = "attribution.json"
BOOTSTRAP_RESAMPLES = 2000


@dataclass(frozen=True, order=True)
class Point:
    """One mechanism event to attribute: its episode and the env steps taken when it acted."""

    episode: str
    step: int

    @property
    def at(self) -> int:
        """The forks' first own step: the one the mechanism's action (or veto) was about."""
        return self.step + 1

    @property
    def name(self) -> str:
        return f"{self.episode}-at{self.at:03d}"


def _acted(event: Event, mechanism: Mechanism) -> bool:
    if mechanism == "gate-drop":
        return isinstance(event, GateDecision) and event.outcome is GateOutcome.DROP
    if mechanism == "critic":
        return isinstance(event, CriticCall) and bool(event.actions) and event.injected
    if mechanism == "sage-round":
        return isinstance(event, SageCall)
    return isinstance(event, MemoryInjection) and event.trigger == "T1"


def mechanism_points(run: Path, mechanism: Mechanism) -> list[Point]:
    """Every (episode, step) of a finished episode of ``run`` where ``mechanism`` acted, the fork point
    inside the episode (an event after its last step has nothing to change)."""
    points: set[Point] = set()
    for log in sorted((run / "events").glob("*.jsonl")):
        events = read_events(log)
        if not events or not isinstance(events[-1], EpisodeEnd):
            continue
        steps = sum(isinstance(e, EnvStep) for e in events)
        for event in events:
            if _acted(event, mechanism):
                point = Point(log.stem, int(getattr(event, "step")))  # noqa: B009 - every kind has one
                if point.at <= steps:
                    points.add(point)
    return sorted(points)


@dataclass(frozen=True)
class PointResult:
    point: Point
    parent: dict[str, float]
    control: dict[str, float] | None
    off: dict[str, float] | None
    exact: bool
    """The control fork repeated the parent's steps from the fork point on (actions and scores)."""
    diverged: str | None = None
    """Why a fork could not replay the parent (then neither outcome counts)."""


def _scores(result: EpisodeResult) -> dict[str, float]:
    return {
        "score": result.score,
        "score_strict": result.score_strict,
        "failed": float(result.end is EndState.FAILURE),
    }


def _steps(log: Path) -> list[tuple[str, int]]:
    return [(e.action, e.score) for e in read_events(log) if isinstance(e, EnvStep)]


def _play(parent: Parent, point: Point, target: Path, off: Mechanism | None) -> EpisodeResult:
    """One fork of ``point`` into ``target`` (a finished one is read back, a partial one replayed)."""
    log = target / "events" / f"{point.episode}.jsonl"
    if (target / METRICS_FILE).is_file():
        done = summarize_log(log)
        if done is not None:
            return done
    shutil.rmtree(target, ignore_errors=True)
    config = parent.config
    if off is not None:
        config = config.model_copy(update={"intervention": Intervention(mechanism=off, step=point.step)})
    result = fork_episode(parent, point.at, config, target)
    if result.outcome.error and result.outcome.error.startswith("replay diverged"):
        raise ReplayDivergence(result.outcome.error)
    assert result.fork is not None, "run_episode always ends the log"
    return result.fork


def attribute_point(run: Path, point: Point, mechanism: Mechanism, out: Path) -> PointResult:
    """Play (or read back) the control and the mechanism-off fork of one point."""
    parent = read_parent(run, point.episode)
    base = out / "forks" / point.name
    try:
        control = _play(parent, point, base / "control", None)
        off = _play(parent, point, base / "off", mechanism)
    except ReplayDivergence as exc:
        return PointResult(point, _scores(parent.result), None, None, False, str(exc))
    theirs = _steps(run / "events" / f"{point.episode}.jsonl")
    exact = _steps(base / "control" / "events" / f"{point.episode}.jsonl") == theirs
    return PointResult(point, _scores(parent.result), _scores(control), _scores(off), exact)


def _work(args: tuple[str, Point, Mechanism, str]) -> PointResult:
    run, point, mechanism, out = args
    return attribute_point(Path(run), point, mechanism, Path(out))


def attribute(
    run: Path,
    mechanism: Mechanism,
    out: Path,
    *,
    limit: int | None = None,
    seed: int = 0,
    workers: int = 1,
    on_point: Callable[[PointResult, int, int], None] | None = None,
) -> dict[str, Any]:
    """Attribute every ``mechanism`` event of ``run`` (``limit``: a seeded sample of them) and write
    ``out/attribution.json``; returns its content."""
    if workers < 1:
        raise UsageError("--workers must be at least 1")
    if limit is not None and limit < 1:
        raise UsageError("--limit must be at least 1")
    if not (run / "events").is_dir():
        raise UsageError(f"{run} is not a run directory (no events/)")
    points = mechanism_points(run, mechanism)
    if not points:
        raise UsageError(f"{run} logs no {mechanism} event inside an episode: nothing to attribute")
    read_parent(run, points[0].episode)  # a directory that is not a run is refused before any write
    chosen = sorted(random.Random(seed).sample(points, limit)) if limit and limit < len(points) else points
    out.mkdir(parents=True, exist_ok=True)
    results: list[PointResult] = []
    jobs = [(str(run), p, mechanism, str(out)) for p in chosen]
    for result in _run(jobs, workers):
        results.append(result)
        if on_point is not None:
            on_point(result, len(results), len(chosen))
    results.sort(key=lambda r: r.point)
    summary = summarize(results, seed)
    payload = {
        "run": str(run),
        "mechanism": mechanism,
        "events": len(points),
        "sampled": len(chosen),
        "seed": seed,
        **summary,
        "points": [asdict(r) for r in results],
    }
    write_json(out / RESULT_FILE, payload)
    return payload


def _run(jobs: list[tuple[str, Point, Mechanism, str]], workers: int) -> Iterator[PointResult]:
    if workers == 1:
        yield from (_work(job) for job in jobs)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_work, job) for job in jobs]
        for future in as_completed(futures):
            yield future.result()


def summarize(results: list[PointResult], seed: int = 0) -> dict[str, Any]:
    """The aggregate of the points both forks played: per convention better / same / worse for the
    mechanism (control - off), the mean difference and its 95% bootstrap interval; -100s prevented and
    episodes it cost; how many replayed and how many controls repeated the parent exactly."""
    played = [r for r in results if r.control is not None and r.off is not None]
    out: dict[str, Any] = {
        "tried": len(results),
        "replayed": len(played),
        "diverged": len(results) - len(played),
        "exact": sum(r.exact for r in played),
    }
    rng = np.random.default_rng(seed)
    for key in ("score", "score_strict"):
        diffs = np.asarray([r.control[key] - r.off[key] for r in played if r.control and r.off], dtype=float)
        block: dict[str, Any] = {
            "better": int((diffs > 0).sum()),
            "same": int((diffs == 0).sum()),
            "worse": int((diffs < 0).sum()),
            "mean_difference": round(float(diffs.mean()), 3) if len(diffs) else None,
            "ci95": None,
        }
        if len(diffs) >= 2:
            means = diffs[rng.integers(0, len(diffs), size=(BOOTSTRAP_RESAMPLES, len(diffs)))].mean(axis=1)
            lo, hi = np.percentile(means, [2.5, 97.5])
            block["ci95"] = [round(float(lo), 3), round(float(hi), 3)]
        out[key] = block
    out["prevented_failure"] = sum(
        1 for r in played if r.off and r.control and r.off["failed"] and not r.control["failed"]
    )
    out["caused_failure"] = sum(
        1 for r in played if r.off and r.control and r.control["failed"] and not r.off["failed"]
    )
    out["cost_score"] = sum(1 for r in played if r.off and r.control and r.off["score"] > r.control["score"])
    return out


def describe(payload: dict[str, Any]) -> str:
    """One sentence of the result, as the README quotes it."""
    p, s = payload, payload["score"]
    return (
        f"of {p['replayed']} {p['mechanism']} events forked ({p['diverged']} did not replay, "
        f"{p['exact']} controls repeated the parent exactly), {p['prevented_failure']} prevented a -100 "
        f"and {p['cost_score']} cost the episode score; the mechanism's mean effect "
        f"{s['mean_difference']} points (95% CI {s['ci95']}), better / same / worse {s['better']} / "
        f"{s['same']} / {s['worse']}"
    )


def load(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / RESULT_FILE).read_text(encoding="utf-8"))
    return data
