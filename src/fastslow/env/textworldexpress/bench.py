"""``fastslow bench env --world textworldexpress`` (``World.bench_env``, ``adapter_bench``): the
TextWorldExpress adapter's steps/s against the package's own API, in one run (paper §4's adapter
measurement, for the second world).

Both play the same episodes in lockstep in one process: the benchmark's games in turn, train seeds
from 0, each action a uniformly drawn valid action (``random.Random(policy_seed)``, one generator for
the whole run), until ``steps`` steps were taken; an episode ends at its flag or its game's step limit.
The raw side is ``textworld_express.TextWorldExpressEnv`` (``reset(seed, gameFold, gameName,
gameParams)``, ``step``), the adapter is ``TextWorldExpressAdapter``; each runs its own JVM, and which of
the two steps first alternates from step to step. Only the ``step`` calls are timed. Every step's
observation, look, inventory, valid actions and score (the raw 0-1 score times 100 while the episode
runs; the flags against ``EndState``) must agree: ``mismatches`` lists the steps that do not.

The target is an adapter at >= 0.8 of the raw rate (``TARGET_RATIO``). The raw ``step`` makes two py4j calls
(the JSON step, then the task description) where the adapter makes one, so the adapter is expected
faster.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fastslow.env.bench import AdapterBench
from fastslow.env.textworldexpress.adapter import TextWorldExpressAdapter
from fastslow.env.textworldexpress.benchmark import FOLDS, Benchmark, load_benchmark
from fastslow.errors import UsageError
from fastslow.events import EndState

TARGET_RATIO = 0.8
"""The least ratio of the adapter's steps/s to the raw API's that the benchmark accepts."""
DEFAULT_STEPS = 2000
"""Random-policy steps ``bench env`` plays when ``--steps`` is not given."""


@dataclass
class TwxBenchResult:
    steps: int
    episodes: int
    valid_actions: int
    """Total valid actions over all steps."""
    raw_s: float
    ours_s: float
    mismatches: list[str] = field(default_factory=list)

    @property
    def raw_steps_per_s(self) -> float:
        return self.steps / self.raw_s if self.raw_s else 0.0

    @property
    def ours_steps_per_s(self) -> float:
        return self.steps / self.ours_s if self.ours_s else 0.0

    @property
    def ratio(self) -> float:
        """Adapter steps/s over raw steps/s (the target is ``TARGET_RATIO``)."""
        return self.ours_steps_per_s / self.raw_steps_per_s if self.raw_steps_per_s else 0.0

    def headline(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "episodes": self.episodes,
            "mean_valid_actions": round(self.valid_actions / self.steps, 1) if self.steps else 0,
            "raw_steps_per_s": round(self.raw_steps_per_s, 1),
            "ours_steps_per_s": round(self.ours_steps_per_s, 1),
            "ratio": round(self.ratio, 2),
            "target_ratio": TARGET_RATIO,
            "identical": not self.mismatches,
        }


def bench_twx(
    steps: int = 2000,
    benchmark: Benchmark | None = None,
    policy_seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> TwxBenchResult:
    """Play ``steps`` random-policy steps through both APIs (module docstring) and time them."""
    from textworld_express import TextWorldExpressEnv

    bench = benchmark if benchmark is not None else load_benchmark()
    rng = random.Random(policy_seed)
    raw = TextWorldExpressEnv(envStepLimit=10**9)  # the raw side's own limit must never end an episode
    ours = TextWorldExpressAdapter(bench)
    taken = episodes = n_valid = 0
    raw_s = ours_s = 0.0
    mismatches: list[str] = []
    try:
        seed_iter = iter(FOLDS["train"])
        while taken < steps:
            seed = next(seed_iter)
            for game_id, spec in enumerate(bench.games):
                if taken >= steps:
                    break
                where = f"{spec.name} {seed}"
                raw_obs, raw_info = raw.reset(
                    seed=seed, gameFold="train", gameName=spec.name, gameParams=spec.param_string
                )
                result = ours.reset(game_id, seed)
                if (raw_obs, raw_info["validActions"]) != (result.observation, list(result.valid_actions)):
                    mismatches.append(f"{where}: reset differs")
                episodes += 1
                for i in range(1, spec.step_limit + 1):
                    action = rng.choice(result.valid_actions)
                    if i % 2:
                        t0 = time.perf_counter()
                        obs, _, _, info = raw.step(action)
                        t1 = time.perf_counter()
                        result = ours.step(action)
                        t2 = time.perf_counter()
                        raw_s, ours_s = raw_s + (t1 - t0), ours_s + (t2 - t1)
                    else:
                        t0 = time.perf_counter()
                        result = ours.step(action)
                        t1 = time.perf_counter()
                        obs, _, _, info = raw.step(action)
                        t2 = time.perf_counter()
                        ours_s, raw_s = ours_s + (t1 - t0), raw_s + (t2 - t1)
                    taken += 1
                    n_valid += len(result.valid_actions)
                    if not _agrees(obs, info, result):
                        mismatches.append(f"{where} step {i} ({action!r}) differs")
                    if result.done or taken >= steps:
                        break
            if progress:
                progress(f"seed {seed}: {taken} steps")
    finally:
        ours.close()
        raw.close()
    return TwxBenchResult(taken, episodes, n_valid, raw_s, ours_s, mismatches)


def adapter_bench(tasks: str | None, steps: int | None, say: Callable[[str], None]) -> AdapterBench:
    """``World.bench_env``: ``bench_twx`` over every game of the benchmark for ``steps`` steps
    (``DEFAULT_STEPS`` when None); a ``tasks`` selection is refused (the run plays every game)."""
    if tasks is not None:
        raise UsageError("--tasks: bench env on TextWorldExpress plays every game of the benchmark")
    steps = DEFAULT_STEPS if steps is None else steps
    if steps < 1:
        raise UsageError(f"--steps must be >= 1, got {steps}")
    say("world: textworldexpress")
    result = bench_twx(steps, progress=lambda line: say("  " + line))
    head = result.headline()
    say(
        f"  {head['steps']} steps in {head['episodes']} episodes, {head['mean_valid_actions']} valid "
        f"actions/step: raw {head['raw_steps_per_s']} steps/s, ours {head['ours_steps_per_s']} steps/s, "
        f"ratio {head['ratio']}x (target >= {head['target_ratio']}), identical={head['identical']}"
    )
    return AdapterBench({**head, "world": "textworldexpress"}, tuple(result.mismatches))


def _agrees(obs: str, info: dict[str, Any], result: Any) -> bool:
    if result.end is EndState.SUCCESS:
        flags_ok = bool(info["tasksuccess"]) and not info["taskfailure"]
    elif result.end is EndState.FAILURE:
        flags_ok = bool(info["taskfailure"]) or info["score"] < 0
    else:
        flags_ok = (
            not (info["tasksuccess"] or info["taskfailure"]) and round(100 * info["score"]) == result.score
        )
    return (
        flags_ok
        and obs == result.observation
        and info["look"] == result.look
        and info["inventory"] == result.inventory
        and info["validActions"] == list(result.valid_actions)
    )
