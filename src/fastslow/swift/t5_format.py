"""The Flan-T5 Swift's input, in the exact format SwiftSage's ``swift_sw`` checkpoint was trained on.

One place defines the format: inference (``T5Swift.propose``) and our own fine-tuning
(``seq2seq_pairs`` behind ``fastslow train swift-t5``) both render through ``render_trajectory``, so a
model we train sees the bytes that SwiftSage's checkpoint saw, and the reverse.

The format is SwiftSage v1's fourth input version as its evaluation loop builds it at every Swift call:

* the task text without ScienceWorld's "Task Description:" header;
* ``Time`` is the number of env steps so far plus one; ``Score`` is the best score reached so far (the
  loop never lowers its recorded score: a drop, -100 included, keeps the last best and earns +0);
* the action history starts with the loop's seed line, "look around" observed as "N/A", then every
  executed action with the rise in best score it earned; it is cleaned (``clean_history``) and its last
  10 lines are shown, numbered with T5 sentinels from ``<extra_id_10>`` downwards;
* the current look and inventory, then the rooms visited so far;
* finally the whole text is flattened (newlines and tabs become " | ") and two noisy parentheticals,
  "(that is open)" and "(containing nothing)", are cut out.

The layout is the template ``prompts/swift_t5.j2``; the state it is filled with is derived here, from
the trajectory alone (SwiftSage's lists of places, recent actions, observations, scores and rewards),
with one exception: which earlier states Swift was asked at, which SwiftSage's in-place history cleaning
depends on (``clean_history``'s ``renamed``; by default every state, as in training; ``T5Swift`` counts
its own calls). The tokenizer then adds T5's own end token and truncates at 1,024 tokens
(``SOURCE_MAX_TOKENS`` in ``swift/t5.py``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from fastslow.core.proposal import MemoryHint
from fastslow.core.semantics import WorldSemantics
from fastslow.core.trajectory import Trajectory
from fastslow.templates import prompt_template

TEMPLATE = "swift_t5.j2"
HISTORY_LINES = 10
"""History lines shown (after cleaning)."""
TASK_HEADER = "Task Description:\n"
SEED_ACTION = "look around"
SEED_OBSERVATION = "N/A"
"""The line SwiftSage's loop starts its history with, before the agent has acted."""
NOISE = ("(that is open)", "(containing nothing)")
"""Parentheticals cut out of the whole input (every open door and empty container says them)."""


class TurnView(Protocol):
    """What the format reads of one executed step (``core.trajectory.Turn`` satisfies this)."""

    @property
    def action(self) -> str: ...

    @property
    def observation(self) -> str: ...

    @property
    def score(self) -> int:
        """The env's score after the step, 0-100 (-100 once failed)."""
        ...


@dataclass(frozen=True)
class HistoryLine:
    """One line of the action history, with the loop's score bookkeeping."""

    action: str
    observation: str
    best: int
    """Best score reached up to and including this step (never lower than the line before)."""
    gain: int
    """How much this step raised ``best`` (never negative)."""


def flatten(text: str) -> str:
    """One line of text: a newline-tab (a listed item), a newline and a tab each become " | "."""
    out = text.replace("\n\t", " | ").replace("\n", " | ").replace("\t", " | ")
    # The checkpoint's vocabulary knows the room as one word.
    return out.replace("green house", "greenhouse")


def drop_noise(text: str) -> str:
    """Cut the parentheticals in ``NOISE``; the spaces around them stay (the checkpoint saw them)."""
    for phrase in NOISE:
        text = text.replace(phrase, "")
    return text


def task_text(task_description: str) -> str:
    """The task without ScienceWorld's header line."""
    return task_description.removeprefix(TASK_HEADER)


def as_percent_int(score: int) -> int:
    """A 0-100 score as SwiftSage prints it: its loop stores scores as fractions (``score / 100``) and
    prints ``int(fraction * 100)``, which floors 29, 57 and 58 to one less. Reproduced on purpose: the
    checkpoint was trained on those numbers."""
    return int(score / 100 * 100)


def history_lines(turns: Sequence[TurnView]) -> list[HistoryLine]:
    """The loop's full history: the seed line, then one line per executed step."""
    lines = [HistoryLine(SEED_ACTION, SEED_OBSERVATION, 0, 0)]
    best = 0
    for turn in turns:
        # The loop keeps its score when the env's drops (or fails with -100): scores never decrease.
        now = max(best, turn.score)
        lines.append(HistoryLine(turn.action, turn.observation, now, now - best))
        best = now
    return lines


def _as_walk(line: HistoryLine, semantics: WorldSemantics) -> HistoryLine:
    """A teleport written as a walk (``WorldSemantics.walked``): the checkpoint was trained on full-game
    gold paths, which walk."""
    walked = semantics.walked(line.action, line.observation)
    if walked is None:
        return line
    return HistoryLine(walked[0], walked[1], line.best, line.gain)


def clean_history(
    lines: Sequence[HistoryLine], semantics: WorldSemantics, renamed: int | None = None
) -> list[HistoryLine]:
    """SwiftSage's history cleaning, as its loop applies it at a Swift call.

    Examine actions are dropped; teleports read as "go to"; an action that recurs within the next two
    lines is dropped (only its later copy stays). SwiftSage renames teleports in place in its running
    history, at every call: a line is compared with the later lines as they stand, renamed if an
    earlier call saw them and still a "teleport" if not. ``renamed``: how many of the oldest lines an
    earlier call saw; by default all but the newest (Swift asked at every state, as in training). (Its
    rules for negative scores never fire: the loop's recorded scores are never negative.)
    """
    walked = [_as_walk(line, semantics) for line in lines]
    before = len(lines) - 1 if renamed is None else renamed
    compared = [(walked[i] if i < before else line).action for i, line in enumerate(lines)]
    kept: list[HistoryLine] = []
    for i, line in enumerate(walked):
        if line.action.startswith("examine"):
            continue
        if line.action in compared[i + 1 : i + 3]:
            continue
        kept.append(line)
    return kept


