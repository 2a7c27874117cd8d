"""The matter tasks' procedure: boil, melt, freeze or change the state of a substance (knowledge for
unseen objects and judgement steps; the fast pathway only; docs/swift.md, "Task procedures").

Training cannot carry the water route of the train variations (fill the pot at the kitchen sink, heat
it on the stove) over to a substance Swift never saw (lead in the workshop, to be melted in the
foundry's blast furnace). The route itself is the same for every substance, so it is written once
here, read off the current look and inventory at every step (nothing is remembered but what the
episode showed):

1. **Find and focus** ("First, focus on the substance."): focus on the subject when a valid focus names
   it; else open the closed containers of the room, then teleport to a room not yet seen (the kitchen
   and the workshop first: train and dev variations keep their substances there).
2. **Pot**: put the subject into a metal pot (ScienceWorld keeps one in the kitchen cupboard), carried
   along, so that a liquid can be moved again.
3. **Heat or cool**: heat on the kitchen stove, then in the oven, then in the foundry's blast furnace,
   each next one when the last is broken or has not changed the subject's state for ``PATIENCE`` steps
   (the furnace alone skips states: ice cream turns gaseous in one tick, and boiling scores the liquid
   on the way; it melts the steel pot too); to freeze, heat a solid
   until it is seen liquid, then cool it in the coldest freezer seen; activate the device, then wait
   until ScienceWorld ends the task.

Each step is a valid action or None (Swift then acts); ``fresh`` says whether an action is worth
trying now (the no-effect rule, kept by ``logic.TaskLogic``: it did nothing in this very state before,
or Gate-1 refused it there).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from fastslow.core.step import StepResult
from fastslow.env.scienceworld.procedures.tasks import (
    MatterChange,
    known_plain_states,
    names_subject,
    object_line,
    open_closed,
    subject_names,
    substance_state,
)
from fastslow.env.scienceworld.semantics import (
    FOCUS,
    PICK_UP,
    focus_head,
    focus_target,
    resolve_focus_target,
    room_called,
    teleport_targets,
    teleport_to,
    verb_rest,
    verb_target,
)

POT = "metal pot"
POT_ROOM = "kitchen"
STOVE = ("stove", "kitchen")
HEATERS = (STOVE, ("oven", "kitchen"), ("blast furnace", "foundry"))
"""Heat sources, mildest first, with the room ScienceWorld keeps each in."""
PATIENCE = 10
"""Steps in a heater without a change of the subject's state before it goes to the next one."""
COOLERS = ("ultra low temperature freezer", "freezer")
"""Cold places, coldest first (the freezer is in the kitchen; the ultra low one where a look showed it)."""
SEARCH_FIRST = ("kitchen", "workshop")
"""Rooms searched first for the subject (where train and dev variations keep their substances)."""
HEAT_WAIT, COOL_WAIT = "wait1", "wait"
"""Heating changes a state within a few ticks; cooling takes longer (ten ticks a step)."""


def matter_step(
    task: MatterChange,
    current: StepResult,
    steps: Sequence[tuple[str, str]],
    looks: Sequence[str],
    focused: Sequence[str],
    rooms: Mapping[str, str],
    fresh: Callable[[str], bool],
) -> str | None:
    """The next step of the procedure (module docstring). ``steps``: the episode's executed (action,
    observation); ``looks``: the look after each of them; ``focused``: what ScienceWorld confirmed
    each focus landed on ("water" for "substance in fountain"); ``rooms``: the last look of every room
    seen (room name -> look)."""
    valid = [a for a in current.valid_actions if fresh(a)]
    here = room_called(current.look)
    if not any(names_subject(head, task.subject) for head in focused):
        return _find_and_focus(task, current, valid, here, rooms)
    cool = _cool(task, current, steps)
    device, device_room = _device(cool, task, current, steps, looks, rooms)
    holder = _holder(task, current.look)
    if holder == device:
        line = object_line(current.look, device)
        activate = _device_action(valid, "activate", device) if "turned off" in line else None
        return activate or (COOL_WAIT if cool else HEAT_WAIT)
    if subject_names(_pot_text(current), task.subject):
        if not _has_pot(current):  # the pot with the subject is in the room (the wrong device, put down)
            return _first(valid, f"pick up {POT}")
        if here != device_room:
            return _teleport(device_room, valid)
        line = object_line(current.look, device)
        opener = _device_action(valid, "open", device) if "door is closed" in line else None
        return opener or _device_action(valid, f"move {POT} to", device)
    if _has_pot(current):
        move = _into_pot(task, valid)
        if move is not None:
            return move
        if subject_names(current.look, task.subject):
            return None  # here, but neither moved nor poured (water in a fountain): Swift's own route
        seen = [room_called(look) for look in reversed(looks) if subject_names(look, task.subject)]
        return _teleport(seen[0], valid) if seen else None
    if not subject_names(current.inventory, task.subject):
        grab = _pick_up(task, valid)  # take a solid along to the pot
        if grab is not None:
            return grab
    return _pot_step(current, valid, here)


