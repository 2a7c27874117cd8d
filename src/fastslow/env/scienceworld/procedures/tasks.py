"""The task families the hand-written task logic knows, and how it reads their task descriptions.

Each family is a set of task names with a parser of its description: the life-stages tasks
(``life_stage_violation``: foci from the earliest stage to the latest), the thermometer tasks
(``measurement_task``, ``measurement_violation``: the box the readings decide), the matter tasks
(``matter_task``), the paint tasks (``paint_task``, ``paint_recipe``), the power tasks (``power_task``,
``known_sources``), grow-plant (``grow_task``) and the inclined-plane tasks (``incline_task``). Their
knowledge files (``substances.json``, ``paints.json``, ``circuits.json``, built from train gold paths by
``fastslow data ...``) live in ``fastslow/env/scienceworld/procedures/data``. Stdlib only: pure
functions of strings.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from fastslow.env.scienceworld.semantics import (
    FOCUS,
    clean,
    container_items,
    focus_head,
    focus_target,
    normalize,
    object_names,
    resolve_focus_target,
    verb_rest,
    verb_target,
)

_DESCRIPTION_WORD = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


LIFE_STAGE_TASKS = frozenset({"identify-life-stages-1", "identify-life-stages-2"})
"""Tasks that ask for foci on an organism's life stages, from earliest to latest."""

LIFE_STAGES: dict[str, int] = {
    "egg": 0,
    "seed": 0,
    "baby": 1,
    "hatchling": 1,
    "tadpole": 1,
    "larva": 1,
    "caterpillar": 1,
    "seedling": 1,
    "juvenile": 2,
    "pupa": 2,
    "chrysalis": 2,
    "cocoon": 2,
    "adult": 3,
    "reproducing": 4,
}
"""Rank of each stage word ScienceWorld's organisms use, earliest first. Every organism's own sequence
is increasing in it: turtle egg 0, hatchling 1, juvenile 2, adult 3; wolf baby 1, juvenile 2, adult 3;
toad egg 0, tadpole 1, adult 3; moth egg 0, larva 1, pupa 2, adult 3; a plant's seed 0, seedling 1,
adult 3, reproducing 4 ("apple tree in the seedling stage")."""

_N_STAGES = re.compile(r"the (\d+) life stages")
_LIFE_OF = re.compile(r"life stages of (?:the |a |an )?([a-z][a-z -]*?)(?:,| starting|\.|$)")


def life_stage(target: str, look: str = "") -> int | None:
    """The stage rank (``LIFE_STAGES``) a focus target names: "egg turtle in outside" -> 0, "apple tree in
    the adult stage in self watering flower pot 6" -> 3; a target naming a pot but no stage takes the
    stage of what the pot holds in ``look`` ("apple tree in self watering flower pot 6", the pot
    "containing a apple tree in the seedling stage" -> 1). None when no stage is named."""
    ranks = [LIFE_STAGES[w] for w in normalize(target).split() if w in LIFE_STAGES]
    if not ranks and look:
        head = focus_head(target)
        for item in container_items(target, look) or []:
            if item.startswith(head):
                ranks = [LIFE_STAGES[w] for w in item.split() if w in LIFE_STAGES]
    return max(ranks) if ranks else None


