"""The trajectory an agent has seen so far: what Swift's features, Sage's prompts and SRM read.

One object per episode, updated after every env step, so every component sees the same history
(SwiftSage's input: task; time and score; recent actions with reward and observation; look;
inventory; visited rooms). It carries the world's ``WorldSemantics`` (``semantics``): what the
episode's text means to every component that reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fastslow.core.semantics import WorldSemantics
from fastslow.core.step import StepResult
from fastslow.vocab import StepSource

_PLACE = re.compile(r"called the ([^.]+)")


def place_of(look: str) -> str:
    """Where a ScienceWorld ``look around`` text is: the first sentence's "called the X" ('' if none).
    Unlike ``WorldSemantics.location`` it knows the outside ("This outside location is called the
    outside."), as the paper authors' room test does (their profile's Sage prompts)."""
    match = _PLACE.search(look.split(".")[0])
    return match.group(1).strip() if match else ""


@dataclass(frozen=True)
class Turn:
    """One executed step."""

    step: int
    action: str
    source: StepSource
    observation: str
    score: int
    reward: int


@dataclass
class Trajectory:
    task_id: int
    task_name: str
    variation: int
    task_description: str
    current: StepResult
    semantics: WorldSemantics
    """What the world's text means (``World.semantics``): rooms here, verbs and feedback to readers."""
    turns: list[Turn] = field(default_factory=list)
    visited_rooms: list[str] = field(default_factory=list)
    """Rooms in order of first visit."""
    room_looks: dict[str, str] = field(default_factory=dict)
    """Latest ``look around`` text of every visited room (Sage's planning prompt uses them)."""
    places: list[str] = field(default_factory=list)
    """Where the episode started, then where each turn ended (``place_of``; one more entry than
    ``turns``): the authors' Sage prompts say where each step happened."""
    place_looks: dict[str, str] = field(default_factory=dict)
    """Latest ``look around`` text of every place visited, the outside included (``place_of``)."""

    def __post_init__(self) -> None:
        self._visit(self.current)
        self._place(self.current)

    def _place(self, result: StepResult) -> None:
        place = place_of(result.look)
        self.places.append(place)
        if place:
            self.place_looks[place] = result.look  # a dict keeps first-visit order, as the authors'

    @property
    def room(self) -> str:
        return self.semantics.location(self.current.look)

    def _visit(self, result: StepResult) -> None:
        room = self.semantics.location(result.look)
        if room:
            if room not in self.room_looks:
                self.visited_rooms.append(room)
            self.room_looks[room] = result.look

    def record(self, action: str, source: StepSource, result: StepResult) -> None:
        self.turns.append(Turn(result.steps, action, source, result.observation, result.score, result.reward))
        self.current = result
        self._visit(result)
        self._place(result)

    def recent(self, n: int) -> list[Turn]:
        return self.turns[-n:] if n > 0 else []
