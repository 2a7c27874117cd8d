"""``fastslow bench step``: where a fast-pathway timestep's time goes, agent against env (paper §3-4).

The dual-process premise is that System 1 (Swift, Gate-1, the stagnation detector, AMM's write hook)
costs little next to the environment step it chooses. This benchmark plays a fixed list of test
episodes with a fast-pathway configuration (``swift-srm`` by default, ~700 valid actions per step in
the ``easy`` setting) and times, side by side in the same loop:

- agent time per step: ``agent.act`` + ``agent.observe`` (everything but the env call, the agent's
  event logging included, as in a run);
- env time per step: the ``env.step`` call;
- reset time: ``env.reset`` without gold path, each episode reset ``resets`` times (the fast pathway
  never asks for the gold path), after one untimed reset that starts the JVM.

The loop is this module's own (``time.perf_counter`` around each call) so that the production runner
carries no timing beyond the ``duration_ms`` it always logs. With ``profile`` a ``cProfile`` profiler
runs around act + observe only (it inflates the agent times of that run, which says so).
"""

from __future__ import annotations

import cProfile
import io
import pstats
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fastslow.agents import EarlyStop, EpisodeContext
from fastslow.build import make_agent
from fastslow.config import RunConfig
from fastslow.env.episodes import Episode
from fastslow.env.world import get_world
from fastslow.env.wrappers import TimeLimit
from fastslow.eval.rundir import store_config
from fastslow.events import JsonlWriter

DEFAULT_EPISODES: tuple[Episode, ...] = tuple(
    Episode(task, variation)
    for task, variation in (
        (0, 21),  # boil
        (1, 21),  # change-the-state-of-matter-of
        (2, 25),  # chemistry-mix
        (8, 225),  # find-plant
        (10, 93),  # identify-life-stages-1
        (12, 10),  # inclined-plane-friction-named-surfaces
        (13, 6),  # identify-life-stages-2
        (21, 225),  # mendelian-genetics-known-plant
        (25, 15),  # power-component
        (27, 676),  # test-conductivity
        (29, 405),  # use-thermometer
    )
)
"""Test episodes of 11 tasks, Short to Long: about 530 steps with swift-srm's 100-step limit and ~750
valid actions per step (the test set's mean is ~710); a minute or so on one core."""

TARGET_RATIO = 0.25
"""Agent time at most a quarter of the env time per step (the fast pathway's budget)."""
TARGET_RESET_MS = 150.0
"""A reset without gold path, p50."""


@dataclass
class StepBench:
    config: str
    episodes: int = 0
    agent_ms: list[float] = field(default_factory=list)
    env_ms: list[float] = field(default_factory=list)
    valid_actions: list[int] = field(default_factory=list)
    """Valid actions the agent chose from, per step."""
    reset_ms: list[float] = field(default_factory=list)
    profiled: bool = False

    def headline(self) -> dict[str, Any]:
        agent, env, reset = (np.asarray(x) for x in (self.agent_ms, self.env_ms, self.reset_ms))

        def pct(values: np.ndarray[Any, Any], q: float) -> float:
            return round(float(np.percentile(values, q)), 2) if len(values) else 0.0

        ratio = float(agent.sum() / env.sum()) if env.sum() > 0 else 0.0
        return {
            "config": self.config,
            "episodes": self.episodes,
            "steps": len(agent),
            "mean_valid_actions": round(float(np.mean(self.valid_actions)), 1) if self.valid_actions else 0.0,
            "agent_ms_per_step": round(float(agent.mean()), 2) if len(agent) else 0.0,
            "env_ms_per_step": round(float(env.mean()), 2) if len(env) else 0.0,
            "agent_env_ratio": round(ratio, 3),
            "agent_ms_p50": pct(agent, 50),
            "agent_ms_p95": pct(agent, 95),
            "env_ms_p50": pct(env, 50),
            "env_ms_p95": pct(env, 95),
            "resets": len(reset),
            "reset_ms_p50": pct(reset, 50),
            "reset_ms_p95": pct(reset, 95),
            "target_agent_env_ratio": TARGET_RATIO,
            "target_reset_ms_p50": TARGET_RESET_MS,
            "profiled": self.profiled,
        }


