"""``fastslow data substances``, ``paints``, ``circuits`` and ``focus-budgets``: train gold paths read
into the knowledge files the hand-written task logic ships (``data/``): substances for the
thermometer tasks, paint recipes, power sources (read through ``procedures.tasks``) and the per-task
focus budgets Gate-1 receives (``procedures.focus``). The CLI reaches them through the world
(``World.rebuild_knowledge``, ``rebuild`` here).

Only train variations are read (dev and test are what the evaluation plays). Every file opens with the
same provenance (``_provenance``): the command, the split, the tasks and, per task, the train
variations read, the simplification, ScienceWorld's version and the fastslow commit built from.

Substances: ``PER_TASK`` variations of each knowledge task spread over its train split (its variations
differ by substance) are replayed; every text a step shows (observation, look, inventory) is read for a
state word before a name ("liquid chocolate"), and every thermometer reading on a substance named with
its state bounds that substance's melting point. Paints, circuits and focus budgets need the gold
action sequence only, nothing is stepped.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from fastslow.core.step import StepResult
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.procedures.focus import focus_budgets_path
from fastslow.env.scienceworld.procedures.tasks import (
    READING,
    STATE_PREFIXES,
    WATER_STATES,
    circuits_path,
    named_states,
    paints_path,
    plain_state,
    substances_path,
)
from fastslow.env.scienceworld.semantics import (
    FOCUS,
    clean,
    focus_head,
    focus_target,
    is_focus,
    verb_rest,
    verb_target,
)
from fastslow.env.scienceworld.tasks import all_tasks, get_task
from fastslow.env.wrappers import TimeLimit
from fastslow.errors import UsageError

KNOWLEDGE_TASKS = (0, 1, 9, 20, 21, 22, 29)
"""Tasks whose gold paths change substances' states: boil, change-the-state-of-matter-of, freeze,
measure-melting-point (known and unknown substance), melt, use-thermometer."""
PER_TASK = 40
"""Train variations replayed per task, spread over its train split."""
REPLAY_STEP_LIMIT = 1000


def spread_variations(task_id: int, per_task: int = PER_TASK) -> list[int]:
    """Train variations of a task, ``per_task`` of them evenly spread over its train split."""
    train = list(get_task(task_id).variations["train"])
    if len(train) <= per_task:
        return train
    return list(dict.fromkeys(train[len(train) * k // per_task] for k in range(per_task)))


def reading_of(action: str, observation: str) -> tuple[str, str, float] | None:
    """(substance, state, temperature) of a thermometer reading on a substance its action names ("use
    thermometer in inventory on liquid lead" -> lead, liquid; "... on ice" -> water, solid; "... on
    lead" -> lead, plain), else None (a container's contents, an unknown substance, no reading)."""
    found = READING.search(observation)
    act = clean(action)
    if found is None or not act.startswith("use thermometer") or " on " not in act:
        return None
    target = focus_head(act.split(" on ", 1)[1])
    words = target.split()
    if len(words) == 1 and words[0] in WATER_STATES:
        return "water", WATER_STATES[words[0]], float(found.group(1))
    if words[:2] == ["unknown", "substance"] or words[1:3] == ["unknown", "substance"]:
        return None  # its letter names another substance in every variation
    if len(words) >= 2 and words[0] in STATE_PREFIXES:
        return " ".join(words[1:]), STATE_PREFIXES[words[0]], float(found.group(1))
    if words and words[0] != "substance":  # a plain name: its state is known once its other names are
        return target, "plain", float(found.group(1))
    return None


def melting_bounds(readings: list[tuple[str, float]]) -> tuple[float | None, float | None]:
    """(above, at most) bounds on a melting point from (state, temperature) readings, None for an
    unbounded side; (None, None) when the readings contradict each other."""
    solid = [t for state, t in readings if state == "solid"]
    melted = [t for state, t in readings if state in ("liquid", "gas")]
    low, high = (max(solid) if solid else None), (min(melted) if melted else None)
    if low is not None and high is not None and low >= high:
        return None, None
    return low, high


def build_substances(
    tasks: Sequence[int] = KNOWLEDGE_TASKS,
    per_task: int = PER_TASK,
    simplification: str = "easy",
    progress: Callable[[str], None] | None = None,
    commit: str | None = None,
) -> dict[str, Any]:
    """The knowledge file's content: every substance the replayed train gold paths named, with the
    prefixed states seen and the plain state they leave (``plain_state``)."""
    chosen = {task_id: spread_variations(task_id, per_task) for task_id in tasks}
    seen: dict[str, set[str]] = {}
    readings: dict[str, list[tuple[str, float]]] = {}
    with TimeLimit(ScienceWorldAdapter(simplification=simplification), REPLAY_STEP_LIMIT) as env:
        for task_id, variations in chosen.items():
            for variation in variations:
                first = env.reset(task_id, variation, gold=True)
                texts = [first.look]
                for action in env.gold_actions:
                    result = env.step(action)
                    texts += [result.observation, result.look, result.inventory]
                    reading = reading_of(action, result.observation)
                    if reading is not None:
                        name, state, temperature = reading
                        readings.setdefault(name, []).append((state, temperature))
                    if result.done:
                        break
                for text in texts:
                    for named, states in named_states(text).items():
                        seen.setdefault(named, set()).update(states)
            if progress is not None:
                progress(f"task {task_id:2d} {get_task(task_id).name}: {len(variations)} train variations")
    substances: dict[str, dict[str, Any]] = {}
    for substance in sorted(set(seen) | set(readings)):
        plain = plain_state(seen.get(substance, set()))
        # A plain-name reading is in the plain state, once the other names tell what that is.
        known = [(plain if state == "plain" else state, t) for state, t in readings.get(substance, [])]
        low, high = melting_bounds([(state, t) for state, t in known if state is not None])
        if not seen.get(substance) and low is None and high is None:
            continue  # only plain readings of a substance never seen otherwise: nothing learnt
        substances[substance] = {
            "named": sorted(seen.get(substance, set())),
            "plain": plain,
            "melts_above": low,
            "melts_at_most": high,
        }
    return {
        **_provenance("fastslow data substances", chosen, simplification, commit),
        "per_task": per_task,
        "substances": substances,
    }


PAINT_TASK_IDS = (3, 4)
"""chemistry-mix-paint-secondary-color and -tertiary-color."""
_POURED = re.compile(r"containing ([a-z]+) paint")


def recipes_of(actions: Sequence[str]) -> dict[str, frozenset[str]]:
    """Secondary colour -> the two colours a gold path poured before focusing on it (``pour cup
    containing blue paint in art studio in jug``, ``... yellow paint ...``, ``mix jug``, ``focus on green
    paint`` -> green: blue, yellow)."""
    out: dict[str, frozenset[str]] = {}
    poured: list[str] = []
    for action in actions:
        if action.startswith("pour "):
            found = _POURED.search(action)
            if found:
                poured.append(found.group(1))
        elif is_focus(action) and action.endswith(" paint"):
            colour = verb_rest(action, FOCUS)[: -len(" paint")]
            if "-" not in colour and len(set(poured)) == 2:
                out[colour] = frozenset(poured)
            poured = [colour]
    return out


def all_train(tasks: Sequence[int]) -> dict[int, list[int]]:
    """Task -> every train variation of it."""
    return {task_id: list(get_task(task_id).variations["train"]) for task_id in tasks}


def _train_gold_paths(
    variations: Mapping[int, Sequence[int]], simplification: str, progress: Callable[[str], None] | None
) -> Iterator[tuple[int, StepResult, tuple[str, ...]]]:
    """(task id, first state, gold actions) of the given variations, which must be train ones (raises
    ``ValueError`` for another: a knowledge file never reads dev or test); nothing is stepped."""
    for task_id, chosen in variations.items():
        wrong = [v for v in chosen if get_task(task_id).split_of(v) != "train"]
        if wrong:
            raise ValueError(f"task {task_id}: variations {wrong} are not train variations")
    with ScienceWorldAdapter(simplification=simplification) as env:
        for task_id, chosen in variations.items():
            for variation in chosen:
                first = env.reset(task_id, variation, gold=True)
                yield task_id, first, env.gold_actions
            if progress is not None:
                progress(f"task {task_id:2d} {get_task(task_id).name}: {len(chosen)} train variations")


def _provenance(
    command: str, variations: Mapping[int, Sequence[int]], simplification: str, commit: str | None
) -> dict[str, Any]:
    """What a knowledge file says of its making: the command, the split, the tasks, per task the train
    variations read (keys are task ids as strings, as JSON writes them), the simplification,
    ScienceWorld's version and the fastslow commit the command ran from (None when not known)."""
    import scienceworld

    return {
        "generated_by": " ".join(["fastslow", *sys.argv[1:]]) if sys.argv else command,
        "commit": commit,
        "split": "train",
        "tasks": list(variations),
        "variations": {str(task_id): list(chosen) for task_id, chosen in variations.items()},
        "simplification": simplification,
        "scienceworld_version": scienceworld.__version__,
    }


def build_paints(
    tasks: Sequence[int] = PAINT_TASK_IDS,
    simplification: str = "easy",
    progress: Callable[[str], None] | None = None,
    commit: str | None = None,
) -> dict[str, Any]:
    """The paint knowledge file's content: the recipe of every secondary colour the gold paths of all
    train variations of the paint tasks mix, and the primaries (colours poured, never mixed)."""
    chosen = all_train(tasks)
    recipes: dict[str, frozenset[str]] = {}
    poured: set[str] = set()
    for _, _, actions in _train_gold_paths(chosen, simplification, progress):
        recipes.update(recipes_of(actions))
        poured.update(m.group(1) for a in actions if (m := _POURED.search(a)))
    return {
        **_provenance("fastslow data paints", chosen, simplification, commit),
        "secondaries": {colour: sorted(pair) for colour, pair in sorted(recipes.items())},
        "primaries": sorted(poured - set(recipes)),
    }


POWER_TASK_IDS = (25, 26)
"""power-component and power-component-renewable-vs-nonrenewable-energy."""


def sources_of(description: str, actions: Sequence[str], start_room: str) -> dict[str, dict[str, Any]]:
    """Power source -> whether the task called it renewable (None: the task did not say), the room
    the gold path wired it in ("connect solar panel anode to black wire terminal 1" after "go to
    outside") and whether it then switched it on ("activate nuclear generator")."""
    text = " ".join(description.lower().split())
    renewable = None if "power source" not in text else "nonrenewable" not in text
    room = start_room
    out: dict[str, dict[str, Any]] = {}
    for action in actions:
        if action.startswith(("go to ", "teleport to ")):
            room = action.split(" to ", 1)[1]
        elif action.startswith("connect ") and " anode to " in action:
            source = verb_rest(action, "connect").split(" anode to ", 1)[0]
            if "wire" not in source:
                out[source] = {"renewable": renewable, "room": room, "activate": False}
        elif (device := verb_target(action, "activate")) is not None and device in out:
            out[device]["activate"] = True  # a generator is switched on once wired
    return out


def build_circuits(
    tasks: Sequence[int] = POWER_TASK_IDS,
    simplification: str = "easy",
    progress: Callable[[str], None] | None = None,
    commit: str | None = None,
) -> dict[str, Any]:
    """The circuit knowledge file's content: every power source the gold paths of all train variations
    of the power tasks wire, renewable or not (as the renewable task says), and the room they wire it in."""
    from fastslow.env.scienceworld.semantics import room_called

    chosen = all_train(tasks)
    sources: dict[str, dict[str, Any]] = {}
    for _, first, actions in _train_gold_paths(chosen, simplification, progress):
        for source, entry in sources_of(first.task_description, actions, room_called(first.look)).items():
            known = sources.setdefault(source, {"renewable": None, **entry})
            known["activate"] = bool(known.get("activate")) or entry["activate"]
            if entry["renewable"] is not None:
                known["renewable"] = entry["renewable"]
                known["room"] = entry["room"]
    return {
        **_provenance("fastslow data circuits", chosen, simplification, commit),
        "sources": dict(sorted(sources.items())),
    }


FOCUS_PER_TASK = 10
"""Train variations whose gold paths the focus budgets read per task, spread over its train split (all
of a task with fewer). ScienceWorld generates a gold path in 0.1-10 s (mendelian genetics the slowest):
all 3,592 train variations would take over an hour, these 290 about 10 minutes."""


def focus_count(actions: Sequence[str]) -> int:
    """The number of ``focus on`` actions in an action sequence."""
    return sum(1 for action in actions if focus_target(action) is not None)


def build_focus_budgets(
    tasks: Sequence[int] | None = None,
    per_task: int = FOCUS_PER_TASK,
    simplification: str = "easy",
    progress: Callable[[str], None] | None = None,
    commit: str | None = None,
) -> dict[str, Any]:
    """The focus-budget file's content for ``tasks`` (default: all 30): per task name, the most ``focus
    on`` actions one gold path of its read train variations takes (``spread_variations``)."""
    ids = list(tasks) if tasks is not None else [t.task_id for t in all_tasks()]
    chosen = {task_id: spread_variations(task_id, per_task) for task_id in ids}
    budgets: dict[str, int] = {get_task(task_id).name: 0 for task_id in ids}
    for task_id, _, actions in _train_gold_paths(chosen, simplification, progress):
        name = get_task(task_id).name
        budgets[name] = max(budgets[name], focus_count(actions))
    return {
        **_provenance("fastslow data focus-budgets", chosen, simplification, commit),
        "per_task": per_task,
        "budgets": budgets,
    }


KNOWLEDGE_FILES = ("substances", "paints", "circuits", "focus-budgets")
"""The knowledge files ``rebuild`` writes, by their ``fastslow data`` command."""


def rebuild(
    name: str,
    out: Path | None,
    tasks: Sequence[int] | None,
    per_task: int | None,
    progress: Callable[[str], None],
    commit: str | None,
) -> tuple[Path, dict[str, int]]:
    """``fastslow data <name>`` (``World.rebuild_knowledge``): build one knowledge file from train gold
    paths, write it to ``out`` (None: the packaged file) and return the path and the counts the command
    prints. ``tasks`` / ``per_task`` (None: the file's defaults) apply to substances and focus-budgets."""
    data: dict[str, Any]
    if name == "substances":
        default = substances_path()
        data = build_substances(
            KNOWLEDGE_TASKS if tasks is None else tasks,
            PER_TASK if per_task is None else per_task,
            progress=progress,
            commit=commit,
        )
        known = sum(1 for entry in data["substances"].values() if entry["plain"])
        summary = {"substances": len(data["substances"]), "plain_state_known": known}
    elif name == "paints":
        default = paints_path()
        data = build_paints(progress=progress, commit=commit)
        summary = {"secondaries": len(data["secondaries"]), "primaries": len(data["primaries"])}
    elif name == "circuits":
        default = circuits_path()
        data = build_circuits(progress=progress, commit=commit)
        summary = {"sources": len(data["sources"])}
    elif name == "focus-budgets":
        default = focus_budgets_path()
        data = build_focus_budgets(
            tasks, FOCUS_PER_TASK if per_task is None else per_task, progress=progress, commit=commit
        )
        summary = {"tasks": len(data["budgets"]), "over_one": sum(n > 1 for n in data["budgets"].values())}
    else:
        raise UsageError(f"no knowledge file '{name}' in ScienceWorld: {', '.join(KNOWLEDGE_FILES)}")
    target = out or default
    target.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return target, summary
