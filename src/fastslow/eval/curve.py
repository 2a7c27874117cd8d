"""The learning curve of stream runs (the adaptation measurement; paper §3.1's online memory),
computed from the event logs only.

A stream run (``fastslow eval --stream``, ``eval.stream``) records each episode's place in its task's
stream (``episode_start.stream_position``) and, for every memory retrieval, the episode that wrote each
record returned (``memory_retrieval.writers``). From these:

- **score by position**: the mean episode score of the episodes at each stream position k, in both
  conventions (``paper``: the best non-negative score reached; ``strict``: the final score, -100 counted
  as 0; ``eval.metrics``). Every task contributes its k-th episode, so the mean at k is the macro mean over
  the tasks that have one.
- **slope**: over all the tasks of a run and for each task alone, the within-task OLS slope of the score
  on the position (one intercept per task: score and position are centred on their task's means before
  the fit), in points per position. Centring keeps a change in which tasks are present at the later
  positions (ScienceWorld's tasks have 1 to 10 test variations) out of the slope: it measures how a
  task's score changes along its own stream.
- **its 95% interval**: a percentile bootstrap, ``BOOTSTRAP_RESAMPLES`` (2000) resamples, seeded (0):
  each task's episodes are resampled with replacement, keeping their positions, and the slope is fitted
  again, as ``metrics.bootstrap_ci`` resamples within tasks (the tasks are fixed by the protocol). A
  resample whose positions within every task are all equal has no slope and is left out.
- **memory on vs off**: two stream runs of the same episodes, one with AMM (its headers'
  ``config.amm.enabled``) and one without, are paired: the difference of the means at each position and
  the difference of the slopes, whose interval resamples the episodes of both runs together (the same
  episode ids in a resample), so it is a paired interval.
- **where the retrieved records came from**: each record of each retrieval of an episode at position k
  is counted as the warm-up's (``warmup/...``), an earlier evaluation episode's (a position below k), the
  episode's own, another run's (a store shared on purpose), or ``not visible``: an evaluation episode at
  position k or later other than itself, which a stream never shows (a non-zero count is a fault, and the
  report warns). Retrievals of logs without ``writers`` count as ``unrecorded``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fastslow.eval.metrics import BOOTSTRAP_RESAMPLES, summarize_log
from fastslow.events import EpisodeStart, MemoryRetrieval, iter_events

SOURCES = ("warmup", "earlier", "own", "other run", "not visible", "unrecorded")
"""Where a retrieved record came from, as the curve counts it (module docstring)."""


@dataclass(frozen=True)
class StreamEpisode:
    """One finished stream episode, as its log says."""

    episode_id: str
    task_id: int
    task_name: str
    position: int
    score: float
    """The paper's episode score (``EpisodeResult.score``)."""
    score_strict: float
    memory: bool
    """AMM was on (the header's ``config.amm.enabled``)."""
    retrieved: Counter[str] = field(default_factory=Counter)
    """Records its retrievals returned, by ``SOURCES``."""


MEASURES: dict[str, Callable[[StreamEpisode], float]] = {
    "paper": lambda e: e.score,
    "strict": lambda e: e.score_strict,
}
"""The two score conventions (``eval.metrics``) of an episode."""


def source_of(writer: str, own: str, position: int, positions: dict[str, int]) -> str:
    """Where one retrieved record came from (``SOURCES``), for the episode ``own`` at ``position``;
    ``positions``: the stream positions of the run's episodes."""
    if writer.startswith("warmup/"):
        return "warmup"
    if writer == own:
        return "own"
    if writer not in positions:
        return "other run"
    return "earlier" if positions[writer] < position else "not visible"


def read_stream(events: Path, episode_ids: Iterable[str]) -> list[StreamEpisode]:
    """The finished episodes of ``episode_ids`` in ``events`` whose header has a stream position (a log
    without one, or without ``episode_end``, is left out)."""
    headers: dict[str, tuple[EpisodeStart, list[MemoryRetrieval]]] = {}
    for episode_id in episode_ids:
        path = events / f"{episode_id}.jsonl"
        if not path.is_file():
            continue
        start: EpisodeStart | None = None
        retrievals: list[MemoryRetrieval] = []
        for event in iter_events(path):
            if isinstance(event, EpisodeStart):
                start = event
            elif isinstance(event, MemoryRetrieval):
                retrievals.append(event)
        if start is not None and start.stream_position is not None:
            headers[episode_id] = (start, retrievals)
    positions = {i: h.stream_position for i, (h, _) in headers.items() if h.stream_position is not None}
    out: list[StreamEpisode] = []
    for episode_id, (start, retrievals) in headers.items():
        result = summarize_log(events / f"{episode_id}.jsonl")
        if result is None:
            continue
        position = positions[episode_id]
        counts: Counter[str] = Counter()
        for r in retrievals:
            if r.writers is None:
                counts["unrecorded"] += r.n
                continue
            counts.update(source_of(w, episode_id, position, positions) for w in r.writers)
        amm = start.config.get("amm", {})
        out.append(
            StreamEpisode(
                episode_id,
                start.task_id,
                start.task_name,
                position,
                result.score,
                result.score_strict,
                bool(isinstance(amm, dict) and amm.get("enabled")),
                counts,
            )
        )
    return sorted(out, key=lambda e: (e.position, e.task_id, e.episode_id))


