"""Sage's demonstrations on TextWorldExpress: one solved **train** episode per game, as plain
``action -> observation`` lines (``controller.sage.demo``; the twx-constrained-* configurations).

The paper's authors show Sage solved episodes of the task at hand (their ScienceWorld demos, in their
FUNC grammar: ``fastslow.env.scienceworld.demos``). The SwiftSage-shaped prompts these configurations
use read plain actions, so a TWX demo is the world's own text:

- **Which episode.** For each game, the cached gold path of median length among the first
  ``CANDIDATES`` seeds of the benchmark's ``train`` set (``data/gold-train.json``, the same cache Swift
  is trained on; never a dev or test seed): a typical episode, not a lucky short one (coin's shortest
  finds the coin in the first room).
- **What a line says.** The first observation ("start -> ..."), then each action of that path replayed
  on the adapter with TWX's observation, flattened to one line and cut at ``OBSERVATION_CHARS`` ("(no
  text)" where TWX answers nothing, as Simon says does); at most ``MAX_LINES`` actions (a longer path is
  cut, and the demo says so).

``fastslow data sage-demos --world textworldexpress`` (``World.rebuild_knowledge``) writes
``data/sage_demos.json``, which the package ships; ``demos_for`` reads it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from fastslow.core.authors import Demo
from fastslow.env.textworldexpress.benchmark import DATA_PACKAGE, Benchmark, load_benchmark
from fastslow.errors import EnvError

DEMOS_FILE = "sage_demos.json"
CANDIDATES = 20
"""Train seeds per game among which the shortest gold path is the demo."""
MAX_LINES = 15
OBSERVATION_CHARS = 100
_TRAIN_SET = "train"


def _line(action: str, observation: str) -> str:
    text = " ".join(observation.split()) or "(no text)"
    if len(text) > OBSERVATION_CHARS:
        text = text[: OBSERVATION_CHARS - 3] + "..."
    return f"{action} -> {text}"


def build_demo(adapter: Any, benchmark: Benchmark, task_id: int) -> Demo:
    """The demo of game ``task_id`` (module docstring), replayed on ``adapter`` (a
    ``TextWorldExpressAdapter``). ``EnvError`` when no candidate seed has a cached gold path."""
    game = benchmark.games[task_id]
    seeds = benchmark.set_seeds(_TRAIN_SET)[:CANDIDATES]
    paths = [(seed, benchmark.gold_path(task_id, seed)) for seed in seeds]
    cached = sorted((len(path), seed, path) for seed, path in paths if path)
    if not cached:
        raise EnvError(f"no cached train gold path for {game.name} among seeds {seeds[0]}-{seeds[-1]}")
    _, seed, path = cached[len(cached) // 2]
    result = adapter.reset(task_id, seed)
    task = result.task_description.strip()
    lines = [_line("start", result.observation)]
    for action in path[:MAX_LINES]:
        result = adapter.step(action)
        lines.append(_line(action, result.observation))
    if len(path) > MAX_LINES:
        lines.append(f"(and {len(path) - MAX_LINES} more actions to the end)")
    return Demo(task_id, seed, task, tuple(lines))


def build_demos(
    tasks: Sequence[int] | None = None,
    progress: Callable[[str], None] | None = None,
    commit: str | None = None,
) -> dict[str, Any]:
    """The demo file's content for ``tasks`` (default: every game of the benchmark)."""
    from fastslow.env.textworldexpress.adapter import TextWorldExpressAdapter  # the JVM: only here

    benchmark = load_benchmark()
    ids = list(tasks) if tasks is not None else list(range(len(benchmark.games)))
    out: dict[str, list[dict[str, Any]]] = {}
    with TextWorldExpressAdapter(benchmark) as adapter:
        for task_id in ids:
            demo = build_demo(adapter, benchmark, task_id)
            out[str(task_id)] = [demo.as_json()]
            if progress is not None:
                progress(f"{benchmark.games[task_id].name}: seed {demo.variation}, {len(demo.lines)} lines")
    return {
        "provenance": {
            "package": benchmark.package,
            "source": f"data/gold-train.json, the median-length path of the first {CANDIDATES} train seeds",
            "max_lines": MAX_LINES,
            "observation_chars": OBSERVATION_CHARS,
            "commit": commit,
        },
        "demos": out,
    }


def demos_path() -> Path:
    """The packaged demo file."""
    return Path(str(resources.files(DATA_PACKAGE) / "data" / DEMOS_FILE))


@cache
def load_demos() -> dict[int, tuple[Demo, ...]]:
    """The packaged demos by game id ({} when the file is missing)."""
    path = demos_path()
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {
        int(task): tuple(Demo(int(task), d["variation"], d["task"], tuple(d["lines"])) for d in demos)
        for task, demos in data["demos"].items()
    }


def demos_for(task_id: int) -> tuple[Demo, ...]:
    """The packaged demos of a game; () when it has none."""
    return load_demos().get(task_id, ())
