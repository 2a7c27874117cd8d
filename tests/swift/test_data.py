"""Gold-trajectory dataset: path rewriting, label matching, replay, and the train-only rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fastslow.env.scienceworld.tasks import all_tasks
from fastslow.errors import UsageError
from fastslow.swift.data import (
    build_gold,
    match_valid,
    read_rows,
    rewrite_for_easy,
    select_train_variations,
)
from fastslow.swift.imitation import SwiftWeights
from fastslow.swift.train import head_object, label_of


def test_rewrite_for_easy_teleports_and_drops_doors() -> None:
    gold = ["open door to kitchen", "go to kitchen", "go to hallway", "go to outside", "pick up seed"]
    assert rewrite_for_easy(gold) == ["teleport to outside", "pick up seed"]


def test_renames_match_valid_spellings() -> None:
    valid = ["look at beaker", "pick up seed", "pour cup into pot"]
    assert match_valid("examine beaker", valid) == "look at beaker"
    assert match_valid("pick up seed in inventory", valid) == "pick up seed"
    assert match_valid("pour cup in kitchen in pot", valid) == "pour cup into pot"
    assert match_valid("open door to kitchen", valid) is None


def test_label_of_drops_life_stage_wording() -> None:
    valid = ["focus on apple tree in pot 5", "focus on apple tree in pot 6", "focus on apple seed"]
    assert (
        label_of("focus on apple tree in the adult stage in pot 6", valid) == "focus on apple tree in pot 6"
    )


def test_label_of_prefers_the_head_object_over_its_container() -> None:
    """Train gold paths of identify-life-stages-2 name the tree with its stage and pot; the valid list
    has the tree, a part of it, and the pot, the last two longer: the label is the tree."""
    valid = [
        "focus on adult apple tree",
        "focus on flower in apple tree",
        "focus on self watering flower pot 6",
        "focus on apple seed",
    ]
    gold = "focus on apple tree in the adult stage in self watering flower pot 6"
    assert label_of(gold, valid) == "focus on adult apple tree"
    assert head_object(gold, "focus on") == "apple tree"
    assert head_object("move seed on plant to cup", "move") == "seed"
    assert head_object("open door", "open") == "door"


def test_label_of_matches_the_gold_paths_other_spellings() -> None:
    """Gold paths spell objects otherwise than the valid list (strings of train gold rows): the label
    names the same objects in the same roles, never the reverse move or another numbered pot."""
    paint = [
        "pour cup containing blue paint in art studio into jug",
        "pour jug into cup containing blue paint in art studio",
        "pour cup containing blue paint in art studio into art studio",
    ]
    gold = "pour cup containing blue paint in art studio in jug"
    assert label_of(gold, paint) == "pour cup containing blue paint in art studio into jug"
    wires = [
        "connect anode in battery to blue wire terminal 1",
        "connect blue wire terminal 1 to anode in battery",
        "connect anode in component to blue wire terminal 1",
        "connect anode in battery to blue wire terminal 2",
    ]
    gold = "connect battery anode to blue wire terminal 1"
    assert label_of(gold, wires) == "connect anode in battery to blue wire terminal 1"
    boxes = ["move blue jay to inventory", "move blue jay to red box", "move orange box to inventory"]
    assert label_of("move egg blue jay egg in inventory to red box", boxes) == "move blue jay to red box"
    seeds = ["move ceramic cup to unknown e in the seed stage", "move flower pot 7 to seed jar"]
    assert label_of("move unknown e seed in seed jar to ceramic cup", seeds) is None  # reversed
    pots = ["focus on apple tree in self watering flower pot 7"]
    assert label_of("focus on apple tree in the adult stage in self watering flower pot 6", pots) is None


def test_selection_holds_only_train_variations() -> None:
    """Dev and test variations never enter training data."""
    chosen = select_train_variations(per_task=10)
    assert {t for t, _ in chosen} == set(range(30))
    for task_id, variation in chosen:
        assert all_tasks()[task_id].split_of(variation) == "train"
    # 0: every train variation once (ScienceWorld's 3,592), round-robin over the tasks
    every = select_train_variations(per_task=0)
    assert len(every) == len(set(every)) == sum(len(t.variations["train"]) for t in all_tasks()) == 3592
    assert [t for t, _ in every[:30]] == list(range(30))
    assert all(all_tasks()[t].split_of(v) == "train" for t, v in every)


def test_packaged_model_was_trained_on_train_variations_only() -> None:
    meta = SwiftWeights.load().meta
    episodes = meta["episodes"]
    assert isinstance(episodes, list) and episodes
    for episode in episodes:
        task_id, variation = (int(x) for x in str(episode).split("-"))
        assert all_tasks()[task_id].split_of(variation) == "train", episode


def test_only_train_split_is_accepted(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="train split"):
        build_gold(tmp_path, split="dev")


def test_gold_rows_carry_swift_inputs(gold_dir: Path) -> None:
    rows = list(read_rows(gold_dir))
    assert len(rows) >= 10
    first, last = rows[0], rows[-1]
    assert first["history"] == [] and first["score"] == 0
    for key in ("task_description", "moves", "look", "inventory", "visited_rooms", "valid_actions"):
        assert key in first
    assert len(last["history"]) <= 10 and last["history"][-1]["action"] == rows[-2]["gold_action"]
    labelled = [r for r in rows if label_of(r["gold_action"], r["valid_actions"])]
    assert len(labelled) >= 0.8 * len(rows)
    manifest = json.loads((gold_dir / "manifest.json").read_text())
    assert manifest["examples"] == len(rows)
    assert manifest["examples_per_task"] == {"13": len(rows)}
    assert manifest["scienceworld_version"]
