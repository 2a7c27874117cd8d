"""The SwiftSage controller on real ScienceWorld with a scripted Swift and a scripted Sage.

Task 13 variation 0 (identify-life-stages-2) starts in the hallway; task 17 variation 0
(lifespan-longest-lived) has a 6-step gold path.
"""

from __future__ import annotations

from collections.abc import Callable

from controller.helpers import Run, ScriptedSwift, gold_swift, sage_replies
from fastslow.eval.metrics import controller_usage
from fastslow.events import EndState

Play = Callable[..., Run]
GOLD_17 = ("open door to greenhouse", "go to greenhouse", "open door to outside", "go to outside")
FOCUS_17 = "focus on baby baby brown bear"


def test_swift_alone_reaches_success(play: Play) -> None:
    run = play(gold_swift([*GOLD_17, FOCUS_17, "wait1"]), [], task=17, escalation={"focus_needs_sage": False})
    assert run.outcome.end is EndState.SUCCESS and run.outcome.final_score == 100
    assert {s.source for s in run.steps} == {"swift"}
    assert not run.of("escalation") and not run.model.prompts
    proposals = run.of("swift_proposal")
    assert len(proposals) == len(run.steps) and proposals[0].candidates == [GOLD_17[0]]


def test_focus_before_sage_escalates_and_sage_acts(play: Play) -> None:
    run = play(
        gold_swift([*GOLD_17, FOCUS_17, "wait1"]), sage_replies(f"1. {FOCUS_17} -> You focus."), task=17
    )
    (esc,) = run.of("escalation")
    assert esc.rule == "focus_before_sage" and esc.blocked is None
    focus_step = next(s for s in run.steps if s.action == FOCUS_17)
    assert focus_step.source == "sage" and "focus_before_sage" in focus_step.reason
    assert run.outcome.end is EndState.SUCCESS


def test_invalid_action_twice_escalates(play: Play) -> None:
    run = play(ScriptedSwift(["dance wildly"]), sage_replies("1. look around"), step_limit=3)
    first, second = run.steps[:2]
    assert first.source == "swift" and "No known action" in first.observation
    (esc, *_) = run.of("escalation")
    assert esc.rule == "invalid_action" and esc.step == 1
    assert second.source == "sage" and second.action == "look around"


def test_failure_messages_escalate(play: Play) -> None:
    swift = ScriptedSwift(["mix art studio", "mix bedroom", "mix greenhouse"])  # "... does not appear to ..."
    run = play(swift, sage_replies("1. look around"), step_limit=3)
    assert [s.source for s in run.steps] == ["swift", "swift", "sage"]
    (esc,) = run.of("escalation")
    assert esc.rule == "failure_messages" and esc.step == 2


def test_no_progress_with_repeated_action_escalates(play: Play) -> None:
    run = play(ScriptedSwift(["look around"]), sage_replies("1. look at picture"), step_limit=12)
    (esc, *_) = run.of("escalation")
    assert esc.rule == "no_progress" and esc.step == 10  # SwiftSage keeps Swift for its first 10 actions
    assert [s.source for s in run.steps[:10]] == ["swift"] * 10
    assert run.steps[10].source == "sage" and run.steps[10].action == "look at picture"


def test_swift_is_forced_after_two_consecutive_sage_calls(play: Play) -> None:
    esc_cfg = {"min_actions": 0, "sage_interval": 0, "sage_cooldown": 1}
    run = play(
        ScriptedSwift(["look around"]), sage_replies("1. look at picture"), step_limit=5, escalation=esc_cfg
    )
    assert [s.source for s in run.steps[:4]] == ["swift", "sage", "sage", "swift"]
    blocked = [e for e in run.of("escalation") if e.blocked]
    assert blocked[0].blocked == "consecutive_sage" and blocked[0].step == 3
    assert "consecutive_sage" in run.steps[3].reason
    assert len(run.of("sage_call")) <= len(run.steps)  # never more than one Sage round per env step


def test_sage_cooldown_blocks_back_to_back_calls(play: Play) -> None:
    esc_cfg = {"min_actions": 0, "sage_interval": 0, "sage_cooldown": 3}
    run = play(
        ScriptedSwift(["look around"]), sage_replies("1. look at picture"), step_limit=5, escalation=esc_cfg
    )
    assert [s.source for s in run.steps[:5]] == ["swift", "sage", "swift", "swift", "sage"]
    assert [e.blocked for e in run.of("escalation")][:3] == [None, "cooldown", "cooldown"]


def test_buffer_is_fifo_and_skips_invalid_actions(play: Play) -> None:
    plan = "1. look at picture\n2. dance wildly\n3. teleport to kitchen\n4. pick up thermometer"
    run = play(ScriptedSwift(["dance wildly"]), sage_replies(plan), step_limit=5)
    assert [(s.source, s.action) for s in run.steps[1:4]] == [
        ("sage", "look at picture"),
        ("sage", "teleport to kitchen"),
        ("sage", "pick up thermometer"),  # valid only after the teleport: grounded when its turn came
    ]
    (push, *_) = run.of("buffer_push")
    assert push.actions == ["look at picture", "dance wildly", "teleport to kitchen", "pick up thermometer"]
    assert any(p.skipped == ["dance wildly"] for p in run.of("buffer_pop"))


def test_buffer_holds_at_most_five(play: Play) -> None:
    plan = "\n".join(f"{i}. look at picture" for i in range(1, 8))
    run = play(ScriptedSwift(["dance wildly"]), sage_replies(plan), step_limit=8)
    (push, *_) = run.of("buffer_push")
    assert len(push.actions) == 5 and len(push.dropped) == 2
    assert [s.source for s in run.steps[1:6]] == ["sage"] * 5


