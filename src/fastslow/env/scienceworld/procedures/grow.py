"""The grow-plant task's procedure: sow a seed, focus on it, keep its pot watered (the fast pathway
only; docs/swift.md, "Task procedures").

"Grow a apple plant from seed. Seeds can be found in the kitchen. First, focus on a seed. Then, make
changes to the environment that grow the plant until it reaches the reproduction life stage." Imitation
learns the start of the route but loses the long tail: growing takes tens of ticks, and a pot's water
is used up on the way. The route, read off the current look and inventory at every step:

1. take the seed jar (or a seed out of it) from the room the task names (opening what is closed there
   if it is not in sight);
2. in the greenhouse, move a seed of the plant into a flower pot of soil with nothing growing in it,
   and focus on that seed;
3. whenever the pot holds no water, fill the jug at the sink and pour it into the pot; otherwise
   turn the sink off and wait, until ScienceWorld ends the task.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from fastslow.core.step import StepResult
from fastslow.env.scienceworld.procedures.tasks import GrowTask, object_line, open_closed
from fastslow.env.scienceworld.semantics import focus_on, room_called, teleport_to

GREENHOUSE = "greenhouse"
JAR, JUG, SINK = "seed jar", "jug", "sink"
WAIT = "wait1"
_POT = re.compile(r"\b(flower pot \d+) \(containing ([^()]*)\)")


def grow_step(
    task: GrowTask, current: StepResult, focused: Sequence[str], fresh: Callable[[str], bool]
) -> str | None:
    """The next step of the procedure (module docstring), or None (Swift then acts). ``focused``: what
    ScienceWorld confirmed each focus landed on."""
    valid = [a for a in current.valid_actions if fresh(a)] + [WAIT]
    here = room_called(current.look)
    seed = f"{task.plant} seed"
    pots = {name: contents for name, contents in _POT.findall(current.look.lower())}
    sown = [name for name, contents in pots.items() if task.plant in contents]
    if not sown:
        if JAR not in current.inventory.lower() and seed not in current.inventory.lower():
            if here != task.seeds_in:
                return _first(valid, teleport_to(task.seeds_in))
            # the jar, or where the valid list names it only by its material ("ceramic cup"), a seed
            # out of it
            grabs = [a for a in valid if a.startswith("pick up ") and seed in a and JAR in a]
            return (
                _first(valid, f"pick up {JAR}")
                or min(grabs, key=len, default=None)
                or open_closed(current.look, valid)
            )
        if here != GREENHOUSE:
            return _first(valid, teleport_to(GREENHOUSE))
        empty = [name for name, contents in pots.items() if "soil" in contents and "seed" not in contents]
        moves = [
            a for a in valid if a.startswith(f"move {seed}") and any(a.endswith(f" to {p}") for p in empty)
        ]
        return min(moves, key=len, default=None)
    pot = sown[0]
    if not any(seed in f for f in focused):
        # the seed in its pot, or by its name alone once it is the only one in sight
        return _first(valid, focus_on(f"{seed} in {pot}")) or (
            _first(valid, focus_on(seed)) if current.look.lower().count(seed) == 1 else None
        )
    sink = object_line(current.look, SINK)
    running = "turned on" in sink
    if "water" not in pots[pot]:
        jug = object_line(current.look, JUG) or sink
        if f"{JUG} (containing" in jug and "water" in jug.split(f"{JUG} (containing", 1)[1].split(")", 1)[0]:
            return _first(valid, f"pour {JUG} into {pot}")
        if not running:
            return _first(valid, f"activate {SINK}")
        if JUG not in sink:
            return _first(valid, f"move {JUG} to {SINK}")
        return WAIT
    if running:
        return _first(valid, f"deactivate {SINK}")
    return WAIT


def _first(valid: Sequence[str], action: str) -> str | None:
    return action if action in valid else None
