"""TextWorldExpress as a ``fastslow.env.world.World``: the benchmark's games as tasks, its sets as episodes.

- **Tasks.** A task is a game of ``benchmark.yaml``: ``task_id`` is its index in the benchmark's game
  list, ``name`` the TWX game name (``GameInfo``, a ``TaskInfo``). Its ``variations`` per split are the
  whole TWX fold (train 0-999, dev 10000-10999, test 20000-20999: any seed of a fold can be played, and
  the seed names its split); its ``oracle_lengths`` are the lengths of the cached gold paths of the
  benchmark's test set (``data/gold-test.json``), so the Short/Medium/Long groups of ScienceWorld's
  metrics apply unchanged (cookingworld is medium, the other games short).
- **Episodes.** ``select`` lists a benchmark set (test, dev, warmup, train: ``Benchmark.set_seeds``) for
  the selected games: ``--tasks`` takes game ids and ranges (``0,2-3``) or game names
  (``cookingworld,twc``), in the order given (a repeat keeps its first place, as ScienceWorld's);
  ``--variations`` keeps the set's seeds it names (``20000-20004``), ``--limit-per-task`` the first of
  them.
- **Step limits.** An episode stops at its game's limit (benchmark.yaml), or at ``env.step_limit`` when
  that is smaller: a config's 300 (or the oracle's 1000) leaves each game its own.
- **Family.** A game is its own family (AMM's ``task_family``).
- **Training gold.** ``training_gold``: the cached train gold paths that ``fastslow data gold --world
  textworldexpress`` replays into Swift's imitation data (``training.py``; not part of the ``World``
  protocol: ``swift.data`` asks a world for it by name).

Nothing here starts a JVM; ``make_env`` returns a ``TextWorldExpressAdapter`` whose JVM starts at its
first reset. ScienceWorld-only settings are refused by ``EnvConfig`` before a world is asked anything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import TYPE_CHECKING

from fastslow.core.semantics import WorldSemantics
from fastslow.env.episodes import Episode, parse_int_ranges
from fastslow.env.tasks import SPLITS, TaskInfo
from fastslow.env.textworldexpress.benchmark import FOLDS, Benchmark, fold_of, load_benchmark
from fastslow.env.textworldexpress.semantics import SEMANTICS
from fastslow.env.wrappers import Env
from fastslow.errors import UsageError

if TYPE_CHECKING:
    from pathlib import Path

    from fastslow.core.authors import Demo
    from fastslow.env.bench import AdapterBench, SampleText
    from fastslow.env.config import EnvConfig
    from fastslow.env.textworldexpress.adapter import TextWorldExpressAdapter
    from fastslow.env.textworldexpress.training import TrainingGold
    from fastslow.env.world import World

TEST_SET = "test"
"""The benchmark set whose cached gold paths give each game's oracle length (its length group)."""


class GameInfo(TaskInfo):
    """A TWX game as a task (module docstring). A variation is a TWX seed: valid when it lies in a fold."""

    def check_variation(self, variation: int) -> None:
        fold_of(variation)  # UsageError for a seed in no fold


def game_infos(benchmark: Benchmark) -> tuple[GameInfo, ...]:
    """The benchmark's games as task records, in id order (module docstring)."""
    test_seeds = benchmark.set_seeds(TEST_SET)
    infos = []
    for game_id, spec in enumerate(benchmark.games):
        lengths = {}
        for seed in test_seeds:
            path = benchmark.gold_path(game_id, seed)
            if path is not None:
                lengths[seed] = len(path)
        if not lengths:
            raise UsageError(
                f"the TextWorldExpress gold cache has no {TEST_SET} path of {spec.name}: rebuild it "
                "(python -m fastslow.env.textworldexpress.gold)"
            )
        infos.append(
            GameInfo(
                task_id=game_id,
                name=spec.name,
                swiftsage_id="",  # not a SwiftSage task
                title=f"TextWorldExpress {spec.name}" + (f" ({spec.param_string})" if spec.params else ""),
                n_variations=sum(len(seeds) for seeds in FOLDS.values()),
                variations={split: tuple(FOLDS[split]) for split in SPLITS},
                oracle_lengths=lengths,
            )
        )
    return tuple(infos)


@cache
def _shipped_infos() -> tuple[GameInfo, ...]:
    return game_infos(load_benchmark())


