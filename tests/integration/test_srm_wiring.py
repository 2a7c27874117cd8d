"""SRM wired into the SwiftSage controller on real ScienceWorld (docs/srm.md, docs/controller.md
"Modules"): Gate-1 before every action whatever its source, a drop costs no env step, Critic actions go
through the FIFO buffer and are checked when popped; and ``controller.sage_enabled: false``.

Task 13 variation 0 starts in the hallway (a picture there, none in the kitchen)."""

from __future__ import annotations

from collections.abc import Callable

from controller.helpers import Run, ScriptedSwift, sage_replies
from integration.helpers import MemorySwift

Play = Callable[..., Run]
SRM = ["srm.enabled=true", "critic.kind=rules"]


def test_gate_drops_invalid_swift_action_and_next_candidate_runs(play_modules: Play) -> None:
    swift = ScriptedSwift(lambda traj: ["dance wildly", "look around"])
    run = play_modules(swift, overrides=SRM, step_limit=3)
    assert [s.step for s in run.steps] == [1, 2, 3]  # three env steps, however many drops
    assert [s.action for s in run.steps] == ["look around"] * 3
    assert {s.source for s in run.steps} == {"swift"}
    gates = run.of("gate_decision")
    drops = [g for g in gates if g.outcome == "drop"]
    assert len(drops) == 3 and {(g.original, g.source, g.reason) for g in drops} == {
        ("dance wildly", "swift", "not_admissible")
    }
    assert drops[0].step == 0  # dropped before the first env step: it cost none
    assert not any("No known action" in s.observation for s in run.steps)


def test_every_candidate_dropped_falls_back_and_escalation_counts_it(play_modules: Play) -> None:
    run = play_modules(
        ScriptedSwift(["dance wildly"]), sage_replies("1. look at picture"), overrides=SRM, step_limit=3
    )
    first, second = run.steps[:2]
    assert first.action == "look around" and "no candidate resolved" in first.reason
    (esc, *_) = run.of("escalation")
    assert esc.rule == "invalid_action" and esc.step == 1  # two timesteps without a valid Swift action
    assert second.source == "sage" and second.action == "look at picture"
    checked = {(g.source, g.original) for g in run.of("gate_decision") if g.outcome == "accept"}
    assert ("sage", "look at picture") in checked  # Sage's buffered action passed Gate-1 too


def test_buffered_critic_action_invalid_by_then_is_dropped(play_modules: Play) -> None:
    # Swift loops on "look around"; the stagnation detector reports it at step 5, the (scripted LLM)
    # Critic answers two actions valid in the hallway. After the teleport, the picture is out of reach.
    critic = ["Diagnosis: looping.\nActions:\n1. teleport to kitchen\n2. look at picture"]
    run = play_modules(
        ScriptedSwift(["look around"]),
        overrides=["srm.enabled=true", "critic.kind=llm", "controller.sage_enabled=false"],
        critic=critic,
        step_limit=8,
    )
    (call,) = run.of("critic_call")
    assert call.actions == ["teleport to kitchen", "look at picture"]
    push = next(p for p in run.of("buffer_push") if p.source == "critic")
    assert push.actions == ["teleport to kitchen", "look at picture"]
    sixth, seventh = run.steps[call.step], run.steps[call.step + 1]
    assert sixth.source == "critic" and sixth.action == "teleport to kitchen"
    (drop,) = [g for g in run.of("gate_decision") if g.source == "critic" and g.outcome == "drop"]
    assert drop.original == "look at picture" and drop.step == call.step + 1
    assert seventh.source == "swift" and seventh.action == "look around"  # the next candidate, same step


def test_sage_disabled_never_calls_sage(play_modules: Play) -> None:
    run = play_modules(
        MemorySwift(["dance wildly"]),
        ["1. look around"],
        overrides=["controller.sage_enabled=false"],
        step_limit=4,
    )
    assert len(run.steps) == 4 and {s.source for s in run.steps} == {"swift"}
    assert not run.model.prompts and not run.of("sage_call") and not run.of("escalation")
    assert run.agent.sage is None
