"""The paper authors' loop (``controller.loop: authors``, the paper configurations) on real ScienceWorld:
nothing invalid reaches ``env.step``, Swift is judged on its top prediction after the authors' rewrites,
each forcing rule and block fires, the LoopGuard fires, the buffer is scanned five heads deep, and the
focus gate holds Swift's focus until Sage has focused (docs/fidelity.md rows A1-A9)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from controller.helpers import Run, ScriptedSwift, sage_replies
from fastslow.build import build_swiftsage
from fastslow.config import load_config
from fastslow.core.step import StepResult
from fastslow.env.episodes import Episode
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.valid import filter_valid
from fastslow.eval.runner import run_episode
from fastslow.events import ListSink
from fastslow.models.scripted import ScriptedModel

Play = Callable[..., Run]

SWIFTSAGE_PROMPT = ("controller.sage.prompt=swiftsage", "controller.sage.parse_retries=1")
"""For the tests below whose scripted Sage plans in SwiftSage's numbered format with actions the authors'
FUNC grammar cannot write ("inventory"): they pin the loop; tests/controller/test_sage_authors.py pins the
authors' prompts."""


class ValidOnly:
    """The adapter, recording every action sent and whether the authors' filtered valid set of the
    state it was sent in held it (an option number answers an ambiguous request: valid there)."""

    def __init__(self, env: ScienceWorldAdapter, task: int) -> None:
        self.env, self.task = env, task
        self.sent: list[tuple[str, bool]] = []
        self._valid: frozenset[str] = frozenset()

    @property
    def gold_actions(self) -> tuple[str, ...]:
        return self.env.gold_actions

    def _keep(self, result: StepResult) -> StepResult:
        self._valid = frozenset(filter_valid(result.valid_actions, self.task, result.task_description))
        if result.observation.startswith("Ambiguous request"):
            self._valid = frozenset(result.valid_actions)
        return result

    def reset(self, task: int | str, variation: int, *, gold: bool = False) -> StepResult:
        return self._keep(self.env.reset(task, variation, gold=gold))

    def step(self, action: str) -> StepResult:
        self.sent.append((action, action in self._valid))
        return self._keep(self.env.step(action))

    def close(self) -> None:
        pass


@pytest.mark.parametrize("config_name", ["baseline", "amm", "srm", "full"])
def test_no_invalid_text_reaches_the_environment(
    env: ScienceWorldAdapter, tmp_path: object, config_name: str
) -> None:
    """A Swift that mostly talks nonsense, a Sage whose plans mix invalid and valid actions, a Critic
    that says nothing useful: every action sent is in the state's valid set."""
    swift = ScriptedSwift(
        lambda traj: [["dance wildly", "look around"], ["go to hallway"], ["focus on the moon"]][
            len(traj.turns) % 3
        ]
    )
    sage = sage_replies("1. fly to mars --> ok\n2. open door to kitchen\n3. pick up the sky\n4. look around")
    config = load_config(
        config_name, ["env.step_limit=14", f"amm.path={tmp_path}/m.sqlite", "critic.kind=llm"]
    )
    agent = build_swiftsage(
        config, swift=swift, sage_model=ScriptedModel(sage), critic_model=ScriptedModel(["nonsense"])
    )
    proxy = ValidOnly(env, 13)
    run_episode(proxy, agent, Episode(13, 0), config, ListSink())
    assert len(proxy.sent) >= 10
    assert [a for a, ok in proxy.sent if not ok] == []


def test_swift_is_judged_on_its_top_prediction_after_the_rewrites(play_modules: Play) -> None:
    # "look around in hallway" is no ScienceWorld action: the authors' rewrite keeps what comes before
    # the last " in " when that is valid.
    run = play_modules(ScriptedSwift(["look around in hallway"]), config_name="baseline", step_limit=1)
    assert run.steps[0].action == "look around" and run.steps[0].source == "swift"
    # Top-1 only: a valid second candidate does not save an invalid top one. At step 0 Sage counts as
    # recent (the authors' last Sage step starts at -1), so Swift's first valid non-focus prediction acts.
    run = play_modules(
        ScriptedSwift(lambda traj: ["dance wildly", "inventory"]), config_name="baseline", step_limit=1
    )
    proposal = run.of("swift_proposal")[0]
    assert proposal.chosen is None
    escalation = run.of("escalation")[0]
    assert (escalation.rule, escalation.blocked) == ("invalid_action", "cooldown")
    assert run.steps[0].action == "inventory" and "first valid non-focus" in run.steps[0].reason


def test_an_invalid_top_prediction_calls_sage_at_once_after_the_first_steps(play_modules: Play) -> None:
    swift = ScriptedSwift(lambda traj: ["look around"] if len(traj.turns) < 2 else ["dance wildly"])
    run = play_modules(
        swift, sage_replies("1. inventory"), config_name="baseline", step_limit=3, overrides=SWIFTSAGE_PROMPT
    )
    calls = run.of("sage_call")
    assert [c.step for c in calls] == [2] and calls[0].rule == "invalid_action"
    assert run.steps[2].action == "inventory" and run.steps[2].source == "sage"


def test_a_plan_nothing_of_which_runs_ends_in_the_deterministic_fallback(play_modules: Play) -> None:
    """Sage planned five actions none of which is valid: five heads are scanned and dropped, Sage has
    already run for this env step, so the authors' deterministic fallback acts (look around)."""
    swift = ScriptedSwift(lambda traj: ["look around"] if len(traj.turns) < 2 else ["dance wildly"])
    plan = "\n".join(f"{i}. juggle {i} balls" for i in range(1, 6))
    run = play_modules(
        swift, sage_replies(plan), config_name="baseline", step_limit=3, overrides=SWIFTSAGE_PROMPT
    )
    pop = next(p for p in run.of("buffer_pop") if p.step == 2)
    assert pop.action is None and len(pop.skipped) == 5
    assert run.steps[2].action == "look around" and "deterministic fallback" in run.steps[2].reason


