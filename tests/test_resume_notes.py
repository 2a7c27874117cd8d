"""A resume says, in one console line per log, which log it set aside or replays and why."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fastslow.events import EpisodeEnd, read_events

ARGS = ["eval", "--config", "oracle", "--set", "dev", "--tasks", "13", "--limit-per-task", "2"]


def fastslow(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fastslow.cli", *args], capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow
def test_a_resume_names_each_log_it_sets_aside_or_replays(tmp_path: Path) -> None:
    """A corrupted middle line: the log goes to events/failed/ and one line names it, where it went, the
    bad line and why. A log cut to half its size (its last line torn): one line says it has no
    episode_end and where it was cut. Both episodes are replayed; rc 0."""
    out = tmp_path / "d"
    args = [*ARGS, "-o", "env.step_limit=5", "--out", str(out)]
    first = fastslow(*args)
    assert first.returncode == 0, first.stderr
    corrupt, cut = sorted((out / "events").glob("*.jsonl"))
    lines = corrupt.read_text().splitlines(keepends=True)
    lines[3] = '{"event": "env_step", "step": "garbage"}\n'
    corrupt.write_text("".join(lines))
    data = cut.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    assert not data[: len(data) // 2].endswith(b"\n")

    resumed = fastslow(*args)
    assert resumed.returncode == 0, resumed.stderr
    notes = [" ".join(n.split()) for n in resumed.stdout.split("resume: ")[1:]]
    assert len(notes) == 2, resumed.stdout
    kept = list((out / "events" / "failed").glob(f"{corrupt.stem}.corrupt-*.jsonl"))
    assert len(kept) == 1 and kept[0].read_text() == "".join(lines)
    assert notes[0].startswith(f"event log {corrupt} set aside as {kept[0]} (line 4 is not a valid event: ")
    assert f"replaying {corrupt.stem}" in notes[0]
    torn_at = data[: len(data) // 2].count(b"\n") + 1
    assert notes[1].startswith(
        f"event log {cut} has no episode_end (it ends mid-line {torn_at}: the file was cut)"
    )
    for log in (corrupt, cut):
        assert isinstance(read_events(log)[-1], EpisodeEnd)

    again = fastslow(*args)  # nothing left to set aside or replay: nothing said
    assert again.returncode == 0 and "resume:" not in again.stdout