def bench_step(
    config: RunConfig,
    episodes: Sequence[Episode] = DEFAULT_EPISODES,
    *,
    resets: int = 3,
    profile: cProfile.Profile | None = None,
    progress: Callable[[str], None] | None = None,
) -> StepBench:
    """Play ``episodes`` with ``config``'s agent and time agent, env and reset calls (see the module doc).

    ``resets``: timed resets per episode (the episode is played from the last one).
    """
    if resets < 1:
        raise ValueError(f"resets must be >= 1, got {resets}")
    result = StepBench(config.name, profiled=profile is not None)
    clock = time.perf_counter
    with tempfile.TemporaryDirectory(prefix="fastslow-bench-step-") as tmp:
        # AMM configs get a store of their own in the temp dir, as an eval gets DIR/memory.sqlite.
        config = store_config(config, Path(tmp))
        agent = make_agent(config)
        # The world's adapter under its own wrappers (ScienceWorld's authors' filter), as a run plays.
        world = get_world(config.env.world)
        env = TimeLimit(world.wrap(world.make_env(config.env), config.env), config.env.step_limit)
        try:
            first = episodes[0]
            # Starts the JVM and loads its classes: not a reset anyone waits for per episode.
            env.reset(first.task_id, first.variation)
            for episode in episodes:
                info = world.task(episode.task_id)
                for _ in range(resets):
                    t0 = clock()
                    state = env.reset(episode.task_id, episode.variation, gold=agent.needs_gold)
                    result.reset_ms.append(1000 * (clock() - t0))
                steps_before = len(result.agent_ms)
                with JsonlWriter(Path(tmp) / f"{episode.episode_id}.jsonl") as sink:
                    ctx = EpisodeContext(
                        info,
                        episode.variation,
                        episode.episode_id,
                        sink,
                        world.semantics,
                        env.gold_actions,
                        "bench",
                    )
                    agent.reset(ctx, state)
                    try:
                        while not state.done:
                            n_valid = len(state.valid_actions)
                            if profile is not None:
                                profile.enable()
                            t0 = clock()
                            decision = agent.act(state)
                            t1 = clock()
                            if profile is not None:
                                profile.disable()
                            state = env.step(decision.action)
                            t2 = clock()
                            if profile is not None:
                                profile.enable()
                            agent.observe(decision, state)
                            t3 = clock()
                            if profile is not None:
                                profile.disable()
                            result.agent_ms.append(1000 * ((t1 - t0) + (t3 - t2)))
                            result.env_ms.append(1000 * (t2 - t1))
                            result.valid_actions.append(n_valid)
                    except EarlyStop:
                        pass
                result.episodes += 1
                if progress:
                    n = len(result.agent_ms) - steps_before
                    agent_ms = result.agent_ms[steps_before:]
                    env_ms = result.env_ms[steps_before:]
                    progress(
                        f"{episode.episode_id} {info.name}: {n} steps, score {state.score} "
                        f"({state.end.value}), agent {sum(agent_ms) / max(n, 1):.1f} ms/step, env "
                        f"{sum(env_ms) / max(n, 1):.1f} ms/step, reset {result.reset_ms[-1]:.0f} ms"
                    )
        finally:
            env.close()
    return result


def profile_summary(profile: cProfile.Profile, top: int = 10) -> str:
    """The ``top`` functions by cumulative time (act + observe only), as pstats prints them."""
    out = io.StringIO()
    stats = pstats.Stats(profile, stream=out)
    # File names without their directories keep each row on one line of a terminal.
    stats.strip_dirs().sort_stats(pstats.SortKey.CUMULATIVE).print_stats(top)
    return out.getvalue()
