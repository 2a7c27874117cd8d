"""Memory records and a memory-reading scripted Swift for the integration tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastslow.core.proposal import MemoryHint, Proposal, RankedAction
from fastslow.core.trajectory import Trajectory
from fastslow.memory.records import MemoryRecord


class MemorySwift:
    """Proposes ``default`` without memories; with memories, the memories' actions (as a Swift that
    learnt to copy a relevant success would). Records every memory list it was shown."""

    name = "memory-scripted"

    def __init__(self, default: Sequence[str]) -> None:
        self.default = list(default)
        self.seen: list[list[str]] = []

    def propose(self, traj: Trajectory, memories: Sequence[MemoryHint] | None = None) -> Proposal:
        if memories:
            self.seen.append([m.action for m in memories])
            actions = [m.action for m in memories]
        else:
            actions = self.default
        return Proposal(tuple(RankedAction(a, 1.0 - 0.1 * i) for i, a in enumerate(actions)), 0.9)


def record(action: str, observation: str, *, task_id: int = 13, **kw: Any) -> MemoryRecord:
    """A success memory of task 13 (identify-life-stages-2) in the hallway."""
    values: dict[str, Any] = {
        "task_id": task_id,
        "task_name": "identify-life-stages-2",
        "task_family": "10",
        "episode_id": "13-9",
        "step": 2,
        "room": "hallway",
        "inventory": "empty",
        "recent": ("look around -> This room is called the hallway.",),
        "action": action,
        "observation": observation,
        "score_before": 0,
        "score_after": 25,
        "tag": "success",
        "subtag": "milestone",
    }
    values.update(kw)
    return MemoryRecord(**values)
