"""SRM in the paper authors' profile (configs/srm.yaml, paper §3.2; docs/fidelity.md rows R*) on real
ScienceWorld with a scripted Swift, Sage and Critic: when the Critic runs (only on an empty buffer, a
report made while the buffer holds actions waits up to two of the authors' steps, a reward cancels it),
what its answer does (it becomes the buffer), what it costs (only injected answers count; the same
actions in the same state start the back-off), and what a Gate-1 drop of Swift's action does in the
authors' loop (a GATE_INVALID failure message, no env step, Sage forced next; a second drop in the same
step is their gate-drop loop)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from controller.helpers import Run, ScriptedSwift, sage_replies
from fastslow.controller.arbiter import Chosen, Timestep
from fastslow.controller.authors import AuthorsArbiter
from fastslow.controller.config import EscalationConfig
from fastslow.controller.sage import SagePlan
from fastslow.env.scienceworld.authors import AUTHORS as SW_AUTHORS
from fastslow.reflection.critic import Critic
from fastslow.reflection.hook import SrmHook

Play = Callable[..., Run]

# Task 13 (apple plant life stages), variation 0, starts in the hallway: "look around", "look at
# picture", "inventory", "wait" and "wait1" change nothing there and none of their observations is an
# authors' failure message. Sage's plans and the steps before a Sage call use actions the authors'
# FUNC grammar writes ("inventory" has no FUNC form: their Sage prompt fails on it).
LOOK, INV, PIC = "look around", "inventory", "look at picture"

AUTHORS = str(Path(__file__).parent / "data" / "srm-authors.yaml")
"""srm.yaml with the authors' Critic charging (the embedded srm.yaml charges every call)."""


def critic_of(run: Run) -> Critic:
    (hook,) = [h for h in run.agent.hooks if isinstance(h, SrmHook)]
    assert hook.srm.critic is not None
    return hook.srm.critic


def calls(run: Run) -> list[tuple[int, bool, str | None, bool]]:
    return [(c.step, c.injected, c.skipped, c.deferred) for c in run.of("critic_call")]


def swift_then_invalid(valid: Sequence[str]) -> ScriptedSwift:
    """Swift plays ``valid`` for the first steps, then an invalid text (the authors' loop calls Sage)."""
    return ScriptedSwift(lambda traj: [valid[len(traj.turns)]] if len(traj.turns) < len(valid) else ["dance"])


def test_a_report_while_the_buffer_holds_actions_waits_and_is_answered_when_it_runs_dry(
    play_modules: Play,
) -> None:
    """Sage's plan runs at steps 5-7; its two "look around" make a repeated-action report at step 6 with
    "wait" still buffered: no Critic call then. "wait" empties the buffer at step 7, one authors' step
    later, within their two: the Critic answers the waiting report, and its answer runs next."""
    swift = swift_then_invalid([LOOK, PIC, LOOK, PIC])
    plan = sage_replies("1. look around\n2. look around\n3. wait")
    run = play_modules(
        swift,
        plan,
        critic=["Diagnosis: looping.\nActions:\n1) inventory\n2) wait1"],
        config_name=AUTHORS,
        step_limit=9,
    )
    assert [(s.action, s.source) for s in run.steps[4:7]] == [
        (LOOK, "sage"),
        (LOOK, "sage"),
        ("wait", "sage"),
    ]
    report = next(r for r in run.of("stagnation_report") if r.step == 6)
    assert report.pattern == "repeated_action"
    assert calls(run) == [(7, True, None, True)]
    assert [(s.action, s.source) for s in run.steps[7:9]] == [(INV, "critic"), ("wait1", "critic")]
    assert critic_of(run).calls == 1


