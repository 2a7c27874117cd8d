"""What ``fastslow bench`` asks of a world, as world-neutral records (paper §4, the adapter's cost; §3.1,
AMM's retrieval latency).

A world answers through its ``World`` (``fastslow.env.world``): ``bench_env`` measures its adapter
against its package's own API and returns an ``AdapterBench``; ``sample_text`` is the ``SampleText``
the memory benchmark builds synthetic records from (None in a world that offers none). The
benchmarks in ``fastslow.bench`` import these types, never a world's package.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AdapterBench:
    """One ``fastslow bench env`` run: the world's adapter and its package's own API played the same
    actions in lockstep in one process, only their ``step`` calls timed."""

    headline: dict[str, Any]
    """The command's JSON line: steps, valid actions per step, steps/s of each side, their ratio,
    ``identical`` (every step agreed), and whatever else the world measures."""
    mismatches: tuple[str, ...] = ()
    """The steps (or resets) where the two sides' texts, scores or valid actions differ; the command
    exits 1 when there is one."""


@dataclass(frozen=True)
class SampleText:
    """Text shaped like a world's, to fill a memory store with synthetic records without playing
    (``fastslow bench memory``, ``bench.memory.synthetic_records``). Every record's task is one of the
    world's ``tasks()``; the rest is drawn from these pools."""

    objects: tuple[str, ...]
    """Object names, as the world's observations name them."""
    verbs: tuple[str, ...]
    """Verbs an action starts with (an action is ``"<verb> <object>"``)."""
    observations: tuple[str, ...]
    """Observation templates with ``{o}`` (the action's object) and ``{p}`` (another object)."""
    rooms: tuple[str, ...]
    """The rooms a record can be in."""
    recent_move: str
    """A move as a record's recent steps list it, ``"<action> -> <observation>"``, with ``{room}`` (the
    room the action names) and ``{other}`` (the room the observation names; drawn apart)."""
    task_description: str
    """A task description template with ``{task}`` (a task name in words), ``{o}``, ``{p}`` and
    ``{room}``."""
