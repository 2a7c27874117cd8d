"""ScienceWorld's action vocabulary behind named helpers (``fastslow.env.scienceworld.semantics``), and
the fixed vocabularies the rest of the package takes from ``fastslow.env.scienceworld.semantics`` and
``fastslow.vocab``.

The helpers replaced literal prefixes and slices (``a[9:]`` after "focus on ", ``a[8:]`` after "pick up
") without changing behaviour: these tests pin the exact contracts, edge cases included (a bare "focus
on", no space after the verb, trailing spaces kept)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import fastslow
from fastslow import vocab
from fastslow.env.scienceworld.semantics import (
    AMBIGUOUS,
    FOCUS,
    PICK_UP,
    TELEPORT,
    Alternative,
    conditional_alternatives,
    described_contents,
    device_states,
    focus_on,
    focus_target,
    instructed_focus_count,
    is_focus,
    stated_focus_count,
    task_destinations,
    teleport_targets,
    teleport_to,
    thermometer_reading,
    verb_rest,
    verb_target,
)
from fastslow.memory.episode import CRITIC_FAILURE_SIGNAL, CRITIC_REFUSALS

ACTIONS = [
    "focus on red paint",
    "focus on paint in bowl",
    "focus on substance in metal pot ",
    "focus on",
    "focus on ",
    "focus onion",
    "Focus on apple",
    "pick up thermometer",
    "pick up",
    "pick upper",
    "teleport to kitchen",
    "move lead to metal pot",
    "look at inclined plane a",
    "mix jug",
    "",
    "wait1",
]


@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize("verb", [FOCUS, PICK_UP, TELEPORT, "move", "look at", "mix"])
def test_verb_target_is_the_checked_slice(action: str, verb: str) -> None:
    expected = action[len(verb) + 1 :] if action.startswith(verb + " ") else None
    assert verb_target(action, verb) == expected


@pytest.mark.parametrize("action", ACTIONS)
def test_verb_rest_is_the_unchecked_slice(action: str) -> None:
    assert verb_rest(action, FOCUS) == action[9:]
    assert verb_rest(action, PICK_UP) == action[8:]
    assert verb_rest(action, "mix") == action[4:]


@pytest.mark.parametrize("action", ACTIONS)
def test_is_focus_needs_the_space(action: str) -> None:
    assert is_focus(action) == action.startswith("focus on ")
    assert is_focus(action) == (verb_target(action, FOCUS) is not None)


def test_focus_and_teleport_actions() -> None:
    assert FOCUS == "focus on" and PICK_UP == "pick up" and TELEPORT == "teleport to"
    assert focus_on("red paint") == "focus on red paint"
    assert focus_on("seed in flower pot 1") == "focus on seed in flower pot 1"
    assert teleport_to("art studio") == "teleport to art studio"
    assert verb_target(focus_on(" x "), FOCUS) == " x "  # as written ...
    assert focus_target(focus_on(" x ")) == "x"  # ... where focus_target strips
    assert teleport_targets([teleport_to("kitchen"), focus_on("kitchen")]) == {"kitchen"}
    assert verb_target("focus on", FOCUS) is None and verb_rest("focus on", FOCUS) == ""


def test_feedback_phrases() -> None:
    assert AMBIGUOUS == "Ambiguous request"
    assert CRITIC_FAILURE_SIGNAL[:5] == CRITIC_REFUSALS[:5]
    assert set(CRITIC_FAILURE_SIGNAL) - set(CRITIC_REFUSALS) == {"not possible", "cannot"}
    assert all(p == p.lower() for p in (*CRITIC_REFUSALS, *CRITIC_FAILURE_SIGNAL))


def test_stated_focus_count() -> None:
    text = "Your task is to focus on the 4 life stages of the turtle, starting from earliest to latest."
    assert stated_focus_count(text) == 4
    assert stated_focus_count("FOCUS ON THE 3 LIFE STAGES of the wolf") == 3
    assert stated_focus_count("Your task is to boil water. First, focus on the substance.") is None


def test_instructed_focus_count() -> None:
    """Each sentence that says "focus on" is one focus; a run of conditional alternatives is one choice."""
    melt = (
        "Task Description:\nYour task is to measure the melting point of chocolate, which is located around "
        "the kitchen. First, focus on the thermometer. Next, focus on the chocolate. If the melting point of "
        "chocolate is above -10.0 degrees celsius, focus on the blue box. If the melting point of chocolate "
        "is below -10.0 degrees celsius, focus on the orange box. The boxes are located around the kitchen."
    )
    assert instructed_focus_count(melt) == 3
    genetics = (
        "Your task is to determine whether tall plant height is a dominant or recessive trait in the pea "
        "plant. If the trait is dominant, focus on the red box. If the trait is recessive, focus on the "
        "green box."
    )
    assert instructed_focus_count(genetics) == 1
    two_choices = "If hot, focus on the red box. If cold, focus on the blue box. Wait. If a, focus on x."
    assert instructed_focus_count(two_choices) == 2  # a sentence between ends the run of alternatives
    assert instructed_focus_count("Your task is to grow a plant. Water it.") == 0


def test_task_destinations() -> None:
    find = "Find a(n) animal. First, focus on the thing. Then, move it to the red box in the kitchen."
    assert task_destinations(find) == {"red box"}
    sort = (
        "First, focus on the aluminum foil. If it is electrically conductive, place it in the red box. "
        "If it is electrically nonconductive, place it in the green box."
    )
    assert task_destinations(sort) == {"red box", "green box"}
    # A box the task says to focus on is a focus target, not a destination.
    genetics = "If the trait is dominant, focus on the red box. If it is recessive, focus on the green box."
    assert task_destinations(genetics) == set()
    assert task_destinations("Your task is to boil water. First, focus on the substance.") == set()


def test_conditional_alternatives() -> None:
    """The judgement tasks' "If <condition>, <act on> the <target>." sentences, in ScienceWorld's wording."""
    melt = (
        "Task Description:\nYour task is to measure the melting point of chocolate. First, focus on the "
        "thermometer. If the melting point of chocolate is above -10.0 degrees celsius, focus on the blue "
        "box. If the melting point of chocolate is below -10.0 degrees celsius, focus on the orange box. "
        "The boxes are located around the kitchen."
    )
    assert conditional_alternatives(melt) == (
        Alternative("the melting point of chocolate is above -10.0 degrees celsius", "blue box", -10.0),
        Alternative("the melting point of chocolate is below -10.0 degrees celsius", "orange box", -10.0),
    )
    sort = (
        "First, focus on the aluminum foil. If it is electrically conductive, place it in the red box. "
        "If it is electrically nonconductive, place it in the green box."
    )
    assert [(a.target, a.number) for a in conditional_alternatives(sort)] == [
        ("red box", None),
        ("green box", None),
    ]
    assert conditional_alternatives("Your task is to boil water. First, focus on the substance.") == ()


def test_readings_and_device_states() -> None:
    assert thermometer_reading("the thermometer measures a temperature of -18 degrees celsius") == -18.0
    assert thermometer_reading("the thermometer measures a temperature of 56.5 degrees celsius") == 56.5
    assert thermometer_reading("You move the thermometer to the inventory.") is None
    look = (
        "This room is called the workshop. In it, you see: \n\ta electric buzzer, which is on\n\ta table. "
        "On the table is: a battery, a blue light bulb, which is off, a switch, which is off."
    )
    assert device_states(look) == {"on", "off"}
    assert device_states("a stove, which is turned off. a sink, which is turned on.") == {"off", "on"}
    assert device_states("This room is called the hallway.") == set()


def test_described_contents() -> None:
    """A plant's stage is in the look, under every name an action may give the plant; what it carries
    is cut off, and an item that says nothing beyond its name has no entry."""
    look = (
        "Here you see: \n\ta self watering flower pot 2 (containing a apricot tree in the reproducing stage. "
        "On the apricot tree you see: a flower. , soil)\n\ta self watering flower pot 8 (containing a dead "
        "apricot tree, soil, a substance called water)\n\ta self watering flower pot 9 (containing a "
        "apricot tree in the seedling stage, soil, a substance called water)\n"
        "\ta fire pit (containing nothing)"
    )
    described = described_contents(look)
    assert described["apricot tree in self watering flower pot 9"] == ("seedling",)
    assert described["tree in self watering flower pot 9"] == ("apricot", "seedling")
    assert described["apricot tree in self watering flower pot 2"] == ("reproducing",)
    assert described["apricot tree in self watering flower pot 8"] == ("dead",)
    assert not any(k.startswith(("soil in", "water in")) or "fire pit" in k for k in described)
    assert described_contents("This room is called the hallway.") == {}


def test_stagnation_patterns_come_from_vocab() -> None:
    from fastslow.memory.episode import NAVIGATION_PATTERN
    from fastslow.reflection.stagnation import PATTERNS

    assert PATTERNS is vocab.STAGNATION_PATTERNS
    assert vocab.NAVIGATION_LOOP == NAVIGATION_PATTERN == "navigation_loop"
    assert vocab.NAVIGATION_LOOP in vocab.STAGNATION_PATTERNS


_FOCUS_LITERAL = re.compile(r"[\"']focus on")
_PREFIX_SLICE = re.compile(r"\b(?:a|action|act|label)\[\d+:")


def test_focus_literals_and_prefix_slices_live_in_env() -> None:
    """Outside ``fastslow.env`` no "focus on" literal and no action-prefix slice: the helpers say it."""
    root = Path(fastslow.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] == "env":
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _FOCUS_LITERAL.search(line) or _PREFIX_SLICE.search(line):
                found.append(f"{rel}:{n}: {line.strip()}")
    assert not found, "\n".join(found)
