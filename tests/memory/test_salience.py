"""AMM write hook on real ScienceWorld transitions: each salience case (paper §3.1)."""

from __future__ import annotations

from pathlib import Path

from amm_helpers import play, start

from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.tasks import get_task
from fastslow.events import ListSink, MemoryFallback, MemoryWrite
from fastslow.memory.config import AmmConfig, SalienceConfig
from fastslow.memory.episode import Amm, EpisodeMemory
from fastslow.memory.stores import open_store
from fastslow.memory.stores.sqlite import SqliteStore

CHEMISTRY_MIX, FIND_ANIMAL, FIND_NON_LIVING, LIFE_STAGES_2 = 2, 5, 7, 13
GARBAGE = "xyzzy frobnicate the quux"


def hooks_for(tmp_path: Path, sink: ListSink, **write: object) -> EpisodeMemory:
    cfg = AmmConfig(enabled=True, path=str(tmp_path / "m.sqlite"), write=SalienceConfig(**write))
    return Amm(cfg, open_store(cfg)).episode("test-ep", sink)


def writes(sink: ListSink) -> list[tuple[str, str, int]]:
    return [(e.tag, e.subtag, e.step) for e in sink.events if isinstance(e, MemoryWrite)]


def test_progress_is_near_miss_and_completion_is_success(env: ScienceWorldAdapter, tmp_path: Path) -> None:
    sink = ListSink()
    hooks = hooks_for(tmp_path, sink)
    traj = start(env, CHEMISTRY_MIX, 0, gold=True)
    end = play(env, traj, hooks, env.gold_actions)
    assert end.score == 100
    rewarded = [t for t in traj.turns if t.reward]
    got = writes(sink)
    # Every rewarded gold step of this task gains 8-17 points (near-miss) except the last (+50 to 100).
    assert [(tag, step) for tag, _, step in got] == [("near-miss", t.step) for t in rewarded[:-1]] + [
        ("success", rewarded[-1].step)
    ]
    assert got[-1][1] == "terminal" and {s for _, s, _ in got[:-1]} == {"progress"}
    records = list(hooks.writer.store.iter_all())
    last = records[-1]
    family = get_task(CHEMISTRY_MIX).swiftsage_id.split("-")[0]
    assert (last.score_after, last.task_name, last.episode_id) == (100, "chemistry-mix", "test-ep")
    assert last.task_family == family
    assert last.action == rewarded[-1].action and last.step == rewarded[-1].step
    assert last.room and last.recent and len(last.recent) <= 3
    assert last.score_before == last.score_after - rewarded[-1].reward


def test_rewarded_focus_is_success(env: ScienceWorldAdapter, tmp_path: Path) -> None:
    sink = ListSink()
    hooks = hooks_for(tmp_path, sink)
    traj = start(env, FIND_NON_LIVING, 0, gold=True)
    play(env, traj, hooks, env.gold_actions)
    got = writes(sink)
    assert ("success", "focus") in [(t, s) for t, s, _ in got]
    assert got[-1][:2] == ("success", "terminal")


def test_milestone_threshold_comes_from_config(env: ScienceWorldAdapter, tmp_path: Path) -> None:
    sink = ListSink()
    hooks = hooks_for(tmp_path, sink, milestone_reward=15)
    traj = start(env, FIND_NON_LIVING, 0, gold=True)
    gold = env.gold_actions
    go = next(i for i, a in enumerate(gold) if a.startswith("go to"))
    play(env, traj, hooks, gold[: go + 1])
    assert traj.turns[-1].reward >= 15  # the real gain of entering the right room
    assert writes(sink)[-1][:2] == ("success", "milestone")


def test_invalid_action_is_avoidance_once_per_episode(env: ScienceWorldAdapter, tmp_path: Path) -> None:
    sink = ListSink()
    hooks = hooks_for(tmp_path, sink)
    traj = start(env, FIND_NON_LIVING, 0)
    play(env, traj, hooks, [GARBAGE, GARBAGE, GARBAGE])
    assert traj.turns[-1].observation.startswith("No known action matches that input.")
    assert writes(sink) == [("avoidance", "invalid-action", 1)]


