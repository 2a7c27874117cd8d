"""Episode runner: one env.step per timestep, every step written as an event (paper §4).

The loop is deliberately tiny; everything an agent does between two steps (Swift, Sage, Gate-1,
memory) lives inside the agent, and everything observable goes to the event sink. The episode's step
limit (``config.env.step_limit``, SwiftSage's 300, as the config's world caps it for the task:
``World.step_limit``) is a ``TimeLimit`` wrapper the runner puts around the environment it is given; the
adapter itself knows no limit. The episode's task record and header come from the config's world
(``env.world``, ``fastslow.env.world``); the header names it.
"""

from __future__ import annotations

import platform
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path

from fastslow.agents import Agent, EarlyStop, EpisodeContext, Trials
from fastslow.config import RunConfig
from fastslow.core.step import StepResult
from fastslow.env.episodes import Episode
from fastslow.env.world import get_world
from fastslow.env.wrappers import Env, TimeLimit
from fastslow.errors import EnvError
from fastslow.eval.replay import Replay, ReplayDivergence
from fastslow.events import (
    EndState,
    EnvStep,
    EpisodeEnd,
    EpisodeStart,
    Event,
    EventSink,
    JvmHistory,
    MemoryFallback,
    ModelCall,
    TrialEnd,
)


@dataclass(frozen=True)
class EpisodeOutcome:
    episode: Episode
    end: EndState
    final_score: int
    steps: int
    wall_s: float
    error: str | None = None
    warnings: tuple[str, ...] = ()
    """Problems worth telling the person running the eval, once each (a memory store that fails, a
    model server that errors): the first occurrence of each kind in this episode, with its real cause."""


