"""The content of Sage's prompts as the paper's authors build it on ScienceWorld (paper §3, Sage;
``controller.sage.prompt: authors``), part of ScienceWorld's ``AuthorsProfile`` (``authors``).

The paper's numbers come from its authors' code (a SwiftSage v1 fork: ``compose_prompt_to_plan`` and
``compose_prompt_to_nextactions`` in their ``eval_utils.py``), which decides what Sage reads: which
history steps, in which form, which rooms' looks, which failures. This module computes that content from
our ``Trajectory``; the wording around it is ours (``prompts/sage_authors_*.j2``). Every quirk kept on
purpose is marked "Faithful:". docs/fidelity.md (rows P1-P11) lists each piece and its test.

The authors keep parallel lists over the episode: actions seeded with "look around", observations seeded
with "N/A", and the room after each step seeded with the first room. ``_history`` rebuilds them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fastslow.core.authors import GroundEntry, HistoryGrammarError, PlanEntry
from fastslow.core.trajectory import Trajectory, Turn
from fastslow.env.scienceworld import valid
from fastslow.env.scienceworld.func_actions import to_func
from fastslow.env.scienceworld.semantics import FOCUS

_MOVED = ("You move to the", "You go to the", "You teleport to the")
_ALSO_SEE = "You also see:"
_IN_IT = "In it, you see:"
REPEAT_WINDOW = 5
"""Steps before and after an action the authors look at to call it a repeat (both histories)."""

ACTION_TYPES: tuple[tuple[str, str, str], ...] = (
    ("WAIT", "WAIT()", "let time pass, e.g. while something on the stove heats up"),
    ("TELEPORT", "TELEPORT(room)", "go straight to a room, e.g. TELEPORT(kitchen)"),
    ("READ", "READ(object)", "read something written, such as a recipe or a book"),
    ("PICK", "PICK(object)", "take an object into the inventory"),
    ("OPEN", "OPEN(object)", "open a container or a door before looking or putting things in it"),
    ("ACTIVATE", "ACTIVATE(object)", "switch a device on (a sink, a stove) so it can be used"),
    ("DEACTIVATE", "DEACTIVATE(object)", "switch a device off"),
    ("EXAMINE", "EXAMINE(object)", "look at an object closely (not at a room)"),
    ("CONNECT", "CONNECT(object A, object B)", "connect two objects, e.g. wire terminals"),
    ("MOVE", "MOVE(object, place)", "put an object somewhere"),
    ("USE", "USE(object A, object B)", "use A on B, e.g. USE(thermometer in inventory, water)"),
    ("MIX", "MIX(container)", "mix what a container holds"),
    ("DUNK", "DUNK(object A, object B)", "dunk A into B"),
    ("DROP", "DROP(object A, object B)", "drop A into B"),
    ("POUR", "POUR(object A, object B)", "pour A into the container B"),
    ("FOCUS", "FOCUS(object)", f"{FOCUS} an object the task description asks for"),
)
"""The action types the grounding prompt may list (the authors' list: LOOK, SEE, GO and the door
actions are never offered), in their order: (name, signature, our description)."""


@dataclass(frozen=True)
class Step:
    """One entry of the authors' parallel history lists."""

    action: str
    observation: str
    room: str
    """The room after the step (the authors' ``recent_locs``)."""


def _history(traj: Trajectory) -> list[Step]:
    seed = Step("look around", "N/A", traj.places[0] if traj.places else "")
    return [
        seed,
        *(Step(t.action, t.observation, r) for t, r in zip(traj.turns, _turn_places(traj), strict=True)),
    ]


def _turn_places(traj: Trajectory) -> list[str]:
    """Where each turn ended ('' for turns recorded without ``Trajectory.record``)."""
    places = traj.places[1 : len(traj.turns) + 1]
    return places + [""] * (len(traj.turns) - len(places))


def clean_look(look: str, lite: bool) -> list[str]:
    """A look as the authors shorten it: the text before "You also see:", without the agent and the air
    (Faithful: any line containing "the agent" or " air"), "substance called " removed. Full: every
    line, the room's header line ("This room is called ... In it, you see:") included. Lite: the header
    dropped and each line cut at its first character that is neither a letter nor a space (so
    "a table. On the table is: ..." becomes "a table")."""
    if _ALSO_SEE in look:
        look = look[: look.index(_ALSO_SEE)]
    out: list[str] = []
    for line in look.splitlines():
        if not line.strip():
            continue
        if _IN_IT in line:
            if not lite:
                out.append(line.strip())
            continue
        if "the agent" in line or " air" in line:
            continue
        line = line.replace("substance called ", " ").strip()
        if lite:
            cut = next((i for i, c in enumerate(line) if not c.isalpha() and c != " "), -1)
            if cut > 0:
                line = line[:cut].strip()
        out.append(line)
    return out


def _plan_key(entry: PlanEntry, lite: bool) -> str:
    """The authors' text of an entry: their duplicate and move tests read it."""
    if entry.repeats:
        return f"Repeat the above {entry.repeats} times."
    if entry.moved:
        return entry.observation
    if lite:
        return f"In {entry.room}, {entry.observation}"
    return f"In {entry.room}, {entry.action} --> {entry.observation}"


