"""Build the benchmark's gold-path cache: ``data/gold-<fold>.json``, once, with provenance.

TWX's gold agent walks at random between its goals, so a seed's gold path differs between calls for
some games (twc, coin) and twc's runs on past its success. The cache fixes one path per episode:

1. ``shortest_gold``: ``tries`` paths from TWX's generator (``TextWorldExpressAdapter.generate_gold``,
   each cut at its first success), each replayed on a fresh game; the shortest that ends in SUCCESS at
   its last step is kept (ties: the first). A shorter path is a better demonstration for a trained Swift
   and a truer oracle length.
2. Every episode of every set's fold (the largest ``per_game`` of the fold's sets: warmup is part of
   train) is built so; an episode without a successful path is an error (the parameters are wrong).
3. The oracle check: every cached path is replayed from the cache, as the ``oracle`` agent would
   (``reset(..., gold=True)``, ``gold_source == "cache"``) under the game's step limit
   (``env.wrappers.TimeLimit``); the number that reached SUCCESS is recorded in the file's provenance.

``--games`` rebuilds only the games it names: every other game of the benchmark keeps the paths of the
existing file in ``--out``, which must hold them for the benchmark's parameters and seeds (else
``EnvError``: rebuild that game too). twc's and coin's paths are random walks, so a full rebuild would
change games whose parameters did not. A game no longer in the benchmark is dropped from the file. The
oracle check still replays every game; the provenance's ``kept`` names the kept games and the date and
command of the file they were kept from.

The file: ``{"provenance": {...}, "games": {<game>: {<seed>: [actions...]}}}``, one episode per line.
Provenance names the package, each game's parameters and step limit (``Benchmark.gold_path`` refuses a
cache whose parameters differ from the benchmark's), the date, the command, how paths were chosen,
per-game length statistics and the oracle count.

``python -m fastslow.env.textworldexpress.gold [--folds test,dev,train] [--games G,...] [--tries 5]
[--out DIR]``
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fastslow.env.textworldexpress.adapter import TextWorldExpressAdapter
from fastslow.env.textworldexpress.benchmark import (
    FOLDS,
    Benchmark,
    Fold,
    gold_file_name,
    load_benchmark,
)
from fastslow.env.wrappers import TimeLimit
from fastslow.errors import EnvError
from fastslow.events import EndState

TRIES = 5
"""TWX gold paths generated per episode; the shortest successful one is cached."""
SOURCE_DIR = Path(__file__).parent / "data"
"""Where the shipped cache lives in the source tree (the builder's default output)."""

Paths = dict[str, dict[int, tuple[str, ...]]]
"""game name -> seed -> gold path."""


def replay(
    adapter: TextWorldExpressAdapter, game: int | str, seed: int, path: Sequence[str]
) -> tuple[EndState, int]:
    """Play ``path`` from a fresh reset: (end state, steps taken). Stops at the first end."""
    result = adapter.reset(game, seed)
    for steps, action in enumerate(path, start=1):
        result = adapter.step(action)
        if result.done:
            return result.end, steps
    return result.end, len(path)


def reaches_success(
    adapter: TextWorldExpressAdapter, game: int | str, seed: int, path: Sequence[str]
) -> bool:
    """Whether ``path`` ends the episode in SUCCESS exactly at its last action."""
    end, steps = replay(adapter, game, seed, path)
    return end is EndState.SUCCESS and steps == len(path) > 0


def shortest_gold(
    adapter: TextWorldExpressAdapter, game: int | str, seed: int, tries: int = TRIES
) -> tuple[str, ...] | None:
    """The shortest of ``tries`` TWX gold paths that reach SUCCESS at their last step; None if none does."""
    best: tuple[str, ...] | None = None
    for _ in range(tries):
        path = adapter.generate_gold(game, seed)
        if (best is None or len(path) < len(best)) and reaches_success(adapter, game, seed, path):
            best = path
    return best


def fold_seeds(benchmark: Benchmark) -> dict[Fold, tuple[int, ...]]:
    """The seeds each fold's cache holds: the first ``max(per_game)`` of the fold over its sets."""
    counts: dict[Fold, int] = {}
    for spec in benchmark.sets.values():
        counts[spec.fold] = max(counts.get(spec.fold, 0), spec.per_game)
    return {fold: tuple(FOLDS[fold][:n]) for fold, n in counts.items()}


def oracle_check(benchmark: Benchmark, paths: Paths) -> dict[str, int]:
    """Replay every path as the ``oracle`` agent would: from the cache (a copy of ``benchmark`` holding
    ``paths``), under each game's step limit, on a fresh JVM. Counts of episodes and successes."""
    holder = benchmark.model_copy()
    holder._gold_cache = {fold: paths for fold in FOLDS}  # a seed names its fold: one dict serves all
    episodes = successes = 0
    with TextWorldExpressAdapter(holder) as adapter:
        for game, by_seed in paths.items():
            env = TimeLimit(adapter, benchmark.game(game)[1].step_limit)
            for seed in by_seed:
                result = env.reset(game, seed, gold=True)
                if adapter.gold_source != "cache":
                    raise EnvError(f"{game} {seed}: the oracle check did not read the cache")
                for action in adapter.gold_actions:
                    result = env.step(action)
                    if result.done:
                        break
                episodes += 1
                successes += result.end is EndState.SUCCESS
    return {"episodes": episodes, "success": successes}


def _stats(lengths: list[int]) -> dict[str, Any]:
    return {
        "episodes": len(lengths),
        "length_mean": round(statistics.fmean(lengths), 2),
        "length_median": statistics.median(lengths),
        "length_min": min(lengths),
        "length_max": max(lengths),
    }


def kept_paths(
    benchmark: Benchmark, path: Path, seeds: Sequence[int], games: Sequence[str]
) -> tuple[Paths, dict[str, Any]]:
    """The paths of ``games`` in the existing cache file ``path`` and that file's provenance; ``EnvError``
    unless it holds each of them for the benchmark's parameters and exactly ``seeds``."""
    if not path.is_file():
        raise EnvError(f"{path} does not exist: build every game (no --games)")
    data = json.loads(path.read_text(encoding="utf-8"))
    prov = data.get("provenance", {})
    kept: Paths = {}
    for game in games:
        params = benchmark.game(game)[1].params
        by_seed = {int(seed): tuple(p) for seed, p in data.get("games", {}).get(game, {}).items()}
        if prov.get("package") != benchmark.package or prov.get("params", {}).get(game) != params:
            raise EnvError(
                f"{path.name} holds no {game} paths for {benchmark.package} {params}: rebuild {game} too"
            )
        if sorted(by_seed) != list(seeds):
            raise EnvError(f"{path.name} holds other {game} seeds than the benchmark's: rebuild {game} too")
        kept[game] = by_seed
    return kept, prov


def build(
    benchmark: Benchmark,
    folds: Sequence[Fold] | None = None,
    tries: int = TRIES,
    out_dir: Path = SOURCE_DIR,
    command: str = "",
    progress: Callable[[str], None] | None = None,
    games: Sequence[str] | None = None,
) -> dict[Fold, dict[str, Any]]:
    """Build, verify and write the cache of ``folds`` (default: every fold a set uses); returns each
    written file's provenance. ``games`` (names) rebuilds only those games and keeps the others' paths
    from the existing file in ``out_dir`` (module docstring). ``EnvError`` names the episodes without a
    successful gold path (nothing is written for their fold)."""
    wanted = fold_seeds(benchmark)
    rebuild = [benchmark.game(g)[1].name for g in games] if games is not None else None
    out: dict[Fold, dict[str, Any]] = {}
    for fold in folds or list(wanted):
        seeds = wanted.get(fold, ())
        paths: Paths = {}
        kept: dict[str, Any] = {}
        if rebuild is not None:
            others = [g.name for g in benchmark.games if g.name not in rebuild]
            old_paths, old = kept_paths(benchmark, out_dir / gold_file_name(fold), seeds, others)
            paths.update(old_paths)
            kept = {"games": others, "date": old.get("date"), "command": old.get("command")}
        missing: list[str] = []
        with TextWorldExpressAdapter(benchmark) as adapter:
            for spec in benchmark.games:
                if spec.name in paths:
                    continue
                paths[spec.name] = {}
                for seed in seeds:
                    path = shortest_gold(adapter, spec.name, seed, tries)
                    if path is None:
                        missing.append(f"{spec.name} {seed}")
                    else:
                        paths[spec.name][seed] = path
                if progress:
                    progress(f"{fold} {spec.name}: {len(paths[spec.name])} paths")
        if missing:
            raise EnvError(f"no gold path reached success in {tries} tries: {', '.join(missing)}")
        paths = {g.name: paths[g.name] for g in benchmark.games}  # the benchmark's order
        oracle = oracle_check(benchmark, paths)
        if progress:
            progress(f"{fold} oracle: {oracle['success']}/{oracle['episodes']} at success")
        provenance = {
            "package": benchmark.package,
            "fold": fold,
            "seeds": f"{seeds[0]}-{seeds[-1]} (the first {len(seeds)} of the fold), every game",
            "params": {g.name: g.params for g in benchmark.games},
            "step_limits": {g.name: g.step_limit for g in benchmark.games},
            "selection": (
                f"the shortest of {tries} TWX gold paths (generateGoldPath=True), each cut at its first "
                "success and replayed to SUCCESS at its last action"
            ),
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "command": command,
            **({"kept": kept} if kept else {}),
            "lengths": {game: _stats([len(p) for p in by_seed.values()]) for game, by_seed in paths.items()},
            "oracle": oracle,
        }
        write(out_dir / gold_file_name(fold), provenance, paths)
        out[fold] = provenance
    return out


def write(path: Path, provenance: dict[str, Any], paths: Paths) -> None:
    """Write a cache file: provenance first, then one line per episode (diffs stay readable)."""
    lines = ["{", f'"provenance": {json.dumps(provenance, indent=1)},', '"games": {']
    games = list(paths.items())
    for g, (game, by_seed) in enumerate(games):
        lines.append(f"{json.dumps(game)}: {{")
        seeds = sorted(by_seed)
        for i, seed in enumerate(seeds):
            comma = "," if i < len(seeds) - 1 else ""
            lines.append(f"{json.dumps(str(seed))}: {json.dumps(list(by_seed[seed]))}{comma}")
        lines.append("}," if g < len(games) - 1 else "}")
    lines += ["}", "}"]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    json.loads(tmp.read_text(encoding="utf-8"))  # the hand-made layout must still be JSON
    tmp.replace(path)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--folds", help="comma-separated folds (default: every fold a set uses)")
    parser.add_argument(
        "--games", help="comma-separated games to rebuild; the others keep their paths from --out's files"
    )
    parser.add_argument("--tries", type=int, default=TRIES, help="gold paths generated per episode")
    parser.add_argument("--out", type=Path, default=SOURCE_DIR, help="output directory")
    args = parser.parse_args(argv)
    folds: list[Fold] = []
    for name in (args.folds or "").split(","):
        if name and name not in FOLDS:
            parser.error(f"unknown fold {name}")
        if name:
            folds.append(name)
    games = [g for g in (args.games or "").split(",") if g] if args.games is not None else None
    command = "python -m fastslow.env.textworldexpress.gold " + shlex.join(
        sys.argv[1:] if argv is None else argv
    )
    build(
        load_benchmark(),
        folds or None,
        args.tries,
        args.out,
        command.strip(),
        lambda m: print(m, flush=True),
        games,
    )


if __name__ == "__main__":
    main()
