"""What Swift's imitation data is built from on TextWorldExpress: the benchmark's cached train gold paths.

``fastslow data gold --world textworldexpress`` (``fastslow.swift.data``) asks the world for its
``training_gold`` (this module's ``TrainingGold``); the rest goes through the ``World`` seam:

- **Which episodes.** The benchmark's ``train`` set (``World.select("train")``: the first 200 train
  seeds of every game), the first ``--per-task`` seeds of each game (0: all). Its first 5 seeds are the
  ``warmup`` set, AMM's warm-up: the same train seeds, never a dev or test one.
- **Where a gold path comes from.** The benchmark's verified cache, ``data/gold-train.json``
  (``Benchmark.gold_path``; ``gold.py`` built it: the shortest of 5 TWX gold paths, each replayed to
  SUCCESS at its last action). Never TWX's generator: its paths are random walks that differ between
  calls for twc and coin, so a dataset rebuilt from them would not be the same data.
- **How it is replayed.** On the world's adapter (``World.make_env``) under each game's step limit
  (``World.step_limit``), exactly as the ``oracle`` configuration replays the cache.

``provenance`` is what the dataset's manifest records of the world: the package, each game's
parameters and step limit, and the gold cache file (its sha256, date and command).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from fastslow.env.textworldexpress.benchmark import Benchmark, Fold, fold_of, gold_file_name
from fastslow.errors import UsageError

FOLD: Fold = "train"
"""The fold whose cached gold paths become training data (the benchmark's ``train`` set lies in it)."""


class TrainingGold:
    """The cached train gold paths of a TWX benchmark (module docstring)."""

    def __init__(self, benchmark: Benchmark) -> None:
        self.benchmark = benchmark

    def path(self, task_id: int, variation: int) -> tuple[str, ...] | None:
        """The cached gold path of a train episode (game id, seed), None if the cache lacks it; a seed
        of another fold is never training data (``UsageError``)."""
        if fold_of(variation) != FOLD:
            raise UsageError(f"seed {variation} is not a train seed: only train gold paths are training data")
        return self.benchmark.gold_path(task_id, variation)

    def provenance(self) -> dict[str, Any]:
        """What a dataset's manifest records of the world's side (module docstring)."""
        resource = self.benchmark.gold_dir / gold_file_name(FOLD)
        raw = resource.read_bytes()
        cache = json.loads(raw).get("provenance", {})
        return {
            "package": self.benchmark.package,
            "params": {g.name: g.params for g in self.benchmark.games},
            "step_limits": {g.name: g.step_limit for g in self.benchmark.games},
            "gold_cache": {
                "file": resource.name,
                "sha256": hashlib.sha256(raw).hexdigest(),
                "date": cache.get("date"),
                "command": cache.get("command"),
                "selection": cache.get("selection"),
            },
        }