def by_position(episodes: Sequence[StreamEpisode]) -> dict[int, list[StreamEpisode]]:
    grouped: dict[int, list[StreamEpisode]] = defaultdict(list)
    for e in episodes:
        grouped[e.position].append(e)
    return dict(sorted(grouped.items()))


def _fit(tasks: list[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]]) -> np.ndarray[Any, Any]:
    """Within-task OLS slopes for arrays of shape (R, n_t) per task: (R,) slopes, NaN where undefined."""
    sxy: np.ndarray[Any, Any] = np.zeros(tasks[0][0].shape[0])
    sxx: np.ndarray[Any, Any] = np.zeros(tasks[0][0].shape[0])
    for x, y in tasks:
        dx = x - x.mean(axis=1, keepdims=True)
        sxy += (dx * (y - y.mean(axis=1, keepdims=True))).sum(axis=1)
        sxx += (dx * dx).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        slopes: np.ndarray[Any, Any] = np.where(sxx > 0, sxy / np.where(sxx > 0, sxx, 1.0), np.nan)
    return slopes


def _tasks(
    rows: Sequence[tuple[int, int, float]],
) -> dict[int, tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]]:
    """(task, position, value) rows as per-task arrays of positions and values."""
    grouped: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for task, position, value in rows:
        grouped[task].append((position, value))
    return {
        t: (np.array([p for p, _ in v], dtype=float), np.array([y for _, y in v], dtype=float))
        for t, v in sorted(grouped.items())
    }


def slope(rows: Sequence[tuple[int, int, float]]) -> float | None:
    """The within-task OLS slope of value on position of (task, position, value) rows; None when no
    task has two different positions."""
    tasks = _tasks(rows)
    if not tasks:
        return None
    fitted = _fit([(x[None, :], y[None, :]) for x, y in tasks.values()])[0]
    return None if np.isnan(fitted) else round(float(fitted), 4)


def slope_ci(
    rows: Sequence[tuple[int, int, float]], resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0
) -> tuple[float, float] | None:
    """95% percentile-bootstrap interval of ``slope``: each task's rows resampled with replacement
    (positions kept), seeded; None when no resample has a slope."""
    tasks = _tasks(rows)
    if not tasks:
        return None
    rng = np.random.default_rng(seed)
    drawn = []
    for x, y in tasks.values():
        idx = rng.integers(0, len(x), size=(resamples, len(x)))
        drawn.append((x[idx], y[idx]))
    fitted = _fit(drawn)
    fitted = fitted[~np.isnan(fitted)]
    if not len(fitted):
        return None
    lo, hi = np.percentile(fitted, [2.5, 97.5])
    return round(float(lo), 4), round(float(hi), 4)


def rows_of(episodes: Sequence[StreamEpisode], measure: str) -> list[tuple[int, int, float]]:
    get = MEASURES[measure]
    return [(e.task_id, e.position, get(e)) for e in episodes]


def paired_rows(
    on: Sequence[StreamEpisode], off: Sequence[StreamEpisode], measure: str
) -> list[tuple[int, int, float]]:
    """(task, position, on - off) for the episodes both runs played at the same position: the slope of
    the differences is the difference of the slopes, and resampling these rows resamples both runs'
    episodes together (a paired interval)."""
    get = MEASURES[measure]
    theirs = {e.episode_id: e for e in off}
    return [
        (e.task_id, e.position, get(e) - get(theirs[e.episode_id]))
        for e in on
        if e.episode_id in theirs and theirs[e.episode_id].position == e.position
    ]


def mean(values: Iterable[float]) -> float | None:
    vals = list(values)
    return round(float(np.mean(vals)), 4) if vals else None


