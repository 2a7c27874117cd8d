"""AMM wired into the SwiftSage controller on real ScienceWorld (docs/amm.md "How the controller calls
AMM"): the T1 ladder retries a failed Swift with memories, T4 puts the memory block into Sage's planning
prompt, and an empty store changes nothing that executes."""

from __future__ import annotations

from collections.abc import Callable

from controller.helpers import Run, ScriptedSwift, is_plan_prompt, sage_replies
from integration.helpers import MemorySwift, record

Play = Callable[..., Run]
AMM = ["amm.enabled=true"]
MEMORY = record("teleport to kitchen", "You teleport to the kitchen.")


def test_t1_ladder_changes_swifts_action_when_a_memory_exists(play_modules: Play) -> None:
    swift = MemorySwift(["dance wildly"])
    run = play_modules(swift, overrides=AMM, memories=[MEMORY], step_limit=1)
    (step,) = run.steps
    assert step.action == "teleport to kitchen" and step.source == "swift" and "T1 success" in step.reason
    assert swift.seen == [["teleport to kitchen"]]
    (retrieval, *_) = run.of("memory_retrieval")
    assert retrieval.trigger == "T1" and retrieval.rung == "success" and retrieval.n == 1
    assert [i.target for i in run.of("memory_injection")] == ["swift"]


def test_without_memories_t1_escalates_as_the_baseline(play_modules: Play) -> None:
    swift = MemorySwift(["dance wildly"])
    run = play_modules(swift, overrides=AMM, step_limit=1)
    assert run.steps[0].action == "dance wildly" and swift.seen == []
    assert {f.reason for f in run.of("memory_fallback")} == {"no_records"}


def test_t4_puts_the_memory_block_into_the_planning_prompt(play_modules: Play) -> None:
    # Swift never copies memories: T1 retries fail, two invalid proposals escalate to Sage.
    swift = ScriptedSwift(["dance wildly"])
    run = play_modules(swift, sage_replies("1. look around"), overrides=AMM, memories=[MEMORY], step_limit=2)
    (plan, *_) = [p for p in run.model.prompts if is_plan_prompt(p)]
    user = plan[-1]["content"]
    assert user.startswith("Task: ")  # the stable prefix (system prompt, task) stays first
    assert "<<< BEGIN RETRIEVED MEMORIES" in user and "teleport to kitchen" in user
    assert user.index("BEGIN RETRIEVED MEMORIES") < user.index("Score:")
    assert run.steps[1].source == "sage"
    assert "T4" in {r.trigger for r in run.of("memory_retrieval")}
    assert "sage" in {i.target for i in run.of("memory_injection")}


def test_empty_memory_block_changes_no_executed_action(play_modules: Play) -> None:
    def play(overrides: list[str], store: str) -> Run:
        swift = ScriptedSwift(["dance wildly", "look around", "dance wildly", "dance wildly", "look around"])
        return play_modules(
            swift, sage_replies("1. look at picture"), overrides=overrides, step_limit=6, store_name=store
        )

    baseline, with_amm = play([], "unused.sqlite"), play(AMM, "empty.sqlite")
    assert [(s.action, s.source) for s in with_amm.steps] == [(s.action, s.source) for s in baseline.steps]
    assert with_amm.model.prompts == baseline.model.prompts  # T4 fell back: the baseline prompt exactly
    assert with_amm.of("sage_call") and with_amm.of("memory_fallback")
    assert not baseline.of("memory_fallback") and not baseline.of("memory_retrieval")