def moved_to(observation: str) -> str | None:
    """The place an observation says the agent moved to ("You move to the kitchen." -> "kitchen"), as
    SwiftSage reads it: whatever follows "move to the ", less the final character (the full stop)."""
    at = observation.find("move to the")
    if at == -1:
        return None
    return observation[at + len("move to the ") : -1].strip()


_ARRIVAL = re.compile(r"^You (?:move|teleport|move through the door) to the (.+)\.$")
"""ScienceWorld's observations for going to a place, teleporting there, and going through its door."""


def _arrival(observation: str) -> str | None:
    """Where a walk or teleport took the agent (None if the step did not move it)."""
    match = _ARRIVAL.match(observation)
    return match.group(1) if match else None


def visited_places(visited_rooms: Sequence[str], observations: Sequence[str]) -> list[str]:
    """The places SwiftSage lists as visited, in its order.

    At every state SwiftSage adds the place a "move to the X" observation names, then the room its look
    names. The look names only rooms, never the outside ("This outside location is called ..."), so
    the outside enters the list when the agent walks there, between the rooms it saw before and after.
    The trajectory keeps the rooms (``visited_rooms``, first-visit order) but not the state each was
    first seen at, so the agent's location is followed through the observations of moves. It
    starts in the first visited room, unless the first move leads there (then the start was the outside,
    or that room itself, which lists the same).
    """
    rooms = set(visited_rooms)
    arrivals = [a for a in map(_arrival, observations) if a is not None]
    start = visited_rooms[0] if visited_rooms and arrivals[:1] != [visited_rooms[0]] else None
    places: list[str] = []
    seen_rooms: list[str] = []

    def add(place: str | None) -> None:
        if place is not None and place not in places:
            places.append(place)

    def at(location: str | None) -> None:
        if location in rooms:
            add(location)
            if location not in seen_rooms:
                seen_rooms.append(location)

    location = start
    at(location)
    for observation in observations:
        add(moved_to(observation))
        location = _arrival(observation) or location
        at(location)
    if seen_rooms != list(visited_rooms):
        # The agent changed rooms without a walk or teleport observation (none is known): keep every
        # room and named place, in the trajectory's order.
        places = list(visited_rooms)
        for place in map(moved_to, observations):
            if place is not None and place not in places:
                places.append(place)
    return places


def render_v4(
    task_description: str,
    steps: int,
    turns: Sequence[TurnView],
    look: str,
    inventory: str,
    visited_rooms: Sequence[str],
    memories: Sequence[MemoryHint] = (),
    renamed: int | None = None,
    *,
    semantics: WorldSemantics,
) -> str:
    """The T5 input for one state.

    ``steps``: env steps taken so far (0 at reset); ``turns``: every executed step of the episode, oldest
    first; ``look``, ``inventory``: the current ones, as ScienceWorld writes them; ``visited_rooms``: in
    order of first visit, current room included. ``memories`` (AMM's trigger T1) are not part of
    SwiftSage's format, which has no memory section: when given, they are one extra section before the
    question, and without them the input is SwiftSage's byte for byte. ``renamed``: see
    ``clean_history`` (its lines count SwiftSage's seed line).
    """
    history = clean_history(history_lines(turns), semantics, renamed)
    text = prompt_template(TEMPLATE).render(
        task=task_text(task_description),
        time=steps + 1,
        # The score of the last line kept: a dropped trailing examine shows the score before it.
        score=as_percent_int(history[-1].best),
        history=[
            {"action": h.action, "gain": as_percent_int(h.gain), "observation": h.observation}
            for h in history[-HISTORY_LINES:]
        ],
        first_sentinel=HISTORY_LINES,
        look=look,
        inventory=inventory,
        places=visited_places(visited_rooms, [t.observation for t in turns]),
        memories=[{"tag": m.tag, "action": m.action, "observation": m.observation} for m in memories],
    )
    return drop_noise(flatten(text))


def render_trajectory(
    traj: Trajectory, memories: Sequence[MemoryHint] | None = None, renamed: int | None = None
) -> str:
    """The T5 input for the trajectory's current state (``renamed``: see ``clean_history``)."""
    cur = traj.current
    return render_v4(
        traj.task_description,
        cur.steps,
        traj.turns,
        cur.look,
        cur.inventory,
        traj.visited_rooms,
        memories or (),
        renamed,
        semantics=traj.semantics,
    )


_SPAN = re.compile(r".*<extra_id_0>(.*)<extra_id_1>.*")


def decoded_action(raw: str) -> str:
    """An action from T5's decoded output, special tokens included, as SwiftSage reads it.

    A sentinel-framed answer ("<extra_id_0> ... <extra_id_1>") keeps only its span; then every
    ``<...>`` token (pad, end, sentinels) goes and words are joined by single spaces.
    """
    span = _SPAN.match(raw)
    text = span.group(1) if span else raw
    words = text.replace("<", " <").split(" ")
    return " ".join(w for w in words if w.strip() and not w.startswith("<")).strip()
