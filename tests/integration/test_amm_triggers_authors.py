"""AMM's triggers in the paper authors' profile (``configs/amm.yaml``, docs/fidelity.md rows M-T1 to M-T5),
on real ScienceWorld with scripted Swift and Sage models and a real SQLite store: T1 on a forced-Sage
iteration, the T1 retry with no memories and hidden scores, the T1 rung per Swift failure in a row, T2
at 4 and 8 steps without progress, T4's avoidance memories after failure messages, and the Critic's own
search. Each test also plays fastslow's profile where the difference is the point."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from controller.helpers import Run, ScriptedSwift, is_plan_prompt, sage_replies
from fastslow.build import build_swiftsage
from fastslow.config import load_config
from fastslow.core.proposal import MemoryHint, Proposal, RankedAction
from fastslow.core.trajectory import Trajectory
from fastslow.env.episodes import Episode
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.semantics import NO_MATCH
from fastslow.env.scienceworld.tasks import get_task
from fastslow.env.scienceworld.world import SEMANTICS
from fastslow.eval.metrics import memory_episode, paper_episode
from fastslow.eval.runner import run_episode
from fastslow.events import CriticCall, ListSink, MemoryFallback, MemoryInjection, MemoryRetrieval
from fastslow.memory.config import RetrievalConfig
from fastslow.memory.episode import Amm
from fastslow.memory.hook import AmmHook
from fastslow.memory.stores.sqlite import SqliteStore
from fastslow.models.scripted import ScriptedModel
from integration.helpers import record

Play = Callable[..., Run]
LIFE_STAGES = 13  # identify-life-stages-2: hallway start; "go to kitchen" earns 4 points
# The triggers are under test, not the ranking: plain BM25 with tag filters keeps each search's result
# exactly what the store holds for those tags.
AUTHORS = ["amm.retrieval.ranking=bm25", "amm.retrieval.filter_tags=true"]
NO_DOOR = "open door to bedroom"  # in the authors' valid set everywhere; the kitchen has no such door
SUCCESS = record("go to outside", "You move to the outside.", room="kitchen")


def start(env: ScienceWorldAdapter, task: int) -> Trajectory:
    result = env.reset(task, 0)
    return Trajectory(task, get_task(task).name, 0, result.task_description, result, semantics=SEMANTICS)


def play(env: ScienceWorldAdapter, traj: Trajectory, hook: AmmHook, actions: Sequence[str]) -> None:
    """Real steps, recorded, then AMM's write hook, as the controller's ``observe`` runs them."""
    for action in actions:
        prev = traj.current
        result = env.step(action)
        traj.record(action, "swift", result)
        hook.memory.after_step(traj, action, prev, result)


class Recorder:
    """Scripted Swift: ``script(call, memories)`` names the action; records what every call saw (the
    memories, the episode's scores as the trajectory shows them, the current score)."""

    name = "recorder"

    def __init__(self, script: Callable[[int, list[str]], str]) -> None:
        self.script = script
        self.seen: list[tuple[list[str], list[int], int]] = []

    def propose(self, traj: Trajectory, memories: Sequence[MemoryHint] | None = None) -> Proposal:
        shown = [m.action for m in memories or []]
        self.seen.append((shown, [t.score for t in traj.turns], traj.current.score))
        action = self.script(len(self.seen) - 1, shown)
        return Proposal((RankedAction(action, 1.0),), 0.9)


def to_kitchen_then_no_door(call: int, memories: list[str]) -> str:
    """Step 0 earns 4 points, steps 1-2 get ScienceWorld's no-match reply; a memory is copied."""
    if memories:
        return memories[0]
    return "go to kitchen" if call == 0 else NO_DOOR


def test_t1_on_a_forced_iteration_runs_swifts_memory_action_instead_of_sage(play_modules: Play) -> None:
    """Two failure messages force Sage at step 3. The authors' T1 fires there anyway (success memories,
    a Swift retry that sees every score as 0) and its valid action runs instead of Sage."""
    swift = Recorder(to_kitchen_then_no_door)
    run = play_modules(
        swift,
        sage_replies("1. look around"),
        config_name="amm",
        overrides=AUTHORS,
        memories=[SUCCESS],
        step_limit=4,
    )
    assert [s.observation for s in run.steps[1:3]] == ["No known action matches that input."] * 2
    step = run.steps[3]
    assert (step.action, step.source) == ("go to outside", "swift")
    assert "T1 success instead of forced sage (failure_messages)" in step.reason
    assert run.of("sage_call") == [] and run.of("escalation") == []
    t1 = [r for r in run.of("memory_retrieval") if r.trigger == "T1"]
    assert [(r.step, r.rung, r.n) for r in t1] == [(3, "success", 1)]
    # The retry saw the memory with every score hidden; the episode's own record kept its 4 points.
    assert swift.seen[-1] == (["go to outside"], [0, 0, 0], 0)
    assert [t.score for t in run.agent.traj.turns[:3]] == [4, 4, 4]  # type: ignore[union-attr]


def test_t1_stays_out_of_an_iteration_the_focus_rule_forces(play_modules: Play) -> None:
    """Swift's focus is gated (task 13 wants the apple plant's stages), so the next iteration is forced,
    both by the iteration without a step and by the focus rule; the authors name it after the focus
    rule, which exempts it from T1: Sage plans, no T1 search at that step."""
    script = ["teleport to outside", "inventory"]
    swift = ScriptedSwift(
        lambda traj: [script[len(traj.turns)]] if len(traj.turns) < 2 else ["focus on apple seed"]
    )
    run = play_modules(
        swift,
        sage_replies("1. look around"),
        config_name="amm",
        overrides=AUTHORS,
        memories=[SUCCESS],
        step_limit=3,
    )
    escalation = next(e for e in run.of("escalation") if e.step == 2)
    assert escalation.rule == "no_env_step" and run.steps[2].source == "sage"
    assert not [r for r in run.of("memory_retrieval") if r.trigger == "T1"]


def test_fastslows_profile_sends_the_forced_iteration_to_sage(play_modules: Play) -> None:
    swift = Recorder(to_kitchen_then_no_door)
    run = play_modules(
        swift,
        sage_replies("1. look around"),
        config_name="amm",
        overrides=[
            *AUTHORS,
            "amm.retrieval.t1_on_forced=false",
            "amm.retrieval.t1_settles=false",
            "amm.retrieval.t1_zero_scores=false",
        ],
        memories=[SUCCESS],
        step_limit=4,
    )
    (call,) = run.of("sage_call")
    assert (call.step, call.rule) == (3, "failure_messages") and run.steps[3].source == "sage"
    assert not [r for r in run.of("memory_retrieval") if r.trigger == "T1"]


def test_t1_with_injection_off_still_searches_and_retries_without_memories(play_modules: Play) -> None:
    """The authors' "T1 injection off" (``t1_inject: false``): the search runs and is logged, the retry
    runs without memories, nothing is injected; its valid action still replaces the forced Sage call."""
    swift = Recorder(to_kitchen_then_no_door)
    run = play_modules(
        swift,
        sage_replies("1. look around"),
        config_name="amm",
        overrides=[*AUTHORS, "amm.retrieval.t1_inject=false"],
        memories=[SUCCESS],
        step_limit=4,
    )
    assert swift.seen[-1] == ([], [0, 0, 0], 0)
    assert (run.steps[3].action, run.steps[3].source) == (NO_DOOR, "swift") and not run.of("sage_call")
    t1 = [(r.step, r.rung, r.n) for r in run.of("memory_retrieval") if r.trigger == "T1"]
    assert t1 == [(3, "success", 1)] and run.of("memory_injection") == []


def test_t1_retries_swift_without_memories(play_modules: Play) -> None:
    """An empty store: the authors still retry Swift (their retry does not depend on the search), and a
    valid retry is Swift's action; fastslow's profile skips the rung and escalates."""
    swift = ScriptedSwift(["dance wildly", "look around"])
    run = play_modules(swift, config_name="amm", overrides=AUTHORS, step_limit=1)
    (step,) = run.steps
    assert (step.action, step.source) == ("look around", "swift") and "T1 success" in step.reason
    assert swift.calls == 2
    assert [(r.trigger, r.rung, r.n) for r in run.of("memory_retrieval")] == [("T1", "success", 0)]
    assert [(f.trigger, f.reason) for f in run.of("memory_fallback")] == [("T1", "no_records")]

    swift = ScriptedSwift(["dance wildly", "look around"])
    run = play_modules(
        swift,
        config_name="amm",
        overrides=[*AUTHORS, "amm.retrieval.t1_retry_without_memories=false"],
        step_limit=1,
        store_name="skip.sqlite",
    )
    assert swift.calls == 1 and "T1" not in run.steps[0].reason


def test_t1_climbs_one_rung_per_swift_failure_in_a_row(env: ScienceWorldAdapter, tmp_path: Path) -> None:
    """The authors' ladder: the first failure in a row searches success memories, the second success
    and near-miss memories, the third none; a valid Swift proposal or a forced iteration restarts it."""
    cfg = load_config("amm", [*AUTHORS, f"amm.path={tmp_path}/m.sqlite"]).amm
    store = SqliteStore(str(tmp_path / "m.sqlite"))
    store.add_many([SUCCESS, record("look around", "This room is called the hallway.", tag="near-miss")])
    sink = ListSink()
    hooks = Amm(cfg, store).episode("13-0", sink)
    traj = start(env, LIFE_STAGES)
    garbage = Proposal((RankedAction("dance wildly", 1.0),), 0.9)

    def failing(failed: bool = True, forced: str | None = None) -> str:
        before = len(sink.events)
        hooks.swift_proposed(
            traj, failed=failed, forced=forced, retry=lambda m: garbage, accept=lambda p: False
        )
        rungs = [e.rung for e in sink.events[before:] if isinstance(e, MemoryRetrieval)]
        return ",".join(rungs)

    assert [failing(), failing(), failing()] == ["success", "success+near-miss", ""]
    assert failing(failed=False) == "" and failing() == "success"
    assert failing(forced="no_env_step") == "success+near-miss"  # the count before the reset
    assert failing() == "success"
    assert failing(forced="focus_before_sage") == ""  # the authors exempt their focus rule
    store.close()


def test_a_t1_trigger_is_a_step_whatever_its_rung(play_modules: Play) -> None:
    """Appendix D's T1 count (``paper_episode``, fidelity C1 and M-T11): Swift's invalid proposals climb
    the authors' ladder one rung per failure in a row; every step on which the ladder searched is one
    T1 trigger, the success + near-miss rung's included."""
    near_miss = record("look around", "This room is called the hallway.", tag="near-miss")
    run = play_modules(
        ScriptedSwift(["dance wildly"]),
        sage_replies("1. look around"),
        config_name="amm",
        overrides=AUTHORS,
        memories=[SUCCESS, near_miss],
        step_limit=6,
    )
    t1 = [(r.step, r.rung) for r in run.of("memory_retrieval") if r.trigger == "T1"]
    assert {"success", "success+near-miss"} <= {rung for _, rung in t1}
    assert paper_episode(run.events)["t1_triggers"] == len({step for step, _ in t1}) > 1


def test_t2_fires_at_4_and_8_steps_without_progress(play_modules: Play) -> None:
    swift = ScriptedSwift(["look around"])
    run = play_modules(swift, config_name="amm", overrides=AUTHORS, step_limit=10)
    t2 = [(r.step, r.rung) for r in run.of("memory_retrieval") if r.trigger == "T2"]
    assert t2 == [(4, "success"), (8, "success+near-miss")]
    # fastslow's profile: the stagnation window after the step (5 steps, at most once per window).
    run = play_modules(
        ScriptedSwift(["look around"]),
        config_name="amm",
        overrides=[*AUTHORS, "amm.retrieval.t2_at=[]"],
        step_limit=10,
        store_name="window.sqlite",
    )
    assert [(r.step, r.rung) for r in run.of("memory_retrieval") if r.trigger == "T2"] == [(5, ""), (10, "")]


def test_t3_fires_at_every_repeat_of_an_unknown_action_in_the_authors_profile(play_modules: Play) -> None:
    """In the kitchen Swift repeats the authors' "open door to bedroom" (in their valid set, but the
    kitchen has no such door, so ScienceWorld does not know it; Sage is off): the authors' T3 searches
    avoidance memories after each step that repeats it (steps 3, 4, 5), fastslow's once per streak."""

    def t3_steps(rule: str) -> list[int]:
        run = play_modules(
            ScriptedSwift(["go to kitchen", NO_DOOR, NO_DOOR, NO_DOOR, NO_DOOR]),
            config_name="amm",
            overrides=[*AUTHORS, "controller.sage_enabled=false", f"amm.retrieval.t3_rule={rule}"],
            step_limit=5,
            store_name=f"{rule}.sqlite",
        )
        assert [(s.action, s.observation) for s in run.steps[1:]] == [(NO_DOOR, NO_MATCH)] * 4
        return [r.step for r in run.of("memory_retrieval") if r.trigger == "T3"]

    assert t3_steps("every_repeat") == [3, 4, 5]
    assert t3_steps("first_repeat") == [3]


def test_t4_adds_avoidance_memories_after_failure_messages(play_modules: Play) -> None:
    """Two failure messages, a retry that fails: Sage plans, and its block holds the success memory
    and, in the slots left, avoidance memories (those of this episode's own failures among them)."""
    avoid = record(
        "open door to greenhouse",
        "No known action matches that input.",
        tag="avoidance",
        subtag="invalid_action",
        room="kitchen",
        score_after=4,
        score_before=4,
    )

    def plan(overrides: Sequence[str], store: str) -> tuple[Run, str]:
        swift = ScriptedSwift(["go to kitchen", NO_DOOR, NO_DOOR, "dance wildly"])
        run = play_modules(
            swift,
            sage_replies("1. look around"),
            config_name="amm",
            overrides=[*AUTHORS, *overrides],
            memories=[SUCCESS, avoid],
            step_limit=4,
            store_name=store,
        )
        (prompt, *_) = [p for p in run.model.prompts if is_plan_prompt(p)]
        return run, prompt[-1]["content"]

    run, user = plan([], "authors.sqlite")
    assert run.of("sage_call")[0].rule == "failure_messages"
    t4 = [(r.rung, r.n) for r in run.of("memory_retrieval") if r.trigger == "T4"]
    assert t4[0][0] == "" and t4[0][1] >= 1 and t4[1][0] == "avoidance" and t4[1][1] >= 1
    # One planning, two searches: one T4 trigger in both counters (Appendix D's T4 = Sage injections).
    assert len(t4) == 2 and paper_episode(run.events)["t4_triggers"] == 1
    assert memory_episode(run.events)["triggers"]["T4"] == 1
    assert "go to outside" in user and "avoidance/" in user and "actions that failed before" in user
    (sage,) = [i for i in run.of("memory_injection") if i.target == "sage"]
    assert sage.n >= 2

    run, user = plan(["amm.retrieval.t4_avoidance_on_failures=false"], "fastslow.sqlite")
    assert [r.rung for r in run.of("memory_retrieval") if r.trigger == "T4"] == [""]
    assert "go to outside" in user and "avoidance/" not in user


def test_the_critic_gets_a_fresh_search_ranked_by_task_and_room_and_one_avoidance_memory(
    env: ScienceWorldAdapter, tmp_path: Path
) -> None:
    """``critic_evidence: fresh``: a search at the call (not the T2/T3 cache), same task first, then
    the same room, then reward; refusals left out; one avoidance memory unless the report is only a
    navigation loop."""
    cfg = load_config("full", [*AUTHORS, f"amm.path={tmp_path}/m.sqlite"]).amm
    store = SqliteStore(str(tmp_path / "m.sqlite"), max_terms=cfg.retrieval.query_terms)  # as open_store
    other_task = dict(task_id=7, task_name="find-non-living-thing", task_family="4", episode_id="7-0")
    store.add_many(
        [
            record("look around", "This room is called the kitchen.", room="kitchen", **other_task),
            record("open door to kitchen", "The door is already open.", room="bedroom", score_after=4),
            record("go to kitchen", "You move to the kitchen.", room="hallway", tag="near-miss"),
            record("pick up air", "You can't do that.", room="hallway"),
            record("eat the door", "No known action matches that input.", tag="avoidance", room="hallway"),
        ]
    )
    sink = ListSink()
    hook = AmmHook(Amm(cfg, store).episode("13-0", sink))
    traj = start(env, LIFE_STAGES)
    play(env, traj, hook, ["look around", "look around"])
    hook.memory.cache["T2"] = [record("cached", "from the cache")]

    (block,) = hook.critic_memories(traj, ["repeated_observation"])
    actions = [line.split("action: ")[1] for line in block.splitlines() if "action: " in line]
    # same task and room (hallway) first, then the same task elsewhere, then another task; no refusal
    assert actions == ["go to kitchen", "open door to kitchen", "look around", "eat the door"]
    assert "cached" not in block and hook.memory.cache["T2"]  # the cache is not read
    rungs = [(e.trigger, e.rung) for e in sink.events if isinstance(e, MemoryRetrieval)]
    assert rungs[-2:] == [("T2", "critic"), ("T2", "critic-avoidance")]
    assert [e.target for e in sink.events if isinstance(e, MemoryInjection)] == ["critic"]

    (block,) = hook.critic_memories(traj, ["navigation_loop"])
    assert "eat the door" not in block
    # without the report, the recent observations decide: two plain looks show no failure
    (block,) = hook.critic_memories(traj)
    assert "eat the door" not in block
    assert not [e for e in sink.events if isinstance(e, MemoryFallback)]
    store.close()


def test_the_full_systems_critic_reads_a_fresh_search(env: ScienceWorldAdapter, tmp_path: Path) -> None:
    """The full configuration end to end: Swift repeats a look, SRM's detector reports, the LLM Critic
    is called, and the memories in its prompt are the ones a search at that step found (its
    ``MemoryRetrieval(T2, critic)`` at the Critic call's step), not T2/T3's cache. The report's
    patterns reach AMM: a repeated look is no navigation loop, so an avoidance memory is searched for
    and shown although the last two observations (plain looks) show no failure."""
    path = tmp_path / "m.sqlite"
    config = load_config("full", [*AUTHORS, "env.step_limit=12", f"amm.path={path}", "critic.kind=llm"])
    store = SqliteStore(str(path))
    store.add_many(
        [
            record("go to kitchen", "You move to the kitchen.", room="hallway"),
            record("eat the door", "No known action matches that input.", tag="avoidance", room="hallway"),
        ]
    )
    critic = ScriptedModel(["Diagnosis: looping.\nActions:\n1. go to kitchen"])
    agent = build_swiftsage(
        config,
        swift=ScriptedSwift(["look around"]),
        sage_model=ScriptedModel(sage_replies("1. look around")),
        critic_model=critic,
        store=store,
    )
    sink = ListSink()
    try:
        run_episode(env, agent, Episode(LIFE_STAGES, 0), config, sink)
    finally:
        store.close()
    calls = [e for e in sink.events if isinstance(e, CriticCall)]
    assert calls, "the detector reported and the Critic was called"
    searches = [e for e in sink.events if isinstance(e, MemoryRetrieval) and e.rung == "critic"]
    assert [s.step for s in searches] == [c.step for c in calls][: len(searches)] and searches
    avoid = [e for e in sink.events if isinstance(e, MemoryRetrieval) and e.rung == "critic-avoidance"]
    assert [a.step for a in avoid] == [s.step for s in searches]
    (prompt, *_) = critic.prompts
    text = prompt[-1]["content"]
    assert "BEGIN RETRIEVED MEMORIES" in text and "action: go to kitchen" in text
    assert "action: eat the door" in text


TRIGGER_FIELDS = (
    "t1_ladder",
    "t1_on_forced",
    "t1_settles",
    "t1_retry_without_memories",
    "t1_inject",
    "t1_zero_scores",
    "t2_at",
    "t3_rule",
    "t4_avoidance_on_failures",
    "critic_evidence",
)


def test_the_paper_configs_use_the_authors_triggers_and_the_fast_pathway_keeps_fastslows() -> None:
    fastslow = RetrievalConfig()
    for name in ("swift-amm", "swift-amm-srm"):
        r = load_config(name).amm.retrieval
        assert {f: getattr(r, f) for f in TRIGGER_FIELDS} == {f: getattr(fastslow, f) for f in TRIGGER_FIELDS}
    for name in ("amm", "full", "paper-amm", "paper-full"):
        r = load_config(name).amm.retrieval
        assert (r.t1_ladder, r.t1_on_forced, r.t1_settles, r.t2_at, r.t3_rule, r.critic_evidence) == (
            "across_failures",
            True,
            True,
            [4, 8],
            "every_repeat",
            "fresh",
        )


def test_t1_on_forced_needs_t1_settles() -> None:
    with pytest.raises(ValueError, match="t1_settles"):
        RetrievalConfig(t1_on_forced=True)
    with pytest.raises(ValueError, match="ascending"):
        RetrievalConfig(t2_at=[8, 4])