def test_a_waiting_report_goes_stale_after_two_of_the_authors_steps(play_modules: Play) -> None:
    """The same report, but two buffered actions after it: the buffer runs dry at step 8, and the next
    iteration, three of the authors' steps after the report, drops it unanswered."""
    swift = swift_then_invalid([LOOK, PIC, LOOK, PIC])
    plan = sage_replies("1. look around\n2. look around\n3. wait\n4. look at picture")
    run = play_modules(swift, plan, critic=["Actions:\n1) inventory"], config_name=AUTHORS, step_limit=9)
    assert [s.source for s in run.steps[4:8]] == ["sage"] * 4
    assert any(r.step == 6 for r in run.of("stagnation_report"))
    assert calls(run) == [] and critic_of(run).waiting is None


def test_a_report_is_answered_when_the_buffer_scan_drops_every_head(play_modules: Play) -> None:
    """The report of step 6 waits behind "pick up shovel", which cannot run in the hallway (no shovel
    there): at step 7 the scan drops it, the buffer is dry without an env step, and the Critic answers
    the report at that iteration (their drained-buffer point): its answer is step 7's action, not
    Swift's (before, the report waited for the end of step 7)."""
    swift = swift_then_invalid([LOOK, PIC, LOOK, PIC])
    plan = sage_replies("1. look around\n2. look around\n3. pick up shovel")
    run = play_modules(
        swift,
        plan,
        critic=["Diagnosis: looping.\nActions:\n1) inventory\n2) wait1"],
        config_name=AUTHORS,
        step_limit=8,
    )
    assert [(s.action, s.source) for s in run.steps[4:6]] == [(LOOK, "sage"), (LOOK, "sage")]
    pops = [(p.step, p.action, p.skipped) for p in run.of("buffer_pop")]
    assert (6, None, ["pick up shovel"]) in pops
    assert calls(run) == [(6, True, None, True)]
    assert [(s.action, s.source) for s in run.steps[6:8]] == [(INV, "critic"), ("wait1", "critic")]


def test_a_reward_cancels_a_waiting_report(play_modules: Play) -> None:
    """The plan's last action, "go to kitchen", earns a reward (4) right before the buffer runs dry:
    the stagnation the report described is over, so the Critic is not called."""
    swift = swift_then_invalid([LOOK, PIC, LOOK, PIC])
    plan = sage_replies("1. look around\n2. look around\n3. go to kitchen")
    run = play_modules(swift, plan, critic=["Actions:\n1) inventory"], config_name=AUTHORS, step_limit=7)
    assert (run.steps[6].action, run.steps[6].reward) == ("go to kitchen", 4)
    assert any(r.step == 6 for r in run.of("stagnation_report"))
    assert calls(run) == [] and critic_of(run).waiting is None


def test_with_report_timing_the_critic_answer_replaces_the_buffer(play_modules: Play) -> None:
    """``critic.timing: report`` calls the Critic at the report although the buffer still holds
    "wait", "look at picture", "go to kitchen"; with ``inject: replace`` its answer becomes the buffer."""
    swift = swift_then_invalid([LOOK, PIC, LOOK, PIC])
    plan = sage_replies("1. look around\n2. look around\n3. wait\n4. look at picture\n5. go to kitchen")
    run = play_modules(
        swift,
        plan,
        critic=["Actions:\n1) wait1"],
        overrides=["critic.timing=report"],
        config_name=AUTHORS,
        step_limit=7,
    )
    assert calls(run) == [(6, True, None, False)]
    clear = next(c for c in run.of("buffer_clear") if c.step == 6)
    assert clear.reason == "critic actions replace the buffer"
    assert clear.dropped == ["wait", PIC, "go to kitchen"]
    push = [p for p in run.of("buffer_push") if p.source == "critic"]
    assert [p.actions for p in push] == [["wait1"]]
    assert (run.steps[6].action, run.steps[6].source) == ("wait1", "critic")