def life_stage_violation(
    target: str, valid_actions: Sequence[str], focused: Sequence[str], task_description: str, look: str = ""
) -> str | None:
    """Why focusing on ``target`` now breaks a life-stages task's order, else None.

    The judgement training cannot imitate for unseen organisms: a focus must name a stage, come after
    every stage focused on so far (``focused``: targets of the confirmed foci), be the task's organism
    ("life stages of the common toad": it shares a word with it, or is a plant's generic "plant"), and
    no valid focus on the same organism may name a stage between the two (that one comes first). A
    plant's stages are always all four, so its next one is the only one allowed; an animal's adult stage
    is its last, so it is allowed as the task's last focus ("the 4 life stages") and only then."""
    rank = life_stage(target, look)
    if rank is None:
        return "it names no life stage"
    match = _LIFE_OF.search(" ".join(task_description.lower().split()))
    subject = match.group(1).split() if match else []
    organism = set(subject) - {"plant"}
    plant = "plant" in subject
    if plant:
        # A plant's four stages are always there (seed, seedling, adult, reproducing): none is skipped.
        # Its foci name pots whose plants grow, so the stages done are counted, not read again.
        last = PLANT_STAGES[min(len(focused), len(PLANT_STAGES)) - 1] if focused else -1
    else:
        last = max((r for r in (life_stage(t) for t in focused) if r is not None), default=-1)
    if rank <= last:
        return "an equal or later stage has been focused on already"

    def same_organism(text: str) -> bool:
        words = set(normalize(text).split())
        return not organism or bool(words & organism) or normalize(text).startswith("plant ")

    if not same_organism(target):
        return f"it is not a {' '.join(sorted(organism))}"
    if plant:
        following = min((r for r in PLANT_STAGES if r > last), default=None)
        if rank != following:
            return "a plant goes seed, seedling, adult, reproducing"
    else:
        # An animal's last stage is its adult one, and the task says how many stages it has: the adult
        # comes last, and only last (a frog's egg hatches into a tadpole later: the adult is no shortcut).
        count = _N_STAGES.search(task_description.lower())
        if count is not None:
            final = len(focused) + 1 == int(count.group(1))
            if final != (rank == LIFE_STAGES["adult"]):
                return "the adult is the last stage" if final else "the adult stage comes last"
    for action in valid_actions:
        other = verb_target(action, FOCUS)
        if other is None:
            continue
        between = life_stage(other, look)
        if between is not None and last < between < rank and same_organism(other):
            return f"'{other}' is an earlier stage"
    return None


PLANT_STAGES = (0, 1, 3, 4)
"""The stage ranks of ScienceWorld's plants, in order (identify-life-stages-2's gold paths)."""


# -- substances: their states, and what train gold paths showed of them ------------------------------
# ScienceWorld names a substance plainly in its room-temperature state and puts a state word before the
# name otherwise: "tin" is solid, "liquid tin" melted; "mercury" is liquid, "solid mercury" frozen (water
# alone has names of its own: ice, water, steam). A melting-point reading on "chocolate" proves nothing
# until one knows what plain chocolate is. ``fastslow data substances`` (``procedures.knowledge``) replays
# train gold paths of the matter and thermometer tasks, which heat or cool substances through their
# changes, and writes ``procedures/data/substances.json``: each substance's state words seen, the plain state
# they leave and the melting-point bounds its readings proved. Only train variations are read; a
# substance no train path changed stays unknown, and the judgement waits for the episode's own readings.

STATE_PREFIXES = {"solid": "solid", "liquid": "liquid", "gaseous": "gas"}
"""ScienceWorld names a substance out of its room-temperature state with one of these words first."""
WATER_STATES = {"ice": "solid", "water": "liquid", "steam": "gas"}
"""Water is the one substance whose states have names of their own."""
SUBSTANCES_FILE = "substances.json"
"""The shipped knowledge, next to the task table in ``fastslow/env/scienceworld/procedures/data``."""
_NAMED = re.compile(r"\b(solid|liquid|gaseous) ([a-z][a-z ]*?)(?=[,.;:()\n]| in | on | which |$)")


def named_states(text: str) -> dict[str, set[str]]:
    """Substance -> the states ``text`` names it in with a state word ("a metal pot (containing liquid
    chocolate)" -> chocolate: liquid). The per-variation unknown substances ("solid unknown substance
    C") are left out: their letters name different substances in different variations."""
    out: dict[str, set[str]] = {}
    for prefix, name in _NAMED.findall(text.lower()):
        name = name.strip()
        if name and not name.startswith("unknown substance"):
            out.setdefault(name, set()).add(STATE_PREFIXES[prefix])
    return out


