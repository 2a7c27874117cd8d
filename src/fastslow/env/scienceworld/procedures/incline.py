"""The inclined-plane tasks' procedure: time a block down each plane, focus on the one the task asks
for (a judgement step: "which inclined plane is steeper/slower"; the fast pathway only; docs/swift.md,
"Task procedures").

"Determine which of the two inclined planes (C, B) has the shallowest angle" (or the steepest, the
most or the least friction): imitation learns the experiment but cannot learn which plane to focus
on, since that depends on what this episode measures. The experiment, as the gold paths run it: pick up
the stopwatch, move the block onto a plane, start the stopwatch, look at the plane until the block is
at the bottom, stop and read the stopwatch; then the other plane. The block that is slower slid on
the shallower plane (or the one with more friction). The measurement is the block's position at each
look ("approximately 23% down the plane"): the second trial runs until, look for look, one block is
``MARGIN`` points ahead of the other (a high-friction plane would take longer than the step limit to
the bottom); the stopwatch is read too, as the task's score counts it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from fastslow.core.step import StepResult
from fastslow.env.scienceworld.procedures.tasks import InclineTask
from fastslow.env.scienceworld.semantics import focus_on, room_called, teleport_to, verb_rest

LAB = "workshop"
"""Where the train and dev variations keep the planes."""
STOPWATCH = "stopwatch"
AT_BOTTOM = "at the bottom of the plane"


def plane_referent(name: str, valid_actions: Sequence[str]) -> str | None:
    """How the valid actions call the plane the task names ("b" -> "inclined plane b", "cloth" ->
    "inclined plane with a cloth surface")."""
    for action in valid_actions:
        if action.startswith("look at inclined plane"):
            plane = verb_rest(action, "look at")
            rest = plane[len("inclined plane") :].strip()
            if rest == name or rest == f"with a {name} surface":
                return plane
    return None


SLIDERS = ("block", "brick")
"""What the tasks slide down the planes (a wood or steel block, a brick)."""
MARGIN = 3.0
"""Percentage points one block must be ahead of the other, look for look, to decide (the positions
are "approximately X% down the plane")."""
_DOWN = re.compile(r"approximately (\d+(?:\.\d+)?)% down the plane")


def _slides(action: str) -> str | None:
    """The plane a "move <slider> to <plane>" action puts the slider on, else None."""
    if not action.startswith("move ") or " to inclined plane" not in action:
        return None
    moved, plane = verb_rest(action, "move").rsplit(" to ", 1)
    return plane if moved.split()[-1] in SLIDERS else None


def _trials(steps: Sequence[tuple[str, str]]) -> list[tuple[str, list[float]]]:
    """Each trial in order: the plane and the slider's position at each look at it since it was put
    there (percent down; 101 once seen at the bottom)."""
    trials: list[tuple[str, list[float]]] = []
    for action, observation in steps:
        plane = _slides(action)
        if plane is not None and observation.startswith("You move"):
            trials.append((plane, []))
        elif trials and action == f"look at {trials[-1][0]}":
            down = _DOWN.search(observation)
            if AT_BOTTOM in observation:
                trials[-1][1].append(101.0)
            elif down is not None:
                trials[-1][1].append(float(down.group(1)))
    return trials


def _faster(first: Sequence[float], second: Sequence[float]) -> int | None:
    """0 if the first trial's slider went down faster, 1 if the second's, None while undecided: look
    for look, one is ``MARGIN`` ahead, or reached the bottom sooner."""
    for k in range(min(len(first), len(second))):
        a, b = first[k], second[k]
        if abs(a - b) >= MARGIN or (max(a, b) > 100 and a != b):
            return 0 if a > b else 1
    if first and second and first[-1] > 100 and second[-1] > 100 and len(first) != len(second):
        return 0 if len(first) < len(second) else 1
    if len(second) > len(first) and first and first[-1] > 100:
        return 0  # the first reached the bottom in fewer looks than the second has taken
    return None


def incline_choice(task: InclineTask, steps: Sequence[tuple[str, str]], valid: Sequence[str]) -> str | None:
    """The plane (as the valid actions call it) the trials decide for, else None."""
    planes = [plane_referent(name, valid) for name in task.planes]
    if None in planes:
        return None
    last = {plane: positions for plane, positions in _trials(steps)}
    a, b = planes[0] or "", planes[1] or ""
    if a not in last or b not in last:
        return None
    order = [plane for plane, _ in _trials(steps) if plane in (a, b)]
    first, second = (a, b) if order.index(a) < order.index(b) else (b, a)
    faster = _faster(last[first], last[second])
    if faster is None:
        return None
    fast, slow = (first, second) if faster == 0 else (second, first)
    return slow if task.slower else fast


def incline_step(task: InclineTask, current: StepResult, steps: Sequence[tuple[str, str]]) -> str | None:
    """The experiment's next step (module docstring), or None (Swift then acts)."""
    valid = current.valid_actions
    planes = [plane_referent(name, valid) for name in task.planes]
    if None in planes:
        here = room_called(current.look)
        if here != LAB and teleport_to(LAB) in valid:
            return teleport_to(LAB)
        return None
    inventory = current.inventory.lower()
    if STOPWATCH not in inventory:
        return _first(valid, f"pick up {STOPWATCH}")
    running = f"{STOPWATCH}, which is activated" in inventory
    trials = _trials(steps)
    chosen = incline_choice(task, steps, valid)
    finished = bool(trials) and (chosen is not None or (bool(trials[-1][1]) and trials[-1][1][-1] > 100))
    if finished and running:
        return _stopwatch(valid, "deactivate")
    if finished and not _read_since_trial(steps):
        reading = _stopwatch(valid, "examine") or _stopwatch(valid, "look at")
        if reading is not None:
            return reading
    if chosen is not None:
        return _first(valid, focus_on(chosen))
    tried = {plane for plane, _ in trials}
    on = trials[-1][0] if trials else None
    todo = [p for p in planes if p and (p not in tried or (p == on and not finished))]
    if not todo:
        return None  # both trials ran and did not decide
    plane = todo[0]
    if on != plane:
        moves = [x for x in valid if _slides(x) == plane]
        return min(moves, key=len, default=None)
    if not running and not trials[-1][1]:
        return _stopwatch(valid, "activate")
    # looking changes neither the look nor the inventory: the no-effect rule does not apply to it
    return _first(valid, f"look at {plane}")


def _stopwatch(valid: Sequence[str], verb: str) -> str | None:
    """``verb`` on the carried stopwatch, as the valid actions spell it."""
    return _first(valid, f"{verb} {STOPWATCH} in inventory") or _first(valid, f"{verb} {STOPWATCH}")


def _read_since_trial(steps: Sequence[tuple[str, str]]) -> bool:
    for action, _ in reversed(steps):
        if action.startswith((f"examine {STOPWATCH}", f"look at {STOPWATCH}")):
            return True
        if _slides(action) is not None:
            return False
    return False


def _first(valid: Sequence[str], action: str) -> str | None:
    return action if action in valid else None
