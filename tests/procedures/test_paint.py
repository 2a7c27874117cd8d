"""The paint tasks' procedure (``procedures.paint``, ``procedures.tasks.paint_recipe``) on real
ScienceWorld: the recipes come from train gold paths (``fastslow data paints``), a colour no train
variation mixes is found by elimination, and swift-only mixes and focuses on dev variations with
other containers (a bowl, tin cups) and colours (violet, yellow-orange) than training showed."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.procedures.knowledge import build_paints, recipes_of
from fastslow.env.scienceworld.procedures.tasks import PaintTask, paint_recipe, paint_task, paints_path
from fastslow.env.scienceworld.tasks import get_task
from fastslow.eval.runner import EpisodeOutcome
from fastslow.events import EnvStep

Play = Callable[[int, int], tuple[EpisodeOutcome, list[EnvStep]]]
"""The ``play_swift_only`` fixture (tests/procedures/conftest.py)."""


def test_recipes_come_from_train_gold_paths(env: ScienceWorldAdapter) -> None:
    env.reset(3, get_task(3).variations["train"][0], gold=True)
    assert recipes_of(env.gold_actions) == {"green": frozenset({"blue", "yellow"})}
    env.reset(4, get_task(4).variations["train"][0], gold=True)  # a tertiary: its secondary first
    assert recipes_of(env.gold_actions) == {"green": frozenset({"blue", "yellow"})}
    shipped = json.loads(paints_path().read_text(encoding="utf-8"))
    assert shipped["split"] == "train" and shipped["primaries"] == ["blue", "red", "yellow"]
    assert shipped["secondaries"] == {"green": ["blue", "yellow"], "orange": ["red", "yellow"]}
    # violet is never mixed in train: the one pair of primaries no known secondary uses
    assert paint_recipe("violet") == ("blue", "red")
    assert paint_recipe("green-blue") == ("green", "blue") and paint_recipe("red") == ()


@pytest.mark.slow
def test_the_shipped_paint_knowledge_is_what_the_command_builds() -> None:
    built = build_paints()
    shipped = json.loads(paints_path().read_text(encoding="utf-8"))
    assert built["secondaries"] == shipped["secondaries"] and built["primaries"] == shipped["primaries"]


def test_the_task_descriptions_parse(env: ScienceWorldAdapter) -> None:
    secondary = get_task(3).variations["dev"][-1]
    assert paint_task(env.reset(3, secondary).task_description) == PaintTask(("violet",))
    # ScienceWorld's text ends "focus on the orange paint" for yellow-orange: the tertiary comes last
    tertiary = env.reset(4, 20).task_description
    assert "create yellow-orange paint" in tertiary and paint_task(tertiary) == PaintTask(
        ("orange", "yellow-orange")
    )
    assert paint_task(env.reset(0, 0).task_description) is None


# (task, dev variation, what the episode shows)
EPISODES = [
    (3, 25, "violet (never mixed in train) in a bowl"),
    (4, 20, "yellow-orange in tin cups on a desk: orange first, then yellow added"),
]


@pytest.mark.parametrize(("task", "variation", "what"), EPISODES)
def test_swift_only_mixes_and_focuses(
    env: ScienceWorldAdapter,
    play_swift_only: Play,
    task: int,
    variation: int,
    what: str,
) -> None:
    assert variation in get_task(task).variations["dev"]
    wanted = paint_task(env.reset(task, variation).task_description)
    assert wanted is not None
    outcome, steps = play_swift_only(task, variation)
    assert outcome.final_score == 100, what
    assert len(steps) <= 10  # teleport, two pours, mix, focus (and again for a tertiary)
    foci = [s.observation for s in steps if s.action.startswith("focus on ")]
    assert foci == [f"You focus on the {colour} paint." for colour in wanted.colours]
    mixes = [s.observation for s in steps if s.action.startswith("mix ")]
    assert len(mixes) == len(wanted.colours) and all("mix to produce" in m for m in mixes)