@dataclass(frozen=True)
class StreamCurve:
    """One stream run's curve: its name and its finished stream episodes."""

    name: str
    episodes: tuple[StreamEpisode, ...]

    @property
    def memory(self) -> bool:
        return any(e.memory for e in self.episodes)

    def sources(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for e in self.episodes:
            total.update(e.retrieved)
        return total


def memory_pairs(curves: Sequence[StreamCurve]) -> list[tuple[StreamCurve, StreamCurve]]:
    """(memory on, memory off) for every two stream runs of the same episodes at the same positions,
    one with AMM and one without, in the order the runs are given."""
    pairs = []
    for on in curves:
        for off in curves:
            if not on.memory or off.memory:
                continue
            mine = {(e.episode_id, e.position) for e in on.episodes}
            if mine and mine == {(e.episode_id, e.position) for e in off.episodes}:
                pairs.append((on, off))
    return pairs


Table = tuple[list[str], list[list[str]]]


def _f(value: float | None, pct: bool = False) -> str:
    if value is None:
        return "-"
    return f"{100 * value:.2f}%" if pct else f"{value:.2f}"


def _ci(value: tuple[float, float] | None) -> str:
    return "-" if value is None else f"{value[0]:.2f} to {value[1]:.2f}"


def curve_table(curves: Sequence[StreamCurve]) -> Table:
    """Mean score by stream position, per run: episodes, both conventions, records retrieved and how
    many came from the warm-up and from earlier evaluation episodes."""
    head = ["position"]
    for c in curves:
        head += [
            f"{c.name} {x}" for x in ("n", "paper", "strict", "retrieved", "from warm-up", "from earlier")
        ]
    grouped = [by_position(c.episodes) for c in curves]
    rows = []
    for k in sorted({k for g in grouped for k in g}):
        row = [str(k)]
        for g in grouped:
            eps = g.get(k, [])
            sources: Counter[str] = Counter()
            for e in eps:
                sources.update(e.retrieved)
            row += [
                str(len(eps)),
                _f(mean(e.score for e in eps)),
                _f(mean(e.score_strict for e in eps)),
                str(sum(sources.values())),
                str(sources["warmup"]),
                str(sources["earlier"]),
            ]
        rows.append(row)
    return head, rows


def _by_task(episodes: Sequence[StreamEpisode]) -> list[tuple[str, list[StreamEpisode]]]:
    """("all", every episode) then (task name, its episodes) for each task, by task id."""
    tasks: dict[int, list[StreamEpisode]] = defaultdict(list)
    for e in episodes:
        tasks[e.task_id].append(e)
    return [("all", list(episodes))] + [(tasks[t][0].task_name, tasks[t]) for t in sorted(tasks)]


def slope_table(curves: Sequence[StreamCurve]) -> Table:
    """Each run's within-task slope (points per position) and its bootstrap interval, both conventions:
    over all its tasks (task ``all``), then each task's own."""
    head = ["config", "task", "memory", "episodes", "positions", "slope (paper)", "95% CI"]
    head += ["slope (strict)", "95% CI (strict)"]
    rows = []
    for c in curves:
        for task, episodes in _by_task(c.episodes):
            row = [c.name, task, "on" if c.memory else "off", str(len(episodes))]
            row.append(str(len({e.position for e in episodes})))
            for measure in MEASURES:
                points = rows_of(episodes, measure)
                row += [_f(slope(points)), _ci(slope_ci(points))]
            rows.append(row)
    return head, rows


def memory_table(curves: Sequence[StreamCurve]) -> Table:
    """Memory on against off (``memory_pairs``): the paired difference (on - off) of the mean score and
    of the slope, with the slope difference's paired bootstrap interval, both conventions: over all the
    tasks (task ``all``), then each task's own."""
    head = ["memory on", "memory off", "task", "paired episodes", "mean diff (paper)", "slope diff (paper)"]
    head += ["95% CI", "mean diff (strict)", "slope diff (strict)", "95% CI (strict)"]
    rows = []
    for on, off in memory_pairs(curves):
        for task, episodes in _by_task(on.episodes):
            row = [on.name, off.name, task, str(len(paired_rows(episodes, off.episodes, "paper")))]
            for measure in MEASURES:
                points = paired_rows(episodes, off.episodes, measure)
                row += [_f(mean(v for _, _, v in points)), _f(slope(points)), _ci(slope_ci(points))]
            rows.append(row)
    return head, rows


def sources_table(curves: Sequence[StreamCurve]) -> Table:
    """Where each run's retrieved records came from (``SOURCES``), with the shares of the recorded ones
    (``unrecorded`` left out of the shares)."""
    head = ["config", "retrieved", *SOURCES, "share warm-up", "share earlier", "share own"]
    rows = []
    for c in curves:
        total = c.sources()
        known = sum(v for k, v in total.items() if k != "unrecorded")

        def share(key: str, total: Counter[str] = total, known: int = known) -> str:
            return _f(total[key] / known, pct=True) if known else "-"

        rows.append(
            [
                c.name,
                str(sum(total.values())),
                *[str(total[s]) for s in SOURCES],
                share("warmup"),
                share("earlier"),
                share("own"),
            ]
        )
    return head, rows


def curve_warnings(curves: Sequence[StreamCurve]) -> list[str]:
    """A line for each run whose retrievals returned a record its stream should not have shown."""
    return [
        f"{c.name}: {n} retrieved records were written by episodes at the same or a later stream position"
        for c in curves
        if (n := c.sources()["not visible"])
    ]


def curve_figure(curves: Sequence[StreamCurve]) -> bytes:
    """Mean score (paper) by stream position, one line per run, as PNG bytes."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for c in curves:
        grouped = by_position(c.episodes)
        ax.plot(
            list(grouped),
            [float(np.mean([e.score for e in eps])) for eps in grouped.values()],
            marker="o",
            label=c.name,
        )
    ax.set_xlabel("stream position")
    ax.set_ylabel("mean score (paper)")
    ax.set_ylim(0, 105)
    ax.legend(fontsize=8)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()
