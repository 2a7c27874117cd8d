"""A world's tasks as ``TaskInfo`` records (paper §4; SwiftSage's task grouping).

Every world gives its tasks as ``TaskInfo`` (``World.tasks``): an id, a name, its variations (episode
ids) per split and the gold-path lengths of its test episodes, from which its length group comes (Short
<= 20 < Medium <= 50 < Long). ScienceWorld's table is ``fastslow.env.scienceworld.tasks``;
TextWorldExpress's games are ``fastslow.env.textworldexpress.world``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fastslow.errors import UsageError

Group = Literal["short", "medium", "long"]
Split = Literal["train", "dev", "test"]
SPLITS: tuple[Split, ...] = ("train", "dev", "test")


def length_group(oracle_length: float) -> Group:
    """Short 0<L<=20, Medium 20<L<=50, Long L>50 (paper §4)."""
    if oracle_length <= 20:
        return "short"
    if oracle_length <= 50:
        return "medium"
    return "long"


@dataclass(frozen=True)
class TaskInfo:
    task_id: int
    """The task's id in its world (ScienceWorld: 0-29, its task names in alphabetical order)."""
    name: str
    """The task's name in its world, e.g. ``boil`` (ScienceWorld), ``coin`` (TextWorldExpress)."""
    swiftsage_id: str
    """A second id the world knows the task by (ScienceWorld: SwiftSage's topic-task id, e.g. ``1-1``)."""
    title: str
    n_variations: int
    variations: dict[Split, tuple[int, ...]]
    oracle_lengths: dict[int, int]
    """Gold-path length of each test-set variation."""

    @property
    def oracle_length(self) -> float:
        lengths = list(self.oracle_lengths.values())
        return sum(lengths) / len(lengths)

    @property
    def group(self) -> Group:
        return length_group(self.oracle_length)

    def check_variation(self, variation: int) -> None:
        if not 0 <= variation < self.n_variations:
            raise UsageError(
                f"variation {variation} is outside task {self.task_id} ({self.name}): "
                f"valid 0-{self.n_variations - 1}"
            )

    def split_of(self, variation: int) -> Split:
        for split in SPLITS:
            if variation in self.variations[split]:
                return split
        raise UsageError(f"variation {variation} is not in any split of task {self.task_id} ({self.name})")
