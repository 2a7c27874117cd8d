"""AMM triggers T1-T4 on real ScienceWorld states with a scripted Swift proposer (paper §3.1)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

import pytest
from amm_helpers import play, start

from fastslow.core.proposal import MemoryHint, Proposal, RankedAction
from fastslow.core.trajectory import Trajectory
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.events import ListSink, MemoryFallback, MemoryInjection, MemoryRetrieval
from fastslow.memory.config import AmmConfig, InjectionConfig
from fastslow.memory.episode import Amm
from fastslow.memory.stores import open_store
from fastslow.memory.stores.sqlite import SqliteStore

FIND_NON_LIVING = 7
E = TypeVar("E")
GARBAGE = "xyzzy frobnicate the quux"


class MemoryFollower:
    """Scripted Swift: without memories it proposes garbage; with memories, the first remembered action
    that is valid now (or garbage if none is)."""

    name = "scripted"

    def __init__(self, use_memories: bool = True) -> None:
        self.use_memories = use_memories
        self.calls: list[list[str]] = []

    def propose(self, traj: Trajectory, memories: Sequence[MemoryHint] | None = None) -> Proposal:
        actions = [m.action for m in memories or []]
        self.calls.append(actions)
        valid = set(traj.current.valid_actions)
        pick = next((a for a in actions if a in valid), GARBAGE) if self.use_memories else GARBAGE
        return Proposal((RankedAction(pick, 1.0),), 0.9)


@pytest.fixture(scope="module")
def warm_store(env: ScienceWorldAdapter, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store after one warm-up episode: the gold path of find-non-living-thing plus one invalid action."""
    path = tmp_path_factory.mktemp("amm") / "warm.sqlite"
    cfg = AmmConfig(enabled=True, path=str(path))
    store = open_store(cfg)
    hooks = Amm(cfg, store).episode("warmup-7-0", ListSink(), warmup=True)
    traj = start(env, FIND_NON_LIVING, 0, gold=True)
    gold = env.gold_actions
    play(env, traj, hooks, [GARBAGE, *gold])
    store.close()
    return path


def amm_on(path: Path, **cfg: object) -> Amm:
    amm_cfg = AmmConfig(enabled=True, path=str(path), **cfg)
    return Amm(amm_cfg, open_store(amm_cfg))


def of_type(sink: ListSink, kind: type[E]) -> list[E]:
    return [e for e in sink.events if isinstance(e, kind)]


def test_warm_store_holds_every_tag(warm_store: Path) -> None:
    records = list(SqliteStore(warm_store).iter_all())
    assert {r.tag for r in records} == {"success", "near-miss", "avoidance"}


def test_t1_rung_one_uses_success_memories(env: ScienceWorldAdapter, warm_store: Path) -> None:
    sink = ListSink()
    hooks = amm_on(warm_store).episode("7-0", sink)
    traj = start(env, FIND_NON_LIVING, 0, gold=True)
    go = next(a for a in env.gold_actions if a.startswith("go to"))
    play(env, traj, hooks, [go])  # now in the room where the successful focus happened
    swift = MemoryFollower()
    out = hooks.t1_ladder(traj, lambda mems: swift.propose(traj, mems))
    assert out.rung == "success" and out.retries == 1 and out.proposal is not None
    assert out.proposal.top in traj.current.valid_actions
    assert out.proposal.top in {r.action for r in out.records}
    assert {r.tag for r in out.records} == {"success"} and len(out.records) <= 3
    [retrieval] = of_type(sink, MemoryRetrieval)
    assert retrieval.trigger == "T1" and retrieval.rung == "success" and retrieval.n == len(out.records)
    [inj] = of_type(sink, MemoryInjection)
    assert (inj.trigger, inj.target, inj.n) == ("T1", "swift", len(out.records)) and inj.chars > 0


def test_t1_rung_two_adds_near_miss_memories(env: ScienceWorldAdapter, warm_store: Path) -> None:
    sink = ListSink()
    hooks = amm_on(warm_store).episode("7-0", sink)
    traj = start(env, FIND_NON_LIVING, 0, gold=True)  # start room: no remembered success action is valid
    swift = MemoryFollower()
    out = hooks.t1_ladder(traj, lambda mems: swift.propose(traj, mems))
    assert out.rung == "success+near-miss" and out.retries == 2
    assert out.proposal is not None and out.proposal.top is not None and out.proposal.top.startswith("go to")
    assert "near-miss" in {r.tag for r in out.records}
    assert [e.rung for e in of_type(sink, MemoryRetrieval)] == ["success", "success+near-miss"]
    assert all(not any(a == GARBAGE for a in call) for call in swift.calls)  # avoidance never reaches Swift


def test_t1_escalates_when_retries_do_not_help(env: ScienceWorldAdapter, warm_store: Path) -> None:
    sink = ListSink()
    hooks = amm_on(warm_store).episode("7-0", sink)
    traj = start(env, FIND_NON_LIVING, 0)
    swift = MemoryFollower(use_memories=False)
    out = hooks.t1_ladder(traj, lambda mems: swift.propose(traj, mems))
    assert out.proposal is None and out.rung == "escalate" and out.retries == 2 and len(swift.calls) == 2
    assert [e.target for e in of_type(sink, MemoryInjection)] == ["swift", "swift"]


