"""Difficulty proxies of a TWX game setting, measured on train and dev seeds (never test).

The benchmark's parameters (``benchmark.yaml``) were chosen before any agent could be trained on TWX,
so on numbers that can be measured without one:

- the gold path's length on train seeds, chosen as the cache chooses it (``gold.shortest_gold``: the
  shortest of 5 TWX gold paths cut at their first success): how many steps an expert needs, the analogue
  of ScienceWorld's oracle length (Short <= 20 < Medium <= 50 < Long); TWX's gold agent walks at random
  between its goals, so this can still overstate the shortest path;
- the number of valid actions along the gold path: how many choices a fast policy ranks per step;
- a random agent (a uniformly drawn valid action per step, ``random.Random(seed)``) within the game's
  step limit on dev seeds: its success and failure rates and its mean score in both conventions. A
  setting a random walk solves often leaves a learned agent little to show.

``python -m fastslow.env.textworldexpress.proxies --game cookingworld --params numLocations=6`` prints
them as JSON (``--help``); without ``--params`` the benchmark's own parameters are measured.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from collections.abc import Sequence
from typing import Any

from fastslow.env.textworldexpress.adapter import TextWorldExpressAdapter
from fastslow.env.textworldexpress.benchmark import FOLDS, Benchmark, GameSpec, load_benchmark
from fastslow.env.textworldexpress.gold import shortest_gold
from fastslow.events import EndState


def random_episode(
    adapter: TextWorldExpressAdapter, game: int | str, seed: int, step_limit: int
) -> tuple[EndState, int, int]:
    """Play one episode with uniformly random valid actions: (end, final score, best score)."""
    rng = random.Random(seed)
    result = adapter.reset(game, seed)
    best = 0
    for _ in range(step_limit):
        result = adapter.step(rng.choice(result.valid_actions))
        best = max(best, result.score)
        if result.done:
            return result.end, result.score, best
    return EndState.STEP_LIMIT, result.score, best


def measure(
    adapter: TextWorldExpressAdapter,
    game: int | str,
    gold_seeds: Sequence[int],
    random_seeds: Sequence[int],
    step_limit: int,
) -> dict[str, Any]:
    """The proxies of one game of ``adapter.benchmark`` (module docstring)."""
    lengths: list[int] = []
    valid: list[int] = []
    gold_successes = 0
    for seed in gold_seeds:
        path = shortest_gold(adapter, game, seed) or ()
        result = adapter.reset(game, seed)
        valid.append(len(result.valid_actions))
        for action in path:
            result = adapter.step(action)
            if not result.done:
                valid.append(len(result.valid_actions))
        gold_successes += result.end is EndState.SUCCESS
        lengths.append(len(path))
    ends: list[EndState] = []
    paper: list[int] = []
    strict: list[int] = []
    for seed in random_seeds:
        end, final, best = random_episode(adapter, game, seed, step_limit)
        ends.append(end)
        paper.append(max(best, final, 0))
        strict.append(max(final, 0))
    cuts = statistics.quantiles(lengths, n=10) if len(lengths) > 1 else lengths * 9
    return {
        "game": adapter.benchmark.game(game)[1].name,
        "params": adapter.benchmark.game(game)[1].params,
        "step_limit": step_limit,
        "gold": {
            "seeds": len(gold_seeds),
            "reach_success": gold_successes,
            "length_mean": round(statistics.fmean(lengths), 1),
            "length_median": statistics.median(lengths),
            "length_p10_p90": [round(cuts[0], 1), round(cuts[-1], 1)],
            "length_max": max(lengths),
            "over_step_limit": sum(n > step_limit for n in lengths),
            "valid_actions_mean": round(statistics.fmean(valid), 1),
            "valid_actions_max": max(valid),
        },
        "random_agent": {
            "seeds": len(random_seeds),
            "success": round(sum(e is EndState.SUCCESS for e in ends) / len(ends), 3),
            "failure": round(sum(e is EndState.FAILURE for e in ends) / len(ends), 3),
            "mean_score": round(statistics.fmean(paper), 1),
            "mean_score_strict": round(statistics.fmean(strict), 1),
        },
    }


def with_params(benchmark: Benchmark, game: str, params: dict[str, int], step_limit: int | None) -> Benchmark:
    """A copy of ``benchmark`` whose ``game`` has other parameters (and step limit)."""
    games: list[GameSpec] = []
    for spec in benchmark.games:
        if spec.name == game:
            spec = spec.model_copy(update={"params": params, "step_limit": step_limit or spec.step_limit})
        games.append(spec)
    return benchmark.model_copy(update={"games": games})


def _params(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in filter(None, text.split(",")):
        key, _, value = part.partition("=")
        out[key.strip()] = int(value)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--game", action="append", help="game name (repeatable; default: every game)")
    parser.add_argument("--params", help="k=v,... instead of the benchmark's parameters (one --game)")
    parser.add_argument("--step-limit", type=int, help="instead of the benchmark's step limit")
    parser.add_argument("--seeds", type=int, default=50, help="train seeds for gold, dev seeds for random")
    args = parser.parse_args(argv)
    benchmark = load_benchmark()
    games = args.game or [g.name for g in benchmark.games]
    if args.params is not None:
        if len(games) != 1:
            parser.error("--params needs exactly one --game")
        benchmark = with_params(benchmark, games[0], _params(args.params), args.step_limit)
    with TextWorldExpressAdapter(benchmark) as adapter:
        for game in games:
            limit = args.step_limit or benchmark.game(game)[1].step_limit
            row = measure(adapter, game, FOLDS["train"][: args.seeds], FOLDS["dev"][: args.seeds], limit)
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