def plan_history(traj: Trajectory, lite: bool) -> list[PlanEntry]:
    """The planning prompt's history (the authors' ``compose_prompt_to_plan``), oldest first.

    Every executed step except: "The door is already open."; in lite form, a step whose room and
    observation are already listed (Faithful: in full form the test never matches, since full entries
    carry the action); a step whose action also occurs in the five steps before it and the five after it
    (counted, and "repeated N times" follows the next entry kept). Moves between rooms ("You move/go/
    teleport to the ...", written as moves) are their observation alone, and of consecutive moves only the
    last is kept. "a substance called" reads "there is a". Lite: no actions (the caller numbers the
    entries, then keeps the last ones).
    Faithful: the five steps before are a Python slice that starts at a negative index for the first
    steps, which then reads from the end of the list (usually nothing)."""
    steps = _history(traj)
    actions = [s.action for s in steps]
    kept: list[PlanEntry] = []
    keys: list[str] = []
    repeat = 0
    for i, step in enumerate(steps[1:]):
        obs = step.observation
        if obs.startswith(_MOVED):
            obs = obs.replace("go to", "move to").replace("teleport to", "move to")
        if obs == "The door is already open.":
            continue
        if f"In {step.room}, {obs}" in keys:
            continue
        action = actions[i + 1]
        if (
            action in actions[i + 1 - REPEAT_WINDOW : i + 1]
            and action in actions[i + 2 : i + 2 + REPEAT_WINDOW]
        ):
            repeat += 1
            continue
        moved = "move to the" in obs
        entry = PlanEntry(obs, step.room, "" if lite or moved else action, moved)
        kept.append(entry)
        keys.append(_plan_key(entry, lite))
        if repeat > 0:
            kept.append(PlanEntry(repeats=repeat))
            keys.append(_plan_key(kept[-1], lite))
            repeat = 0
    final: list[PlanEntry] = []
    for i, entry in enumerate(kept):
        if i + 1 < len(kept) and "move to the" in keys[i] and "move to the" in keys[i + 1]:
            continue
        final.append(
            PlanEntry(
                entry.observation.replace("a substance called", "there is a"),
                entry.room,
                entry.action.replace("a substance called", "there is a"),
                entry.moved,
                entry.repeats,
            )
        )
    return final


def ground_history(traj: Trajectory, demo_lines: Sequence[str], last: int, strict: bool) -> list[GroundEntry]:
    """The grounding prompt's history (the authors' ``compose_prompt_to_nextactions`` after their
    ``clean_history``), the last ``last`` entries.

    Cleaning (their scores are all -1 here): examine steps and "open door" steps removed; "go to"
    becomes "teleport to" (Faithful: every "go" in the action and its observation is replaced). Then every
    step but the seeded first, in FUNC form (``to_func``), kept only if its action type (the name before
    "(") occurs in the first demo's lines; a step whose action occurs in the five steps before it and the
    four after it is counted, and "repeated N times" follows the next entry kept. ``strict``: an action
    with no FUNC form raises ``HistoryGrammarError`` (the authors' prompt fails there); otherwise it is
    skipped."""
    steps = [
        s
        for s in _history(traj)
        if not s.action.startswith("examine") and not s.action.startswith("open door")
    ]
    steps = [
        Step(s.action.replace("go", "teleport"), s.observation.replace("go", "teleport"), s.room)
        if s.action.startswith("go to")
        else s
        for s in steps
    ]
    actions = [s.action for s in steps]
    demo_text = "\n".join(demo_lines)
    out: list[GroundEntry] = []
    repeat = 0
    for ind, step in enumerate(steps):
        if step.observation == "N/A":
            continue
        func = to_func(step.action)
        if func is None:
            if strict:
                raise HistoryGrammarError(f"history action {step.action!r} has no FUNC form")
            continue
        if func[: func.index("(")] not in demo_text:
            continue
        before = actions[max(0, ind - REPEAT_WINDOW) : ind]
        after = actions[ind + 1 : min(len(actions), ind + REPEAT_WINDOW)]
        if ind + 1 < len(actions) and step.action in before and step.action in after:
            repeat += 1
            continue
        out.append(GroundEntry(step.room, func, step.observation))
        if repeat > 0:
            out.append(GroundEntry(repeats=repeat))
            repeat = 0
    return out[-last:] if last > 0 else []


def focused(traj: Trajectory) -> list[str]:
    """What the episode has focused on with a reward (the authors' ``useful_focus_on``), as targets."""
    return [
        t.action.removeprefix(FOCUS).strip()
        for t in traj.turns
        if t.action.startswith(FOCUS) and t.reward > 0
    ]


def failure_messages(failures: Sequence[Turn], traj: Trajectory) -> list[tuple[str, str, str]]:
    """(room, action, observation) of each failure since Sage last ran, duplicates once, first seen first
    (the authors keep a set: its order is arbitrary). The room is where the step ended (theirs); a failure
    without an env step (a gate refusal) is placed in the current room."""
    rooms = {t.step: r for t, r in zip(traj.turns, _turn_places(traj), strict=True)}
    seen: list[tuple[str, str, str]] = []
    for turn in failures:
        item = (
            rooms.get(turn.step, traj.places[-1] if traj.places else ""),
            turn.action,
            " ".join(turn.observation.split()),
        )
        if item not in seen:
            seen.append(item)
    return seen


def action_types(demo_lines: Sequence[str]) -> list[tuple[str, str]]:
    """(signature, description) of the action types the grounding prompt allows: those whose name
    occurs in the first demo's lines (Faithful: a substring test on the lines)."""
    text = "\n".join(demo_lines)
    return [(sig, desc) for name, sig, desc in ACTION_TYPES if name in text]


def focus_whitelist(task: str) -> list[str]:
    """The only things the prompts allow a focus on: the targets the task's description names after
    ``focus on`` (``env.scienceworld.valid.focus_targets``)."""
    return valid.focus_targets(task)
