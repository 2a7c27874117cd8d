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

The output directory is claimed as ``eval``'s is (``rundir.claim_directory``), every refusal before
anything is written: an ``--out`` that is, holds or lies inside the parent run; one holding a file no
fastslow command wrote (a user's ``attribution.json``, a foreign ``forks/.../metrics.json``); one
claimed by another attribution key (the parent's run id and config hash, the mechanism, the seed and
the limit), so a rerun resumes only its own work; one in use by a live ``attribute`` (a lock the
kernel drops when its holder dies). The workers die with the command (``executors.worker_pool``); a
fork a killed run left unfinished is deleted through its manifest and played again from scratch.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
from collections.abc import Callable
from concurrent.futures import as_completed
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fastslow.config import Intervention
from fastslow.env.world import get_world
from fastslow.errors import CorruptLogError, OutputError, RunDirError, UsageError
from fastslow.eval.executors import worker_pool
from fastslow.eval.fork import Parent, fork_episode, read_parent
from fastslow.eval.metrics import summarize_log
from fastslow.eval.records import METRICS_FILE, EpisodeResult
from fastslow.eval.replay import ReplayDivergence
from fastslow.eval.rundir import (
    check_directory,
    claim_directory,
    read_run_record,
    run_lock,
    write_json,
)
from fastslow.events import (
    CriticCall,
    EndState,
    EnvStep,
    EpisodeEnd,
    Event,
    GateDecision,
    GateOutcome,
    MemoryInjection,
    MemoryPrior,
    SageCall,
    read_events,
)
from fastslow.manifest import BOOKKEEPING, Manifest
from fastslow.vocab import Mechanism

RESULT_FILE = "attribution.json"
KIND = "attribute"
"""The kind of work ``claim_directory`` records for an attribution directory."""
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
    if mechanism == "memory-prior":
        return isinstance(event, MemoryPrior)
    if mechanism == "t4-injection":
        return isinstance(event, MemoryInjection) and event.trigger == "T4"
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


_DIVERGED = "replay diverged"
"""How a fork's error starts when its replay answered differently (``eval.replay``)."""


def _finished(target: Path, log: Path) -> EpisodeResult | None:
    """The fork in ``target`` when it finished: metrics.json written and the log ended, other than by
    a broken environment (a JVM that died, as under Ctrl-C, says nothing about the mechanism)."""
    if not (target / METRICS_FILE).is_file():
        return None
    try:
        done = summarize_log(log)
    except (OSError, CorruptLogError):
        return None
    if done is None or (done.end is EndState.ERROR and not (done.error or "").startswith(_DIVERGED)):
        return None
    return done


def _discard(target: Path) -> None:
    """Delete an unfinished fork's files, each one proven its own by the fork directory's manifest,
    and the folders they leave empty. Anything the manifest does not prove (a user's file, one changed
    since) refuses with one line before anything is deleted: it is not the fork's to replay over."""
    if not target.is_dir():
        return
    manifest = Manifest(target)
    own = {os.path.abspath(p) for p in manifest.owned_files()}
    files = [p for p in target.rglob("*") if p.is_symlink() or not p.is_dir()]
    files = [p for p in files if not (p.parent == target and p.name in BOOKKEEPING)]
    stray = [p for p in files if os.path.abspath(p) not in own]
    if stray:
        raise RunDirError(
            f"{target} holds {stray[0].relative_to(target)}, which its fork did not write: the unfinished "
            "fork is not replayed over it; move it away and rerun"
        )
    removed: list[Path] = []
    try:
        for path in files:
            path.unlink()
            removed.append(path)
    except OSError as exc:
        raise OutputError(f"cannot remove {path} to replay its fork: {exc.strerror or exc}") from None
    finally:
        manifest.removed(*removed)  # what is gone is no longer the fork's; what stays still is
    for folder in sorted((p for p in target.rglob("*") if p.is_dir()), reverse=True):
        with contextlib.suppress(OSError):  # not empty: it holds what is not the fork's, and stays
            folder.rmdir()


def _play(parent: Parent, point: Point, target: Path, off: Mechanism | None) -> EpisodeResult:
    """One fork of ``point`` into ``target``: a finished one is read back; an unfinished one (a killed
    run's: no metrics.json, a log without episode_end, or one a broken environment ended) is deleted
    through its manifest and played again from scratch, never appended to. Under the fork directory's
    lock, so a worker of a killed run that still writes there is refused, not joined."""
    log = target / "events" / f"{point.episode}.jsonl"
    with run_lock(target):
        done = _finished(target, log)
        if done is None:
            _discard(target)
            config = parent.config
            if off is not None:
                intervention = Intervention(mechanism=off, step=point.step)
                config = config.model_copy(update={"intervention": intervention})
            result = fork_episode(parent, point.at, config, target)
            assert result.fork is not None, "run_episode always ends the log"
            done = result.fork
    if done.end is EndState.ERROR and (done.error or "").startswith(_DIVERGED):
        raise ReplayDivergence(done.error or _DIVERGED)
    return done


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


@dataclass(frozen=True)
class Plan:
    """An attribution every refusal has passed, nothing written yet (``plan_attribution``)."""

    run: Path
    mechanism: Mechanism
    out: Path
    key: dict[str, Any]
    """What the directory is the attribution of (``claim_directory``'s key): the parent run's id and
    config hash, the mechanism, the seed and the limit."""
    events: int
    chosen: list[Point]
    seed: int
    reserve: list[Point]
    """The points not drawn, in a seeded order: where a chosen point's forks do not replay, the next
    of these is played in its place (empty without ``--limit``: every point is already chosen)."""
    replay_caveat: str | None
    """Why the parent's episodes may not replay (``World.replay_caveat``), said before any fork."""


def plan_attribution(
    run: Path,
    mechanism: Mechanism,
    out: Path,
    *,
    limit: int | None = None,
    seed: int = 0,
    workers: int = 1,
) -> Plan:
    """Every refusal of an attribution, reading only (one line each): bad numbers, a ``run`` that is
    not a finished run with an event of ``mechanism``, and an ``out`` that ``check_directory``
    refuses (module docstring). Returns the seeded sample of points to fork."""
    if workers < 1:
        raise UsageError("--workers must be at least 1")
    if limit is not None and limit < 1:
        raise UsageError("--limit must be at least 1")
    # The bootstrap's numpy generator takes no negative seed: refused here, not after every fork.
    if not 0 <= seed < 2**32:
        raise UsageError(f"--seed must be 0 to {2**32 - 1}, got {seed}")
    if not (run / "events").is_dir():
        raise UsageError(f"{run} is not a run directory (no events/)")
    record = read_run_record(run)
    if record is None:
        raise UsageError(f"{run} is not a run directory (no run.json)")
    key = {
        "run_id": record.run_id,
        "config_hash": record.config_hash,
        "mechanism": mechanism,
        "seed": seed,
        "limit": limit,
    }
    check_directory(out, KIND, key, parents=(run,))
    points = mechanism_points(run, mechanism)
    if not points:
        raise UsageError(f"{run} logs no {mechanism} event inside an episode: nothing to attribute")
    # a directory that is not a run is refused before any write
    config = read_parent(run, points[0].episode).config
    caveat = get_world(config.env.world).replay_caveat(config.env)
    chosen, reserve = points, []
    if limit and limit < len(points):
        chosen = sorted(random.Random(seed).sample(points, limit))
        reserve = [p for p in points if p not in chosen]
        random.Random(f"reserve/{seed}").shuffle(reserve)  # a str seed hashes the same in every process
    return Plan(run, mechanism, out, key, len(points), chosen, seed, reserve, caveat)


def play_attribution(
    todo: Plan,
    *,
    workers: int = 1,
    on_point: Callable[[PointResult, int, int], None] | None = None,
) -> dict[str, Any]:
    """Claim ``todo.out`` (checked again under its lock), play or read back each chosen point's forks
    on ``workers`` processes and write ``out/attribution.json``; returns its content.

    A sampled point whose forks do not replay the parent is re-sampled: in rounds, each round plays
    the next draws of ``todo.reserve`` in place of the last round's diverged points, until none
    diverges or the reserve is spent. Which points replace which depends only on which diverged, not
    on the workers' timing, so a rerun reads back the same forks. The diverged points stay in the
    result (``diverged`` and ``replaced``), outside the aggregate."""
    results: list[PointResult] = []
    total = len(todo.chosen)

    def done(result: PointResult) -> None:
        results.append(result)
        if on_point is not None:
            on_point(result, len(results), total)

    with claim_directory(todo.out, KIND, todo.key, parents=(todo.run,)):
        todo_now, reserve, replaced = list(todo.chosen), list(todo.reserve), []
        while todo_now:
            before = len(results)
            _run([(str(todo.run), p, todo.mechanism, str(todo.out)) for p in todo_now], workers, done)
            diverged = sorted(r.point for r in results[before:] if r.diverged is not None)
            todo_now, reserve = reserve[: len(diverged)], reserve[len(diverged) :]
            replaced += [{"point": d.name, "by": p.name} for d, p in zip(diverged, todo_now, strict=False)]
            total += len(todo_now)
        results.sort(key=lambda r: r.point)
        payload = {
            "run": str(todo.run),
            "mechanism": todo.mechanism,
            "events": todo.events,
            "sampled": len(todo.chosen),
            "seed": todo.seed,
            "replay_caveat": todo.replay_caveat,
            "replaced": replaced,
            **summarize(results, todo.seed),
            "points": [asdict(r) for r in results],
        }
        write_json(todo.out / RESULT_FILE, payload)
    return payload


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
    ``out/attribution.json``; returns its content. ``plan_attribution`` then ``play_attribution``:
    every refusal comes before anything is written, and a rerun of the same command resumes."""
    todo = plan_attribution(run, mechanism, out, limit=limit, seed=seed, workers=workers)
    return play_attribution(todo, workers=workers, on_point=on_point)


def _run(
    jobs: list[tuple[str, Point, Mechanism, str]], workers: int, done: Callable[[PointResult], None]
) -> None:
    if workers == 1 or len(jobs) <= 1:
        for job in jobs:
            done(_work(job))
        return
    # eval's workers: each dies with this process, however it dies, and an error or Ctrl-C here
    # stops them rather than waiting for the forks in flight (left unfinished, replayed on resume)
    with worker_pool(min(workers, len(jobs))) as pool:
        for future in as_completed([pool.submit(_work, job) for job in jobs]):
            done(future.result())


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
    replaced = len(p.get("replaced", []))
    return (
        f"of {p['replayed']} {p['mechanism']} events forked ({p['diverged']} did not replay"
        + (f", {replaced} of them re-sampled" if replaced else "")
        + ", "
        f"{p['exact']} controls repeated the parent exactly), {p['prevented_failure']} prevented a -100 "
        f"and {p['cost_score']} cost the episode score; the mechanism's mean effect "
        f"{s['mean_difference']} points (95% CI {s['ci95']}), better / same / worse {s['better']} / "
        f"{s['same']} / {s['worse']}"
    )


def load(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / RESULT_FILE).read_text(encoding="utf-8"))
    return data
