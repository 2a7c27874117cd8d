"""Sage's grounding replies as models really write them: prose, fences, numbering variants, FUNC(args)."""

from __future__ import annotations

import pytest

from fastslow.controller.parsing import ParsedAction, func_to_text, parse_actions
from fastslow.env.scienceworld.world import SEMANTICS

CASES: list[tuple[str, str, list[str]]] = [
    (
        "plain numbered",
        "1. open door to kitchen\n2. teleport to kitchen",
        ["open door to kitchen", "teleport to kitchen"],
    ),
    (
        "expected after arrow",
        "1. teleport to kitchen -> You teleport to the kitchen.\n2. look around -> This room is the kitchen.",
        ["teleport to kitchen", "look around"],
    ),
    (
        "prose around the list",
        "Sure! Here is the plan:\n\n1. pick up thermometer\n2. focus on thermometer\n\nDone.",
        ["pick up thermometer", "focus on thermometer"],
    ),
    ("code fence", "```\n1. look around\n2. open freezer\n```", ["look around", "open freezer"]),
    (
        "code fence with language",
        "Actions:\n```text\n1) mix cup\n2) look at cup\n```\nDone.",
        ["mix cup", "look at cup"],
    ),
    (
        "parenthesis numbering",
        "1) teleport to workshop\n2) pick up battery",
        ["teleport to workshop", "pick up battery"],
    ),
    ("bracketed numbering", "(1) open oven\n(2) activate oven", ["open oven", "activate oven"]),
    (
        "step prefix",
        "Step 1: teleport to outside\nStep 2: look around",
        ["teleport to outside", "look around"],
    ),
    (
        "FUNC(args) SwiftSage style",
        "1. TELEPORT(kitchen)\n2. MOVE(metal pot, stove)\n3. FOCUS_ON(metal pot)",
        ["teleport kitchen", "move metal pot to stove", "focus on metal pot"],
    ),
    (
        "POUR two args",
        "- POUR(cup containing water, metal pot)",
        ["pour cup containing water into metal pot"],
    ),
    (
        "dash bullets",
        "- open door to hallway\n- teleport to hallway",
        ["open door to hallway", "teleport to hallway"],
    ),
    (
        "Action/Expected label lines",
        "Action: pick up seed jar\nExpected observation: You move the seed jar to the inventory.\n"
        "Action: teleport to greenhouse\nExpected observation: You teleport to the greenhouse.",
        ["pick up seed jar", "teleport to greenhouse"],
    ),
    (
        "numbered with Action label",
        "1. Action: open freezer | Expected: The freezer is now open.\n2. Action: look in freezer",
        ["open freezer", "look in freezer"],
    ),
    (
        "quoted and backticked",
        '1. "teleport to kitchen"\n2. `look around`.',
        ["teleport to kitchen", "look around"],
    ),
    ("bold markdown", "1. **open door to kitchen** -> the door opens", ["open door to kitchen"]),
    (
        "JSON list of strings",
        '["teleport to kitchen", "pick up apple"]',
        ["teleport to kitchen", "pick up apple"],
    ),
    (
        "JSON list of objects in a fence",
        '```json\n[{"action": "look around", "expected": "the kitchen"}, {"action": "open fridge"}]\n```',
        ["look around", "open fridge"],
    ),
    ("single bare action", "teleport to bedroom", ["teleport to bedroom"]),
    (
        "expected in parentheses",
        "1. open door to art studio (expected: the door is now open)",
        ["open door to art studio"],
    ),
    ("unicode arrow", "1. wait1 → time passes", ["wait1"]),
    ("empty", "", []),
    ("whitespace only", "  \n\t\n", []),
    (
        "prose without any action",
        "I think the agent should first find a thermometer and then measure it carefully.",
        [],
    ),
    (
        "numbered commentary is skipped",
        "1. Here is what I would do next in this situation:\n2. look around",
        ["look around"],
    ),
]


@pytest.mark.parametrize(("name", "text", "expected"), CASES, ids=[c[0] for c in CASES])
def test_parse_table(name: str, text: str, expected: list[str]) -> None:
    assert [a.action for a in parse_actions(text, SEMANTICS)] == expected


def test_table_is_large_enough() -> None:
    assert len(CASES) >= 15


def test_expected_observation_is_kept() -> None:
    parsed = parse_actions("1. open freezer -> The freezer is now open.\n2. look in freezer", SEMANTICS)
    assert parsed == [
        ParsedAction("open freezer", "The freezer is now open."),
        ParsedAction("look in freezer", ""),
    ]
    labelled = parse_actions("Action: pick up apple\nExpected observation: You pick up the apple.", SEMANTICS)
    assert labelled[0].expected == "You pick up the apple."


@pytest.mark.parametrize(
    ("text", "out"),
    [
        ("CONNECT(battery anode, orange wire)", "connect battery anode to orange wire"),
        ("USE(thermometer, ice)", "use thermometer on ice"),
        ("DUNK(cup, water)", "dunk cup into water"),
        ("LOOK_AROUND()", "look around"),
        ("open door to kitchen", "open door to kitchen"),
    ],
)
def test_func_to_text(text: str, out: str) -> None:
    assert func_to_text(text, SEMANTICS.prompt_facts.func_joiners) == out
