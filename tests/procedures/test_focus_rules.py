"""The task-specific focus rules Gate-1 receives (``procedures.focus``) and Gate-1's focus budget with
and without them (``reflection.focus.focus_limit_for``), on ScienceWorld's own task descriptions and
gold focus actions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.procedures.focus import (
    TaskFocusRules,
    focus_budgets,
    focus_budgets_path,
    focus_target_allowed,
)
from fastslow.env.scienceworld.procedures.knowledge import focus_count
from fastslow.env.scienceworld.semantics import focus_target
from fastslow.env.scienceworld.tasks import get_task
from fastslow.env.scienceworld.world import SEMANTICS as SW
from fastslow.reflection.focus import focus_limit_for

RULES = TaskFocusRules()

MELT = (
    "Your task is to measure the melting point of chocolate, which is located around the kitchen. First, "
    "focus on the thermometer. Next, focus on the chocolate. If the melting point of chocolate is above "
    "200.0 degrees celsius, focus on the blue box. If the melting point of chocolate is below 200.0 degrees "
    "celsius, focus on the orange box. The boxes are located around the kitchen."
)
STAGES = "Your task is to focus on the 4 life stages of the turtle, starting from earliest to latest."
BOIL = (
    "Your task is to boil water. For compounds without a boiling point, combusting the substance is also "
    "acceptable. First, focus on the substance. Then, take actions that will cause it to change its state."
)
FIND = (
    "Your task is to find a(n) animal. First, focus on the thing. Then, move it to the red box in the kitchen"
)
MIX = (
    "Your task is to use chemistry to create the substance 'salt water'. A recipe and some of the "
    "ingredients might be found near the kitchen. When you are done, focus on the salt water."
)
PAINT = (
    "Your task is to use chemistry to create green-blue paint. When you are part-way done, focus on the "
    "intermediate (secondary color) paint you created.  When you are completely done, focus on the "
    "green-blue paint."
)


@pytest.mark.parametrize(
    ("task", "description", "target", "allowed"),
    [
        ("measure-melting-point-known-substance", MELT, "thermometer in inventory", True),
        ("measure-melting-point-known-substance", MELT, "chocolate", True),
        ("measure-melting-point-known-substance", MELT, "orange box", True),
        ("measure-melting-point-known-substance", MELT, "stove", False),
        ("measure-melting-point-known-substance", MELT, "lighter", False),
        ("identify-life-stages-1", STAGES, "egg turtle in outside", True),
        ("identify-life-stages-1", STAGES, "frog egg", False),
        ("boil", BOIL, "substance in metal pot", True),
        ("boil", BOIL, "metal pot", False),
        ("melt", "Your task is to melt lead. First, focus on the substance. Then, ...", "lead", True),
        ("measure-melting-point-known-substance", MELT, "substance in ceramic cup", True),
        ("chemistry-mix", MIX, "salt water", True),
        ("chemistry-mix", MIX, "instructions to make salt water", False),  # the recipe
        ("chemistry-mix", MIX, "sodium chloride", False),
        ("find-animal", FIND, "dove", True),
        ("chemistry-mix-paint-tertiary-color", PAINT, "green paint", True),
        ("chemistry-mix-paint-tertiary-color", PAINT, "green-blue paint", True),
        # Any shared word passes: loose on purpose (blocking a needed focus makes the task unsolvable).
        ("chemistry-mix-paint-tertiary-color", PAINT, "paint brush in art studio", True),
        ("chemistry-mix-paint-tertiary-color", PAINT, "wood cup containing red paint", False),
    ],
)
def test_focus_target_rule(task: str, description: str, target: str, allowed: bool) -> None:
    assert focus_target_allowed(task, description, target) is allowed


def test_focus_limits() -> None:
    assert focus_limit_for(SW, "measure-melting-point-known-substance", MELT, RULES) == 3
    assert focus_limit_for(SW, "identify-life-stages-1", STAGES, RULES) == 4  # read from the description
    assert focus_limit_for(SW, "identify-life-stages-1", STAGES.replace("4", "5"), RULES) == 5
    assert focus_limit_for(SW, "chemistry-mix-paint-tertiary-color", PAINT, RULES) == 2
    assert focus_limit_for(SW, "boil", BOIL, RULES) == 1
    assert focus_limit_for(SW, "no-such-task", "", RULES) == 1


def test_without_the_task_logic_the_budget_is_what_the_description_says() -> None:
    """``procedures.enabled`` off: no per-task table; the number the description states, else its focus
    instructions (a run of "If ..., focus on ..." alternatives counts once), at least 1."""
    assert focus_limit_for(SW, "identify-life-stages-1", STAGES) == 4
    assert focus_limit_for(SW, "measure-melting-point-known-substance", MELT) == 3
    assert focus_limit_for(SW, "chemistry-mix-paint-tertiary-color", PAINT) == 2
    for name, description in [("boil", BOIL), ("find-animal", FIND), ("chemistry-mix", MIX), ("none", "")]:
        assert focus_limit_for(SW, name, description) == 1


@pytest.mark.parametrize(
    "task",
    [
        "boil",
        "chemistry-mix-paint-tertiary-color",
        "lifespan-longest-lived-then-shortest-lived",
        "measure-melting-point-known-substance",
        "measure-melting-point-unknown-substance",
        "test-conductivity",
        "use-thermometer",
    ],
)
def test_without_the_task_logic_the_budget_is_what_the_gold_path_focuses_on(
    env: ScienceWorldAdapter, task: str
) -> None:
    """Gate-1's budget without the task logic, read from a train variation's own description, is the
    number of focus actions of its gold path: 3 for measure-melting-point (thermometer, substance, box),
    2 for use-thermometer; a budget of 1 there drops the second focus and the task cannot finish. (Not
    mendelian genetics: its gold reset takes 6-9 s, and under load longer than the JVM call timeout.)"""
    spec = get_task(task)
    first = env.reset(spec.task_id, spec.variations["train"][0], gold=True)
    assert focus_limit_for(SW, spec.name, first.task_description) == focus_count(env.gold_actions)


def test_the_budgets_are_the_shipped_train_file() -> None:
    shipped = json.loads(focus_budgets_path().read_text(encoding="utf-8"))
    assert shipped["split"] == "train" and shipped["generated_by"].startswith("fastslow data focus-budgets")
    assert focus_budgets() == shipped["budgets"]
    assert set(focus_budgets()) == {get_task(t).name for t in range(30)}
    assert all(n >= 1 for n in focus_budgets().values())  # a 0 would refuse every focus of the task
    for name, n in focus_budgets().items():
        assert focus_limit_for(SW, name, "", RULES) == n


def test_a_stated_number_of_stages_is_what_the_train_gold_paths_focus_on(env: ScienceWorldAdapter) -> None:
    """identify-life-stages-1 says how many stages its animal has (3 for the wolf, 4 for the turtle), and
    its gold path focuses on each once: the description's number is the budget, variation by variation."""
    task = get_task("identify-life-stages-1")
    counts = set()
    for variation in task.variations["train"]:
        first = env.reset(task.task_id, variation, gold=True)
        counts.add(focus_count(env.gold_actions))
        assert focus_count(env.gold_actions) == focus_limit_for(SW, task.name, first.task_description, RULES)
    assert counts == {3, 4}
    # identify-life-stages-2 names no number: its budget is the file's
    plants = get_task("identify-life-stages-2")
    first = env.reset(plants.task_id, plants.variations["train"][0], gold=True)
    assert focus_limit_for(SW, plants.name, first.task_description, RULES) == focus_budgets()[plants.name]


