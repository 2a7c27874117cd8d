"""fastslow's TextWorldExpress benchmark: ``benchmark.yaml`` validated, its episode sets and gold cache.

The benchmark is data, not code: ``benchmark.yaml`` beside this module names the games, their generation
parameters, step limits and episode sets, the TWX games it leaves out and why (``excluded``), and
documents how TextWorldExpress (TWX) scores map onto fastslow's two score conventions. ``Benchmark``
validates it (unknown keys are errors); nothing here starts a JVM, so listing a set's episodes
(``episodes``) is cheap.

An episode is ``fastslow.env.episodes.Episode(task_id=<game index>, variation=<TWX seed>)``: the game's
index in the benchmark's game list (0 = the first game of the file) and a seed of one of TWX's folds
(``FOLDS``: train 0-999, dev 10000-10999, test 20000-20999; the fold is read from the seed, so a seed
names its split). Its id is ``Episode.episode_id`` as for ScienceWorld (``00-20000``).

Gold paths are cached once in ``data/gold-<fold>.json`` (``gold.py`` builds them): TWX's gold agent is
a random walk, and for twc and coin two calls for the same seed give different paths, so a path is only
reproducible when it is read from the cache. ``Benchmark.gold_path`` looks an episode up; a cache whose
provenance names other game parameters or another package version than the benchmark is refused
(``UsageError``), as a stale cache would replay paths of other games.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, PrivateAttr, ValidationError, model_validator

from fastslow.env.episodes import Episode
from fastslow.errors import UsageError
from fastslow.strict import StrictModel

Fold = Literal["train", "dev", "test"]
FOLDS: dict[Fold, range] = {
    "train": range(0, 1000),
    "dev": range(10000, 11000),
    "test": range(20000, 21000),
}
"""TWX 1.1.0's seed folds (``getValidSeedsTrain/Dev/Test``; a test checks them against the JVM). The
package does not check a seed against the fold it is generated in; the adapter always generates a seed
in its own fold, so each fold keeps its own object pool."""
GAME_NAMES: tuple[str, ...] = (
    "cookingworld",
    "twc",
    "coin",
    "mapreader",
    "arithmetic",
    "sorting",
    "simonsays",
    "peckingorder",
)
"""The games of TWX 1.1.0 (``textworld_express.GAME_NAMES``), in the order of the package's server."""
PACKAGE = "textworld-express==1.1.0"
"""The package (and version) whose games this benchmark defines; ``benchmark.yaml`` must name it."""
BENCHMARK_FILE = "benchmark.yaml"
DATA_PACKAGE = "fastslow.env.textworldexpress"


def fold_of(seed: int) -> Fold:
    """The fold a TWX seed belongs to; ``UsageError`` for a seed outside every fold."""
    for fold, seeds in FOLDS.items():
        if seed in seeds:
            return fold
    ranges = ", ".join(f"{f} {r.start}-{r.stop - 1}" for f, r in FOLDS.items())
    raise UsageError(f"seed {seed} is in no TextWorldExpress fold ({ranges})")


class GameSpec(StrictModel):
    """One game of the benchmark: what TWX generates and how long an episode may run."""

    name: str
    """TWX game name (``GAME_NAMES``)."""
    params: dict[str, int] = {}
    """Generation parameters passed to TWX's ``load`` as ``k=v,...`` (in file order). Empty = the game's
    own defaults (arithmetic and sorting have none)."""
    step_limit: int = Field(ge=1)
    """Env steps an episode may take before it ends at ``EndState.STEP_LIMIT``
    (``env.wrappers.TimeLimit``)."""
    tales: dict[str, int] | None = None
    """TALES' parameters for the game (``microsoft/tale-suite``), the easy end this benchmark is compared
    with; None where TALES does not run the game."""
    why: str
    """Why these parameters and this step limit, with the measurements they were chosen on (train/dev
    seeds only, never test) and where they differ from TALES'."""

    @model_validator(mode="after")
    def _known_game(self) -> GameSpec:
        if self.name not in GAME_NAMES:
            raise ValueError(f"unknown TextWorldExpress game '{self.name}' (known: {', '.join(GAME_NAMES)})")
        return self

    @property
    def param_string(self) -> str:
        """The parameters as TWX's ``load`` takes them: ``numLocations=4,includeDoors=1`` ('' for none)."""
        return ",".join(f"{k}={v}" for k, v in self.params.items())


