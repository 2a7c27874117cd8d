"""The inclined-plane judgement (issue #16 point 4, "which inclined plane is steeper/slower";
``procedures.incline``, ``procedures.tasks.incline_task``) on real ScienceWorld dev variations: swift-only
times the slider down both planes and focuses on the plane the positions decide; no plane is focused
on before that (the safety policy's focus rule)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.procedures.incline import _faster, _trials
from fastslow.env.scienceworld.procedures.tasks import InclineTask, incline_task
from fastslow.env.scienceworld.tasks import get_task
from fastslow.eval.runner import EpisodeOutcome
from fastslow.events import EnvStep

Play = Callable[[int, int], tuple[EpisodeOutcome, list[EnvStep]]]
"""The ``play_swift_only`` fixture (tests/procedures/conftest.py)."""


def test_the_task_descriptions_parse(env: ScienceWorldAdapter) -> None:
    assert incline_task(env.reset(14, 85).task_description) == InclineTask(("b", "f"), slower=False)
    named = incline_task(env.reset(15, 695).task_description)
    assert named == InclineTask(("plastic", "greenpaint"), slower=False)
    unnamed = incline_task(env.reset(16, 81).task_description)
    assert unnamed == InclineTask(("unknown material c", "unknown material j"), slower=False)
    assert incline_task(env.reset(0, 0).task_description) is None


def test_positions_decide_look_for_look() -> None:
    # B 9, 14, 19 ... and F 9, 13, 17, 22, 26, 30: F is 3 points behind at the sixth look
    b = [9.0, 14.0, 19.0, 23.0, 28.0, 33.0, 38.0]
    f = [9.0, 13.0, 17.0, 22.0, 26.0, 30.0]
    assert _faster(b, f[:5]) is None and _faster(b, f) == 0
    assert _faster([50.0, 101.0], [50.0, 99.0]) == 0  # at the bottom first
    assert _faster([50.0, 101.0], [50.0, 101.0]) is None  # as fast: undecided


# (task, dev variation, what the episode shows)
EPISODES = [
    (14, 85, "steepest angle: steel block, B is faster by the sixth look of F"),
    (15, 695, "least friction, named surfaces: a brick slides"),
    (16, 81, "least friction: J is so slow its block would not reach the bottom in 100 steps"),
]


@pytest.mark.parametrize(("task", "variation", "what"), EPISODES)
def test_swift_only_times_both_planes(
    env: ScienceWorldAdapter,
    play_swift_only: Play,
    task: int,
    variation: int,
    what: str,
) -> None:
    assert variation in get_task(task).variations["dev"]
    wanted = incline_task(env.reset(task, variation).task_description)
    assert wanted is not None
    outcome, steps = play_swift_only(task, variation)
    assert outcome.final_score == 100, what
    pairs = [(s.action, s.observation) for s in steps]
    (first, at_first), (second, at_second) = _trials(pairs)
    assert at_first[-1] > 100  # the first trial runs to the bottom (the stopwatch is read for the score)
    faster = _faster(at_first, at_second)
    assert faster is not None
    fast, slow = (first, second) if faster == 0 else (second, first)
    foci = [s.action for s in steps if s.action.startswith("focus on ")]
    assert foci == [f"focus on {slow if wanted.slower else fast}"]
    # the stopwatch was started and read for each trial, as the task's score counts
    assert sum(s.action.startswith("activate stopwatch") for s in steps) == 2
    assert sum("The time reads" in s.observation for s in steps) == 2
