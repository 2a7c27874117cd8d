"""Forks of an agent that plays trials (Reflexion, ``agents.base.Trials``): a real two-trial Reflexion run
on TextWorldExpress (its real JVM, the real embedded SmolLM2-135M-Instruct) forked inside its second
trial, at that trial's first step and inside its first trial. Under the parent's own configuration each
fork repeats its parent event for event: the env reset at the trial boundary, the reflection answered
from the parent's response cache and carried into the next trial's prompts, the ``trial_end`` events
where the parent has them. A fork whose trials cannot end where the parent's did is refused before
anything is written, or ends with a replay divergence naming the end of the trial; the ``Replay``'s
trial checks themselves are tested on made-up events (an agent that stops a trial on its own)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fastslow.agents import Decision
from fastslow.config import load_config
from fastslow.env.world import get_world
from fastslow.errors import UsageError
from fastslow.eval.evaluate import evaluate
from fastslow.eval.fork import fork_episode, read_parent
from fastslow.eval.replay import Replay, ReplayDivergence
from fastslow.events import (
    EndState,
    EnvStep,
    EpisodeEnd,
    EpisodeStart,
    ForkOrigin,
    ModelCall,
    ReplayEnd,
    TrialEnd,
    read_events,
)

OVERRIDES = [
    "env.world=textworldexpress",
    "env.step_limit=2",
    "agent.settings.max_trials=2",
    # short replies and prompts, for speed: act only, a short reflection, no look
    "agent.settings.think_max_chars=0",
    "agent.settings.reflection_max_chars=40",
    "agent.settings.max_look_chars=0",
]
"""Two trials of two steps: steps 1-2 are trial 1 (its end after step 2, a reflection), 3-4 trial 2."""
TIMING = {"t", "duration_ms", "latency_s", "wall_s"}
CACHE = {"cached", "attempts"}
"""A fork's model calls are answered from the parent's response cache: how, not what, differs."""


@pytest.fixture(scope="module")
def parent(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("fork_trials") / "parent"
    config = load_config("reflexion", OVERRIDES)
    (episode,) = get_world("textworldexpress").select("dev", "twc", None, 1)
    metrics = evaluate(config, [episode], out)
    assert metrics["episodes"] == 1 and metrics["errors"] == 0
    trials = [
        e for e in read_events(out / "events" / f"{episode.episode_id}.jsonl") if isinstance(e, TrialEnd)
    ]
    assert [(t.step, t.trial, t.next) for t in trials] == [(2, 1, True), (4, 2, False)]
    return out, episode.episode_id


def played(path: Path) -> list[dict[str, Any]]:
    """The episode's events as played: without the header and the fork's ``replay_end``, timing and
    cache bookkeeping."""
    out = []
    for event in read_events(path):
        if isinstance(event, EpisodeStart | ReplayEnd):
            continue
        out.append({k: v for k, v in event.model_dump(mode="json").items() if k not in TIMING | CACHE})
    return out


@pytest.mark.parametrize(
    "at",
    [
        pytest.param(4, id="inside-trial-2"),
        pytest.param(3, id="first-step-of-trial-2"),
        pytest.param(2, id="inside-trial-1"),
    ],
)
def test_a_control_fork_of_a_reflexion_episode_repeats_its_parent(
    parent: tuple[Path, str], at: int, tmp_path: Path
) -> None:
    run, episode_id = parent
    source = read_parent(run, episode_id)
    fork_episode(source, at, source.config, tmp_path / "fork")
    theirs = run / "events" / f"{episode_id}.jsonl"
    mine = tmp_path / "fork" / "events" / f"{episode_id}.jsonl"
    assert played(mine) == played(theirs)  # every step, model call, trial_end and the episode_end

    events = read_events(mine)
    (replayed,) = [e for e in events if isinstance(e, ReplayEnd)]
    assert replayed.step == at - 1 and replayed.agreed == at - 1
    steps = [e for e in events if isinstance(e, EnvStep)]
    assert [s.step for s in steps] == [1, 2, 3, 4]
    # the env was reset at the trial boundary: trial 2 starts again at move 1, its score from 0
    assert [s.moves for s in steps] == [1, 2, 1, 2]
    trials = [e for e in events if isinstance(e, TrialEnd)]
    assert [(t.step, t.trial, t.next) for t in trials] == [(2, 1, True), (4, 2, False)]
    # the reflection was the parent's, from its response cache, and trial 2's prompts carry it
    (reflection,) = [e for e in events if isinstance(e, ModelCall) and e.role == "reflect"]
    assert reflection.cached and reflection.completion
    lesson = " ".join(reflection.completion.split())
    acts = [e for e in events if isinstance(e, ModelCall) and e.role == "act"]
    assert all(c.cached for c in acts) and len(acts) == 4
    for call in acts[2:]:
        assert call.messages is not None and f"Trial 1: {lesson}" in call.messages[-1]["content"]
    end = events[-1]
    assert isinstance(end, EpisodeEnd) and end.error is None and end.steps == 4


def test_a_fork_whose_agent_plays_no_second_trial_diverges_at_the_end_of_the_first(
    parent: tuple[Path, str], tmp_path: Path
) -> None:
    run, episode_id = parent
    source = read_parent(run, episode_id)
    config = load_config("reflexion", [*OVERRIDES, "agent.settings.max_trials=1"])
    result = fork_episode(source, 4, config, tmp_path / "fork")
    assert result.outcome.end == EndState.ERROR
    assert result.outcome.error == (
        "replay diverged at the end of trial 1 (step 2): the parent played another trial, the fork's "
        "agent did not"
    )
    # a trial that ends with step K-1 is the fork's own: at K=3 the same configuration just stops there
    result = fork_episode(source, 3, config, tmp_path / "own")
    assert result.outcome.error is None and result.outcome.steps == 2


def test_a_fork_is_refused_where_its_step_limit_would_end_a_replayed_trial_elsewhere(
    parent: tuple[Path, str], tmp_path: Path
) -> None:
    run, episode_id = parent
    source = read_parent(run, episode_id)
    assert source.position(4) == (2, 2) and source.position(3) == (2, 1) and source.position(2) == (1, 2)
    longer = load_config("reflexion", [*OVERRIDES, "env.step_limit=3"])
    with pytest.raises(UsageError) as err:
        fork_episode(source, 4, longer, tmp_path / "fork")
    assert str(err.value) == (
        "env.step_limit 3 would not end the parent's trial 1 where it ended (after 2 steps, step_limit), "
        "and the fork replays it: use the parent's (-o env.step_limit=2)"
    )
    shorter = load_config("reflexion", [*OVERRIDES, "env.step_limit=1"])
    with pytest.raises(UsageError, match=r"^--at 4 \(step 2 of the parent's trial 2\) is past the fork's"):
        fork_episode(source, 4, shorter, tmp_path / "fork")
    assert not (tmp_path / "fork").exists()


# -- the Replay's trial checks on made-up events ----------------------------------------------------------


def _step(n: int) -> EnvStep:
    return EnvStep(
        step=n,
        action=f"a{n}",
        source="llm",
        observation="o",
        score=0,
        reward=0,
        moves=n,
        end="running",
        n_valid=1,
        duration_ms=0,
    )


def _replay(at: int, trials: list[TrialEnd]) -> Replay:
    origin = ForkOrigin(run_dir="parent", run_id="r", config_name="reflexion", at=at)
    return Replay(origin, [_step(n) for n in range(1, at)], "task", trials)


def _trial_end(step: int, trial: int, end: EndState = EndState.EARLY_STOP, nxt: bool = True) -> TrialEnd:
    return TrialEnd(step=step, trial=trial, end=end, score=0, steps=step, next=nxt)


def test_a_trial_the_parent_stopped_must_stop_in_the_replay() -> None:
    asked = Decision("x", "llm")
    # the parent's agent stopped trial 1 after step 2 (no env end): the fork's went on to step 3
    replay = _replay(5, [_trial_end(2, 1)])
    replay.decision(asked, 1)
    replay.decision(asked, 2)
    with pytest.raises(
        ReplayDivergence, match=r"^replay diverged at step 3: the parent's trial 1 ended after step 2"
    ):
        replay.decision(asked, 3)
    # the fork's agent stopped a trial where the parent's went on
    with pytest.raises(ReplayDivergence, match=r"^replay diverged at step 1: the fork's trial 1 ended there"):
        _replay(5, [_trial_end(2, 1)]).trial_end(_trial_end(1, 1))
    # ended as the parent's: the replay goes on into trial 2
    replay = _replay(5, [_trial_end(2, 1)])
    replay.trial_end(_trial_end(2, 1))
    assert replay.decision(asked, 3).action == "a3"
    # another end state at the same step
    with pytest.raises(ReplayDivergence, match=r"end 'early_stop' in the parent's log, 'failure' here"):
        _replay(5, [_trial_end(2, 1)]).trial_end(_trial_end(2, 1, EndState.FAILURE))
    # an agent without trials cannot replay a prefix that crosses the parent's next trial
    with pytest.raises(
        ReplayDivergence, match=r"the parent played trial 2 after step 2, and the fork's agent"
    ):
        _replay(5, [_trial_end(2, 1)]).one_trial(2)
    # a trial that ends with step K-1 (or later) is the fork's own: nothing is checked
    _replay(3, [_trial_end(2, 1)]).trial_end(_trial_end(2, 1, EndState.FAILURE, nxt=False))
    _replay(3, [_trial_end(2, 1)]).one_trial(2)