class ExcludedGame(StrictModel):
    """A TWX game the benchmark does not play, and why."""

    name: str
    """TWX game name (``GAME_NAMES``)."""
    why: str
    """Why it is left out, with the measurement that decided it (train/dev seeds only, never test)."""

    @model_validator(mode="after")
    def _known_game(self) -> ExcludedGame:
        if self.name not in GAME_NAMES:
            raise ValueError(f"unknown TextWorldExpress game '{self.name}' (known: {', '.join(GAME_NAMES)})")
        return self


class EpisodeSetSpec(StrictModel):
    """A named set of episodes: the first ``per_game`` seeds of one fold, for every game."""

    fold: Fold
    """The TWX fold its seeds come from."""
    per_game: int = Field(ge=1, le=1000)
    """How many seeds of the fold, from its first: seeds ``FOLDS[fold][:per_game]``."""
    description: str
    """What the set is for."""


class Benchmark(StrictModel):
    """``benchmark.yaml``: the games, their parameters, step limits and episode sets."""

    package: str
    """The TWX package the parameters and gold paths belong to (``PACKAGE``)."""
    scoring: str
    """How TWX's score and flags map onto fastslow's ``StepResult`` and its two score conventions."""
    sets: dict[str, EpisodeSetSpec]
    """Episode sets by name (test, dev, warmup, train)."""
    games: list[GameSpec] = Field(min_length=1)
    """The games, in id order: an episode's ``task_id`` is its game's index here."""
    excluded: list[ExcludedGame] = []
    """TWX's games the benchmark leaves out, each with its reason; together with ``games`` they are every
    game of ``GAME_NAMES``, each once (a game dropped from ``games`` is recorded here, not forgotten)."""

    _gold_dir: Path | None = PrivateAttr(default=None)
    _gold_cache: dict[Fold, dict[str, dict[int, tuple[str, ...]]]] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> Benchmark:
        if self.package != PACKAGE:
            raise ValueError(f"benchmark is for {self.package}, this code drives {PACKAGE}")
        names = [g.name for g in self.games] + [g.name for g in self.excluded]
        if len(set(names)) != len(names):
            raise ValueError(f"a game is listed twice (games and excluded): {names}")
        if missing := [name for name in GAME_NAMES if name not in names]:
            raise ValueError(f"every TWX game is played or excluded: {', '.join(missing)} is neither")
        return self

    # -- games -------------------------------------------------------------------------------------------
    def game(self, task: int | str) -> tuple[int, GameSpec]:
        """The game ``task`` names, with its id: an index into ``games`` (int or digit string) or a game
        name. ``UsageError`` otherwise."""
        if isinstance(task, int) or task.strip().isdigit():
            index = int(task)
            if 0 <= index < len(self.games):
                return index, self.games[index]
            raise UsageError(f"unknown game id {task}: valid ids are 0-{len(self.games) - 1}")
        for index, spec in enumerate(self.games):
            if spec.name == task:
                return index, spec
        known = ", ".join(g.name for g in self.games)
        raise UsageError(f"unknown TextWorldExpress game '{task}' (this benchmark has {known})")

    # -- episode sets --------------------------------------------------------------------------------
    def set_seeds(self, set_name: str) -> tuple[int, ...]:
        """The seeds of a named set (the same for every game)."""
        spec = self.sets.get(set_name)
        if spec is None:
            raise UsageError(
                f"unknown episode set '{set_name}': choose one of {', '.join(sorted(self.sets))}"
            )
        return tuple(FOLDS[spec.fold][: spec.per_game])

    def episodes(
        self, set_name: str, games: list[int | str] | None = None, limit_per_game: int | None = None
    ) -> list[Episode]:
        """The episodes of a named set, game by game (game id order), seeds ascending; ``games`` keeps
        only those games (ids or names), ``limit_per_game`` the first seeds of each."""
        if limit_per_game is not None and limit_per_game < 1:
            raise UsageError(f"--limit-per-task must be >= 1, got {limit_per_game}")
        seeds = self.set_seeds(set_name)[:limit_per_game]
        ids = sorted({self.game(g)[0] for g in games}) if games is not None else range(len(self.games))
        return [Episode(game_id, seed) for game_id in ids for seed in seeds]

    # -- gold cache ----------------------------------------------------------------------------------
    def gold_path(self, game: int | str, seed: int) -> tuple[str, ...] | None:
        """The cached gold path of an episode (ends at its first success), None if not cached."""
        _, spec = self.game(game)
        return self._gold(fold_of(seed)).get(spec.name, {}).get(seed)

    def _gold(self, fold: Fold) -> dict[str, dict[int, tuple[str, ...]]]:
        cached = self._gold_cache.get(fold)
        if cached is None:
            cached = self._gold_cache[fold] = self._read_gold(fold)
        return cached

    @property
    def gold_dir(self) -> Traversable:
        """Where the gold cache files are: the package's ``data/`` for the shipped benchmark, the
        ``data/`` beside a benchmark file loaded from a path."""
        if self._gold_dir is None:
            return resources.files(DATA_PACKAGE) / "data"
        return self._gold_dir

    def _read_gold(self, fold: Fold) -> dict[str, dict[int, tuple[str, ...]]]:
        resource = self.gold_dir / gold_file_name(fold)
        if not resource.is_file():
            return {}
        data = json.loads(resource.read_text(encoding="utf-8"))
        check_gold_provenance(self, data, resource.name)
        return {
            game: {int(seed): tuple(path) for seed, path in paths.items()}
            for game, paths in data["games"].items()
        }