def test_buffer_is_cleared_after_repeated_failures(play: Play) -> None:
    plan = "1. mix art studio\n2. mix bedroom\n3. mix greenhouse\n4. look around"
    run = play(ScriptedSwift(["dance wildly"]), sage_replies(plan, "1. look at picture"), step_limit=4)
    assert [s.action for s in run.steps[1:3]] == ["mix art studio", "mix bedroom"]
    (clear,) = run.of("buffer_clear")
    assert clear.dropped == ["mix greenhouse", "look around"] and clear.step == 3
    # With the buffer empty, the two failures send the next timestep back to Sage for a new plan.
    assert [c.rule for c in run.of("sage_call")] == ["invalid_action", "failure_messages"]
    assert run.steps[3].action == "look at picture"


def test_task_failure_ends_the_episode(play: Play) -> None:
    run = play(ScriptedSwift(["focus on picture"]), [], escalation={"focus_needs_sage": False})
    assert run.outcome.end is EndState.FAILURE and run.outcome.final_score == -100 and len(run.steps) == 1


def test_step_limit_ends_the_episode(play: Play) -> None:
    run = play(ScriptedSwift(["look around"]), sage_replies("1. look around"), step_limit=4)
    assert run.outcome.end is EndState.STEP_LIMIT and len(run.steps) == 4


def test_early_stop_without_reward(play: Play) -> None:
    run = play(
        ScriptedSwift(["look around"]),
        sage_replies("1. look around"),
        early_stop_min_steps=6,
        early_stop_window=3,
    )
    assert run.outcome.end is EndState.EARLY_STOP and len(run.steps) == 6
    assert "no reward" in (run.outcome.error or "")


def test_ambiguous_request_is_answered_with_zero(play: Play) -> None:
    swift = ScriptedSwift(["teleport to kitchen", "pick up substance", "look around"])
    run = play(swift, [], step_limit=3, ground_cutoff=100.0)
    assert run.steps[1].observation.startswith("Ambiguous request")
    third = run.steps[2]
    assert third.action == "0" and third.source == "swift" and "ambiguous" in third.reason
    assert "Ambiguous" not in third.observation


def test_model_error_falls_back_to_swift(play: Play) -> None:
    run = play(ScriptedSwift(["dance wildly", "dance wildly", "look around"]), [], step_limit=3)
    (call, *_) = run.of("sage_call")
    assert call.error and "ModelCallError" in call.error
    failed = [m for m in run.of("model_call") if m.error]
    assert failed and failed[0].role == "sage_plan"
    assert run.steps[1].source == "swift" and "sage failed" in run.steps[1].reason
    assert run.outcome.end is EndState.STEP_LIMIT  # the episode went on


def test_unparsable_grounding_is_retried_once(play: Play) -> None:
    run = play(
        ScriptedSwift(["dance wildly"]),
        sage_replies("I am not sure what to do.", "1. look around"),
        step_limit=2,
    )
    (call,) = run.of("sage_call")
    assert call.retried and call.model_calls == 3 and call.actions == ["look around"]
    roles = [m.role for m in run.of("model_call")]
    assert roles == ["sage_plan", "sage_ground", "sage_ground"]
    retry = run.model.prompts[2]
    assert retry[-2]["role"] == "assistant" and "numbered list" in retry[-1]["content"]


def test_events_link_sage_calls_to_steps_and_prompts_share_a_prefix(play: Play) -> None:
    run = play(ScriptedSwift(["dance wildly"]), sage_replies("1. look around"), step_limit=2)
    (call,) = run.of("sage_call")
    assert {m.step for m in run.of("model_call")} == {call.step}
    kinds = [e.event for e in run.events]
    assert (
        kinds.index("escalation")
        < kinds.index("model_call")
        < kinds.index("sage_call")
        < kinds.index("buffer_push")
    )
    plan, ground = run.model.prompts[:2]
    assert plan[0] == ground[0] and plan[0]["role"] == "system"
    task_line = plan[1]["content"].splitlines()[0]
    assert task_line.startswith("Task: Your task is to focus on the life stages") and ground[1][
        "content"
    ].startswith(task_line)
    assert "dance wildly" in plan[1]["content"]  # Swift's suggestion
    assert "This room is called the hallway" in plan[1]["content"]
    assert "No known action matches" in plan[1]["content"]  # the failure list


def test_controller_usage_counters_from_the_log(play: Play) -> None:
    run = play(
        ScriptedSwift(["dance wildly"]), sage_replies("1. look around\n2. look at picture"), step_limit=4
    )
    usage = controller_usage([run.events])
    sources = [s.source for s in run.steps]
    assert usage["episodes"] == 1 and usage["env_steps"] == 4
    assert usage["swift_step_share"] == sources.count("swift") / 4
    assert usage["buffer_step_share"] == sources.count("sage") / 4
    assert usage["system2_calls_per_episode"] == len(run.of("sage_call"))
    tokens = sum(m.prompt_tokens + m.completion_tokens for m in run.of("model_call"))
    assert tokens > 0 and usage["llm_tokens_per_action"] == round(tokens / 4, 2)
    # every round got a reply and grounded its plan: the parse rate of issue #30 is 1
    rounds = run.of("sage_call")
    assert rounds and all(r.error is None and r.actions for r in rounds)
    assert usage["sage_rounds"] == usage["sage_rounds_with_actions"] == len(rounds)
    assert usage["critic_answers"] == 0 and usage["system2_action_rate"] == 1.0
    assert controller_usage([run.events[:-1]])["episodes"] == 0  # unfinished episodes are ignored
