"""Grounding planned text onto ScienceWorld's valid actions with rapidfuzz."""

from __future__ import annotations

import pytest

from fastslow.controller.grounding import Grounder
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.semantics import clean as normalize
from fastslow.env.scienceworld.world import SEMANTICS

VALID = (
    "look around",
    "teleport to kitchen",
    "teleport to hallway",
    "pick up thermometer",
    "look at thermometer",
    "pour cup containing water into metal pot",
    "focus on apple seed in the seed stage in self watering flower pot 4",
    "open freezer",
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("look around", "look around"),
        ("Look Around.", "look around"),
        ('"teleport to kitchen"', "teleport to kitchen"),
        ("go to kitchen", "teleport to kitchen"),
        ("examine thermometer", "look at thermometer"),
        ("pick up the thermometer", "pick up thermometer"),
        ("take thermometer", "pick up thermometer"),
        ("pour cup containing water in metal pot", "pour cup containing water into metal pot"),
        ("focus on apple seed in seed stage in self watering flower pot 4", VALID[6]),
        ("open the freezer", "open freezer"),
    ],
)
def test_near_misses_ground_to_the_valid_string(text: str, expected: str) -> None:
    hit = Grounder(VALID, SEMANTICS).ground(text, cutoff=80)
    assert hit is not None and hit.action == expected


@pytest.mark.parametrize("text", ["", "dance with the robot", "teleport to the moon base", "activate stove"])
def test_unrelated_text_is_not_grounded(text: str) -> None:
    assert Grounder(VALID, SEMANTICS).ground(text, cutoff=80) is None


def test_exact_matches_report_exact() -> None:
    hit = Grounder(VALID, SEMANTICS).ground("Open Freezer", cutoff=80)
    assert hit is not None and hit.exact and hit.score == 100.0
    fuzzy = Grounder(VALID, SEMANTICS).ground("open freezr", cutoff=80)
    assert fuzzy is not None and not fuzzy.exact and 80 <= fuzzy.score < 100


def test_normalize() -> None:
    assert normalize("  `Pick up  Thermometer`.  ") == "pick up thermometer"


def test_grounds_against_a_real_valid_set(env: ScienceWorldAdapter) -> None:
    first = env.reset(13, 0)  # identify-life-stages-2 starts in the hallway
    grounder = Grounder(first.valid_actions, SEMANTICS)
    hit = grounder.ground("teleport to the kitchen", cutoff=80)
    assert hit is not None and hit.action == "teleport to kitchen"
    assert grounder.ground("focus on the apple tree", cutoff=80) is None  # not in the hallway
    look = grounder.ground("look at picture.", cutoff=80)
    assert look is not None and look.action in first.valid_actions