def gold_file_name(fold: Fold) -> str:
    """The gold cache file of a fold: ``gold-<fold>.json`` under the package's ``data/``."""
    return f"gold-{fold}.json"


def check_gold_provenance(benchmark: Benchmark, data: dict[str, Any], name: str) -> None:
    """Refuse a gold cache built for another package version or other game parameters."""
    prov = data.get("provenance", {})
    if prov.get("package") != benchmark.package:
        raise UsageError(
            f"gold cache {name} is for {prov.get('package')}, the benchmark for {benchmark.package}"
        )
    params = {g.name: g.params for g in benchmark.games}
    for game, built in prov.get("params", {}).items():
        if game in params and built != params[game]:
            raise UsageError(
                f"gold cache {name} was built for {game} {built}, the benchmark now says {params[game]}: "
                "rebuild it (python -m fastslow.env.textworldexpress.gold)"
            )


def parse_benchmark(text: str, what: str) -> Benchmark:
    """Validate a benchmark file's text; ``UsageError`` (one line, the first five problems) on invalid
    YAML or content."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UsageError(f"{what} is not valid YAML: {' '.join(str(exc).split())}") from None
    try:
        return Benchmark.model_validate(raw)
    except ValidationError as exc:
        problems = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5]]
        raise UsageError(f"{what}: {'; '.join(problems)}") from None


@cache
def _shipped() -> Benchmark:
    text = (resources.files(DATA_PACKAGE) / BENCHMARK_FILE).read_text(encoding="utf-8")
    return parse_benchmark(text, BENCHMARK_FILE)


def load_benchmark(path: Path | None = None) -> Benchmark:
    """The shipped benchmark (cached), or the one in ``path``."""
    if path is None:
        return _shipped()
    benchmark = parse_benchmark(path.read_text(encoding="utf-8"), str(path))
    benchmark._gold_dir = path.parent / "data"
    return benchmark