def plain_state(prefixed: set[str]) -> str | None:
    """The room-temperature state of a substance seen written with the ``prefixed`` state words: solid
    when only liquid or gas were written (it melted or boiled), liquid when solid was written but not
    liquid (it froze); None otherwise: nothing written, or solid and liquid both (ScienceWorld writes
    "solid chocolate" in a freezer although plain chocolate is solid too)."""
    if "solid" not in prefixed and prefixed & {"liquid", "gas"}:
        return "solid"
    if "solid" in prefixed and "liquid" not in prefixed:
        return "liquid"
    return None


def _data(name: str) -> Path:
    """A shipped knowledge file of the task logic (``procedures/data``)."""
    return Path(str(resources.files("fastslow.env.scienceworld.procedures").joinpath("data", name)))


def substances_path() -> Path:
    return Path(
        str(resources.files("fastslow.env.scienceworld.procedures").joinpath("data", SUBSTANCES_FILE))
    )


@cache
def _knowledge() -> dict[str, dict[str, object]]:
    path = substances_path()
    if not path.exists():
        return {}
    substances: dict[str, dict[str, object]] = json.loads(path.read_text(encoding="utf-8"))["substances"]
    return substances


def known_plain_states() -> dict[str, str]:
    """Substance -> its room-temperature state, from the shipped file (empty if it is missing)."""
    return {name: str(entry["plain"]) for name, entry in _knowledge().items() if entry.get("plain")}


def known_melting_bounds(substance: str) -> tuple[float, float]:
    """(above, at most) bounds on a substance's melting point that train readings proved (solid at t:
    above t; liquid or gas at t: at most t); (-inf, inf) when none did."""
    entry = _knowledge().get(substance, {})
    low, high = entry.get("melts_above"), entry.get("melts_at_most")
    return (
        float(low) if isinstance(low, int | float) else -math.inf,
        float(high) if isinstance(high, int | float) else math.inf,
    )


# -- thermometer judgement: a measured value against the task's threshold ------------------------------

MEASUREMENT_TASKS = frozenset(
    {"measure-melting-point-known-substance", "measure-melting-point-unknown-substance", "use-thermometer"}
)
"""Tasks that end with a choice between two boxes by a measured temperature against a threshold."""


@dataclass(frozen=True)
class Measurement:
    """What a measurement task asks: the quantity of ``subject`` against ``threshold`` (degrees
    celsius), then a focus on (or, ``place``, putting the subject into) the ``above`` or ``below`` box."""

    quantity: Literal["melting point", "temperature"]
    subject: str
    threshold: float
    above: str
    below: str
    place: bool
    boxes_in: str | None = None
    """The room the task says the boxes are in ("The boxes are located around the kitchen.")."""


_MEASURE = re.compile(
    r"if the (?:melting point of (?P<melt>.+?)|(?P<temp>.+?) temperature) is above (?P<t>-?\d+(?:\.\d+)?) "
    r"degrees celsius, (?P<verb>focus on|place it in) the (?P<above>[a-z ]+?)\. "
    r"if the .+? is below -?\d+(?:\.\d+)? degrees celsius, (?:focus on|place it in) the (?P<below>[a-z ]+?)\."
)
_BOXES_IN = re.compile(r"the boxes are located around the ([a-z ]+?)\.")
READING = re.compile(r"the thermometer measures a temperature of (-?\d+(?:\.\d+)?) degrees celsius")
_CALLED = re.compile(r"^a substance called (.+?)\.?$")