@cache
def versions(world_packages: tuple[str, ...] = ("scienceworld",)) -> dict[str, str]:
    """Python's version and those of fastslow, the world's packages (``World.packages``), py4j and
    pydantic."""
    out = {"python": platform.python_version()}
    for pkg in ("fastslow", *world_packages, "py4j", "pydantic"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


@cache
def git_commit() -> str | None:
    """Commit of the fastslow checkout this code runs from, if it is a git checkout."""
    here = Path(__file__).resolve().parent
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    commit = proc.stdout.strip()
    return commit if proc.returncode == 0 and commit else None


def _header(
    episode: Episode,
    config: RunConfig,
    task_description: str,
    replay: Replay | None,
    jvm: JvmHistory | None,
    stream_position: int | None = None,
) -> EpisodeStart:
    world = get_world(config.env.world)
    task = world.task(episode.task_id)
    return EpisodeStart(
        episode_id=episode.episode_id,
        task_id=task.task_id,
        task_name=task.name,
        variation=episode.variation,
        split=task.split_of(episode.variation),
        config_name=config.name,
        config=config.model_dump(mode="json"),
        versions=versions(world.packages),
        git_commit=git_commit(),
        task_description=task_description,
        seed=episode.seed,
        jvm=jvm,
        fork=replay.origin if replay is not None else None,
        world=world.name,
        stream_position=stream_position,
    )


class _WarningTap:
    """Passes events on and keeps the first failure of each kind worth telling the user about: a
    memory store that cannot be written or read, a model call that failed for good."""

    def __init__(self, sink: EventSink) -> None:
        self.sink = sink
        self.warnings: dict[str, str] = {}

    def emit(self, event: Event) -> None:
        if isinstance(event, MemoryFallback) and event.reason.startswith("store_error"):
            self.warnings.setdefault("store", f"memory store: {event.reason.removeprefix('store_error: ')}")
        elif isinstance(event, ModelCall) and event.error:
            self.warnings.setdefault(f"model:{event.role}", f"{event.role} model call failed: {event.error}")
        self.sink.emit(event)


def run_episode(
    env: Env,
    agent: Agent,
    episode: Episode,
    config: RunConfig,
    sink: EventSink,
    run_id: str = "",
    replay: Replay | None = None,
    jvm_history: Sequence[str] | None = None,
    stream_position: int | None = None,
) -> EpisodeOutcome:
    """Play one episode to its end and emit episode_start, env_step..., episode_end.

    ``env`` is the adapter of the config's world (or any ``Env``); the episode ends at the world's step
    limit for the task under ``config.env.step_limit`` (``World.step_limit``).
    ``run_id`` names the run the episode belongs to (AMM records carry it, see ``EpisodeContext``).
    ``replay``: a fork's (``eval/replay.py``): its first steps execute the parent's actions, each checked
    against the parent's log (a mismatch ends the episode with an error naming it), then a
    ``replay_end``; the agent is asked at every step all the same. ``stream_position``: the episode's
    place in its task's stream (``eval.stream``), recorded in the header; None outside a stream.

    An agent that plays trials (``agents.base.Trials``: Reflexion) is asked after each trial whether
    to play another; if so the env is reset to the same variation (the step limit counts each trial's
    steps), a ``trial_end`` event separates the trials, ``env_step`` events number on across them, and
    ``episode_end`` carries the last trial's end and score with the env steps of all trials. Under a
    ``replay`` the trials are played the same way, the env reset and ``next_trial`` asked at each end of
    a trial; the ends inside the replayed prefix are checked against the parent's (``Replay.trial_end``)."""
    start = time.perf_counter()
    tap = _WarningTap(sink)
    sink = tap
    world = get_world(config.env.world)
    env = TimeLimit(world.wrap(env, config.env), world.step_limit(episode.task_id, config.env.step_limit))
    end, error = EndState.ERROR, None
    result: StepResult | None = None
    before = 0  # env steps of the trials before the one played (agents.base.Trials)
    try:
        try:
            result = env.reset(episode.task_id, episode.variation, gold=agent.needs_gold)
        finally:
            jvm = None
            if jvm_history is not None:
                jvm = JvmHistory(episodes=list(jvm_history), gold=agent.needs_gold)
            description = result.task_description if result else ""
            sink.emit(_header(episode, config, description, replay, jvm, stream_position))
        ctx = EpisodeContext(
            world.task(episode.task_id),
            episode.variation,
            episode.episode_id,
            sink,
            world.semantics,
            env.gold_actions,
            run_id,
        )
        if replay is not None:
            replay.start(result.task_description)
        agent.reset(ctx, result)
        if replay is not None and replay.length == 0:
            sink.emit(replay.end())
        trial = 1  # the trial played (agents.base.Trials; 1 for every other agent)
        while True:
            try:
                while not result.done:
                    decision = agent.act(result)
                    if replay is not None:
                        decision = replay.decision(decision, before + result.steps + 1)
                    t0 = time.perf_counter()
                    result = env.step(decision.action)
                    step = EnvStep(
                        step=before + result.steps,
                        action=decision.action,
                        source=decision.source,
                        reason=decision.reason,
                        observation=result.observation,
                        score=result.score,
                        reward=result.reward,
                        moves=result.moves,
                        end=result.end,
                        n_valid=len(result.valid_actions),
                        duration_ms=1000 * (time.perf_counter() - t0),
                    )
                    sink.emit(step)
                    replayed = replay.check(step) if replay is not None else None
                    if replayed is not None:
                        sink.emit(replayed)
                    agent.observe(decision, result)
                end = result.end
            except EarlyStop as exc:
                end, error = EndState.EARLY_STOP, str(exc)
            if not isinstance(agent, Trials):
                if replay is not None:
                    replay.one_trial(before + result.steps)
                break
            # Reflexion's trials (agents.base.Trials): the same variation again, steps numbered on.
            more = agent.next_trial(end, result)
            ended = TrialEnd(
                step=before + result.steps,
                trial=trial,
                end=end,
                score=result.score,
                steps=result.steps,
                next=more,
            )
            sink.emit(ended)
            if replay is not None:
                replay.trial_end(ended)
            if not more:
                break
            trial, before, error = trial + 1, before + result.steps, None
            result = env.reset(episode.task_id, episode.variation, gold=agent.needs_gold)
            agent.reset(ctx, result)
    except EarlyStop as exc:
        end, error = EndState.EARLY_STOP, str(exc)
    except (EnvError, ReplayDivergence) as exc:
        end, error = EndState.ERROR, str(exc)
    score = result.score if result is not None else 0
    steps = before + result.steps if result is not None else 0
    moves = result.moves if result is not None else 0
    wall = time.perf_counter() - start
    sink.emit(EpisodeEnd(end=end, final_score=score, steps=steps, moves=moves, wall_s=wall, error=error))
    return EpisodeOutcome(episode, end, score, steps, wall, error, tuple(tap.warnings.values()))
