"""A log is one episode (issue 49, point 3): a file holding two episodes (``cat A.jsonl B.jsonl > A.jsonl``),
another episode's log under this one's name, or a log whose first event is not its header is damaged,
and every reader treats it as it treats a log with a corrupt line: ``report`` leaves it out with one
warning, a resume sets it aside and replays the episode, ``fork`` and ``attribute`` refuse with one line,
the viewer marks it unreadable under the file's own id.

Before: ``report`` read the concatenated 05-0225.jsonl as 03-0027 (its last header and end win), so task
3 counted twice and task 5 not at all, and a resume took the log as finished and rewrote metrics.json
from it, with no word. Every case drives the real command line on a copy of one real oracle run."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fastslow.env.scienceworld.episodes import select_episodes
from fastslow.errors import CorruptLogError
from fastslow.eval.viewer import episode_entry
from fastslow.events import EpisodeEnd, EpisodeStart, read_events

FASTSLOW = [sys.executable, "-m", "fastslow.cli"]
ARGS = ["eval", "--config", "oracle", "--set", "test", "--tasks", "3,5", "--limit-per-task", "1"]
THREE, FIVE = (e.episode_id for e in select_episodes("test", "3,5", None, 1))
"""The episodes ARGS selects (03-0027 and 05-0225): FIVE's log is the one damaged."""


def fastslow(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*FASTSLOW, *args], capture_output=True, text=True, timeout=600)