def test_only_injected_answers_cost_budget_and_the_same_answer_in_the_same_state_backs_off(
    play_modules: Play,
) -> None:
    """Swift alone (Sage off) plays each action twice in a row (never three equal observations: no
    LoopGuard). Step 7 (inventory twice): the answer only repeats recent actions - skipped, free. Step 9
    (look around twice): "wait" is injected and charged (budget 3 -> 2; the authors' step 8) and runs at
    step 10. Step 12: within the cooldown of 5 after the injection, no call. Step 14: the same state as
    at step 9 (hallway, same inventory, the look text again) and the same answer "wait": skipped, free,
    and the back-off of 10 starts (their step 13 -> 23), so step 16's report makes no call."""
    script = [LOOK, INV, INV, LOOK, LOOK, INV, INV, LOOK, LOOK, INV, INV, LOOK, LOOK, INV, INV]
    critic = [
        "Actions:\n1) inventory\n2) look around",  # step 7: only recent actions -> low_quality_output
        "Actions:\n1) wait",  # step 9: injected
        "Actions:\n1) wait",  # step 14: same state (the inventory text again), same actions -> back-off
    ]
    run = play_modules(
        ScriptedSwift(script),
        critic=critic,
        overrides=["controller.sage_enabled=false"],
        config_name=AUTHORS,
        step_limit=17,
    )
    actions = [s.action for s in run.steps]
    assert actions[:10] == [LOOK, INV, INV, LOOK, LOOK, INV, INV, LOOK, LOOK, "wait"]
    assert run.steps[9].source == "critic"
    critic = critic_of(run)
    assert calls(run) == [
        (7, False, "low_quality_output", False),
        (9, True, None, False),
        (14, False, "same_state_same_actions", False),
    ]
    assert [c.budget_left for c in run.of("critic_call")] == [3, 2, 2]
    assert (critic.calls, critic.model_calls) == (1, 3)
    reported = {r.step for r in run.of("stagnation_report")}
    assert {7, 9, 12, 14, 16} <= reported
    assert critic.blocked(15) == "backoff" and critic.blocked(23) is None


def test_a_gate_drop_of_swift_is_a_failure_message_and_forces_sage_next_iteration(play_modules: Play) -> None:
    """Melting point (task 20): after its focus on the thermometer, Swift's valid "focus on thermometer"
    again is dropped by Gate-1 (repeated focus): no env step, the failure message GATE_INVALID goes to
    the failure list, and the authors' no-step rule forces Sage in the same env step; Sage's prompt
    lists the failure."""
    script = ["teleport to kitchen", "pick up thermometer", "focus on thermometer", "focus on thermometer"]
    run = play_modules(
        ScriptedSwift(script), sage_replies("1. look around"), config_name=AUTHORS, task=20, step_limit=4
    )
    assert [s.action for s in run.steps[:3]] == script[:3]
    drop = [g for g in run.of("gate_decision") if g.step == 3 and g.source == "swift"]
    assert [(g.outcome, g.reason) for g in drop] == [("drop", "repeated_focus")]
    escalation = next(e for e in run.of("escalation") if e.step == 3)
    assert (escalation.rule, escalation.blocked) == ("no_env_step", None)
    assert (run.steps[3].action, run.steps[3].source) == (LOOK, "sage")
    assert "GATE_INVALID:repeated_focus" in run.model.prompts[0][-1]["content"]  # the planning prompt
    # Sage ran: the authors clear their failure messages (the kitchen's look, "containing nothing",
    # is one of theirs again afterwards).
    assert not any(t.observation.startswith("GATE_INVALID") for t in run.agent.arbiter.failures)


