"""TextWorldExpress (``textworld-express==1.1.0``): fastslow's second world.

- ``benchmark.yaml`` / ``benchmark``: the games, their generation parameters, step limits, episode sets
  and the score mapping, as data; ``load_benchmark()``.
- ``adapter``: ``TextWorldExpressAdapter``, the ``Env`` of the agent loop (one JVM per adapter, one TWX
  interface per game inside it).
- ``gold``: the builder of the cached gold paths (``data/gold-<fold>.json``).
- ``semantics``: what TWX's actions and observations mean (verbs, objects, locations, feedback classes).
- ``world``: the benchmark as a ``fastslow.env.world.World`` (``env.world: textworldexpress``): games as
  tasks, its sets as episodes, each game's step limit.

Nothing outside ``fastslow.env.textworldexpress`` needs to know a TWX game or verb. The adapter (py4j,
the JVM) is imported only when used: ``from fastslow.env.textworldexpress import
TextWorldExpressAdapter`` works, importing the benchmark or the semantics does not start anything.
"""

from __future__ import annotations

from typing import Any

from fastslow.env.textworldexpress.benchmark import Benchmark, GameSpec, fold_of, load_benchmark

__all__ = ["Benchmark", "GameSpec", "TextWorldExpressAdapter", "fold_of", "load_benchmark"]


def __getattr__(name: str) -> Any:
    if name == "TextWorldExpressAdapter":
        from fastslow.env.textworldexpress.adapter import TextWorldExpressAdapter

        return TextWorldExpressAdapter
    raise AttributeError(name)
