"""The runs ``fastslow view`` serves (paper §5, App. D/E): each run's summary, its episode list
(cached per log file until the file changes), and one episode at a time, read on demand from its log
(``eval.viewer``) with the memory records its retrievals returned.

A log that cannot be read whole stays in the list, marked ``unreadable`` or ``unfinished`` with the
reason (``eval.viewer.episode_entry``); opening an unreadable one raises ``CorruptLogError``, which the
server answers as a JSON error.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastslow.eval.attribute import RESULT_FILE
from fastslow.eval.records import METRICS_FILE
from fastslow.eval.report import Run, load_run, run_summary
from fastslow.eval.rundir import RunRecord, read_run_record
from fastslow.eval.viewer import (
    episode_entry,
    log_problem,
    read_episode,
    retrieved_ids,
    store_records,
    writer_names,
)


@dataclass
class RunView:
    """One run directory as the viewer shows it."""

    index: int
    run: Run
    record: RunRecord | None
    _cache: dict[str, tuple[float, int, dict[str, Any]]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def events_dir(self) -> Path:
        return self.run.path / "events"

    fork: dict[str, Any] | None = None
    """A fork's run (``fastslow fork``): its episode, the step it plays from, the parent run's index
    among the runs served (None when the parent is not served) and the mechanism it has off."""

    def summary(self) -> dict[str, Any]:
        """The run's header for the page (``eval.report.run_summary``), plus ``fork``."""
        return {**run_summary(self.run, self.record, self.index), "fork": self.fork}

    def episodes(self) -> list[dict[str, Any]]:
        """Every log's list entry, in file order, those that cannot be read whole marked (``problem``);
        a file is re-read only when it changed."""
        out = []
        for path in sorted(self.events_dir.glob("*.jsonl")):
            entry = self._entry(path)
            if entry is not None:
                out.append(entry)
        return out

    def _entry(self, path: Path) -> dict[str, Any] | None:
        try:
            stat = path.stat()
        except OSError:
            return None  # removed since the folder was listed
        with self._lock:
            cached = self._cache.get(path.name)
        if cached is not None and cached[:2] == (stat.st_mtime, stat.st_size):
            return cached[2]
        entry = episode_entry(path)
        with self._lock:
            self._cache[path.name] = (stat.st_mtime, stat.st_size, entry)
        return entry

    def episode_path(self, episode_id: str) -> Path | None:
        """The log of ``episode_id`` (``<episode_id>.jsonl``), None for an unknown id."""
        path = self.events_dir / f"{episode_id}.jsonl"
        return path if "/" not in episode_id and path.is_file() else None

    def episode(self, episode_id: str) -> dict[str, Any] | None:
        """One episode with its steps, the store records its memory use read (``records``: retrievals,
        the action prior's changes) and the writers of them that are episodes of this run (``writers``);
        ``problem`` says why a log cut off or without an end shows only the steps it holds. None for
        an unknown id; ``CorruptLogError`` for a log with a line that is not an event."""
        path = self.episode_path(episode_id)
        if path is None:
            return None
        data = read_episode(path)
        found = log_problem(path)
        data["problem"] = found[1] if found else None
        data["records"] = store_records(self.record, self.run.path, retrieved_ids(data))
        # A writer named by its bare episode id is an episode of this run: linked when its log is here
        # (a warm-up's or another run's records name episodes this run does not serve).
        data["writers"] = sorted(w for w in writer_names(data) if self.episode_path(w) is not None)
        data["run"] = self.index
        return data


@dataclass
class Attribution:
    """An attribution directory (``fastslow attribute``): its result and, per point, the indexes of its
    control and mechanism-off forks among the runs served."""

    index: int
    path: Path
    payload: dict[str, Any]
    forks: dict[str, dict[str, int]]

    def summary(self) -> dict[str, Any]:
        points = []
        for row in self.payload.get("points", []):
            point = row["point"]
            name = f"{point['episode']}-at{point['step'] + 1:03d}"
            points.append({**row, "name": name, "runs": self.forks.get(name, {})})
        head = {k: v for k, v in self.payload.items() if k != "points"}
        return {"index": self.index, "path": str(self.path), **head, "points": points}


def _fork_of(path: Path) -> dict[str, Any] | None:
    """The ``fork`` of a run directory's first log header, None when it is not a fork."""
    for log in sorted((path / "events").glob("*.jsonl")):
        with log.open(encoding="utf-8") as fh:
            header = json.loads(fh.readline() or "{}")
        origin = header.get("fork")
        if not isinstance(origin, dict):
            return None
        config = header.get("config") or {}
        return {**origin, "episode": header.get("episode_id"), "intervention": config.get("intervention")}
    return None


def open_runs(paths: list[Path]) -> tuple[list[RunView], list[Attribution]]:
    """The runs to view, each checked as ``fastslow report`` checks it (``UsageError``, one line). A
    directory holding ``attribution.json`` stands for its forks (each a run) and its result page."""
    views: list[RunView] = []
    attributions: list[Attribution] = []
    for path in paths:
        if (path / RESULT_FILE).is_file():
            payload = json.loads((path / RESULT_FILE).read_text(encoding="utf-8"))
            forks: dict[str, dict[str, int]] = {}
            for fork_dir in sorted((path / "forks").glob("*/*")):
                if (fork_dir / METRICS_FILE).is_file():
                    forks.setdefault(fork_dir.parent.name, {})[fork_dir.name] = len(views)
                    views.append(RunView(len(views), load_run(fork_dir), read_run_record(fork_dir)))
            attributions.append(Attribution(len(attributions), path, payload, forks))
            continue
        views.append(RunView(len(views), load_run(path), read_run_record(path)))
    where = {v.run.path.resolve(): v.index for v in views}
    for v in views:
        origin = _fork_of(v.run.path)
        if origin is not None:
            origin["parent"] = where.get(Path(origin["run_dir"]).resolve())
            v.fork = origin
    names = [v.run.name for v in views]
    for v in views:  # two runs of one config are told apart by their folders, as in the report
        if names.count(v.run.name) > 1:
            label = v.run.path.name if v.fork is None else f"{v.run.path.parent.name}/{v.run.path.name}"
            v.run = Run(f"{v.run.name} ({label})", v.run.path, v.run.metrics)
    return views, attributions
