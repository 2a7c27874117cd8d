"""The paint tasks' procedure: mix a secondary colour, and a tertiary from it (knowledge for unseen
objects and judgement steps; the fast pathway only; docs/swift.md, "Task procedures").

Imitation learns the paint route of the train variations poorly (every variation places the cups and
the mixing bowl differently) and cannot know a colour no train variation mixed (violet). The route is
the same for every colour, so it is written once here, read off the current look at every step:

1. go to the art studio (or, without one, a room not yet seen), where the paint cups are;
2. pour each colour the next colour to make needs (``procedures.tasks.paint_recipe``: two primaries for a
   secondary, the secondary and a primary for a tertiary) into one mixing container (a container that
   is not a paint cup and holds nothing else), opening a closed cupboard when a paint is not in sight;
3. mix it, and focus on the colour made ("When you are part-way done, focus on the intermediate
   (secondary color) paint"; then the tertiary).

Each step is a valid action or None (Swift then acts); ``fresh`` says whether an action is worth trying
now (the no-effect rule, kept by ``logic.TaskLogic``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from fastslow.core.step import StepResult
from fastslow.env.scienceworld.procedures.tasks import PaintTask, open_closed, paint_recipe
from fastslow.env.scienceworld.semantics import (
    FOCUS,
    focus_head,
    focus_on,
    normalize,
    room_called,
    teleport_targets,
    teleport_to,
    verb_target,
)

STUDIO = "art studio"
_CONTAINER = re.compile(r"(?:^|[\t:,] ?)(?:a |an )?([a-z][a-z ]*?) \(containing ([^()]*)\)")


def paint_step(
    task: PaintTask,
    current: StepResult,
    steps: Sequence[tuple[str, str]],
    focused: Sequence[str],
    rooms: Mapping[str, str],
    fresh: Callable[[str], bool],
) -> str | None:
    """The next step of the procedure (module docstring). ``steps``: the episode's executed (action,
    observation); ``focused``: what ScienceWorld confirmed each focus landed on; ``rooms``: the last
    look of every room seen."""
    valid = [a for a in current.valid_actions if fresh(a)]
    done = {normalize(f) for f in focused}
    todo = [c for c in task.colours if f"{c} paint" not in done]
    if not todo:
        return None
    colour = todo[0]
    containers = _containers(current.look)
    here = room_called(current.look)
    if not any(c.contents for c in containers):  # no paint in sight
        if here != STUDIO and teleport_to(STUDIO) in valid:
            return teleport_to(STUDIO)
        unseen = sorted(r for r in teleport_targets(valid) if r not in rooms and r != here)
        return open_closed(current.look, valid) or (teleport_to(unseen[0]) if unseen else None)
    mixer = _mixer(containers, _poured(steps))
    if mixer is not None and mixer.contents == [f"{colour} paint"]:
        # ScienceWorld lists the mixture as "paint in bowl"; its own name works too, listed or not
        foci = [
            a
            for a in valid
            if (target := verb_target(a, FOCUS)) is not None
            and (
                focus_head(target) == f"{colour} paint"
                or ((holder := _mixture_holder(target)) is not None and mixer.called(holder, here))
            )
        ]
        return min(foci, key=len, default=focus_on(f"{colour} paint"))
    needed = paint_recipe(colour)
    if mixer is None or not needed:
        return None
    missing = [c for c in needed if f"{c} paint" not in mixer.contents]
    if not missing:
        mixes = [
            a for a in valid if (mixed := verb_target(a, "mix")) is not None and mixer.called(mixed, here)
        ]
        return min(mixes, key=len, default=None)
    for part in missing:
        pours = [
            a
            for a in valid
            if a.startswith("pour ")
            and " into " in a
            and f"containing {part} paint" in a.split(" into ", 1)[0]
            and mixer.called(a.split(" into ", 1)[1], here)
        ]
        if pours:
            return min(pours, key=len)
    return open_closed(current.look, valid)  # a paint not in sight: in a closed cupboard


def _mixture_holder(target: str) -> str | None:
    """The container of a focus target that names a mixture as ScienceWorld lists it ("paint in bowl" ->
    "bowl", "paint on ..." alike), as written; None for any other target."""
    for mixture in ("paint in ", "paint on "):
        if target.startswith(mixture):
            return target.removeprefix(mixture)
    return None


_MADE = re.compile(r"mix to produce ([a-z]+(?:-[a-z]+)?) paint")
_POUR_SOURCE = re.compile(r"containing ([a-z]+(?:-[a-z]+)?) paint")
_POURED_PAINT = re.compile(r"^You pour the ([a-z]+(?:-[a-z]+)?) paint into")
_REFERENT = re.compile(r"^(?:([a-z ]*?) )?containing (.+?)(?: (?:in|on) ([a-z ]+))?$")


@dataclass(frozen=True)
class Container:
    """A container the look lists: its name, contents (normalized) and what it stands on ('' for the
    room's floor)."""

    name: str
    contents: list[str]
    holder: str

    def called(self, referent: str, room: str) -> bool:
        """Whether one of ScienceWorld's referents names this container: its name ("jug"), or "<noun>
        containing <contents joined by 'and'>" with the holder or the room as location ("cup containing
        red paint in table", "cup containing red paint and yellow paint")."""
        ref = referent.strip()
        if ref in (self.name, f"{self.name} in {self.holder}", f"{self.name} on {self.holder}"):
            return True
        match = _REFERENT.match(ref)
        if match is None:
            return False
        noun, what, where = match.groups()
        if what != (" and ".join(self.contents) or "nothing"):
            return False
        if noun and noun not in (self.name, self.name.split()[-1]):
            return False
        return where is None or where == (self.holder or room)


def _containers(look: str) -> list[Container]:
    """Every "<name> (containing <contents>)" the look lists, with what it stands on."""
    out = []
    for line in look.lower().splitlines():
        holder = ""
        on = re.match(r"\s*(?:a |an )?([a-z ]+?)\. (?:on|in) the [a-z ]+? is: ", line)
        if on is not None:
            holder = on.group(1).strip()
        for name, contents in _CONTAINER.findall(line):
            items = [normalize(i) for i in contents.split(",") if normalize(i) and normalize(i) != "nothing"]
            out.append(Container(focus_head(name), items, holder))
    return out


def _poured(steps: Sequence[tuple[str, str]]) -> list[str]:
    """What the mixing container holds by the episode's pours and mixes: the colours poured since the
    last mix, after the colour that mix made ("Red and blue paint mix to produce violet paint.")."""
    held: list[str] = []
    for action, observation in steps:
        made = _MADE.search(observation)
        if made is not None:
            held = [f"{made.group(1)} paint"]
        elif action.startswith("pour ") and observation.startswith("You pour"):
            poured = _POUR_SOURCE.search(action.split(" into ", 1)[0]) or _POURED_PAINT.search(observation)
            if poured is not None and f"{poured.group(1)} paint" not in held:
                held.append(f"{poured.group(1)} paint")
    return held


def _mixer(containers: Sequence[Container], held: Sequence[str]) -> Container | None:
    """The mixing container: the one holding what the episode put into it (``_poured``), else, nothing
    put in yet, an empty one."""
    for container in containers:
        if held and sorted(container.contents) == sorted(held):
            return container
    if held:
        return None
    return next((c for c in containers if not c.contents), None)


def _first(valid: Sequence[str], action: str) -> str | None:
    return action if action in valid else None
