"""``fastslow bench swift``: milliseconds per Swift decision at ~3,000 valid actions (paper §3, Swift).

Swift is the fast path of the dual-process loop, so its decision must cost far less than the ~25-30 ms
env step. The benchmark gathers real valid actions by moving through the rooms of a ScienceWorld task
(its teleports: the world's ``exploration_moves``) until about ``n_actions`` distinct ones are known,
then times full decisions (features, scoring, top-k, and the Swift-only safety policy) on that state
while the history grows step by step, a different valid action each step. The first decision, which
hashes every action string once, is reported apart (``cold_first_ms``).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import numpy as np

from fastslow.core.proposal import Proposer
from fastslow.core.trajectory import Trajectory
from fastslow.env.config import DEFAULT_WORLD, EnvConfig
from fastslow.env.world import WorldEnv, get_world
from fastslow.swift.policy import SafetyPolicy


def gather_actions(env: WorldEnv, task: int, n_actions: int) -> tuple[Trajectory, list[str]]:
    """A trajectory on variation 0 of ScienceWorld's ``task`` (``env`` is a ScienceWorld adapter) and
    ~n_actions distinct real valid actions seen along it.

    Rooms of ``task`` are visited first; if they hold fewer actions, the rooms of the following
    tasks are visited too (a kitchen with every object of several tasks).
    """
    world = get_world(DEFAULT_WORLD)
    info, n_tasks = world.task(task), len(world.tasks())
    first = env.reset(task, 0)
    traj = Trajectory(info.task_id, info.name, 0, first.task_description, first, world.semantics)
    seen = dict.fromkeys(first.valid_actions)
    for other in range(task, task + n_tasks):
        if len(seen) >= n_actions:
            break
        start = first if other == task else env.reset(other % n_tasks, 0)
        # Every room the state offers a move to (nothing counts as visited): ScienceWorld's teleports.
        for action in world.semantics.exploration_moves(start.look, start.valid_actions, ()):
            if len(seen) >= n_actions:
                break
            result = env.step(action)
            if other == task:
                traj.record(action, "scripted", result)
            seen.update(dict.fromkeys(result.valid_actions))
    return traj, list(seen)[:n_actions]


def bench_swift(
    proposer: Proposer, policy: SafetyPolicy, task: int = 0, n_actions: int = 3000, decisions: int = 200
) -> dict[str, Any]:
    # The default env settings: the "easy" simplification (teleports), constant hash codes.
    with get_world(DEFAULT_WORLD).make_env(EnvConfig()) as env:
        traj, actions = gather_actions(env, task, n_actions)
    base = replace(traj.current, valid_actions=tuple(actions))
    traj.current = base
    times: list[float] = []
    for i in range(decisions):
        t0 = time.perf_counter()
        proposal = proposer.propose(traj)
        cands = [c.action for c in proposal.candidates]
        policy.adjust(
            cands, np.asarray([c.score for c in proposal.candidates], dtype=np.float32), base, traj.task_name
        )
        times.append(1000 * (time.perf_counter() - t0))
        # Grow the history so history-dependent features do real work, with a different action at
        # every step: the context keys of the last action and the last two are then new at every
        # decision, as in an episode (Swift's own top would repeat, and its context sums be reused).
        action = actions[(7919 * (i + 1)) % len(actions)]
        traj.record(
            action, "scripted", replace(base, observation=f"step {i}: {action}", steps=base.steps + i + 1)
        )
        policy.observe(base, action, base)
    # The first decision hashes every action string once (cold cache); it is reported apart.
    cold, arr = times[0], np.asarray(times[1:])
    return {
        "proposer": proposer.name,
        "valid_actions": len(actions),
        "decisions": decisions,
        "p50_ms": round(float(np.percentile(arr, 50)), 2),
        "p95_ms": round(float(np.percentile(arr, 95)), 2),
        "max_ms": round(float(arr.max()), 2),
        "cold_first_ms": round(cold, 2),
    }
