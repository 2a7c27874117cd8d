"""The authors' write-side gate (``amm.write.tagging: authors``) on real ScienceWorld transitions.

Each case plays a real episode (gold path, a refused action, a failing focus, the step limit) through the
write hook and checks the table of (step, tag, subtag) it wrote against the authors' rules: the gain over
the best score so far, near-miss for any gain below the milestone, a rewarded wait as delayed_reward,
every end but 100 as terminal_incorrect, their subtag names, no per-episode dedup in the paper config.
"""

from __future__ import annotations

from pathlib import Path

from amm_helpers import play, start

from fastslow.config import load_config
from fastslow.core.trajectory import Trajectory
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.wrappers import TimeLimit
from fastslow.events import EndState, ListSink, MemoryWrite
from fastslow.memory.config import AmmConfig, SalienceConfig
from fastslow.memory.episode import Amm, EpisodeMemory
from fastslow.memory.records import MemoryRecord
from fastslow.memory.salience import AUTHORS_SUBTAGS, best_score_before
from fastslow.memory.stores import open_store

CHEMISTRY_MIX, FIND_ANIMAL, FIND_NON_LIVING, LIFE_STAGES_2 = 2, 5, 7, 13
GARBAGE = "xyzzy frobnicate the quux"
WAITS = ("wait", "wait1", "wait2")


def authors_hooks(tmp_path: Path, sink: ListSink, **write: object) -> EpisodeMemory:
    """The paper configuration's write side: amm.yaml's ``write`` section (authors' gate, no dedup)."""
    paper = load_config("amm").amm.write
    cfg = AmmConfig(
        enabled=True,
        path=str(tmp_path / "m.sqlite"),
        write=SalienceConfig(**{**paper.model_dump(), **write}),
    )
    return Amm(cfg, open_store(cfg)).episode("test-ep", sink)


def table(sink: ListSink) -> list[tuple[int, str, str]]:
    return [(e.step, e.tag, e.subtag) for e in sink.events if isinstance(e, MemoryWrite)]


def expected_gain_table(traj: Trajectory) -> list[tuple[int, str, str]]:
    """What the authors' rules give for the rewarded steps of a finished gold episode (read off the
    trajectory: the rise over the best score so far, the action, the last step's end)."""
    rows = []
    for turn in traj.turns:
        gain = max(0, turn.score - best_score_before(traj, turn.step))
        act = turn.action.lower()
        if turn.score == 100:  # the end: the gold path may go on, the authors' loop does not
            rows.append((turn.step, "success", "terminal_task_completion"))
            break
        if gain <= 0:
            continue
        elif act.startswith("focus") or "you focus on" in turn.observation.lower():
            rows.append((turn.step, "success", "subgoal_focus"))
        elif gain >= 20:
            rows.append((turn.step, "success", "milestone"))
        elif act.startswith(WAITS):
            rows.append((turn.step, "near-miss", "delayed_reward"))
        else:
            rows.append((turn.step, "near-miss", "partial"))
    return rows


def test_paper_configs_use_the_authors_gate_and_the_fast_pathway_keeps_fastslows() -> None:
    for name in ("amm", "full", "paper-amm", "paper-full"):
        write = load_config(name).amm.write
        assert (write.tagging, write.dedup_per_episode) == ("authors", False), name
    for name in ("swift-amm", "swift-amm-srm"):
        write = load_config(name).amm.write
        assert write == SalienceConfig(), name  # every field at today's default


def test_small_gains_are_near_miss_partial_and_completion_is_terminal(
    env: ScienceWorldAdapter, tmp_path: Path
) -> None:
    sink = ListSink()
    hooks = authors_hooks(tmp_path, sink)
    traj = start(env, LIFE_STAGES_2, 0, gold=True)
    end = play(env, traj, hooks, env.gold_actions)
    assert end.score == 100 and end.end is EndState.SUCCESS
    got = table(sink)
    assert got == expected_gain_table(traj)
    # This task's gold path has the cases the two gates part on: +4 gains (below fastslow's 5) and
    # rewarded waits (never stored by fastslow), both near-miss here.
    small = [t for t in traj.turns if 0 < t.reward < 5 and not t.action.startswith(WAITS)]
    waits = [t for t in traj.turns if t.reward > 0 and t.action.startswith(WAITS)]
    assert small and waits
    assert {(t.step, "near-miss", "partial") for t in small} <= set(got)
    assert {(t.step, "near-miss", "delayed_reward") for t in waits} <= set(got)
    assert {s for _, _, s in got} <= set(AUTHORS_SUBTAGS)


