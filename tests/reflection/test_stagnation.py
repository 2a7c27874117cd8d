"""SRM stagnation detector on trajectories recorded in the real ScienceWorld (chemistry-mix, variation 0,
starting in the hallway): one test per signal, the step-5 rule, re-report spacing, and a gold path
that must not look stuck."""

from __future__ import annotations

from fastslow.core.trajectory import Trajectory
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.world import SEMANTICS
from fastslow.events import ListSink, StagnationReport
from fastslow.reflection.config import StagnationConfig
from fastslow.reflection.stagnation import StagnationDetector, is_failure
from reflection.helpers import act, new_trajectory, start

# Four moves to distinct rooms (no reward in chemistry-mix) bring the episode to step 4, so that the
# actions under test land on steps 5+ (the detector stays silent before step 5).
PAD = ["teleport to workshop", "teleport to bathroom", "teleport to bedroom", "teleport to living room"]


def run(
    env: ScienceWorldAdapter, actions: list[str], config: StagnationConfig | None = None
) -> tuple[Trajectory, list[StagnationReport]]:
    traj = start(env)
    sink = ListSink()
    detector = StagnationDetector(config, sink=sink, first=traj.current)
    reports: list[StagnationReport] = []
    for action in actions:
        act(env, traj, action)
        report = detector.update(traj)
        if report is not None:
            reports.append(report)
    assert [e for e in sink.events if isinstance(e, StagnationReport)] == reports
    return traj, reports


def test_repeated_action_without_effect(env: ScienceWorldAdapter) -> None:
    _, reports = run(env, [*PAD, "look at picture", "look at picture"])
    (report,) = reports
    assert (report.step, report.pattern, report.patterns) == (6, "repeated_action", ["repeated_action"])
    assert report.evidence_steps == [5, 6] and report.avoid == ["look at picture"]
    assert any(c.startswith("focus actions used: 0 of 1") for c in report.constraints)


def test_repeated_observation(env: ScienceWorldAdapter) -> None:
    # Three different actions, one answer: "The door is already open."
    doors = ["open door to kitchen", "open door to greenhouse", "open door to workshop"]
    traj, reports = run(env, [*PAD[1:], "teleport to hallway", *doors])
    assert {t.observation for t in traj.turns[-3:]} == {"The door is already open."}
    (report,) = reports
    assert report.pattern == "repeated_observation" and report.step == 7
    assert report.evidence_steps == [5, 6, 7] and report.avoid == doors


def test_verb_loop(env: ScienceWorldAdapter) -> None:
    _, reports = run(
        env, [*PAD[:3], "teleport to hallway", "look at picture", "look at air", "look at agent"]
    )
    (report,) = reports
    assert (report.pattern, report.patterns, report.step) == ("verb_loop", ["verb_loop"], 7)
    assert report.avoid == ["look at picture", "look at air", "look at agent"]


def test_invalid_action_loop(env: ScienceWorldAdapter) -> None:
    traj, reports = run(env, [*PAD, "fly", "jump high", "sing"])
    assert all(is_failure(SEMANTICS, t.observation) for t in traj.turns[-3:])
    (report,) = reports
    assert report.pattern == "invalid_loop" and report.step == 7
    assert "repeated_observation" in report.patterns  # same failure text three times
    assert report.evidence_steps == [5, 6, 7] and report.avoid == ["fly", "jump high", "sing"]


def test_navigation_without_state_diversity(env: ScienceWorldAdapter) -> None:
    loop = ["teleport to bedroom", "teleport to hallway"] * 3
    traj, reports = run(env, loop)
    # The first visit to the bedroom scores (+8), which is progress: the loop starts after it.
    assert [t.reward for t in traj.turns] == [8, 0, 0, 0, 0, 0]
    (report,) = reports
    assert (report.pattern, report.step) == ("navigation_loop", 6)
    assert report.evidence_steps == [2, 3, 4, 5, 6]
    assert report.avoid == ["teleport to hallway", "teleport to bedroom"]


def test_silent_before_min_step_and_spaced_reports(env: ScienceWorldAdapter) -> None:
    _, reports = run(env, ["fly"] * 12)
    # Failures from step 1, but nothing before step 5; then the same patterns again 5 steps later.
    assert [r.step for r in reports] == [5, 10]
    assert reports[0].patterns == ["invalid_loop", "repeated_action", "repeated_observation", "verb_loop"]
    _, early = run(env, ["fly"] * 6, StagnationConfig(min_step=0))
    # Without the step-5 rule the repeated action is caught at its first repeat, the failure loop at 3.
    assert [(r.step, r.pattern) for r in early] == [(2, "repeated_action"), (3, "invalid_loop")]


def test_gold_path_is_not_stagnation(env: ScienceWorldAdapter) -> None:
    """The oracle's own route through chemistry-mix makes progress: no report on any of its steps. The
    route is the same whatever the shared JVM played before (constant hash codes: tests/test_env.py
    plays it before and after other episodes); on the JVM's own codes it was not, and one order of the
    suite got a route that opened the cupboard's drawer again and again (issue 49)."""
    first = env.reset(2, 0, gold=True)
    traj = new_trajectory(env, 2, 0, first)
    detector = StagnationDetector()
    reports = []
    for action in env.gold_actions:
        traj.record(action, "oracle", env.step(action))
        if (report := detector.update(traj)) is not None:
            reports.append(report)
    assert traj.current.score == 100 and len(traj.turns) >= 20
    assert reports == []
