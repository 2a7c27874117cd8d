"""`fastslow attribute` is reproducible (issue 49, point 8): the same command twice on a dev run, each on
fresh JVMs of its own, gives the same numbers, and every control fork repeats its parent.

ScienceWorld orders everything it keeps in hash sets (objects, ambiguity options, valid actions, which
object ticks first) by the JVM's identity hash codes. On the JVM's own codes two fresh JVMs drifted
apart on the same actions (freeze 09-0014 of dev: the bees flew elsewhere from step 69 on) and a fork
of a run's later episode had to replay what its JVM had played before; on constant hash codes (the
default, ``env.hash_codes``) an episode is a function of its task, variation and actions. The parent
run here plays its episodes one after another on one JVM (no ``env.jvm_per_episode``): the forks
replay none of that history and still agree with the parent.

Slow: a four-episode dev run and two attributions of six Gate-1 drops, ~2.5 minutes on two workers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

FASTSLOW = [sys.executable, "-m", "fastslow.cli"]
#: dev episodes with Gate-1 drops under swift-srm: cooling 06-0150, identify-life-stages-2 13-0004 (five),
#: melt 22-0014 and use-thermometer 25-0010 (eight in all on 2026-12-06), and the bees of the
#: greenhouse in three of them.
TASKS = "6,13,22,25"


def fastslow(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*FASTSLOW, *args], capture_output=True, text=True, timeout=900)


def attribution(run: Path, out: Path) -> dict[str, Any]:
    proc = fastslow(
        "attribute", str(run), "--mechanism", "gate-drop", "--limit", "6", "--workers", "2", "--out", str(out)
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    payload: dict[str, Any] = json.loads((out / "attribution.json").read_text().replace(str(out), "OUT"))
    return payload


def test_the_same_attribute_command_twice_gives_the_same_numbers(tmp_path: Path) -> None:
    run = tmp_path / "run"
    episodes = ["--set", "dev", "--tasks", TASKS, "--limit-per-task", "1"]
    proc = fastslow("eval", "--config", "swift-srm", *episodes, "--out", str(run))
    assert proc.returncode == 0, proc.stderr[-2000:]
    first = attribution(run, tmp_path / "a")
    second = attribution(run, tmp_path / "b")
    assert first["sampled"] == first["tried"] == 6 and first["events"] >= 6
    assert (first["replayed"], first["diverged"], first["exact"]) == (6, 0, 6)
    assert second == first