def test_a_second_drop_in_one_step_is_the_gate_drop_loop(play_modules: Play) -> None:
    """Three "look at thermometer" (the same reading) in a row fire the LoopGuard at step 6, which turns
    the forcing rules off for the next decision: Swift's dropped focus goes round again, is dropped a
    second time in the same env step, and the authors' gate-drop loop forces Sage past the LoopGuard."""
    script = [
        "teleport to kitchen",
        "pick up thermometer",
        "focus on thermometer",
        *["look at thermometer"] * 3,
    ]
    swift = ScriptedSwift(
        lambda traj: [script[len(traj.turns)]] if len(traj.turns) < 6 else ["focus on thermometer"]
    )
    run = play_modules(swift, sage_replies("1. look around"), config_name=AUTHORS, task=20, step_limit=7)
    assert any(c.step == 6 and c.reason.startswith("LoopGuard") for c in run.of("buffer_clear"))
    drops = [
        g for g in run.of("gate_decision") if g.step == 6 and g.source == "swift" and g.outcome == "drop"
    ]
    assert len(drops) == 2
    escalation = next(e for e in run.of("escalation") if e.step == 6)
    assert escalation.rule == "no_env_step" and "gate-drop loop" in escalation.detail
    assert escalation.blocked is None
    assert (run.steps[6].action, run.steps[6].source) == (LOOK, "sage")


def test_the_gate_drop_counters_and_the_loop_break_fallback(play_modules: Play) -> None:
    """The arbiter's side of a drop: a failure message, no arbitration rule for the iteration, the
    step's second drop forcing Sage once (past the consecutive-call limit) when it has not run for the
    step, else the loop-break fallback: the first of look around / inventory / wait that passes."""
    run = play_modules(ScriptedSwift([LOOK]), config_name=AUTHORS, step_limit=1)
    agent, traj = run.agent, run.agent.traj
    assert traj is not None
    arbiter = AuthorsArbiter(EscalationConfig(), SW_AUTHORS, "focus on")
    arbiter.start_iteration(5, 0)
    assert arbiter.gate_dropped("focus on x", "GATE_INVALID:focus_limit", 5, sage_available=True) == "retry"
    assert arbiter.check("focus on x", 5) is None
    assert [(t.action, t.observation) for t in arbiter.failures] == [
        ("focus on x", "GATE_INVALID:focus_limit")
    ]
    arbiter.consecutive_sage = 2  # Sage's consecutive-call limit would hold it back...
    arbiter.forced_off_until = 9  # ... and so would a LoopGuard
    arbiter.start_iteration(5, 1)
    assert not arbiter.forcing
    assert arbiter.gate_dropped("focus on x", "GATE_INVALID:focus_limit", 5, sage_available=True) == "sage"
    arbiter.start_iteration(5, 2)
    forced = arbiter.check(None, 5)
    assert forced is not None and "gate-drop loop" in forced[1]
    assert arbiter.blocked(5, forced[0]) is None
    arbiter.sage_planned(SagePlan(()), 5, traj.current)
    arbiter.start_iteration(5, 3)
    assert (
        arbiter.gate_dropped("focus on x", "GATE_INVALID:focus_limit", 5, sage_available=True) == "fallback"
    )
    now = Timestep(agent.resolver.view(traj.current, traj), agent.resolver, traj, sage_available=True)
    assert arbiter._loopbreak(now) == Chosen(LOOK, "fallback")


def test_the_loop_guard_of_the_same_step_clears_what_the_critic_injected(play_modules: Play) -> None:
    """Swift repeats "inventory": the LoopGuard fires at every step from the third, and at step 6 the
    detector reports on an empty buffer. The authors' Critic answers first and is charged; their
    LoopGuard, later in the same step, clears the buffer it filled."""
    run = play_modules(ScriptedSwift([INV]), critic=["Actions:\n1) wait1"], config_name=AUTHORS, step_limit=7)
    assert calls(run) == [(6, True, None, False)]
    clear = [c for c in run.of("buffer_clear") if c.step == 6 and c.dropped]
    assert len(clear) == 1 and clear[0].reason.startswith("LoopGuard") and clear[0].dropped == ["wait1"]
    assert [p for p in run.of("buffer_push") if p.source == "critic"] == []
    assert run.steps[6].action == INV and critic_of(run).calls == 1