def test_gains_from_8_to_17_are_partial_and_a_rewarded_focus_is_subgoal_focus(
    env: ScienceWorldAdapter, tmp_path: Path
) -> None:
    for task in (CHEMISTRY_MIX, FIND_NON_LIVING):
        sink = ListSink()
        hooks = authors_hooks(tmp_path / str(task), sink)
        traj = start(env, task, 0, gold=True)
        assert play(env, traj, hooks, env.gold_actions).score == 100
        assert table(sink) == expected_gain_table(traj), task
    assert ("success", "subgoal_focus") in {(t, s) for _, t, s in table(sink)}  # find-non-living


def test_records_have_the_authors_shape(env: ScienceWorldAdapter, tmp_path: Path) -> None:
    sink = ListSink()
    hooks = authors_hooks(tmp_path, sink)
    traj = start(env, FIND_NON_LIVING, 0, gold=True)
    play(env, traj, hooks, ["look around", GARBAGE, *env.gold_actions])
    records: list[MemoryRecord] = list(hooks.writer.store.iter_all())
    last = records[-1]
    after = traj.current
    assert last.subtag == "terminal_task_completion"
    assert last.task_description == traj.task_description and last.look == after.look.strip()
    assert last.observation == after.observation.strip()  # whole, not cut to 300 characters
    assert last.score_after == 100 and last.reward == 100 - best_score_before(traj, after.steps)
    # The 4 turns before the step, refusals included (their recent lists keep every step).
    before = [t for t in traj.turns if t.step < last.step][-4:]
    assert [line.split(" -> ")[0] for line in last.recent] == [t.action for t in before]
    refused = next(r for r in records if r.subtag == "invalid_action")
    assert refused.action == GARBAGE and refused.step == 2
    assert "episodic_success" in last.search_text() and last.task_description in last.search_text()


def test_a_refused_action_is_stored_each_time(env: ScienceWorldAdapter, tmp_path: Path) -> None:
    sink = ListSink()
    hooks = authors_hooks(tmp_path, sink)
    play(env, start(env, FIND_NON_LIVING, 0), hooks, [GARBAGE, GARBAGE, GARBAGE])
    assert table(sink) == [(1, "avoidance", "invalid_action"), (2, "avoidance", "invalid_action"),
                           (3, "avoidance", "invalid_action")]  # fmt: skip


def test_a_failed_task_is_terminal_incorrect_and_keeps_the_best_score(
    env: ScienceWorldAdapter, tmp_path: Path
) -> None:
    sink = ListSink()
    hooks = authors_hooks(tmp_path, sink)
    traj = start(env, FIND_ANIMAL, 0)
    end = play(env, traj, hooks, ["focus on agent"])
    assert end.score == -100 and end.end is EndState.FAILURE
    assert table(sink) == [(1, "avoidance", "terminal_incorrect")]
    record = next(iter(hooks.writer.store.iter_all()))
    assert (record.score_before, record.score_after) == (0, 0)  # their score never goes below the best


def test_the_step_limit_is_terminal_incorrect(env: ScienceWorldAdapter, tmp_path: Path) -> None:
    limited = TimeLimit(env, 3)
    for tagging, expected in (
        # find-non-living starts at 8 points and the authors' best starts at 0: their first step
        # "gains" 8, a near-miss (their loop's last_score = 0.0 before the first step).
        ("authors", [(1, "near-miss", "partial"), (3, "avoidance", "terminal_incorrect")]),
        ("fastslow", []),  # fastslow stores no step-limit end
    ):
        sink = ListSink()
        hooks = authors_hooks(tmp_path / tagging, sink, tagging=tagging)
        traj = start(limited, FIND_NON_LIVING, 0)  # type: ignore[arg-type]
        end = play(limited, traj, hooks, ["inventory", "inventory", "inventory"])  # type: ignore[arg-type]
        assert end.end is EndState.STEP_LIMIT and end.score == 8 and traj.turns[0].reward == 0
        assert table(sink) == expected, tagging


def test_nothing_after_the_end_is_written(env: ScienceWorldAdapter, tmp_path: Path) -> None:
    sink = ListSink()
    hooks = authors_hooks(tmp_path, sink)
    traj = start(env, FIND_ANIMAL, 0)
    play(env, traj, hooks, ["focus on agent", "look around", GARBAGE])  # the env keeps its end state
    assert len(table(sink)) == 1
