"""The power-component tasks' procedure: wire a power source to the device with two wires (category
knowledge, "renewable", and judgement steps; the fast pathway only; docs/swift.md, "Task procedures").

"Turn on the red light bulb [by powering it using a renewable power source]. First, focus on the red
light bulb. Then, create an electrical circuit that powers it on." The circuit is the same in every
variation: source anode -> wire 1 -> device cathode, source cathode -> wire 2 -> device anode. Which
source, and where it works (a solar panel or a wind generator outside), is train knowledge
(``procedures.tasks.known_sources``, built by ``fastslow data circuits``); a task without a kind takes the
battery. Read off the current look and inventory at every step:

1. go to the workshop (the parts are there), focus on the device (a bulb, a motor);
2. when the source is wired elsewhere, carry the device, the source and two wires there and put them
   down;
3. make each of the four connections not made yet, switch the source on if train paths do (a nuclear
   generator), then wait.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from fastslow.core.step import StepResult
from fastslow.env.scienceworld.procedures.tasks import PowerTask, known_sources
from fastslow.env.scienceworld.semantics import focus_on, object_names, room_called, teleport_to

PARTS_ROOM = "workshop"
DEFAULT_SOURCE = "battery"
WAIT = "wait1"


def circuit_source(task: PowerTask, look: str, inventory: str) -> str | None:
    """The power source to wire: of the kind the task asks for, in sight or carried; the battery when
    the task names no kind."""
    names = set(object_names(f"{look}\n{inventory}"))
    if task.kind is None:
        return DEFAULT_SOURCE if DEFAULT_SOURCE in names else None
    wanted = task.kind == "renewable"
    for source, entry in known_sources().items():
        if entry.get("renewable") is wanted and source in names:
            return source
    return None


def circuit_step(task: PowerTask, current: StepResult, steps: Sequence[tuple[str, str]]) -> str | None:
    """The next step of the procedure (module docstring), or None (Swift then acts)."""
    valid = current.valid_actions
    here = room_called(current.look)
    names = object_names(f"{current.look}\n{current.inventory}")
    if task.device not in names:
        return _first(valid, teleport_to(PARTS_ROOM)) if here != PARTS_ROOM else None
    focused = any(a == focus_on(task.device) and o.startswith("You focus") for a, o in steps)
    if not focused:
        return _first(valid, focus_on(task.device))
    source = circuit_source(task, current.look, current.inventory)
    if source is None:
        return None
    # "a black wireits terminal 1 is connected to: nothing." (ScienceWorld writes no space there)
    wires = sorted(set(_WIRE.findall(f"{current.look}\n{current.inventory}".lower())))[:2]
    if len(wires) < 2:
        return None
    parts = [task.device, source, *wires]
    room = str(known_sources().get(source, {}).get("room") or here)
    carried = current.inventory.lower()
    if room != here:
        for part in parts:
            if part not in carried:
                return _first(valid, f"pick up {part}")
        return _first(valid, teleport_to(room))
    for part in parts:
        if part in carried:
            # the valid list may call a part by its last word ("put down generator")
            for name in dict.fromkeys((part, part.split()[-1])):
                drop = _first(valid, f"put down {name}") or _first(valid, f"drop {name}")
                if drop is not None:
                    return drop
            return None
    made = _connections(steps)
    first, second = wires
    for a, b in (
        ((source, "anode"), (first, "terminal 1")),
        ((source, "cathode"), (second, "terminal 1")),
        ((first, "terminal 2"), (task.device, "cathode")),
        ((second, "terminal 2"), (task.device, "anode")),
    ):
        if frozenset((a, b)) not in made:
            return _connect(valid, a, b)
    switched = any(a == f"activate {source}" and "activated" in o for a, o in steps)
    if known_sources().get(source, {}).get("activate") and not switched:
        return _first(valid, f"activate {source}")
    return WAIT


_WIRE = re.compile(r"\ban? ([a-z]+ wire)(?![a-z ]*terminal [12] on)")
_CONNECTED = re.compile(r"^([a-z0-9 ]+?) on ([a-z ]+?) is now connected to ([a-z0-9 ]+?) on ([a-z ]+?)\.?$")


def _connections(steps: Sequence[tuple[str, str]]) -> set[frozenset[tuple[str, str]]]:
    """The (object, terminal) pairs the episode connected ("anode on battery is now connected to
    terminal 1 on black wire")."""
    made = set()
    for action, observation in steps:
        found = _CONNECTED.match(observation.strip().lower()) if action.startswith("connect ") else None
        if found is not None:
            t1, o1, t2, o2 = found.groups()
            made.add(frozenset(((o1, t1), (o2, t2))))
    return made


def _connect(valid: Sequence[str], a: tuple[str, str], b: tuple[str, str]) -> str | None:
    """The valid spelling of connecting terminal ``a`` to ``b`` ("battery anode" or "anode in battery",
    either way round)."""

    def spellings(end: tuple[str, str]) -> list[str]:
        thing, terminal = end
        names = dict.fromkeys((thing, thing.split()[-1]))  # "anode in generator" for a wind generator
        return [form for name in names for form in (f"{name} {terminal}", f"{terminal} in {name}")]

    for x in spellings(a):
        for y in spellings(b):
            for action in (f"connect {x} to {y}", f"connect {y} to {x}"):
                if action in valid:
                    return action
    return None


def _first(valid: Sequence[str], action: str) -> str | None:
    return action if action in valid else None
