"""``fastslow report DIR [DIR ...]``: the paper's tables and figures from finished runs (paper §5, App. B-E).

Everything is read from each run's ``metrics.json`` (validated as a ``records.RunMetrics``; a foreign file
is refused with one line, one of an older format is recomputed from the run's event logs) and event logs:
scores in both conventions (the paper's, then strict), main results, per-task scores,
Short/Medium/Long groups, success and Steps@Succ, who chose the actions (step shares by source: the
learned Swift, hand-written task procedures, fallbacks, Sage, the Critic), mechanism activity and
usage/cost (and the spread over seeds of ``--seeds`` runs), as markdown and CSV; matplotlib figures
(per-task scores, groups, mechanism activity); and one self-contained HTML file with a trajectory
viewer (every step with its source, the mechanism events around it, and the score).

Every output counts the same episodes: those whose logs can be read whole (``check_logs``). A log that
cannot (a line that is not an event, a file that is not one episode, a file cut off, no episode_end, no
file) is left out of all of them and named under Warnings, and when that set is not the one metrics.json
counts, the numbers are recomputed from the readable logs. The report is written into a temporary folder
next to ``--out`` and moved into place only once complete: a report that fails leaves ``--out`` as it was.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from fastslow.env.world import get_world
from fastslow.errors import CorruptLogError, OutputError, UsageError
from fastslow.eval.curve import (
    StreamCurve,
    curve_figure,
    curve_table,
    curve_warnings,
    memory_table,
    read_stream,
    slope_table,
    sources_table,
)
from fastslow.eval.metrics import PAPER_COUNTER_KEYS, PAPER_COUNTERS, run_metrics, summarize_log, torn_line
from fastslow.eval.records import METRICS_FILE, METRICS_FORMAT, RunMetrics, Spread, read_run_metrics
from fastslow.eval.rundir import RunRecord, read_run_record, run_lock
from fastslow.eval.viewer import (
    index_episode,
    read_episode,
    retrieved_ids,
    store_records,
    viewer_assets,
    viewer_boot,
    writer_names,
)
from fastslow.manifest import LOCK_FILE, Manifest
from fastslow.redact import redact_text
from fastslow.vocab import STEP_SOURCES, StepSource

GROUPS = ("short", "medium", "long")
#: Steps whose episodes the static report page embeds, all runs together (whole logs can be hundreds of
#: MB; ``fastslow view`` serves any size).
VIEWER_STEPS = 20_000


@dataclass(frozen=True)
class Run:
    name: str
    path: Path
    metrics: RunMetrics
    episodes: tuple[dict[str, Any], ...] | None = None
    """The list entries (``eval.viewer.index_episode``) of the logs ``metrics`` counts, once checked
    (``check_logs``); None: not checked."""
    problems: tuple[str, ...] = ()
    """One line per log left out or found at odds with metrics.json (``check_logs``)."""

    @property
    def world(self) -> str:
        """The world the run's episodes were played in (``EpisodeResult.world``; ScienceWorld for a run
        without episodes)."""
        worlds = [e.world for e in self.metrics.episode_results]
        return worlds[0] if worlds else "scienceworld"


def load_run(path: Path) -> Run:
    """A finished run: its validated metrics.json, named by its run.json's config (else the folder's name).

    ``UsageError`` (one line) for a directory without metrics.json, or one whose metrics.json or
    run.json this fastslow cannot read."""
    record = read_run_record(path)
    older = _stored_format(path) not in (None, METRICS_FORMAT)
    if record is not None and (path / "events").is_dir() and older:
        # The logs are the source of truth: a metrics.json of an older format (e.g. 2, strict score only)
        # is recomputed from them rather than refused, so earlier runs can be reported beside new ones.
        events = path / "events"
        try:
            metrics = run_metrics(events, record.episodes)
        except (CorruptLogError, OSError):  # from the readable logs; check_logs names the others
            metrics = run_metrics(events, [i for i in record.episodes if _readable(events / f"{i}.jsonl")])
    else:
        metrics = read_run_metrics(path)
    return Run(record.config_name if record is not None else path.name, path, metrics)


def _readable(log: Path) -> bool:
    """Whether every line of ``log`` is an event (a missing log has none that is not)."""
    try:
        if log.is_file():
            summarize_log(log)
    except (CorruptLogError, OSError):
        return False
    return True


def _stored_format(path: Path) -> object:
    """The ``format_version`` a run's metrics.json declares; None when unreadable (read_run_metrics says
    why)."""
    try:
        data = json.loads((path / METRICS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data.get("format_version") if isinstance(data, dict) else None


def check_logs(run: Run) -> Run:
    """``run`` with one set of episodes for every output: those of its episodes (run.json's selection
    and metrics.json's results) whose logs can be read whole and end with ``episode_end``.

    Each log left out (no file, a line that is not an event, bytes that are not UTF-8, no episode_end,
    a file cut off) and each readable log whose end, score or steps differ from metrics.json's result
    gets one line in ``problems``; a finished log with an incomplete line after its end is kept, with a
    line. When the readable set is not the one metrics.json counts, or a log disagrees with it, the
    metrics are recomputed from the readable logs (and a line says so). A run without an events folder
    keeps metrics.json's numbers and shows no trajectories (one line)."""
    events = run.path / "events"
    counted = {r.episode_id: r for r in run.metrics.episode_results}
    if not events.is_dir():
        alone = f"{run.name}: no event logs ({events}): the tables are metrics.json's, without trajectories"
        return replace(run, episodes=(), problems=(alone,))
    record = read_run_record(run.path)
    ids = list(dict.fromkeys([*(record.episodes if record is not None else []), *counted]))
    entries: list[dict[str, Any]] = []
    problems: list[str] = []
    at_odds = False
    for episode_id in ids:
        path = events / f"{episode_id}.jsonl"
        entry, wrong = _read_entry(path)
        if entry is None:
            problems.append(f"{run.name}: event log {path} {wrong}; left out of every table and figure")
            continue
        if wrong:
            problems.append(f"{run.name}: event log {path} {wrong}")
        result = counted.get(episode_id)
        seen = (entry["end"], entry["final_score"], entry["steps"])
        if result is not None and seen != (result.end.value, result.final_score, result.steps):
            at_odds = True
            problems.append(
                f"{run.name}: event log {path} says {'/'.join(map(str, seen))} (end/score/steps), "
                f"metrics.json {result.end.value}/{result.final_score}/{result.steps}; the log is used"
            )
        entries.append(entry)
    metrics = run.metrics
    readable = [e["file"].removesuffix(".jsonl") for e in entries]
    if at_odds or set(readable) != set(counted):
        metrics = run_metrics(events, readable)
        problems.append(
            f"{run.name}: metrics.json counts {len(counted)} episodes; every table, figure and the "
            f"trajectory viewer count the {len(readable)} whose logs can be read whole (recomputed from them)"
        )
    return replace(run, metrics=metrics, episodes=tuple(entries), problems=tuple(problems))


def _read_entry(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """A log's list entry and what is wrong with it: (None, why) when it cannot be counted, (entry,
    why) for a finished log with a cut-off line after its end, (entry, None) for a whole log."""
    if not path.is_file():
        return None, "is missing (the episode was never played, or the file was removed)"
    try:
        entry = index_episode(path)
        torn = torn_line(path)
    except CorruptLogError as exc:
        return None, str(exc).removeprefix(f"event log {path} ")
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"
    if entry is None:
        cut = f" (it ends mid-line {torn}: the file was cut)" if torn else ""
        return None, f"has no episode_end{cut}"
    return entry, f"ends mid-line {torn} after its episode_end (that line is ignored)" if torn else None


def _fmt(value: Any, pct: bool = False) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{100 * value:.2f}%" if pct else f"{value:.2f}"
    return str(value)


Table = tuple[list[str], list[list[str]]]


def main_table(runs: list[Run]) -> Table:
    head = [
        "config",
        "episodes",
        "score (paper)",
        "95% CI",
        "score (strict)",
        "95% CI (strict)",
        "success",
        "Steps@Succ",
        "-100 failures",
        "errors",
    ]
    rows = [
        [
            r.name,
            _fmt(r.metrics.episodes),
            _fmt(r.metrics.mean_score),
            "-".join(_fmt(float(v)) for v in r.metrics.ci95.mean_score or ()) or "-",
            _fmt(r.metrics.mean_score_strict),
            "-".join(_fmt(float(v)) for v in r.metrics.ci95.mean_score_strict or ()) or "-",
            _fmt(r.metrics.success_rate, pct=True),
            _fmt(r.metrics.steps_at_success),
            _fmt(r.metrics.failures),
            _fmt(r.metrics.errors),
        ]
        for r in runs
    ]
    return head, rows


def per_task_table(runs: list[Run]) -> Table:
    """One row per task any run played, world by world (in the order the runs name them) and in task id
    order within a world, named and grouped by that world's task table; a run of another world leaves
    the row's cells empty (task ids are per world)."""
    head = ["task", "name", "group", *[f"{r.name} {c}" for r in runs for c in ("score", "strict", "n")]]
    rows = []
    for world in dict.fromkeys(r.world for r in runs):
        for task in get_world(world).tasks():
            key = str(task.task_id)
            if not any(key in r.metrics.per_task for r in runs if r.world == world):
                continue
            rows.append([key, task.name, task.group, *_task_cells(runs, world, key)])
    return head, rows


def _task_cells(runs: list[Run], world: str, key: str) -> list[str]:
    """Each run's score, strict score and episodes of task ``key`` of ``world``."""
    scores = []
    for r in runs:
        row = r.metrics.per_task.get(key) if r.world == world else None
        scores += [
            _fmt(row.mean_score if row else None),
            _fmt(row.mean_score_strict if row else None),
            _fmt(row.episodes if row else 0),
        ]
    return scores


def runs_table(runs: list[Run]) -> Table:
    """What each run is: config, episodes, the memory store and its ranking, the warm-up (``run.json``)."""
    head = ["run", "directory", "episodes", "memory store", "ranking", "warm-up", "records after warm-up"]
    rows = []
    for r in runs:
        record = read_run_record(r.path)
        store = record.store if record is not None else None
        start = record.starts[-1] if record is not None and record.starts else None
        warmup = record.warmup if record is not None else None
        rows.append(
            [
                r.name,
                str(r.path),
                _fmt(r.metrics.episodes),
                f"{store.kind} {store.location}" + ("" if store.per_run else " (shared)") if store else "-",
                (start.memory_ranking or "-") if start else "-",
                f"played by {warmup.get('played_by', '?')}" if warmup else "none",
                _fmt(start.store_records_after_warmup) if start else "-",
            ]
        )
    return head, rows


def group_table(runs: list[Run]) -> Table:
    head = [
        "config",
        *[f"{g} score" for g in GROUPS],
        *[f"{g} strict" for g in GROUPS],
        *[f"{g} success" for g in GROUPS],
    ]
    rows = []
    for r in runs:
        groups = r.metrics.per_group
        rows.append(
            [
                r.name,
                *[_fmt(groups[g].mean_score if g in groups else None) for g in GROUPS],
                *[_fmt(groups[g].mean_score_strict if g in groups else None) for g in GROUPS],
                *[_fmt(groups[g].success_rate if g in groups else None, pct=True) for g in GROUPS],
            ]
        )
    return head, rows


def success_table(runs: list[Run]) -> Table:
    head = ["config", "success (macro)", "success (episodes)", "Steps@Succ", "wall s/episode"]
    rows = [
        [
            r.name,
            _fmt(r.metrics.success_rate, pct=True),
            _fmt(r.metrics.success_rate_micro, pct=True),
            _fmt(r.metrics.steps_at_success),
            _fmt(r.metrics.wall_s_per_episode),
        ]
        for r in runs
    ]
    return head, rows


#: The step sources every step-share table shows; the oracle's and a scripted agent's only when a run has
#: them.
SHARE_SOURCES: tuple[StepSource, ...] = ("swift", "procedure", "fallback", "sage", "critic")


def share_sources(runs: list[Run]) -> list[StepSource]:
    """The sources of ``SHARE_SOURCES``, then any other source some run has steps of."""
    extra = [
        s
        for s in STEP_SOURCES
        if s not in SHARE_SOURCES and any(getattr(r.metrics.usage.step_shares, s) for r in runs)
    ]
    return [*SHARE_SOURCES, *extra]


def step_share_table(runs: list[Run]) -> Table:
    """Who chose the actions: each run's share of env steps by source (``usage.step_shares``, adding up
    to 1): the learned Swift, hand-written task procedures, the controller's fallbacks, Sage's and the
    Critic's buffered actions; beside them the Swift step share as the paper's authors count it (every
    step not from the buffer, procedures included)."""
    sources = share_sources(runs)
    head = ["config", "env steps", *sources, "Swift, authors' counter"]
    rows = []
    for r in runs:
        shares = r.metrics.usage.step_shares
        rows.append(
            [
                r.name,
                _fmt(r.metrics.usage.env_steps),
                *[_fmt(getattr(shares, s), pct=True) for s in sources],
                _fmt(r.metrics.mechanisms.paper.swift_step_share, pct=True),
            ]
        )
    return head, rows


def seeds_table(runs: list[Run]) -> Table:
    """Runs made with ``--seeds``: each seed's macro mean score, and mean ± std over seeds."""
    head = [
        "config",
        "seeds",
        "score (mean ± std)",
        "strict score (mean ± std)",
        "success (mean ± std)",
        "score per seed",
    ]
    rows = []
    for r in runs:
        seeds = r.metrics.seeds
        if seeds is None:
            continue

        def spread(value: Spread, pct: bool) -> str:
            return f"{_fmt(value.mean, pct)} ± {_fmt(value.std, pct)}"

        per_seed = ", ".join(f"{s}: {_fmt(row.mean_score)}" for s, row in seeds.per_seed.items())
        rows.append(
            [
                r.name,
                str(len(seeds.seeds)),
                spread(seeds.mean_score, False),
                spread(seeds.mean_score_strict, False),
                spread(seeds.success_rate, True),
                per_seed,
            ]
        )
    return head, rows


#: The mechanism counters of the activity figure (paper Appendix D), as (label, path in metrics.json).
MECHANISM_BARS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("memory writes", ("memory", "writes_per_episode")),
    ("T1 triggers", ("memory", "triggers_per_episode", "T1")),
    ("T4 triggers", ("memory", "triggers_per_episode", "T4")),
    ("Swift injections", ("memory", "injections_per_episode", "swift")),
    ("Sage injections", ("memory", "injections_per_episode", "sage")),
    ("Gate-1 drops", ("srm", "gate_drops_per_episode")),
    ("Gate-1 repairs", ("srm", "gate_repairs_per_episode")),
    ("stagnation reports", ("srm", "stagnation_reports_per_episode")),
    ("Critic calls", ("srm", "critic_calls_per_episode")),
    ("effective Critic calls", ("srm", "critic_effective_calls_per_episode")),
)


def mechanism_values(run: Run) -> list[float]:
    """Per-episode means of ``MECHANISM_BARS`` for one run (0 where a mechanism never ran)."""
    values = []
    mechanisms = run.metrics.mechanisms.model_dump(mode="json", by_alias=True)
    for _, path in MECHANISM_BARS:
        node: Any = mechanisms
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        values.append(float(node or 0))
    return values


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(value, int | float) or value is None:
        out[prefix] = value


def section_table(runs: list[Run], section: str) -> Table:
    """One row per numeric counter under ``metrics.json[section]`` (e.g. mechanisms, usage), one column per
    run, named by its path in metrics.json."""
    flat = []
    for r in runs:
        values: dict[str, Any] = {}
        _flatten("", r.metrics.to_json().get(section, {}), values)
        flat.append(values)
    keys = sorted({k for values in flat for k in values})
    head = ["counter", *[r.name for r in runs]]
    return head, [[k, *[_fmt(values.get(k)) for values in flat]] for k in keys]


def _paper_config(name: str) -> str | None:
    """The paper configuration a run's config stands for (baseline, amm, srm, full), if any."""
    base = name.split(" (")[0].removeprefix("paper-").removeprefix("sensitivity/")
    return {"paper": "baseline", "swiftsage": "baseline"}.get(base, base)


def paper_counters_table(runs: list[Run]) -> Table:
    """The Appendix D/E counters as the paper's authors define them (``mechanisms.paper``), one column per
    run and, where the run's configuration is one of the paper's four, the paper's value beside it."""
    head = ["counter (per episode)"]
    for r in runs:
        head += [r.name, "paper"]
    rows = []
    for key in (*PAPER_COUNTER_KEYS, "swift_step_share", "buffer_step_share"):
        pct = key.endswith("_share")
        row = [key]
        for r in runs:
            value = getattr(r.metrics.mechanisms.paper, key)
            config = _paper_config(r.name)
            paper = PAPER_COUNTERS.get(key, {}).get(config) if config else None
            row += [_fmt(value, pct), _fmt(paper, pct)]
        rows.append(row)
    return head, rows


def markdown(table: Table) -> str:
    head, rows = table
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _figure_png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return buf.getvalue()


def figures(runs: list[Run]) -> dict[str, bytes]:
    """Per-task scores by config, grouped bars and mechanism activity, as PNG bytes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out: dict[str, bytes] = {}
    width = 0.8 / max(len(runs), 1)
    task_ids = sorted({int(t) for r in runs for t in r.metrics.per_task})
    fig, ax = plt.subplots(figsize=(max(8, len(task_ids) * 0.45), 4))
    for i, r in enumerate(runs):
        ys = [(row.mean_score if (row := r.metrics.per_task.get(str(t))) else None) or 0 for t in task_ids]
        ax.bar([x + i * width for x in range(len(task_ids))], ys, width, label=r.name)
    ax.set_xticks([x + width * (len(runs) - 1) / 2 for x in range(len(task_ids))], [str(t) for t in task_ids])
    ax.set_xlabel("task id")
    ax.set_ylabel("mean final score")
    ax.set_ylim(0, 105)
    ax.legend(fontsize=8)
    out["per_task.png"] = _figure_png(fig)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for i, r in enumerate(runs):
        ys = [(r.metrics.per_group[g].mean_score if g in r.metrics.per_group else None) or 0 for g in GROUPS]
        ax.bar([x + i * width for x in range(len(GROUPS))], ys, width, label=r.name)
    ax.set_xticks([x + width * (len(runs) - 1) / 2 for x in range(len(GROUPS))], list(GROUPS))
    ax.set_ylabel("mean final score")
    ax.set_ylim(0, 105)
    ax.legend(fontsize=8)
    out["groups.png"] = _figure_png(fig)
    plt.close(fig)

    # Mechanism activity: what AMM and SRM did per episode, side by side for every run.
    labels = [label for label, _ in MECHANISM_BARS]
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(labels) + 1))
    for i, r in enumerate(runs):
        ys = [y + i * width for y in range(len(labels))]
        ax.barh(ys, mechanism_values(r), width, label=r.name)
    ax.set_yticks([y + width * (len(runs) - 1) / 2 for y in range(len(labels))], labels)
    ax.invert_yaxis()
    ax.set_xlabel("per episode")
    ax.legend(fontsize=8)
    out["mechanisms.png"] = _figure_png(fig)
    plt.close(fig)
    return out


def static_viewer_data(runs: list[Run], max_steps: int = VIEWER_STEPS) -> dict[str, Any]:
    """The viewer's data for a static page: every run's summary and episode list, and the steps of
    episodes in list order until ``max_steps`` steps in all are embedded (the page says when an
    episode's steps are not; ``fastslow view`` reads any episode from the logs)."""
    summaries, lists, details = [], {}, {}
    budget = max_steps
    for i, run in enumerate(runs):
        record = read_run_record(run.path)
        summaries.append(run_summary(run, record, i))
        if run.episodes is not None:  # checked: the logs the tables count
            entries = sorted(run.episodes, key=lambda e: str(e["file"]))
        else:
            entries = [e for p in sorted((run.path / "events").glob("*.jsonl")) if (e := index_episode(p))]
        lists[str(i)] = entries
        for entry in entries:
            if entry["steps"] > budget:
                continue
            episode = read_episode(run.path / "events" / entry["file"])
            episode["records"] = store_records(record, run.path, retrieved_ids(episode))
            # the writers of those records that are episodes of this run: the page links them
            here = (w for w in writer_names(episode) if "/" not in w)
            episode["writers"] = sorted(w for w in here if (run.path / "events" / f"{w}.jsonl").is_file())
            episode["run"] = i
            details[f"{i}/{entry['id']}"] = episode
            budget -= entry["steps"]
    return {"runs": summaries, "episodes": lists, "details": details}


def stream_curves(runs: list[Run]) -> list[StreamCurve]:
    """The learning curves (``eval.curve``) of the runs played as streams (``eval --stream``), from the
    logs every other table counts (``check_logs``); a run without stream positions has none."""
    curves = []
    for run in runs:
        if run.episodes is None:
            continue
        ids = [str(e["file"]).removesuffix(".jsonl") for e in run.episodes]
        episodes = read_stream(run.path / "events", ids)
        if episodes:
            curves.append(StreamCurve(run.name, tuple(episodes)))
    return curves


def run_warnings(run: Run) -> list[str]:
    """What a reader must know before trusting a run's numbers: logs left out or at odds with
    metrics.json (``check_logs``), failed model calls, a memory store that failed, episodes the
    environment broke (all counted in metrics.json from the event logs)."""
    found = list(run.problems)
    usage = run.metrics.usage
    if usage.model_call_errors:
        roles = ", ".join(f"{k} {v}" for k, v in usage.model_call_errors_by_role.items())
        found.append(
            f"{run.name}: {usage.model_call_errors} of {usage.model_calls} model calls failed "
            f"({roles}); those steps fell back to Swift or the baseline prompt"
        )
    memory = run.metrics.mechanisms.memory
    if memory.store_errors:
        found.append(
            f"{run.name}: the AMM store failed {memory.store_errors} times (memory_fallback store_error)"
        )
    if memory.fallbacks_per_episode:
        found.append(
            f"{run.name}: AMM fell back to the baseline input {memory.fallbacks_per_episode:.2f} times per "
            "episode (memory_fallback events: no records, over budget, ...)"
        )
    if run.metrics.errors:
        found.append(f"{run.name}: {run.metrics.errors} episodes ended in an environment error")
    return found


def run_summary(run: Run, record: RunRecord | None, index: int = 0) -> dict[str, Any]:
    """A run's header for the viewer page: name, path, the main row and per-task rows (both score
    conventions, episode and -100 counts), groups, bootstrap intervals, the step shares by source
    (``share_sources``), memory store, warm-up and ranking of each start, and the warnings of
    ``run_warnings``."""
    m = run.metrics
    main_head, main_rows = main_table([run])
    tasks = []
    for row in per_task_table([run])[1]:
        block = m.per_task[row[0]]
        tasks.append(
            {
                "task_id": int(row[0]),
                "name": row[1],
                "group": row[2],
                "score": row[3],
                "strict": row[4],
                "episodes": block.episodes,
                "failures": block.failures,
            }
        )
    return {
        "index": index,
        "name": run.name,
        "path": str(run.path),
        "episodes": m.episodes,
        "main": {"head": main_head, "row": main_rows[0]},
        "tasks": tasks,
        "groups": {
            g: {"score": v.mean_score, "strict": v.mean_score_strict, "episodes": v.episodes}
            for g, v in m.per_group.items()
        },
        "ci95": m.ci95.model_dump(mode="json"),
        "step_shares": {s: getattr(m.usage.step_shares, s) for s in share_sources([run])},
        "store": record.store.model_dump(mode="json") if record is not None and record.store else None,
        "warmup": record.warmup if record is not None else None,
        "starts": [s.model_dump(mode="json") for s in record.starts] if record is not None else [],
        "warnings": run_warnings(run),
    }


def write_report(dirs: list[Path], out: Path, on_warning: Callable[[str], None] | None = None) -> Path:
    """Write report.md, *.csv, *.png and report.html into ``out``; return the HTML path.

    Every output counts the episodes whose logs can be read whole (``check_logs``); ``on_warning``
    hears each line of the Warnings section. The files are written into a temporary folder next to
    ``out`` and moved into it only once all are written: on any error ``out`` is left as it was (an
    earlier report in it too) and nothing of the temporary folder stays. Files of ``out`` that are not
    the report's are never touched."""
    _check_out(out)  # a folder of someone else's files is refused before the report is built
    runs = [check_logs(load_run(d)) for d in dirs]
    names = [r.name for r in runs]
    # Two runs of one config (e.g. two seeds) are told apart by their directory names.
    runs = [replace(r, name=f"{r.name} ({r.path.name})") if names.count(r.name) > 1 else r for r in runs]
    staging = _staging_folder(out)
    try:
        warnings = _write_files(runs, staging)
        _move_into(staging, out)
    except OSError as exc:
        raise OutputError(f"the report was not written to {out}: {exc}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    for warning in warnings:
        if on_warning is not None:
            on_warning(warning)
    return out / "report.html"


def _staging_folder(out: Path) -> Path:
    """A new empty folder beside ``out`` (same file system, so moving out of it is a rename)."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} exists and is not a directory")
    where = out.resolve()
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        staging = where.parent / f".{where.name}.{os.getpid()}-{os.urandom(4).hex()}.partial"
        staging.mkdir()  # not tempfile.mkdtemp: its 0700 would become the mode of a new --out
    except OSError as exc:
        raise UsageError(f"--out {out} cannot be created: {exc.strerror}") from exc
    return staging


def _move_into(staging: Path, out: Path) -> None:
    """The staged report becomes ``out``: renamed as a whole when ``out`` does not exist (with its
    manifest and lock file, so the folder records what fastslow wrote), else, holding ``out``'s lock,
    file by file over the report's own names. A name in the way that ``out``'s manifest does not
    record as fastslow's, unchanged, refuses the move before any file is moved: a user's
    ``report.md`` is never overwritten because of its name (``fastslow.manifest``)."""
    names = sorted(
        p.name for p in staging.iterdir() if p.name not in (LOCK_FILE, Manifest(staging).path.name)
    )
    Manifest(staging).wrote(*(staging / name for name in names))
    (staging / LOCK_FILE).touch()
    if not out.exists():
        staging.rename(out)
        return
    _check_out(out, names)
    with run_lock(out):
        _check_out(out, names)  # again, under the lock
        manifest = Manifest(out)
        for name in sorted(names, key=lambda n: n == "report.html"):  # report.html last
            os.replace(staging / name, out / name)
            manifest.wrote(out / name)


def _check_out(out: Path, names: list[str] | None = None) -> None:
    """Refuse (one line, reading only) an ``out`` holding, under one of the report's ``names``
    (default: every name a report may write), a folder, or a file not recorded as an earlier fastslow
    report's and unchanged since (``fastslow.manifest``)."""
    if not out.is_dir():
        return
    if names is None:
        names = sorted(_REPORT_NAMES)
    for name in names:
        if (out / name).is_dir() and not (out / name).is_symlink():
            raise OutputError(f"--out {out}: {out / name} is a folder; the report's {name} cannot replace it")
    manifest = Manifest(out)
    entries = manifest.entries()
    taken = [name for name in names if (out / name).exists() or (out / name).is_symlink()]
    foreign = [name for name in taken if not manifest.owns(out / name, entries)]
    if foreign:
        raise UsageError(
            f"--out {out} holds {', '.join(foreign[:3])}{' ...' if len(foreign) > 3 else ''}, which no "
            "fastslow report wrote (or changed since): choose another --out"
        )


_TABLES = ("runs", "main", "per_task", "groups", "success", "step_shares", "paper_counters", "mechanisms")
_CURVE_TABLES = ("curve", "curve_slopes", "curve_memory", "curve_sources")
_REPORT_NAMES = frozenset(
    {
        "report.md",
        "report.html",
        *(f"{t}.csv" for t in (*_TABLES, "usage", "seeds", *_CURVE_TABLES)),
        *(f"{f}.png" for f in ("per_task", "groups", "mechanisms", "curve")),
    }
)
"""Every file name a report may write (tables, figures, report.md, report.html)."""


REPORT_HEADING = "# fastslow report"
"""report.md's first line."""


def _redacted(table: Table) -> Table:
    """``table`` with every cell's secrets masked (``fastslow.redact.redact_text``)."""
    head, rows = table
    return [redact_text(h) for h in head], [[redact_text(c) for c in row] for row in rows]


def _write_files(runs: list[Run], out: Path) -> list[str]:
    """Write the report's files into the folder ``out``; return the lines of its Warnings section."""
    tables = {
        "runs": ("Runs: memory store and warm-up", runs_table(runs)),
        "main": ("Main results", main_table(runs)),
        "per_task": ("Scores by task", per_task_table(runs)),
        "groups": ("Short / Medium / Long", group_table(runs)),
        "success": ("Success and Steps@Succ", success_table(runs)),
        "step_shares": ("Who chose the actions: step shares by source", step_share_table(runs)),
        "paper_counters": (
            "Mechanism counters as the paper's authors count them",
            paper_counters_table(runs),
        ),
        "mechanisms": ("Mechanism activity (per episode)", section_table(runs, "mechanisms")),
        "usage": ("Usage and cost proxies", section_table(runs, "usage")),
    }
    if any(r.metrics.seeds is not None for r in runs):
        tables["seeds"] = ("Seeds", seeds_table(runs))
    curves = stream_curves(runs)
    if curves:
        tables["curve"] = ("Learning curve: mean score by stream position", curve_table(curves))
        tables["curve_slopes"] = ("Learning curve: slope per position", slope_table(curves))
        if len(memory_table(curves)[1]):
            tables["curve_memory"] = ("Learning curve: memory on against off", memory_table(curves))
        tables["curve_sources"] = ("Where the retrieved records came from", sources_table(curves))
    # A report is shared as it is: every text it shows passes the redaction the event logs, run.json
    # and the viewer's answers pass (a store's DSN, a warning quoting a model server's URL).
    tables = {key: (title, _redacted(table)) for key, (title, table) in tables.items()}
    md = [REPORT_HEADING, "", "Runs: " + ", ".join(f"`{r.name}` ({r.path})" for r in runs), ""]
    warnings = [redact_text(w) for r in runs for w in run_warnings(r)]
    warnings += [redact_text(w) for w in curve_warnings(curves)]
    if warnings:
        md += ["## Warnings", "", *(f"- {w}" for w in warnings), ""]
    for key, (title, table) in tables.items():
        with open(out / f"{key}.csv", "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(table[0])
            writer.writerows(table[1])
        md += [f"## {title}", "", markdown(table), ""]
    (out / "report.md").write_text("\n".join(md), encoding="utf-8")
    images = figures(runs)
    if curves:
        images["curve.png"] = curve_figure(curves)
    for name, png in images.items():
        (out / name).write_bytes(png)
    loader = PackageLoader("fastslow.eval", "templates")
    env = Environment(loader=loader, autoescape=select_autoescape(["j2"]))
    assets = viewer_assets()
    page = env.get_template("report.html.j2").render(
        runs=runs,
        warnings=warnings,
        tables=[(title, table) for title, table in tables.values()],
        images={name: base64.b64encode(png).decode() for name, png in images.items()},
        viewer_css=assets["css"],
        viewer_js=assets["js"],
        viewer_data=viewer_boot(static_viewer_data(runs)),
    )
    html_path = out / "report.html"
    html_path.write_text(page, encoding="utf-8")
    return warnings