def _find_and_focus(
    task: MatterChange, current: StepResult, valid: Sequence[str], here: str, rooms: Mapping[str, str]
) -> str | None:
    foci = []
    # The valid actions name what a closed fridge holds too, but focusing on it is an unknown action:
    # only a subject the look or inventory shows is focused on.
    visible = bool(subject_names(f"{current.look}\n{current.inventory}", task.subject))
    for action in valid if visible else ():
        target = focus_target(action)
        if target is None:
            continue
        resolved = resolve_focus_target(target, current.look, current.inventory)
        if names_subject(resolved, task.subject):
            foci.append(action)
    if foci:  # the plain name first (``focus on lead``, not ``focus on lead in metal pot``)
        return min(
            foci, key=lambda a: (not names_subject(focus_head(verb_rest(a, FOCUS)), task.subject), len(a))
        )
    opener = open_closed(current.look, valid)
    if opener is not None:
        return opener
    unseen = [r for r in teleport_targets(valid) if r not in rooms and r != here]
    unseen.sort(key=lambda r: (r not in SEARCH_FIRST, SEARCH_FIRST.index(r) if r in SEARCH_FIRST else 0, r))
    return teleport_to(unseen[0]) if unseen else None


def _cool(task: MatterChange, current: StepResult, steps: Sequence[tuple[str, str]]) -> bool:
    """Whether the subject is to be cooled now: to freeze, once it was seen liquid or gas (a solid is
    melted first); to melt, while it is liquid (water is frozen first). Else it is heated."""
    plain = known_plain_states().get(task.subject)

    def states(text: str) -> set[str | None]:
        named = (substance_state(name, task.subject) for name in subject_names(text, task.subject))
        return {plain if state == "bare" else state for state in named}

    if task.goal == "solid":
        texts = [current.look, current.inventory, *(obs for _, obs in steps)]
        return any(states(text) & {"liquid", "gas"} for text in texts)
    if task.goal == "liquid":
        return states(f"{current.look}\n{current.inventory}") == {"liquid"}
    return False


def _device(
    cool: bool,
    task: MatterChange,
    current: StepResult,
    steps: Sequence[tuple[str, str]],
    looks: Sequence[str],
    rooms: Mapping[str, str],
) -> tuple[str, str]:
    """The device that heats (or cools) the subject and the room it is in."""
    seen = {**rooms, room_called(current.look): current.look}
    if cool:
        for cooler in COOLERS:
            for room, look in seen.items():
                if object_line(look, cooler):
                    return cooler, room
        return COOLERS[-1], POT_ROOM
    teleports = teleport_targets(current.valid_actions) | {room_called(current.look)}
    usable = [heater for heater in HEATERS if heater[1] in teleports] or [STOVE]
    for heater, room in usable[:-1]:
        broken = any(a == f"activate {heater}" and "broken" in o for a, o in steps)
        if not broken and _steps_in(task, looks, heater) < PATIENCE:
            return heater, room
    return usable[-1]  # the hottest: the blast furnace


def _steps_in(task: MatterChange, looks: Sequence[str], device: str) -> int:
    """The most steps in a row the subject spent in ``device`` under one name (one state); ``looks``:
    the look after each step, so each step counts once."""
    best = run = 0
    last = ""
    for look in looks:
        line = object_line(look, device)
        names = subject_names(line.split(" is: ", 1)[-1], task.subject) if line else []
        name = names[0] if names else ""
        run = run + 1 if name and name == last else (1 if name else 0)
        last = name
        best = max(best, run)
    return best


def _holder(task: MatterChange, look: str) -> str | None:
    """The device (heater or cooler) whose look line shows the subject, if any."""
    for device in (*(h for h, _ in HEATERS), *COOLERS):
        line = object_line(look, device)
        if line and subject_names(line.split(" is: ", 1)[-1], task.subject):
            return device
    return None


def _pot_text(current: StepResult) -> str:
    """The pot's look or inventory line (its contents), wherever it is."""
    for text in (current.inventory, current.look):
        for line in text.lower().splitlines():
            if f"{POT} (containing" in line:
                return line.split(f"{POT} (containing", 1)[1].split(")", 1)[0]
    return ""


def _has_pot(current: StepResult) -> bool:
    return POT in current.inventory.lower()


def _pot_step(current: StepResult, valid: Sequence[str], here: str) -> str | None:
    """Towards a metal pot in the inventory: pick it up, open what may hold it, or go to the kitchen."""
    grab = _first(valid, f"pick up {POT}")
    if grab is not None:
        return grab
    if here == POT_ROOM:
        return open_closed(current.look, valid)
    return _teleport(POT_ROOM, valid)


def _into_pot(task: MatterChange, valid: Sequence[str]) -> str | None:
    """Put the subject into the carried pot: move it (a solid), or pour what holds it (a liquid: "pour
    cup containing orange juice into metal pot")."""
    for action in valid:
        moved = verb_rest(action, "move")[: -len(f" to {POT}")]
        if (
            action.startswith("move ")
            and action.endswith(f" to {POT}")
            and names_subject(focus_head(moved), task.subject)
        ):
            return action
    for action in valid:
        if action.startswith("pour ") and action.endswith(f" into {POT}"):
            source = verb_rest(action, "pour")[: -len(f" into {POT}")]
            if POT not in source and subject_names(source.replace(" containing ", ", "), task.subject):
                return action
    return None


def _pick_up(task: MatterChange, valid: Sequence[str]) -> str | None:
    picks = [
        a
        for a in valid
        if (held := verb_target(a, PICK_UP)) is not None and names_subject(focus_head(held), task.subject)
    ]
    return min(picks, key=len, default=None)


def _device_action(valid: Sequence[str], verb: str, device: str) -> str | None:
    """``verb device`` as the valid actions spell it: by its name, or by its last word as ScienceWorld
    refers to some devices ("open freezer" opens the ultra low temperature freezer)."""
    return _first(valid, f"{verb} {device}") or _first(valid, f"{verb} {device.split()[-1]}")


def _teleport(room: str, valid: Sequence[str]) -> str | None:
    return _first(valid, teleport_to(room))


def _first(valid: Sequence[str], action: str) -> str | None:
    return action if action in valid else None