class TextWorldExpress:
    """The shipped benchmark (``benchmark.yaml``) as a world."""

    name = "textworldexpress"
    packages: tuple[str, ...] = ("textworld-express",)
    semantics: WorldSemantics = SEMANTICS

    @property
    def benchmark(self) -> Benchmark:
        return load_benchmark()

    @property
    def training_gold(self) -> TrainingGold:
        """The cached train gold paths Swift's imitation data replays (``fastslow data gold --world
        textworldexpress``; ``training.TrainingGold``)."""
        from fastslow.env.textworldexpress.training import TrainingGold

        return TrainingGold(self.benchmark)

    def make_env(self, env: EnvConfig) -> TextWorldExpressAdapter:
        from fastslow.env.textworldexpress.adapter import TextWorldExpressAdapter

        return TextWorldExpressAdapter(self.benchmark, jvm_timeout_s=env.jvm_timeout_s)

    def wrap(self, env: Env, settings: EnvConfig) -> Env:
        """``env`` unchanged: TextWorldExpress has no wrapper of its own."""
        return env

    def tasks(self) -> tuple[GameInfo, ...]:
        return _shipped_infos()

    def task(self, task: int | str) -> GameInfo:
        """By game id or game name (``Benchmark.game``)."""
        game_id, _ = self.benchmark.game(task)
        return self.tasks()[game_id]

    def family(self, task_id: int) -> str:
        return self.task(task_id).name

    def select(
        self,
        set_name: str,
        tasks: str | None = None,
        variations: str | None = None,
        limit_per_task: int | None = None,
    ) -> list[Episode]:
        bench = self.benchmark
        if limit_per_task is not None and limit_per_task < 1:
            raise UsageError(f"--limit-per-task must be >= 1, got {limit_per_task}")
        seeds = list(bench.set_seeds(set_name))
        game_ids = self._games(tasks) if tasks is not None else list(range(len(bench.games)))
        if variations is not None:
            top = max(r.stop for r in FOLDS.values()) - 1
            wanted = set(
                parse_int_ranges(variations, "variation", top=top, scope=" (TextWorldExpress seeds)")
            )
            seeds = [s for s in seeds if s in wanted]
        seeds = seeds[:limit_per_task]
        episodes = [Episode(game_id, seed) for game_id in game_ids for seed in seeds]
        if not episodes:
            raise UsageError(
                f"the selection is empty: set '{set_name}' has no seed {variations} for games "
                f"{tasks or f'0-{len(bench.games) - 1}'}"
            )
        return episodes

    def _games(self, tasks: str) -> list[int]:
        """Game ids of a ``--tasks`` selection: ids, ranges and names, comma-separated; repeats keep
        their first place."""
        bench = self.benchmark
        ids: list[int] = []
        for part in (p.strip() for p in tasks.split(",")):
            if not part:
                continue
            if part[0].isdigit():
                ids += parse_int_ranges(part, "game", top=len(bench.games) - 1)
            else:
                ids.append(bench.game(part)[0])
        if not ids:
            raise UsageError(f"empty game selection '{tasks}'")
        return list(dict.fromkeys(ids))

    def step_limit(self, task_id: int, configured: int) -> int:
        """The game's own limit (benchmark.yaml), or ``configured`` when that is smaller."""
        return min(self.benchmark.game(task_id)[1].step_limit, configured)

    def sage_demos(self, task_id: int) -> tuple[Demo, ...]:
        """One solved train episode per game (``demos``: the median-length cached gold path)."""
        from fastslow.env.textworldexpress.demos import demos_for

        return demos_for(task_id)

    def replay_caveat(self, env: EnvConfig) -> str | None:
        """None: a game is a function of its seed and the actions (only the gold-path generator of twc
        and coin draws differently between calls, and a replay does not ask for gold paths)."""
        return None

    def bench_env(self, tasks: str | None, steps: int | None, say: Callable[[str], None]) -> AdapterBench:
        """Random valid actions through ``textworld_express``'s own API and the adapter
        (``bench.adapter_bench``); takes ``--steps``, refuses ``--tasks`` (every game is played)."""
        from fastslow.env.textworldexpress.bench import adapter_bench

        return adapter_bench(tasks, steps, say)

    #: None: ``fastslow bench memory``'s synthetic records are ScienceWorld-shaped; no TextWorldExpress
    #: text is sampled for them.
    sample_text: SampleText | None = None

    def rebuild_task_table(self, out: Path | None, say: Callable[[str], None]) -> Path:
        """Refused: the tasks are ``benchmark.yaml``'s games, and their gold-path lengths come from the
        gold cache (``python -m fastslow.env.textworldexpress.gold``)."""
        raise UsageError(
            "data tasks rebuilds ScienceWorld's task table; TextWorldExpress's tasks are the games of its "
            "benchmark.yaml (gold paths: python -m fastslow.env.textworldexpress.gold)"
        )

    def task_procedures(self) -> None:
        """None: no hand-written task logic for TextWorldExpress's games (``procedures.enabled`` changes
        nothing here)."""
        return None

    def focus_judge(self) -> None:
        """None: no focus, so no task-specific focus rules."""
        return None

    def rebuild_knowledge(
        self,
        name: str,
        out: Path | None,
        tasks: Sequence[int] | None,
        per_task: int | None,
        say: Callable[[str], None],
        commit: str | None,
    ) -> tuple[Path, dict[str, int]]:
        """sage-demos: one solved train episode per game for Sage's prompt (``demos.build_demos``). The
        rest is refused: TextWorldExpress has no hand-written task logic, so no knowledge files."""
        if name == "sage-demos":
            import json

            from fastslow.env.textworldexpress.demos import build_demos, demos_path

            data = build_demos(tasks, progress=say, commit=commit)
            target = out or demos_path()
            target.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
            return target, {"tasks": len(data["demos"]), "demos": sum(len(d) for d in data["demos"].values())}
        raise UsageError(
            f"data {name} builds a knowledge file of ScienceWorld's task logic; TextWorldExpress has none"
        )


WORLD: World = TextWorldExpress()