def measurement_task(task_description: str) -> Measurement | None:
    """The measurement a task description asks for, or None ("If the melting point of tin is above 50.0
    degrees celsius, focus on the red box. If ... below ..., focus on the green box.")."""
    text = " ".join(task_description.lower().split())
    match = _MEASURE.search(text)
    if match is None:
        return None
    melt = match.group("melt")
    return Measurement(
        quantity="melting point" if melt else "temperature",
        subject=(melt or match.group("temp")).strip(),
        threshold=float(match.group("t")),
        above=normalize(match.group("above")),
        below=normalize(match.group("below")),
        place=match.group("verb") == "place it in",
        boxes_in=boxes.group(1) if (boxes := _BOXES_IN.search(text)) else None,
    )


def _subject_core(subject: str) -> list[str]:
    words = normalize(subject).split()
    return words[1:] if words and words[0] in STATE_PREFIXES else words


def subject_words(subject: str) -> set[str]:
    """The words that name a measured subject in actions: its name without a state word and without an
    unknown substance's letter, which ScienceWorld's valid actions drop ("use thermometer on unknown
    substance" for unknown substance B)."""
    return {w for w in _subject_core(subject) if len(w) > 1}


def names_subject(name: str, subject: str) -> bool:
    """Whether an object name (a head, without qualifiers) is the measured subject under any of its
    names: "liquid tin" and "tin" are tin, "tin cup" is not; "unknown substance" is unknown substance B;
    "ice" and "steam" are water."""
    words = normalize(name).split()
    core = subject_words(subject)
    if core == {"water"}:
        return len(words) == 1 and words[0] in WATER_STATES
    if words and words[0] in STATE_PREFIXES:
        words = words[1:]
    return bool(core) and {w for w in words if len(w) > 1} == core


def substance_state(name: str, subject: str) -> str | None:
    """The state a name gives the subject ("liquid tin" -> liquid, "ice" -> solid for water), "bare"
    for the subject's plain name (its room-temperature state, known only from its other names), None
    when the name is not the subject's ("tin cup")."""
    head = focus_head(name)
    if not names_subject(head, subject):
        return None
    first = head.split()[0]
    if subject_words(subject) == {"water"}:
        return WATER_STATES[first]
    return STATE_PREFIXES.get(first, "bare")


def thermometer_readings(measure: Measurement, steps: Sequence[tuple[str, str]]) -> list[tuple[float, str]]:
    """(temperature, state) of each thermometer reading of the subject among executed (action,
    observation) steps. A reading names its target; a container's contents ("substance in metal
    pot") take the name the last ``examine`` of that target gave ("a substance called liquid tin")."""
    called: dict[str, str] = {}
    readings: list[tuple[float, str]] = []
    for action, observation in steps:
        act = clean(action)
        if act.startswith("examine "):
            found = _CALLED.match(observation.strip().lower())
            if found:
                called[verb_rest(act, "examine")] = found.group(1)
            continue
        reading = READING.search(observation)
        if reading is None or not act.startswith("use thermometer") or " on " not in act:
            continue
        target = act.split(" on ", 1)[1]
        name = called.get(target, "") if target.startswith("substance in ") else target
        state = substance_state(name, measure.subject) if name else None
        if state is not None:
            readings.append((float(reading.group(1)), state))
    return readings


def measured_choice(measure: Measurement, readings: Sequence[tuple[float, str]]) -> str | None:
    """The box the readings decide, or None while they do not.

    A temperature task reads its last reading against the threshold. A melting point is bounded by the
    readings: solid at t means it lies above t, liquid or gas at t that it lies at or below t. The plain
    name is the state its other names are not ("tin" is solid once "liquid tin" was seen; "mercury"
    liquid once "solid mercury" was), or before that what train gold paths showed of it
    (``known_plain_states``: lead is solid); the bounds train readings proved of the
    substance join the episode's (``known_melting_bounds``). Above the threshold when the lower bound
    is at least the threshold, below when the upper bound is at most it."""
    if not readings:
        return None
    if measure.quantity == "temperature":
        value = readings[-1][0]
        if value == measure.threshold:
            return None
        return measure.above if value > measure.threshold else measure.below
    states = {state for _, state in readings}
    bare = "solid" if "liquid" in states else "liquid" if "solid" in states else None
    core = " ".join(_subject_core(measure.subject))
    if bare is None:  # the episode showed no other name: what train gold paths showed (substances.json)
        bare = known_plain_states().get(core)
    low, high = known_melting_bounds(core)  # what train readings proved of it, if anything
    for value, named in readings:
        state = bare if named == "bare" else named
        if state == "solid":
            low = max(low, value)
        elif state in ("liquid", "gas"):
            high = min(high, value)
    if low >= measure.threshold:
        return measure.above
    if high <= measure.threshold:
        return measure.below
    return None


