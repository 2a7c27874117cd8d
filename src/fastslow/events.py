"""Typed, versioned trajectory events written as JSONL while a run goes (paper §4, Appendices D-E).

Every metric fastslow reports is computed from these logs, never from in-memory counters alone, so a
run can be re-scored, compared or audited after the fact. One file holds one episode: an
``episode_start`` header, then one event per env step and per model call, then ``episode_end``.
A file without ``episode_end`` is an unfinished episode (crash, kill) and is ignored by metrics.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import IO, Annotated, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

SCHEMA_VERSION = 1


class EndState(StrEnum):
    """How an episode stands after a step: still running, or why it ended."""

    RUNNING = "running"
    SUCCESS = "success"  # score reached 100
    FAILURE = "failure"  # the task failed: ScienceWorld reports score -100 and ends the episode
    STEP_LIMIT = "step_limit"  # the configured env-step limit was reached
    EARLY_STOP = "early_stop"  # the agent gave up (e.g. SwiftSage's long run without reward)
    ERROR = "error"  # the environment or agent raised a typed error (e.g. the JVM died)


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    t: float = Field(default_factory=time.time)
    """Wall-clock time (Unix seconds) when the event was created."""


class EpisodeStart(_Event):
    """Episode header: everything needed to reproduce and interpret the rest of the file."""

    event: Literal["episode_start"] = "episode_start"
    schema_version: int = SCHEMA_VERSION
    """Version of this event schema; bumped on incompatible changes."""
    episode_id: str
    """Stable id ``<task_id>-<variation>`` (plus ``-s<seed>`` when seeded), unique within a run."""
    task_id: int
    task_name: str
    variation: int
    split: str
    """Variation split the episode belongs to (train, dev, test)."""
    config_name: str
    config: dict[str, Any]
    """The fully resolved run configuration."""
    versions: dict[str, str]
    """Package versions: fastslow, scienceworld, python, ..."""
    git_commit: str | None = None
    task_description: str = ""
    seed: int | None = None


class EnvStep(_Event):
    """One call to ScienceWorld's step: exactly one per agent timestep."""

    event: Literal["env_step"] = "env_step"
    step: int
    """1-based env-step index within the episode."""
    action: str
    source: str
    """Who chose the action: oracle, swift, sage, critic, ..."""
    reason: str = ""
    """Why that source acted (e.g. the rule that escalated to Sage)."""
    observation: str
    score: int
    reward: int
    moves: int
    """ScienceWorld's own move counter (does not advance on every action)."""
    end: EndState
    n_valid: int
    """Size of the valid-action set after the step."""
    duration_ms: float
    """Time spent inside the environment adapter for this step."""


class ModelCall(_Event):
    """One call to a language model (Sage, Critic, benchmark), successful or not."""

    event: Literal["model_call"] = "model_call"
    step: int
    """Env step at which the call was made (0 before the first step)."""
    role: str
    """Why the model was called: sage_plan, sage_ground, critic, bench, ..."""
    backend: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    attempts: int = 1
    """Number of attempts, retries included."""
    error: str | None = None
    """Typed error name and message when the call failed after all retries."""
    messages: list[dict[str, str]] | None = None
    completion: str | None = None


class EpisodeEnd(_Event):
    """Episode footer; its presence marks the episode as finished."""

    event: Literal["episode_end"] = "episode_end"
    end: EndState
    final_score: int
    """Score at termination as ScienceWorld reports it (-100 on task failure)."""
    steps: int
    moves: int
    wall_s: float
    error: str | None = None


Event = Annotated[EpisodeStart | EnvStep | ModelCall | EpisodeEnd, Field(discriminator="event")]
_EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


class EventSink(Protocol):
    """Anything that accepts events: a JSONL file, a list in a test, a live view."""

    def emit(self, event: Event) -> None: ...


class ListSink:
    """Keeps events in memory (tests, live views)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)


class FanOut:
    """Sends each event to several sinks (e.g. the JSONL file and the live view)."""

    def __init__(self, *sinks: EventSink) -> None:
        self.sinks = sinks

    def emit(self, event: Event) -> None:
        for sink in self.sinks:
            sink.emit(event)


class JsonlWriter:
    """Appends one JSON line per event and flushes it, so a killed run loses at most one line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: IO[str] | None = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def emit(self, event: Event) -> None:
        if self._fh is None:
            raise ValueError(f"event log {self.path} is closed")
        self._fh.write(event.model_dump_json() + "\n")
        self._fh.flush()
        if isinstance(event, EpisodeEnd):
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def parse_event(line: str) -> Event:
    return _EVENT_ADAPTER.validate_json(line)


def iter_events(path: Path) -> Iterator[Event]:
    """Yield the events of one file. A truncated last line (a run killed mid-write) is skipped."""
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            yield parse_event(line)
        except ValueError:
            is_last = all(not rest.strip() for rest in lines[i + 1 :])
            if is_last and not line.endswith("}"):
                return
            raise


def read_events(path: Path) -> list[Event]:
    return list(iter_events(path))


def dump_events(events: Iterable[Event]) -> str:
    return "".join(json.dumps(e.model_dump(mode="json")) + "\n" for e in events)