def one_error_line(proc: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """The command failed with exit 2 and one stderr line holding every fragment."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-500:], proc.stderr[-2000:])
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished oracle eval of THREE and FIVE; every test damages a copy."""
    out = tmp_path_factory.mktemp("clean") / "d"
    proc = fastslow(*ARGS, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


def damaged(clean_run: Path, tmp_path: Path, damage: str) -> tuple[Path, Path, str]:
    """A copy of the clean run with FIVE's log damaged, the log, and what its error names:
    ``two``: FIVE's log then THREE's in one file; ``other``: THREE's log under FIVE's name;
    ``headless``: FIVE's log without its episode_start line."""
    run = tmp_path / "run"
    shutil.copytree(clean_run, run)
    log = run / "events" / f"{FIVE}.jsonl"
    five, three = log.read_text(), (run / "events" / f"{THREE}.jsonl").read_text()
    if damage == "two":
        log.write_text(five + three)
        said = f"line {len(five.splitlines()) + 1} is a second episode_start, of {THREE}"
    elif damage == "other":
        log.write_text(three)
        said = f"line 1 starts episode {THREE}, but the file is named for {FIVE}"
    else:
        rest = five.splitlines(keepends=True)[1:]
        log.write_text("".join(rest))
        said = f"line 1 is {json.loads(rest[0])['event']}, not the episode_start a log begins with"
    return run, log, said


def _without_times(data: Any) -> Any:
    """metrics.json without wall-clock times (two plays of an episode never take the same time)."""
    if isinstance(data, dict):
        return {k: _without_times(v) for k, v in data.items() if not k.startswith("wall_s")}
    if isinstance(data, list):
        return [_without_times(v) for v in data]
    return data


def test_report_leaves_the_log_out_with_one_warning_and_counts_each_task_once(
    clean_run: Path, tmp_path: Path
) -> None:
    """The issue's case; the other damages fail the same read (the viewer's test names each)."""
    run, log, said = damaged(clean_run, tmp_path, "two")
    report = tmp_path / "report"
    proc = fastslow("report", str(run), "--out", str(report))
    assert proc.returncode == 0, proc.stderr
    about = [line for line in proc.stderr.splitlines() if f"event log {log} " in line]
    assert len(about) == 1 and about[0].startswith("warning: ")
    assert said in about[0] and "left out of every table and figure" in about[0]
    # task 3 once (its own log), task 5 not at all: not task 3 twice from FIVE's file
    rows = list(csv.reader((report / "per_task.csv").open()))
    assert [(row[0], row[-1]) for row in rows[1:]] == [("3", "1")]
    assert list(csv.reader((report / "main.csv").open()))[1][1] == "1"
    assert f"event log {log} " in (report / "report.md").read_text().split("## Warnings", 1)[1]
    assert str(log) in (report / "report.html").read_text()


def test_a_resume_sets_the_log_aside_and_replays_it_into_a_clean_runs_metrics(
    clean_run: Path, tmp_path: Path
) -> None:
    run, log, said = damaged(clean_run, tmp_path, "two")
    bad = log.read_bytes()
    proc = fastslow(*ARGS, "--out", str(run))
    assert proc.returncode == 0, proc.stderr
    # the console may wrap a long line anywhere: compare without whitespace
    notes = ["".join(n.split()) for n in proc.stdout.split("resume: ")[1:]]
    kept = list((run / "events" / "failed").glob(f"{FIVE}.corrupt-*.jsonl"))
    assert len(kept) == 1 and kept[0].read_bytes() == bad
    assert len(notes) == 1, proc.stdout
    want = f"event log {log} set aside as {kept[0]} ({said}: a log holds one episode); replaying {FIVE}"
    assert notes[0].startswith("".join(want.split())), notes[0]
    events = read_events(log)
    assert isinstance(events[0], EpisodeStart) and events[0].episode_id == FIVE
    assert isinstance(events[-1], EpisodeEnd)
    metrics = json.loads((run / "metrics.json").read_text())
    assert _without_times(metrics) == _without_times(json.loads((clean_run / "metrics.json").read_text()))


def test_fork_and_attribute_refuse_it_with_one_line_as_they_do_a_corrupt_line(
    clean_run: Path, tmp_path: Path
) -> None:
    run, log, said = damaged(clean_run, tmp_path, "two")
    fork = tmp_path / "fork"
    one_error_line(
        fastslow("fork", str(run), FIVE, "--at", "2", "--out", str(fork)), f"cannot fork {log}", said
    )
    assert not fork.exists()
    # attribute reads every log of the run: the same answer as for a log with a line that is not an event
    attributed = fastslow("attribute", str(run), "--mechanism", "gate-drop", "--out", str(tmp_path / "a"))
    lines = log.read_text().splitlines(keepends=True)
    lines[2] = '{"event": "env_step", "step": "garbage"}\n'
    log.write_text("".join(lines))
    corrupt = fastslow("attribute", str(run), "--mechanism", "gate-drop", "--out", str(tmp_path / "b"))
    assert attributed.returncode == corrupt.returncode != 0 and said in attributed.stderr
    assert len(attributed.stderr.splitlines()) == len(corrupt.stderr.splitlines())


@pytest.mark.parametrize("damage", ["two", "other", "headless"])
def test_the_viewer_marks_it_unreadable_under_the_files_own_id(
    clean_run: Path, tmp_path: Path, damage: str
) -> None:
    _, log, said = damaged(clean_run, tmp_path, damage)
    entry = episode_entry(log)
    assert (entry["id"], entry["outcome"]) == (FIVE, "unreadable") and said in entry["problem"]
    assert entry["task_id"] in (5, None)  # never THREE's header under FIVE's name


def test_a_set_aside_copy_reads_and_a_seeded_name_must_match_exactly(clean_run: Path, tmp_path: Path) -> None:
    """The name up to its first dot is the episode: a copy under events/failed/ (``<id>.attempt1``)
    reads whole; the same log named for a seeded episode (``<id>-s1``) does not."""
    log = clean_run / "events" / f"{FIVE}.jsonl"
    attempt = tmp_path / f"{FIVE}.attempt1.jsonl"
    shutil.copy(log, attempt)
    assert read_events(attempt) == read_events(log)
    seeded = tmp_path / f"{FIVE}-s1.jsonl"
    shutil.copy(log, seeded)
    with pytest.raises(CorruptLogError, match=f"starts episode {FIVE}, but the file is named for {FIVE}-s1"):
        read_events(seeded)
    empty = tmp_path / f"{FIVE}.jsonl"  # a run killed before its header: nothing yet, not damaged
    empty.write_bytes(b"")
    assert read_events(empty) == []