def measured_object(measure: Measurement, head: str) -> bool:
    """Whether a focus head (``focus_head``) is one of the things a measurement task focuses on: the
    thermometer, the subject (any of its names; a container's "substance", whose contents
    ``focus_contents_mismatch`` checks) or one of the two boxes. "orange" is none of them when the task
    measures orange juice and names an orange box."""
    return head in ("thermometer", "substance", measure.above, measure.below) or names_subject(
        head, measure.subject
    )


def subject_focus(
    measure: Measurement, valid_actions: Sequence[str], look: str, inventory: str
) -> str | None:
    """The shortest valid focus on the measured subject, by its name (``focus on tin``) or as a
    container's contents the look or inventory shows are it (``focus on substance in cup`` holding the
    water); None when the subject is not in reach."""
    picks = []
    for action in valid_actions:
        target = focus_target(action)
        if target is not None and names_subject(
            resolve_focus_target(target, look, inventory), measure.subject
        ):
            picks.append(action)
    return min(picks, key=len, default=None)


def measurement_violation(
    measure: Measurement, head: str, steps: Sequence[tuple[str, str]], foci: int, *, placing: bool = False
) -> str | None:
    """Why focusing on ``head`` (a focus head; ``placing``: a box the subject is put into) now breaks a
    measurement task, else None: only the thermometer, the subject and the boxes are focused on
    (``measured_object``), and no box where the task puts the subject into one ("place it in the red
    box"); a box comes after the thermometer and the subject (``foci``: confirmed so far) and must be
    the one the readings decide (``measured_choice``)."""
    if not placing and not measured_object(measure, head):
        return f"the task focuses on the thermometer, the {measure.subject} and a box, not '{head}'"
    box = head
    if box not in (measure.above, measure.below):
        return None
    if measure.place and not placing:
        return f"the task puts the {measure.subject} into a box; it focuses on none"
    if foci < 2:
        return "the thermometer and the subject are focused on first"
    choice = measured_choice(measure, thermometer_readings(measure, steps))
    if choice is None:
        return f"no reading decides the {measure.quantity} of {measure.subject} against {measure.threshold:g}"
    if choice != box:
        return f"the readings put the {measure.quantity} on the {choice}'s side"
    return None


# -- matter tasks: a substance's change of state -----------------------------------------------------

MATTER_TASKS = frozenset({"boil", "melt", "freeze", "change-the-state-of-matter-of"})
"""Tasks that focus on a substance and then change its state of matter."""
_MATTER = re.compile(
    r"your task is to (boil|melt|freeze|change the state of matter of) (?:the |a |an )?([a-z][a-z ]*?)\."
)
_GOALS: dict[str, Literal["solid", "liquid", "gas", "any"]] = {
    "boil": "gas",
    "melt": "liquid",
    "freeze": "solid",
    "change the state of matter of": "any",
}


@dataclass(frozen=True)
class MatterChange:
    """What a matter task asks: focus on ``subject``, then bring it into the ``goal`` state ("any":
    any change; boil accepts combustion too)."""

    subject: str
    goal: Literal["solid", "liquid", "gas", "any"]


