"""Demo trajectories for Sage's prompts in the paper configurations (paper §3, Sage; the authors' demos).

The paper's authors show Sage solved episodes of the task at hand: the planning prompt carries one, the
grounding prompt two (two variations of the same task), each a task description followed by one line
per action, ``- (in <room>) Action: FUNC(args) --> <observation>``, in their FUNC(args) action grammar
(``env.func_actions.to_func``), with runs of a repeated action block folded into one line. Their file
came with their repository; ours is made by our own tool from ScienceWorld's gold paths of **train**
variations only (never dev or test, which the evaluation plays): ``fastslow data sage-demos`` replays them and
writes ``env/data/sage_demos.json``, which the package ships (``load_demos``).

How a gold path becomes a demo:
- the path is the one Swift's imitation data replays (``swift.data``): under the "easy" simplification
  the path rewritten for teleports when it still reaches 100, otherwise ScienceWorld's own;
- each executed action gives a line with the room it was taken in and ScienceWorld's observation;
  "look around" (the state is in the prompt anyway; the authors' demos have none), actions outside
  the FUNC grammar and steps ScienceWorld did not understand ("No known action ...", "Unknown
  action ...": the gold path generator's own misfires) are left out;
- a block of one to three actions repeated at least twice more in a row is written once, followed by
  ``Repeat the previous N action(s) for K more times.`` (the authors fold their measuring loops so);
- variations: the first train variation of the task and the one in the middle of its train split
  (``demo_variations``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from fastslow.core.authors import Demo
from fastslow.core.trajectory import place_of
from fastslow.env.scienceworld.func_actions import to_func
from fastslow.env.scienceworld.gold import rewrite_for_easy
from fastslow.env.scienceworld.semantics import NO_MATCH, SUCCESS_SCORE
from fastslow.env.scienceworld.tasks import all_tasks, get_task
from fastslow.env.wrappers import Env, TimeLimit
from fastslow.errors import UsageError

DEMOS_FILE = "sage_demos.json"
"""The shipped demos, next to the task table in ``fastslow/env/scienceworld/data``."""
PER_TASK = 2
"""Demos per task: the grounding prompt shows two, the planning prompt the first."""
REPLAY_STEP_LIMIT = 1000
MAX_BLOCK = 3
"""Longest repeated action block that is folded into a "Repeat" line."""
MIN_REPEATS = 2
"""A block is folded when it repeats at least this many more times in a row."""
_HEADER = "Task Description:"
_SKIPPED = frozenset({"look around"})
_UNKNOWN = "Unknown action."


def _line(room: str, action: str, observation: str) -> str | None:
    func = to_func(action)
    if func is None:
        return None
    return f"- (in {room}) Action: {func} --> {' '.join(observation.split())}"


def fold_repeats(steps: Sequence[tuple[str, str]]) -> list[str]:
    """``(action, line)`` pairs -> demo lines, with repeated action blocks folded (module docstring)."""
    out: list[str] = []
    i = 0
    while i < len(steps):
        folded = False
        for size in range(1, min(MAX_BLOCK, len(steps) - i) + 1):
            block = [a for a, _ in steps[i : i + size]]
            repeats = 0
            while [a for a, _ in steps[i + size * (repeats + 1) : i + size * (repeats + 2)]] == block:
                repeats += 1
            if repeats >= MIN_REPEATS:
                out.extend(line for _, line in steps[i : i + size])
                what = "action" if size == 1 else f"{size} actions"
                out.append(f"Repeat the previous {what} for {repeats} more times.")
                i += size * (repeats + 1)
                folded = True
                break
        if not folded:
            out.append(steps[i][1])
            i += 1
    return out


def _play(env: Env, task_id: int, variation: int, path: Sequence[str]) -> list[tuple[str, str]] | None:
    """Replay ``path``: the (action, line) pairs if it reaches score 100, else None."""
    result = env.reset(task_id, variation)
    steps: list[tuple[str, str]] = []
    for action in path:
        if result.done:
            break
        room = place_of(result.look)
        result = env.step(action)
        noise = result.observation == NO_MATCH or result.observation.startswith(_UNKNOWN)
        line = None if action in _SKIPPED or noise else _line(room, action, result.observation)
        if line is not None:
            steps.append((action, line))
    return steps if result.score >= SUCCESS_SCORE else None


def build_demo(env: Env, task_id: int, variation: int) -> Demo:
    """The demo of one train variation (raises ``UsageError`` for a dev or test variation)."""
    info = get_task(task_id)
    if info.split_of(variation) != "train":
        raise UsageError(f"task {task_id} variation {variation} is not a train variation: no demo from it")
    first = env.reset(task_id, variation, gold=True)
    gold = list(env.gold_actions)
    rewritten = rewrite_for_easy(gold)
    steps = _play(env, task_id, variation, rewritten) if rewritten != gold else None
    if steps is None:
        steps = _play(env, task_id, variation, gold)
    if steps is None:
        raise UsageError(f"the gold path of task {task_id} variation {variation} does not reach 100")
    task = first.task_description.strip().removeprefix(_HEADER).strip()
    return Demo(task_id, variation, task, tuple(fold_repeats(steps)))


def demo_variations(task_id: int, per_task: int = PER_TASK) -> list[int]:
    """The train variations a task's demos come from: the first, then evenly spread over the train split
    (ScienceWorld numbers variations by substance, object or location, so the middle of the split is
    usually another one than its start)."""
    train = list(get_task(task_id).variations["train"])
    picks = [train[len(train) * k // per_task] for k in range(per_task)] if train else []
    return list(dict.fromkeys(picks))


def build_demos(
    tasks: Sequence[int] | None = None,
    per_task: int = PER_TASK,
    simplification: str = "easy",
    progress: Callable[[str], None] | None = None,
    commit: str | None = None,
) -> dict[str, Any]:
    """The demo file's content for ``tasks`` (default: all 30); its header names the train variations
    per task and the fastslow ``commit`` built from, as the other knowledge files do."""
    import scienceworld

    from fastslow.env.scienceworld.adapter import ScienceWorldAdapter  # the JVM: only when building

    ids = list(tasks) if tasks is not None else [t.task_id for t in all_tasks()]
    out: dict[str, list[dict[str, Any]]] = {}
    with TimeLimit(ScienceWorldAdapter(simplification=simplification), REPLAY_STEP_LIMIT) as env:
        for task_id in ids:
            demos = [build_demo(env, task_id, v) for v in demo_variations(task_id, per_task)]
            out[str(task_id)] = [d.as_json() for d in demos]
            if progress is not None:
                sizes = ", ".join(f"variation {d.variation}: {len(d.lines)} lines" for d in demos)
                progress(f"task {task_id:2d} {get_task(task_id).name}: {sizes}")
    return {
        "generated_by": " ".join(["fastslow", *sys.argv[1:]]) if sys.argv else "fastslow data sage-demos",
        "commit": commit,
        "split": "train",
        "tasks": ids,
        "variations": {task: [d["variation"] for d in demos] for task, demos in out.items()},
        "simplification": simplification,
        "scienceworld_version": scienceworld.__version__,
        "demos": out,
    }


def demos_path() -> Path:
    """Where the shipped demo file lives (``fastslow data sage-demos`` writes it there by default)."""
    return Path(str(resources.files("fastslow.env.scienceworld") / "data" / DEMOS_FILE))


@cache
def load_demos() -> dict[int, tuple[Demo, ...]]:
    """The shipped demos by task id."""
    data = json.loads(demos_path().read_text(encoding="utf-8"))
    return {
        int(task): tuple(Demo(int(task), d["variation"], d["task"], tuple(d["lines"])) for d in demos)
        for task, demos in data["demos"].items()
    }


def demos_for(task_id: int) -> tuple[Demo, ...]:
    """The task's demos, first the one the planning prompt shows (empty if the file has none)."""
    return load_demos().get(task_id, ())
