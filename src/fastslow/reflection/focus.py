"""SRM Gate-1 focus rules, paper §3.2 (runtime constraints) and SwiftSage's focus handling.

``focus on X`` is the one irreversible action in ScienceWorld: focusing on the wrong object fails the
task (score -100). Three rules guard it:

- a per-task budget of focus actions: where the task description states how many things to focus on
  ("focus on the 4 life stages of the turtle"), that number; otherwise the most ``focus on`` actions a
  gold path of the task's train variations takes, read from the shipped knowledge file
  ``env/data/focus_budgets.json`` (``fastslow data focus-budgets``; its header names the variations);
- never focus twice on the same object;
- where the task description names what to focus on ("focus on the salt water", "focus on the
  thermometer", "focus on the blue box"), the target's head noun phrase must share a word with those
  phrases or with the task's first sentence (checked against the 386 gold focus actions of the 290
  train variations the focus budgets read, 306 of them outside the exempt tasks: none blocked;
  ``tests/reflection/test_focus.py`` rechecks 2 train variations of every task). Tasks whose target
  is found by exploring ("find a(n) animal ... focus on the thing", the lifespan tasks) are exempt.
  Rooms, the agent and the inventory are refused by Gate-1 itself.

What a focus action targets and how ScienceWorld confirms it (``focus_target``, ``focus_head``,
``focus_confirmed``) is ScienceWorld's semantics, defined in ``fastslow.env.semantics``.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from pathlib import Path

from fastslow.core.trajectory import Trajectory
from fastslow.env.semantics import DESCRIPTION_STOPWORDS, FOCUS, focus_confirmed, focus_target

# Re-exported for Gate-1 (reflection/gate.py), which imports it from here.
from fastslow.env.semantics import focus_head as focus_head
from fastslow.env.valid import FOCUS_COUNT

FOCUS_BUDGETS_FILE = "focus_budgets.json"
"""The shipped focus budgets, next to the other knowledge files in ``fastslow/env/data``."""

# The focus target is discovered, not named, in these tasks' descriptions.
OPEN_FOCUS_TASKS = frozenset(
    {
        "find-animal",
        "find-living-thing",
        "find-non-living-thing",
        "find-plant",
        "lifespan-longest-lived",
        "lifespan-longest-lived-then-shortest-lived",
        "lifespan-shortest-lived",
    }
)

FOCUS_PREFIX = FOCUS + " "
_N_STAGES = re.compile(r"focus on the (\d+) life stages")
_FOCUS_PHRASE = re.compile(r"focus on (?:the |a |an )?([^.,]+)")
_WORD = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def focus_budgets_path() -> Path:
    """Where the shipped focus budgets live (``fastslow data focus-budgets`` writes there by default)."""
    return Path(str(resources.files("fastslow.env") / "data" / FOCUS_BUDGETS_FILE))


@cache
def focus_budgets() -> dict[str, int]:
    """Task name -> the most ``focus on`` actions a train gold path of the task takes (the shipped file)."""
    data = json.loads(focus_budgets_path().read_text(encoding="utf-8"))
    return {name: int(n) for name, n in data["budgets"].items()}


def focus_limit_for(task_name: str, task_description: str = "") -> int:
    """Focus actions the task needs: the number of things the description says to focus on ("focus on
    the 3 life stages of the wolf"), else the task's train gold-path budget (``focus_budgets``; 1 for a
    task the file does not list)."""
    match = _N_STAGES.search(task_description.lower())
    if match:
        return int(match.group(1))
    return focus_budgets().get(task_name, 1)


def content_words(text: str) -> set[str]:
    """Words of ``text`` that can name an object (stopwords and boilerplate removed)."""
    return {w for w in _WORD.findall(text.lower()) if w not in DESCRIPTION_STOPWORDS and len(w) > 1}


def focus_words(task_description: str) -> set[str]:
    """Words that may name a focus target: the "focus on ..." phrases ("focus on the blue box"), the
    first sentence, which names the task's subject ("Your task is to melt lead."; its "focus on the
    substance" means the lead), and "substance", ScienceWorld's name for matter poured into a container
    ("substance in ceramic cup" for the tin of a melting-point task)."""
    text = task_description.lower().replace("task description:", "").strip()
    phrases = _FOCUS_PHRASE.findall(text)
    first_sentence = text.split(". ", 1)[0]
    return content_words(" ".join([*phrases, first_sentence])) | {"substance"}


def focus_target_allowed(task_name: str, task_description: str, target: str) -> bool:
    """The target's head shares a word with a "focus on ..." phrase of the task (find-* and lifespan
    tasks exempt): "instructions to make salt water" is not "the salt water".

    Deliberately loose (any shared word): blocking a focus the task needs would make it unsolvable,
    while a wrong focus that slips through is what SwiftSage would have done anyway."""
    if task_name in OPEN_FOCUS_TASKS:
        return True
    return bool(content_words(focus_head(target)) & focus_words(task_description))


def focus_usage(traj: Trajectory, budget: str = "gold", limit: int | None = None) -> tuple[int, int]:
    """(focus actions used, focus actions allowed) under a Gate-1 ``focus_budget``.

    gold: the confirmed distinct targets against ``focus_limit_for``. authors: every executed ``focus
    on`` action (the authors' loop counts each one it sends, whatever ScienceWorld answers) against their
    per-task ``focus_on_count`` (``env.valid.FOCUS_COUNT``; 1 for an unknown task id, as their lookup
    defaults). ``limit`` overrides the allowed number."""
    if budget == "authors":
        used = sum(1 for turn in traj.turns if turn.action.lower().startswith(FOCUS_PREFIX))
        allowed = FOCUS_COUNT.get(traj.task_id, 1)
    else:
        used = len(focused_targets(traj))
        allowed = focus_limit_for(traj.task_name, traj.task_description)
    return used, allowed if limit is None else limit


def focused_targets(traj: Trajectory) -> set[str]:
    """Heads of the objects focused on so far (a focus counts once ScienceWorld confirms it)."""
    return {focus_head(target) for target in confirmed_foci(traj)}


def confirmed_foci(traj: Trajectory) -> list[str]:
    """The targets of the focus actions ScienceWorld confirmed so far, as written, in order."""
    return [
        target
        for turn in traj.turns
        if (target := focus_target(turn.action)) is not None and focus_confirmed(turn.observation) is not None
    ]