def test_wrong_focus_failure_is_avoidance(env: ScienceWorldAdapter, tmp_path: Path) -> None:
    sink = ListSink()
    hooks = hooks_for(tmp_path, sink)
    traj = start(env, FIND_ANIMAL, 0)
    end = play(env, traj, hooks, ["focus on agent"])
    assert end.score == -100
    assert writes(sink) == [("avoidance", "task-failure", 1)]


def test_shaping_actions_are_never_stored(env: ScienceWorldAdapter, tmp_path: Path) -> None:
    sink = ListSink()
    hooks = hooks_for(tmp_path, sink, small_reward=1)
    traj = start(env, LIFE_STAGES_2, 0, gold=True)
    play(env, traj, hooks, env.gold_actions)
    stored_steps = {step for _, _, step in writes(sink)}
    waits = [t for t in traj.turns if t.action in ("wait", "wait1", "wait2")]
    assert any(t.reward > 0 for t in waits)  # waiting really did gain score here ...
    assert not stored_steps & {t.step for t in waits}  # ... and still was not stored
    assert {t.step for t in traj.turns if t.reward > 0 and t not in waits} == stored_steps


def test_small_gains_below_threshold_are_not_stored(env: ScienceWorldAdapter, tmp_path: Path) -> None:
    sink = ListSink()
    hooks = hooks_for(tmp_path, sink)  # small_reward 5: the +4 steps of this task are noise
    traj = start(env, LIFE_STAGES_2, 0, gold=True)
    play(env, traj, hooks, env.gold_actions)
    small = {t.step for t in traj.turns if 0 < t.reward < 5}
    assert small and not small & {step for _, _, step in writes(sink)}


def test_frozen_mode_writes_only_during_warmup(env: ScienceWorldAdapter, tmp_path: Path) -> None:
    cfg = AmmConfig(enabled=True, path=str(tmp_path / "m.sqlite"), mode="frozen")
    amm = Amm(cfg, open_store(cfg))
    for warmup, expected in ((False, 0), (True, 1)):
        sink = ListSink()
        hooks = amm.episode("ep", sink, warmup=warmup)
        play(env, start(env, FIND_NON_LIVING, 0), hooks, [GARBAGE])
        assert len(writes(sink)) == expected
    assert amm.store.count() == 1


def test_store_failure_falls_back_and_logs(env: ScienceWorldAdapter, tmp_path: Path) -> None:
    sink = ListSink()
    store = SqliteStore(tmp_path / "m.sqlite")
    hooks = Amm(AmmConfig(enabled=True), store).episode("ep", sink)
    store.close()  # a real store that can no longer be written
    play(env, start(env, FIND_NON_LIVING, 0), hooks, [GARBAGE])
    assert writes(sink) == []
    fallbacks = [e for e in sink.events if isinstance(e, MemoryFallback)]
    assert len(fallbacks) == 1 and fallbacks[0].trigger == "write" and "closed" in fallbacks[0].reason


def test_recent_lines_are_one_line_each(env: ScienceWorldAdapter, tmp_path: Path) -> None:
    """ScienceWorld's observations carry newlines and tabs; a record's recent lines must not (each one
    becomes one "earlier:" line of a prompt block)."""
    sink = ListSink()
    hooks = hooks_for(tmp_path, sink)
    traj = start(env, FIND_NON_LIVING, 0, gold=True)
    play(env, traj, hooks, ["look around", "open door to hallway", *env.gold_actions])
    assert any("\n" in t.observation or "\t" in t.observation for t in traj.turns)  # raw text is multi-line
    records = list(hooks.writer.store.iter_all())
    recent = [line for r in records for line in r.recent]
    assert recent and any(line.startswith("look around -> ") for line in recent)
    for line in recent:
        assert "\n" not in line and "\t" not in line and "  " not in line, line
        assert len(line.split(" -> ", 1)[1]) <= 80
