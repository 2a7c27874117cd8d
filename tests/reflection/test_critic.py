"""SRM Critic: budget, cooldown and back-off with a scripted model in the real ScienceWorld; filtering;
Gate-1 on buffered Critic actions; the prompt; the rules Critic on real states."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from fastslow.config import CriticConfig
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.events import CriticCall, CriticEffect, GateOutcome, ListSink, ModelCall, StagnationReport
from fastslow.models import Message
from fastslow.models.scripted import ScriptedModel
from fastslow.reflection.critic import Critic, LlmCritic, RulesCritic, make_critic, parse_critic_reply
from fastslow.reflection.gate import Gate1
from reflection.helpers import State, act, start


def report_at(step: int, pattern: str = "verb_loop", avoid: Sequence[str] = ()) -> StagnationReport:
    return StagnationReport(
        step=step, pattern=pattern, evidence_steps=[step - 1, step], avoid=list(avoid), constraints=["c1"]
    )


def answer(*actions: str) -> str:
    lines = "\n".join(f"{i}. {a}" for i, a in enumerate(actions, start=1))
    return f"Diagnosis: stuck looking.\nCorrection: go where the task is.\nActions:\n{lines}"


def test_budget_cooldown_and_backoff(env: ScienceWorldAdapter) -> None:
    """Stagnation reported after every step; the safeguards decide when the Critic really runs.

    call 1 at step 1: "look at air" leads nowhere -> ineffective at step 6 -> back-off to step 11;
    call 2 at step 11: "teleport to kitchen" scores +17 at step 12 -> effective -> cooldown to step 16;
    call 3 at step 16: "look around" -> ineffective; the budget (3) is spent: no call up to step 40.
    """
    model = ScriptedModel([answer("look at air"), answer("teleport to kitchen"), answer("look around")])
    sink = ListSink()
    critic = Critic(CriticConfig(), LlmCritic(model, sink=sink), sink=sink)
    traj = start(env)
    buffer: deque[str] = deque()
    gate = Gate1(sink=sink)
    for _ in range(40):
        source = "critic" if buffer else "test"
        proposed = buffer.popleft() if buffer else "look at picture"
        decision = gate.check(proposed, traj.current, traj, source=source)
        act(env, traj, decision.action if decision.accepted else "look around")
        buffer.extend(critic.maybe_call(report_at(traj.current.steps), traj))
    calls = [e for e in sink.events if isinstance(e, CriticCall)]
    effects = [e for e in sink.events if isinstance(e, CriticEffect)]
    assert [(c.step, c.actions, c.budget_left) for c in calls] == [
        (1, ["look at air"], 2),
        (11, ["teleport to kitchen"], 1),
        (16, ["look around"], 0),
    ]
    assert [(e.call_step, e.step, e.effective, e.reason) for e in effects] == [
        (1, 6, False, "no_progress_in_window"),
        (11, 12, True, "score_increase"),
        (16, 21, False, "no_progress_in_window"),
    ]
    assert (critic.calls, critic.effective_calls, critic.ineffective_calls) == (3, 1, 2)
    assert len([e for e in sink.events if isinstance(e, ModelCall) and e.role == "critic"]) == 3
    assert critic.blocked(traj.current.steps) == "budget"


def test_no_report_no_call_and_blocked_reasons(env: ScienceWorldAdapter) -> None:
    model = ScriptedModel([answer("look at air")], cycle=True)
    critic = Critic(CriticConfig(budget=5), LlmCritic(model))
    traj = start(env)
    act(env, traj, "look at picture")
    assert critic.maybe_call(None, traj) == [] and model.prompts == []
    assert critic.maybe_call(report_at(1), traj) == ["look at air"]
    assert critic.blocked(1) == "pending"
    for _ in range(5):
        act(env, traj, "look at picture")
        critic.maybe_call(None, traj)  # settles the effect at step 6
    assert critic.blocked(6) == "backoff" and critic.blocked(11) is None


def test_model_error_gives_no_actions_and_backs_off(env: ScienceWorldAdapter) -> None:
    sink = ListSink()
    critic = Critic(CriticConfig(), LlmCritic(ScriptedModel([]), sink=sink), sink=sink)
    traj = start(env)
    act(env, traj, "look at picture")
    assert critic.maybe_call(report_at(1), traj) == []
    (call,) = [e for e in sink.events if isinstance(e, CriticCall)]
    (effect,) = [e for e in sink.events if isinstance(e, CriticEffect)]
    assert call.error is not None and call.error.startswith("ModelCallError")
    assert (effect.effective, effect.reason) == (False, "no_actions")
    assert critic.calls == 1 and critic.blocked(2) == "backoff" and critic.blocked(11) is None


def test_filter_keeps_exact_valid_actions_not_avoided(env: ScienceWorldAdapter) -> None:
    reply = answer("Look at the picture.", "fly to the moon", "look at air", "look at agent", "look at air")
    sink = ListSink()
    critic = Critic(CriticConfig(), LlmCritic(ScriptedModel([reply])), sink=sink)
    traj = start(env)
    act(env, traj, "look at picture")
    actions = critic.maybe_call(report_at(1, avoid=["look at agent"]), traj)
    assert actions == ["look at air"]
    (call,) = [e for e in sink.events if isinstance(e, CriticCall)]
    assert call.proposed == [
        "Look at the picture",
        "fly to the moon",
        "look at air",
        "look at agent",
        "look at air",
    ]
    assert call.diagnosis == "stuck looking. go where the task is."


def test_buffered_critic_action_invalid_by_then_is_dropped_by_gate(env: ScienceWorldAdapter) -> None:
    """Both actions are valid in the hallway when the Critic answers; after the teleport the picture is
    out of reach, and Gate-1 drops the second one instead of wasting an env step on it."""
    critic = Critic(
        CriticConfig(), LlmCritic(ScriptedModel([answer("teleport to kitchen", "look at picture")]))
    )
    traj = start(env)
    act(env, traj, "look at air")
    buffer = deque(critic.maybe_call(report_at(1), traj))
    assert list(buffer) == ["teleport to kitchen", "look at picture"]
    gate = Gate1()
    first = gate.check(buffer.popleft(), traj.current, traj, source="critic")
    assert first.outcome is GateOutcome.ACCEPT
    act(env, traj, first.action, "critic")
    steps = traj.current.steps
    second = gate.check(buffer.popleft(), traj.current, traj, source="critic")
    assert (second.outcome, second.reason, second.source) == (GateOutcome.DROP, "not_admissible", "critic")
    assert traj.current.steps == steps  # the drop cost no env step


def test_prompt_has_task_state_history_report_constraints_memories(env: ScienceWorldAdapter) -> None:
    seen: list[Sequence[Message]] = []

    def reply(messages: Sequence[Message]) -> str:
        seen.append(messages)
        return answer("look at air")

    critic = Critic(CriticConfig(), LlmCritic(ScriptedModel(reply)))
    traj = start(env)
    for action in ("look at picture", "look at picture"):
        act(env, traj, action)
    report = StagnationReport(
        step=2,
        pattern="repeated_action",
        evidence_steps=[1, 2],
        avoid=["look at picture"],
        constraints=["focus actions used: 0 of 1"],
    )
    critic.maybe_call(report, traj, memories=lambda patterns: ["success: pick up recipe -> read it first"])
    prompt = seen[0][0]["content"]
    for needle in (
        "create the substance 'salt water'",  # task
        "Room: hallway",  # current state
        "2. look at picture -> a picture of a farm",  # recent trajectory
        "Pattern: repeated_action",  # report
        "Actions to avoid: look at picture",
        "- focus actions used: 0 of 1",  # constraints
        "- success: pick up recipe -> read it first",  # memory evidence
        "teleport to kitchen",  # a valid action shown
    ):
        assert needle in prompt, needle


def test_parse_critic_reply_variants() -> None:
    text = "Diagnosis: loop.\nActions:\n- `pick up cup`\n2) look around.\n* teleport to kitchen\n\n3. wait1"
    assert parse_critic_reply(text) == (
        "loop.",
        ["pick up cup", "look around", "teleport to kitchen", "wait1"],
    )
    assert parse_critic_reply("Actions: open oven\n") == ("", ["open oven"])
    assert parse_critic_reply("no idea") == ("", [])


# -- rules Critic ------------------------------------------------------------------------------------
def test_rules_critic_on_real_states(states: dict[str, State]) -> None:
    state = states["mix:kitchen"]  # kitchen of chemistry-mix, tin cup picked up
    report = report_at(state.result.steps, "verb_loop", avoid=["pick up instructions to make salt water"])
    diagnosis, actions = RulesCritic().propose(report, state.traj, ())
    valid = set(state.result.valid_actions)
    tried = {t.action for t in state.traj.turns}
    assert 1 <= len(actions) <= 5 and diagnosis.startswith("verb_loop")
    assert all(a in valid and a not in tried and not a.startswith("focus on") for a in actions)
    assert "pick up instructions to make salt water" not in actions
    # Task-relevant local actions first (they name salt/water/recipe/kitchen...), then unvisited rooms.
    assert actions[0].split()[0] != "teleport" and actions[-1].startswith("teleport to ")
    rooms = [a for a in actions if a.startswith("teleport to ")]
    assert all(a[len("teleport to ") :] not in state.traj.visited_rooms for a in rooms)


def test_rules_critic_navigation_loop_explores_first(states: dict[str, State]) -> None:
    state = states["mix:hallway"]
    _, actions = RulesCritic().propose(report_at(5, "navigation_loop"), state.traj, ())
    assert actions and all(a.startswith("teleport to ") for a in actions[:2])
    assert "teleport to hallway" not in actions  # the room it is in was visited


def test_rules_critic_under_budget_and_gate(env: ScienceWorldAdapter) -> None:
    sink = ListSink()
    critic = make_critic(CriticConfig(kind="rules", budget=1), sink=sink)
    traj = start(env)
    act(env, traj, "look at air")
    actions = critic.maybe_call(report_at(1, "navigation_loop"), traj)
    assert actions and critic.maybe_call(report_at(20), traj) == []  # budget of 1 spent
    gate = Gate1()
    assert all(gate.check(a, traj.current, traj, source="critic").accepted for a in actions)
    (call,) = [e for e in sink.events if isinstance(e, CriticCall)]
    assert call.kind == "rules" and call.budget_left == 0
    assert not [e for e in sink.events if isinstance(e, ModelCall)]  # no model involved