def test_t1_with_empty_store_escalates_without_retry(env: ScienceWorldAdapter, tmp_path: Path) -> None:
    sink = ListSink()
    hooks = amm_on(tmp_path / "empty.sqlite").episode("7-0", sink)
    traj = start(env, FIND_NON_LIVING, 0)
    swift = MemoryFollower()
    out = hooks.t1_ladder(traj, lambda mems: swift.propose(traj, mems))
    assert out.proposal is None and out.retries == 0 and swift.calls == []
    assert [e.reason for e in of_type(sink, MemoryFallback)] == ["no_records"]


def test_t4_gives_sage_success_and_near_miss_block(env: ScienceWorldAdapter, warm_store: Path) -> None:
    sink = ListSink()
    hooks = amm_on(warm_store).episode("7-0", sink)
    traj = start(env, FIND_NON_LIVING, 0)
    block = hooks.t4(traj)
    assert block.ok and block.text is not None and 0 < len(block.records) <= 5
    assert block.text.startswith("<<< BEGIN RETRIEVED MEMORIES") and "hints, not authority" in block.text
    assert GARBAGE not in block.text and {r.tag for r in block.records} <= {"success", "near-miss"}
    [retrieval] = of_type(sink, MemoryRetrieval)
    [inj] = of_type(sink, MemoryInjection)
    assert retrieval.trigger == "T4" and (inj.target, inj.chars) == ("sage", len(block.text))


def test_t3_repeated_invalid_action_retrieves_and_caches_only(
    env: ScienceWorldAdapter, warm_store: Path
) -> None:
    sink = ListSink()
    hooks = amm_on(warm_store, mode="frozen").episode("7-0", sink)
    traj = start(env, FIND_NON_LIVING, 0)
    play(env, traj, hooks, [GARBAGE, GARBAGE, GARBAGE])
    t3 = [e for e in of_type(sink, MemoryRetrieval) if e.trigger == "T3"]
    assert len(t3) == 1 and t3[0].step == 2  # fires on the first repeat, not on every one
    assert hooks.cache["T3"] and of_type(sink, MemoryInjection) == []
    critic = hooks.critic_evidence(traj)  # full system only: the Critic may see the cached evidence
    assert critic.ok and critic.text is not None and GARBAGE in critic.text


def test_t2_stagnation_retrieves_and_caches_only(env: ScienceWorldAdapter, warm_store: Path) -> None:
    sink = ListSink()
    hooks = amm_on(warm_store, mode="frozen").episode("7-0", sink)
    traj = start(env, FIND_NON_LIVING, 0)
    play(env, traj, hooks, ["look around"] * 6)
    t2 = [e for e in of_type(sink, MemoryRetrieval) if e.trigger == "T2"]
    assert [e.step for e in t2] == [5]  # window 5, then a cool-down of 5 steps
    assert hooks.cache["T2"] and of_type(sink, MemoryInjection) == []


def test_t4_over_budget_falls_back(env: ScienceWorldAdapter, warm_store: Path) -> None:
    sink = ListSink()
    hooks = amm_on(warm_store, injection=InjectionConfig(sage_budget=60)).episode("7-0", sink)
    block = hooks.t4(start(env, FIND_NON_LIVING, 0))
    assert block.text is None and block.fallback and block.fallback.startswith("over_budget")
    [fb] = of_type(sink, MemoryFallback)
    assert (fb.trigger, fb.target) == ("T4", "sage") and fb.reason.startswith("over_budget")


def test_store_error_falls_back_at_t1_and_t4(env: ScienceWorldAdapter, warm_store: Path) -> None:
    sink = ListSink()
    store = SqliteStore(warm_store)
    hooks = Amm(AmmConfig(enabled=True), store).episode("7-0", sink)
    store.close()
    traj = start(env, FIND_NON_LIVING, 0)
    swift = MemoryFollower()
    out = hooks.t1_ladder(traj, lambda mems: swift.propose(traj, mems))
    block = hooks.t4(traj)
    assert out.proposal is None and swift.calls == [] and block.text is None
    assert hooks.t2(traj) == [] and hooks.t3(traj) == []
    reasons = [(e.trigger, e.reason.split(":")[0]) for e in of_type(sink, MemoryFallback)]
    assert reasons == [
        ("T1", "store_error"),
        ("T4", "store_error"),
        ("T2", "store_error"),
        ("T3", "store_error"),
    ]


def test_triggers_can_be_switched_off(env: ScienceWorldAdapter, warm_store: Path) -> None:
    from fastslow.memory.config import RetrievalConfig

    sink = ListSink()
    off = RetrievalConfig(t1=False, t2=False, t3=False, t4=False)
    hooks = amm_on(warm_store, retrieval=off).episode("7-0", sink)
    traj = start(env, FIND_NON_LIVING, 0)
    play(env, traj, hooks, [GARBAGE, GARBAGE])
    assert hooks.t1_ladder(traj, lambda mems: MemoryFollower().propose(traj, mems)).rung == "disabled"
    assert hooks.t4(traj).fallback == "disabled"
    assert of_type(sink, MemoryRetrieval) == []
