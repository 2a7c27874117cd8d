"""AMM episodic records (paper §3.1): compact typed records, not transcripts.

A record keeps what makes a transition reusable elsewhere — task and task family, the local state
(room, inventory summary), a few preceding turns, the action, its observation and the score change —
plus a type tag (success / near-miss / avoidance) so retrieval can filter by operational meaning.
``MemoryRecord`` satisfies ``fastslow.core.proposal.MemoryHint`` (action, observation, tag).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

from fastslow.core.semantics import FUNCTION_WORDS

Tag = Literal["success", "near-miss", "avoidance"]
TAGS: tuple[Tag, ...] = ("success", "near-miss", "avoidance")
AUTHORS_TAG_NAMES: dict[Tag, str] = {
    "success": "episodic_success",
    "near-miss": "episodic_nearmiss",
    "avoidance": "avoidance",
}
"""The authors' names of the three primary tags (``amm/tagging.py``); their records carry them as text."""

_WORD = re.compile(r"[a-z0-9]+")
_FREQUENT = """are as at be by for has have here its or their then there these this was were which you your
    called room see also contains containing nothing"""
RECORD_STOPWORDS = FUNCTION_WORDS | frozenset(_FREQUENT.split())
"""AMM's record search leaves these out: English function words, and words in nearly every look of a
text world ("This room is called the kitchen.", "a pot (containing nothing)"); matching on them only
costs search time. Chosen on ScienceWorld's texts and kept for every world: a store's index and its
searches do not depend on the world that wrote the records."""


def new_id() -> str:
    return uuid.uuid4().hex[:16]


def content_words(text: str) -> list[str]:
    """Lower-case alphanumeric words without stopwords (``RECORD_STOPWORDS``), in order,
    duplicates kept."""
    return [w for w in _WORD.findall(text.lower()) if w not in RECORD_STOPWORDS and len(w) > 1]


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines, tabs, Unicode separators) made one space.

    Record text is observation text from the environment or a store; kept on one line it cannot start
    a line of its own in a prompt (a fake ``SYSTEM:`` header, a fake reply format).
    """
    return " ".join(text.split())


def inventory_summary(inventory: str, limit: int = 120) -> str:
    """ScienceWorld's inventory text reduced to its item list ('In your inventory, you see:' dropped)."""
    lines = [ln.strip() for ln in inventory.splitlines() if ln.strip()]
    items = [ln for ln in lines if not ln.lower().startswith("in your inventory")]
    text = ", ".join(items) if items else "empty"
    return text[:limit]


@dataclass(frozen=True)
class MemoryRecord:
    """One salient transition."""

    task_id: int
    task_name: str
    task_family: str
    """ScienceWorld topic of the task (the first part of its SwiftSage id, e.g. ``1`` for matter)."""
    episode_id: str
    step: int
    room: str
    inventory: str
    """Inventory summary (item list only)."""
    recent: tuple[str, ...]
    """Preceding turns as ``action -> observation`` lines, oldest first."""
    action: str
    observation: str
    score_before: int
    score_after: int
    tag: Tag
    subtag: str
    """Why the gate stored it: terminal, milestone, focus, progress, invalid-action, task-failure
    (``amm.write.tagging: fastslow``); the authors' names with ``tagging: authors`` (``AUTHORS_SUBTAGS``)."""
    task_description: str = ""
    """The task's full description (the authors' ``TASK:`` line); '' in records of the fastslow gate."""
    look: str = ""
    """``look around`` after the step (the authors' ``LOOK:`` line); '' in records of the fastslow gate."""
    id: str = field(default_factory=new_id)
    created: float = field(default_factory=time.time)

    @property
    def reward(self) -> int:
        return self.score_after - self.score_before

    def search_text(self) -> str:
        """What full-text search indexes and hybrid ranking embeds: the situation and the step, not the
        bookkeeping fields.

        A record of the authors' gate (it has a task description) reads as their record's content does
        in Letta, which indexes and embeds all of it: also the task description, the recent turns, the
        tag names and, last (an embedder keeps only the first few hundred tokens), the look text.
        """
        parts = [self.task_name.replace("-", " "), self.room, self.inventory, self.action, self.observation]
        if self.task_description:
            parts = [
                self.task_description,
                *parts,
                *self.recent,
                AUTHORS_TAG_NAMES[self.tag],
                self.subtag,
                self.look,
            ]
        return " ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["recent"] = list(self.recent)
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: Any) -> MemoryRecord:
        """A record from its ``to_dict`` form; ``RecordError`` if ``data`` is not one.

        Stores hold rows written by other processes and other versions, so the shape is checked here
        rather than trusted: a row that is not a record must be skippable, not a ``TypeError`` deep in
        a search.
        """
        if not isinstance(data, dict):
            raise RecordError(f"not a JSON object but {type(data).__name__}")
        missing = sorted(_REQUIRED - data.keys())
        if missing:
            raise RecordError(f"missing fields: {', '.join(missing)}")
        unknown = sorted(data.keys() - _FIELDS)
        if unknown:
            raise RecordError(f"unknown fields: {', '.join(unknown)}")
        for name, kind in _TYPES.items():
            if name in data and (not isinstance(data[name], kind) or isinstance(data[name], bool)):
                raise RecordError(f"field {name} is {type(data[name]).__name__}, not {kind.__name__}")
        created = data["created"]
        if not isinstance(created, int | float) or isinstance(created, bool):
            raise RecordError(f"field created is {type(created).__name__}, not a number")
        if data["tag"] not in TAGS:
            raise RecordError(f"unknown tag {data['tag']!r}")
        recent = data.get("recent", ())
        if not isinstance(recent, list | tuple) or not all(isinstance(line, str) for line in recent):
            raise RecordError("field recent is not a list of strings")
        return cls(**{**data, "recent": tuple(recent)})

    @classmethod
    def from_json(cls, text: str | bytes) -> MemoryRecord:
        try:
            data = json.loads(text)
        except (ValueError, TypeError) as exc:
            raise RecordError(f"not JSON: {exc}") from exc
        return cls.from_dict(data)


class RecordError(ValueError):
    """Stored data that is not a ``MemoryRecord`` (bad JSON, missing or mistyped fields)."""


_FIELDS = frozenset(f.name for f in fields(MemoryRecord))
# id and created have defaults, but a stored row without them is not one fastslow wrote. Rows written
# before the authors' gate existed have no task_description or look: they read as ''.
_OPTIONAL = frozenset({"recent", "task_description", "look"})
_REQUIRED = _FIELDS - _OPTIONAL
_TYPES: dict[str, type] = {
    "task_id": int,
    "task_name": str,
    "task_family": str,
    "episode_id": str,
    "step": int,
    "room": str,
    "inventory": str,
    "action": str,
    "observation": str,
    "score_before": int,
    "score_after": int,
    "tag": str,
    "subtag": str,
    "task_description": str,
    "look": str,
    "id": str,
}
