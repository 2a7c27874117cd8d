"""Resume after SIGKILL: every episode ends up logged exactly once (paper-scale runs take hours)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from fastslow.agents import Decision, OracleAgent
from fastslow.config import load_config
from fastslow.core.step import StepResult
from fastslow.env.episodes import Episode
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.tasks import get_task
from fastslow.eval.executors import _Worker
from fastslow.events import EndState, EpisodeEnd, EpisodeStart, read_events

ARGS = ["eval", "--config", "oracle", "--set", "test", "--tasks", "7,17,19", "--limit-per-task", "2"]


def _eval(out: Path, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "fastslow.cli", *ARGS, "--out", str(out), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: workers and JVMs die with it
    )


def test_sigkill_then_rerun_logs_every_episode_exactly_once(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = _eval(out, "--workers", "2")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list((out / "events").glob("*.jsonl")):
        time.sleep(0.2)
    time.sleep(random.uniform(0.0, 1.0))
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert not (out / "metrics.json").exists(), "the run finished before it was killed"

    rerun = _eval(out, "--workers", "2")
    assert rerun.wait(timeout=600) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    logs = sorted((out / "events").glob("*.jsonl"))
    assert metrics["episodes"] == len(logs) == 6 and metrics["mean_score"] == 100
    for log in logs:
        events = read_events(log)
        assert sum(isinstance(e, EpisodeStart) for e in events) == 1, log.name
        assert sum(isinstance(e, EpisodeEnd) for e in events) == 1, log.name


class _KillsItsJvmOnce(OracleAgent):
    """The oracle, except that on its first episode it kills the JVM under it at step 2."""

    def __init__(self, env: ScienceWorldAdapter) -> None:
        super().__init__()
        self.env, self.killed = env, False

    def act(self, result: StepResult) -> Decision:
        if result.steps == 2 and not self.killed:
            self.killed = True
            assert self.env.jvm_pid is not None
            os.kill(self.env.jvm_pid, signal.SIGKILL)
        return super().act(result)


def test_jvm_death_mid_episode_is_retried_and_recorded(tmp_path: Path) -> None:
    (tmp_path / "events").mkdir()
    worker = _Worker(load_config("oracle"), tmp_path / "events", retries=1)
    worker.agents[None] = (worker.config, _KillsItsJvmOnce(worker.env))
    try:
        outcome = worker.play(Episode(7, get_task(7).variations["test"][0]))
    finally:
        worker.close()
    assert outcome.end is EndState.SUCCESS and outcome.final_score == 100
    failed = list((tmp_path / "events" / "failed").glob("*.jsonl"))
    assert len(failed) == 1
    end = read_events(failed[0])[-1]
    assert isinstance(end, EpisodeEnd) and end.end is EndState.ERROR and "JVM failed" in (end.error or "")