def matter_task(task_description: str) -> MatterChange | None:
    """The change a matter task asks for ("Your task is to boil lead." -> lead, gas), or None."""
    match = _MATTER.search(" ".join(task_description.lower().split()))
    if match is None:
        return None
    return MatterChange(subject=match.group(2).strip(), goal=_GOALS[match.group(1)])


def subject_names(text: str, subject: str) -> list[str]:
    """The names ``text`` gives the subject under any of its states ("liquid lead", "lead"; for water
    "ice", "water", "steam"), in order."""
    return [name for name in object_names(text) if names_subject(name, subject)]


def object_line(look: str, name: str) -> str:
    """The look's line of the top-level object called ``name`` (its contents are on that line:
    "a blast furnace, which is turned on. ... In the blast furnace is: a metal pot (...)"), '' if none."""
    for line in look.lower().splitlines():
        text = line.strip()
        for prefix in ("a ", "an ", "the "):
            text = text.removeprefix(prefix)
        if text.startswith(name) and (len(text) == len(name) or not text[len(name)].isalnum()):
            return text
    return ""


# -- paint tasks: colours mixed from others -----------------------------------------------------------
# "Your task is to use chemistry to create green paint." (a secondary colour, mixed from two primaries)
# or "... green-blue paint. When you are part-way done, focus on the intermediate (secondary color)
# paint" (a tertiary: the secondary of its name, mixed first and focused on, then its primary added).
# Which primaries make which secondary is what train gold paths pour before each focus: ``fastslow
# data paints`` writes ``procedures/data/paints.json``; a secondary no train path mixed is the one pair of
# primaries no known secondary uses (train shows green and orange; violet is then red and blue).

PAINT_TASKS = frozenset({"chemistry-mix-paint-secondary-color", "chemistry-mix-paint-tertiary-color"})
PAINTS_FILE = "paints.json"
_PAINT = re.compile(r"your task is to use chemistry to create ([a-z]+(?:-[a-z]+)?) paint\.")


@dataclass(frozen=True)
class PaintTask:
    """The colours a paint task focuses on, in order: the secondary, then the tertiary if it asks one."""

    colours: tuple[str, ...]


def paint_task(task_description: str) -> PaintTask | None:
    """The colours a paint task makes ("green-blue" -> green, then green-blue), or None."""
    match = _PAINT.search(" ".join(task_description.lower().split()))
    if match is None:
        return None
    target = match.group(1)
    parts = target.split("-")
    if len(parts) == 1:
        return PaintTask((target,))
    secondaries = set(_paints().get("secondaries", {}))
    secondary = next((p for p in parts if p in secondaries), None) or next(
        (p for p in parts if p not in _paints().get("primaries", [])), parts[-1]
    )
    return PaintTask((secondary, target))


def paints_path() -> Path:
    return _data(PAINTS_FILE)


@cache
def _paints() -> dict[str, Any]:
    path = paints_path()
    if not path.exists():
        return {}
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def paint_recipe(colour: str) -> tuple[str, ...]:
    """The colours mixed into ``colour``: a tertiary's two parts ("green-blue" -> green, blue), a
    secondary's two primaries as train gold paths mixed them, or by elimination the one primary pair
    no known secondary uses; () when nothing tells (a primary, or an unknown colour)."""
    if "-" in colour:
        return tuple(colour.split("-"))
    secondaries: dict[str, list[str]] = _paints().get("secondaries", {})
    primaries: list[str] = _paints().get("primaries", [])
    if colour in secondaries:
        return tuple(secondaries[colour])
    if colour in primaries:
        return ()
    used = {frozenset(pair) for pair in secondaries.values()}
    free = [
        (a, b) for i, a in enumerate(primaries) for b in primaries[i + 1 :] if frozenset((a, b)) not in used
    ]
    return free[0] if len(free) == 1 else ()