def test_the_buffer_runs_the_first_head_that_can_run(play_modules: Play) -> None:
    swift = ScriptedSwift(lambda traj: ["look around"] if len(traj.turns) < 2 else ["dance wildly"])
    run = play_modules(
        swift,
        sage_replies("1. juggle\n2. teleport to kitchen in hallway\n3. inventory"),
        config_name="baseline",
        step_limit=4,
        overrides=SWIFTSAGE_PROMPT,
    )
    # "juggle" dropped, the teleport rewritten (" in hallway" removed), then "inventory"
    assert [s.action for s in run.steps[2:4]] == ["teleport to kitchen", "inventory"]
    assert run.of("buffer_pop")[0].skipped == ["juggle"]


def test_two_failure_messages_force_sage_and_sage_clears_them(play_modules: Play) -> None:
    """The authors count failure messages cumulatively since Sage last ran (a refusal or any
    observation containing "not"/"can't"/"doesn't"); two force Sage whatever the cooldown."""
    # "open door to bathroom" is in the authors' valid set (they add every room's door) but the hallway
    # has no such door: ScienceWorld answers "No known action matches that input.".
    swift = ScriptedSwift(["open door to bathroom", "open door to bathroom", "inventory"])
    run = play_modules(swift, sage_replies("1. look around"), config_name="baseline", step_limit=3)
    assert [s.observation for s in run.steps[:2]] == ["No known action matches that input."] * 2
    forced = run.of("escalation")[0]
    assert (forced.step, forced.rule, forced.blocked) == (2, "failure_messages", None)
    assert run.steps[2].source == "sage" and run.agent.arbiter.failures == []


def test_a_gated_swift_focus_is_an_iteration_without_a_step_that_forces_sage(play_modules: Play) -> None:
    """Task 13 asks to focus on the life stages of the apple plant; outside, Swift's valid "focus on
    apple seed" is not that target: gated before Sage has focused, the timestep goes round again, and the
    authors' forcing rule (an iteration without an env step) calls Sage."""
    script = ["teleport to outside", "inventory"]
    swift = ScriptedSwift(
        lambda traj: [script[len(traj.turns)]] if len(traj.turns) < 2 else ["focus on apple seed"]
    )
    run = play_modules(
        swift, sage_replies("1. inventory"), config_name="baseline", step_limit=3, overrides=SWIFTSAGE_PROMPT
    )
    assert not any(s.action.startswith("focus on") for s in run.steps)
    assert run.of("swift_proposal")[-1].chosen == "focus on apple seed"
    escalation = next(e for e in run.of("escalation") if e.step == 2)
    assert (escalation.rule, escalation.blocked) == ("no_env_step", None)
    assert run.steps[2].source == "sage" and run.agent.arbiter.focus is not None
    assert run.agent.arbiter.focus.swift_tries == 1


def test_the_loop_guard_fires_on_a_repeated_observation_without_reward(play_modules: Play) -> None:
    run = play_modules(ScriptedSwift(["inventory"]), config_name="baseline", step_limit=4)
    guard = [c for c in run.of("buffer_clear") if c.reason.startswith("LoopGuard")]
    assert [g.step for g in guard] == [3, 4]  # from the third same observation without a reward on
    # forcing rules stay off for the next step (the authors' step index of step 4 is 3, + cooldown 2)
    assert run.agent.arbiter.forced_off_until == 3 + 2


def test_no_progress_calls_sage_once_ten_actions_repeat_without_reward(play_modules: Play) -> None:
    """A valid Swift that alternates two actions: Sage is called when the authors' history (the start's
    "look around" included) holds 10 actions, Sage is 5+ steps away, the last 5 steps earned nothing and
    the action repeats one of the last 3."""
    swift = ScriptedSwift(lambda traj: [("inventory", "look around")[len(traj.turns) % 2]])
    run = play_modules(
        swift, sage_replies("1. inventory"), config_name="baseline", step_limit=10, overrides=SWIFTSAGE_PROMPT
    )
    escalations = run.of("escalation")
    assert [(e.step, e.rule, e.blocked) for e in escalations] == [(9, "no_progress", None)]
    assert run.steps[9].source == "sage"


def test_with_srm_a_focus_on_an_unseen_target_waits_for_the_next_teleport(play_modules: Play) -> None:
    """In the hallway no apple seed is in sight: with SRM the authors move Sage's "focus on apple seed"
    after the plan's teleport outside instead of dropping it; without SRM it is dropped."""
    swift = ScriptedSwift(lambda traj: ["look around"] if len(traj.turns) < 2 else ["dance wildly"])
    plan = sage_replies("1. focus on apple seed\n2. teleport to outside\n3. inventory")
    run = play_modules(swift, plan, config_name="srm", overrides=["critic.kind=rules"], step_limit=4)
    pop = next(p for p in run.of("buffer_pop") if p.step == 2)
    assert (pop.action, pop.deferred, pop.skipped) == ("teleport to outside", ["focus on apple seed"], [])
    after = next(p for p in run.of("buffer_pop") if p.step == 3)
    assert "focus on apple seed" in [after.action, *after.skipped]  # outside, the focus is next
    run = play_modules(swift, plan, config_name="baseline", step_limit=3)
    pop = next(p for p in run.of("buffer_pop") if p.step == 2)
    assert (pop.skipped, pop.deferred) == (["focus on apple seed"], [])
