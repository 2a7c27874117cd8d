"""Episode sets (paper §4 evaluation protocol; AMM warm-up, paper §3.1).

- ``test``: the first <=10 test variations of each of the 30 tasks -> the paper's 271 episodes.
- ``dev``: the first <=10 dev variations of each task (for tuning; never tune on test).
- ``warmup``: the first 2 train variations of each task (60 episodes) that fill AMM's store.
- ``train``: every train variation; ``all``: every variation of every task.
Explicit selections narrow a set: ``--tasks 0,3,5-8``, ``--variations 0-2``, ``--limit-per-task N``.
``--seeds 0-2`` plays every selected episode once per seed (``with_seeds``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fastslow.env.tasks import TEST_EPISODES_PER_TASK, Split, TaskInfo, all_tasks, get_task
from fastslow.errors import UsageError

SetName = Literal["test", "dev", "warmup", "train", "all"]
SET_NAMES: tuple[SetName, ...] = ("test", "dev", "warmup", "train", "all")
WARMUP_PER_TASK = 2
MAX_SELECTION = 10_000
"""Most numbers one ``0,3,5-8`` selection may expand to (every variation of every task is 7,207)."""
MAX_SEEDS = 100
"""Most seeds one ``--seeds`` selection may name: each plays the whole selection again."""
MAX_SEED = 2**31 - 1
"""Largest seed: model servers take a signed 32-bit seed."""


@dataclass(frozen=True, order=True)
class Episode:
    task_id: int
    variation: int
    seed: int | None = None
    """Sampling seed of the models playing it (``config.with_seed``); None = the config's own."""

    @property
    def episode_id(self) -> str:
        base = f"{self.task_id:02d}-{self.variation:04d}"
        return base if self.seed is None else f"{base}-s{self.seed}"

    def __str__(self) -> str:
        return f"{self.task_id} {self.variation}" + ("" if self.seed is None else f" seed {self.seed}")

    @classmethod
    def from_id(cls, episode_id: str) -> Episode:
        """The episode an ``episode_id`` names (``13-0027``, ``13-0027-s1``)."""
        parts = episode_id.split("-")
        try:
            if len(parts) == 2:
                return cls(int(parts[0]), int(parts[1]))
            if len(parts) == 3 and parts[2].startswith("s"):
                return cls(int(parts[0]), int(parts[1]), int(parts[2][1:]))
        except ValueError:
            pass
        raise UsageError(f"not an episode id: '{episode_id}' (expected like 13-0027 or 13-0027-s1)")


def with_seeds(episodes: list[Episode], seeds: list[int]) -> list[Episode]:
    """Every episode once per seed, seed by seed (so a partial run covers every task of the first
    seeds). Duplicate seeds are an error: the episode ids would collide."""
    if len(set(seeds)) != len(seeds):
        raise UsageError(f"--seeds has a repeated seed: {seeds}")
    if any(s < 0 for s in seeds):
        raise UsageError(f"--seeds must be >= 0, got {seeds}")
    return [Episode(e.task_id, e.variation, seed) for seed in seeds for e in episodes]


def parse_int_ranges(
    text: str, what: str, *, top: int | None = None, most: int = MAX_SELECTION, scope: str = ""
) -> list[int]:
    """Parse ``0,3,5-8`` into [0, 3, 5, 6, 7, 8] (repeats kept: callers decide what a repeat means).

    The bounds are checked on the numbers as written, before any range is expanded: a number above
    ``top`` (``scope`` says whose), or more than ``most`` numbers in all, is a one-line ``UsageError``,
    so ``0-99999999999`` costs no memory."""
    values: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        try:
            start, stop = (int(lo), int(hi)) if sep else (int(part), int(part))
        except ValueError:
            raise UsageError(f"bad {what} selection '{text}': use numbers and ranges like 0,3,5-8") from None
        if stop < start:
            raise UsageError(f"bad {what} selection '{text}': range {part} runs backwards")
        if top is not None and stop > top:
            known = f"{what} ids run from 0 to {top}{scope}"
            raise UsageError(f"bad {what} selection '{text}': unknown {what} id {stop} ({known})")
        if len(values) + (stop - start + 1) > most:
            raise UsageError(f"bad {what} selection '{text}': more than {most} {what}s")
        values.extend(range(start, stop + 1))
    if not values:
        raise UsageError(f"empty {what} selection '{text}'")
    return values


def parse_seeds(text: str) -> list[int]:
    """A ``--seeds`` selection: at most ``MAX_SEEDS`` seeds, each 0 to ``MAX_SEED``."""
    seeds = parse_int_ranges(text, "seed", most=MAX_SEEDS)
    if max(seeds) > MAX_SEED:
        raise UsageError(f"bad seed selection '{text}': seed {max(seeds)} is too large (at most {MAX_SEED})")
    return seeds


def _set_variations(task: TaskInfo, set_name: SetName) -> tuple[int, ...]:
    split_of: dict[SetName, Split] = {"test": "test", "dev": "dev", "warmup": "train", "train": "train"}
    if set_name == "all":
        return tuple(range(task.n_variations))
    variations = task.variations[split_of[set_name]]
    if set_name in ("test", "dev"):
        return variations[:TEST_EPISODES_PER_TASK]
    if set_name == "warmup":
        return variations[:WARMUP_PER_TASK]
    return variations


def select_episodes(
    set_name: str = "test",
    tasks: str | None = None,
    variations: str | None = None,
    limit_per_task: int | None = None,
) -> list[Episode]:
    """The episodes of a named set, narrowed by an explicit selection. Bad input raises UsageError."""
    if set_name not in SET_NAMES:
        raise UsageError(f"unknown episode set '{set_name}': choose one of {', '.join(SET_NAMES)}")
    if limit_per_task is not None and limit_per_task < 1:
        raise UsageError(f"--limit-per-task must be >= 1, got {limit_per_task}")
    known = all_tasks()
    task_infos = (
        [get_task(t) for t in parse_int_ranges(tasks, "task", top=len(known) - 1)]
        if tasks is not None
        else list(known)
    )
    wanted: set[int] | None = None
    if variations is not None:
        # no selected task has a variation above ``top``: a bigger number would select nothing but memory
        top = max(t.n_variations for t in task_infos) - 1
        scope = f" in tasks {tasks}" if tasks is not None else " in the task with the most"
        wanted = set(parse_int_ranges(variations, "variation", top=top, scope=scope))
    episodes: list[Episode] = []
    for task in task_infos:
        chosen = list(_set_variations(task, set_name))
        if wanted is not None:
            chosen = [v for v in chosen if v in wanted]
        if limit_per_task is not None:
            chosen = chosen[:limit_per_task]
        episodes.extend(Episode(task.task_id, v) for v in chosen)
    episodes = list(dict.fromkeys(episodes))  # `--tasks 3,3,13` plays task 3 once, in its first place
    if not episodes:
        raise UsageError(
            f"the selection is empty: set '{set_name}' has no variation {variations} "
            f"for tasks {tasks or '0-29'}"
        )
    return episodes