def test_the_command_rebuilds_the_shipped_budgets(tmp_path: Path) -> None:
    """``fastslow data focus-budgets`` on identify-life-stages-1 writes what the shipped file says of it
    (the same train variations, the same budget), with its provenance; bad input is one line and exit 2."""
    out = tmp_path / "budgets.json"
    base = [sys.executable, "-m", "fastslow.cli", "data", "focus-budgets", "--out", str(out)]
    bad = subprocess.run([*base, "--per-task", "0"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and not out.exists()
    assert len(bad.stderr.strip().splitlines()) == 1 and "--per-task" in bad.stderr
    done = subprocess.run([*base, "--tasks", "12"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    made = json.loads(out.read_text(encoding="utf-8"))
    shipped = json.loads(focus_budgets_path().read_text(encoding="utf-8"))
    assert made["tasks"] == [12] and made["split"] == "train" and made["per_task"] == shipped["per_task"]
    assert made["variations"] == {"12": shipped["variations"]["12"]} == {"12": [0, 1, 2, 3, 4, 5]}
    name = get_task(12).name
    assert made["budgets"] == {name: shipped["budgets"][name]} == {name: 4}
    assert made["generated_by"].startswith("fastslow data focus-budgets") and "commit" in made
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"tasks": 1, "over_one": 1}


@pytest.mark.slow
def test_the_phrase_rule_admits_every_train_gold_focus(env: ScienceWorldAdapter) -> None:
    """The target rule blocks no focus action of the gold paths of two train variations of every task
    (the first and the middle of its split)."""
    from fastslow.env.scienceworld.procedures.knowledge import spread_variations

    blocked = []
    for task_id in range(30):
        name = get_task(task_id).name
        for variation in spread_variations(task_id, 2):
            first = env.reset(task_id, variation, gold=True)
            for action in env.gold_actions:
                target = focus_target(action)
                if target is not None and not focus_target_allowed(name, first.task_description, target):
                    blocked.append((task_id, variation, action))
    assert blocked == []