def open_closed(look: str, valid: Sequence[str]) -> str | None:
    """A valid "open X" for a container the look shows closed (not a door to another room), else None."""
    for action in valid:
        if not action.startswith("open ") or action.startswith("open door"):
            continue
        name = verb_rest(action, "open")
        line = object_line(look, name) or look.lower()
        last = name.split()[-1]
        if f"{last} door is closed" in line or f"{name} is closed" in line:
            return action
    return None


# -- power components: a circuit that lights a bulb --------------------------------------------------
# "Your task is to turn on the red light bulb [by powering it using a (non)renewable power source].
# First, focus on ..." (the device can be an electric motor too).
# Which power sources are renewable, and where train gold paths build the circuit with each (a solar
# panel works outside), is what ``fastslow data circuits`` reads off train gold paths into
# ``procedures/data/circuits.json``.

POWER_TASKS = frozenset({"power-component", "power-component-renewable-vs-nonrenewable-energy"})
CIRCUITS_FILE = "circuits.json"
_POWER = re.compile(
    r"your task is to turn on the ([a-z ]+?)"
    r"(?: by powering it using a (renewable|nonrenewable) power source)?\. first, focus on"
)


@dataclass(frozen=True)
class PowerTask:
    """The device to power (a light bulb, an electric motor) and the kind of power source the task asks
    for (None: any)."""

    device: str
    kind: Literal["renewable", "nonrenewable"] | None


def power_task(task_description: str) -> PowerTask | None:
    match = _POWER.search(" ".join(task_description.lower().split()))
    if match is None:
        return None
    kind = match.group(2)
    return PowerTask(match.group(1), "renewable" if kind == "renewable" else "nonrenewable" if kind else None)


def circuits_path() -> Path:
    return _data(CIRCUITS_FILE)


@cache
def known_sources() -> dict[str, dict[str, Any]]:
    """Power source -> {"renewable": bool | None, "room": where train gold paths wired it, "activate":
    whether they switched it on}; empty when the shipped file is missing."""
    path = circuits_path()
    if not path.exists():
        return {}
    sources: dict[str, dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["sources"]
    return sources


# -- growing a plant from seed -----------------------------------------------------------------------

GROW_TASKS = frozenset({"grow-plant"})
_GROW = re.compile(
    r"your task is to grow (?:a |an )?([a-z ]+?) plant from seed\. seeds can be found in the ([a-z ]+?)\."
)


@dataclass(frozen=True)
class GrowTask:
    """The plant a grow task asks for and the room its seeds are in."""

    plant: str
    seeds_in: str


def grow_task(task_description: str) -> GrowTask | None:
    """ "Your task is to grow a apple plant from seed. Seeds can be found in the kitchen." -> apple,
    kitchen; None for another task."""
    match = _GROW.search(" ".join(task_description.lower().split()))
    return GrowTask(match.group(1).strip(), match.group(2).strip()) if match else None


# -- inclined planes: which of two planes a block slides down slower ---------------------------------

INCLINE_TASKS = frozenset(
    {
        "inclined-plane-determine-angle",
        "inclined-plane-friction-named-surfaces",
        "inclined-plane-friction-unnamed-surfaces",
    }
)
_INCLINE = re.compile(
    r"which of the two inclined planes \((?P<a>[^,()]+), (?P<b>[^()]+)\) has the "
    r"(?P<which>shallowest angle|steepest angle|most friction|least friction)"
)


@dataclass(frozen=True)
class InclineTask:
    """The two planes (as the task names them) and whether the slower one is asked for."""

    planes: tuple[str, str]
    slower: bool


def incline_task(task_description: str) -> InclineTask | None:
    """The planes an inclined-plane task compares and what it asks ("(C, B) has the shallowest
    angle" -> c, b; the slower), or None."""
    match = _INCLINE.search(" ".join(task_description.lower().split()))
    if match is None:
        return None
    slower = match.group("which") in ("shallowest angle", "most friction")
    return InclineTask((normalize(match.group("a")), normalize(match.group("b"))), slower)
