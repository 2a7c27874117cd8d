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
