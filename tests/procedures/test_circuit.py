"""The power-component procedure (``procedures.circuit``, ``procedures.tasks.power_task`` and the
train-built source knowledge) on real ScienceWorld dev variations: the device is focused on first,
wired to the source of the kind the task asks for with two wires, and lights up."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.procedures.knowledge import build_circuits, sources_of
from fastslow.env.scienceworld.procedures.tasks import PowerTask, circuits_path, known_sources, power_task
from fastslow.env.scienceworld.tasks import get_task
from fastslow.eval.runner import EpisodeOutcome
from fastslow.events import EnvStep

Play = Callable[[int, int], tuple[EpisodeOutcome, list[EnvStep]]]
"""The ``play_swift_only`` fixture (tests/procedures/conftest.py)."""


def test_source_knowledge_comes_from_train_gold_paths(env: ScienceWorldAdapter) -> None:
    first = env.reset(26, 1, gold=True)  # train: a nonrenewable source, wired in the workshop
    assert 1 in get_task(26).variations["train"]
    found = sources_of(first.task_description, env.gold_actions, "hallway")
    assert found == {"nuclear generator": {"renewable": False, "room": "workshop", "activate": True}}
    shipped = json.loads(circuits_path().read_text(encoding="utf-8"))
    assert shipped["split"] == "train" and shipped["tasks"] == [25, 26]
    sources = known_sources()
    assert sources["solar panel"]["renewable"] is True and sources["solar panel"]["room"] == "outside"
    assert sources["battery"]["renewable"] is None  # task 25 never says


def test_the_task_descriptions_parse(env: ScienceWorldAdapter) -> None:
    assert power_task(env.reset(25, 11).task_description) == PowerTask("blue light bulb", None)
    assert power_task(env.reset(26, 11).task_description) == PowerTask("blue light bulb", "nonrenewable")
    assert power_task(env.reset(26, 12).task_description) == PowerTask("electric motor", "renewable")
    assert power_task(env.reset(0, 0).task_description) is None


# (task, dev variation, what the episode shows)
EPISODES = [
    (25, 11, "a battery whose valid spellings are 'anode in battery' and 'battery cathode'"),
    (26, 11, "nonrenewable: the nuclear generator, switched on once wired"),
]


@pytest.mark.parametrize(("task", "variation", "what"), EPISODES)
def test_swift_only_lights_the_device(play_swift_only: Play, task: int, variation: int, what: str) -> None:
    assert variation in get_task(task).variations["dev"]
    outcome, steps = play_swift_only(task, variation)
    assert outcome.final_score == 100, what
    actions = [s.action for s in steps]
    assert actions[1] == "focus on blue light bulb"
    connected = [s.observation for s in steps if " is now connected to " in s.observation]
    assert len(connected) == 4 and len(steps) <= 10
    source = "battery" if task == 25 else "nuclear generator"
    assert sum(f"on {source}" in c for c in connected) == 2
    assert ("activate nuclear generator" in actions) == (task == 26)


@pytest.mark.slow
def test_the_shipped_circuit_knowledge_is_what_the_command_builds() -> None:
    shipped = json.loads(circuits_path().read_text(encoding="utf-8"))
    assert build_circuits()["sources"] == shipped["sources"]


def test_a_knowledge_command_refuses_a_missing_folder_at_once(tmp_path: Path) -> None:
    out = tmp_path / "missing" / "circuits.json"
    run = subprocess.run(
        [sys.executable, "-m", "fastslow.cli", "data", "circuits", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2 and not out.parent.exists()
    assert run.stderr.strip().splitlines()[-1].endswith(f"folder {out.parent} does not exist")
