"""``procedures.enabled``, the one switch of the hand-written task logic: off, no code path reads a task's
name or family (no procedure or judgement, no veto, no task-specific Gate-1 rule, no answer-box
features); on, the shipped fast-pathway configurations play as they did, procedure steps logged as
``procedure``."""

from __future__ import annotations

import pytest

from fastslow.build import Modules, build_swiftsage, make_agent
from fastslow.config import load_config
from fastslow.env.episodes import Episode
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.procedures.focus import TaskFocusRules
from fastslow.env.scienceworld.tasks import get_task
from fastslow.env.scienceworld.world import SEMANTICS
from fastslow.errors import UsageError
from fastslow.eval.runner import run_episode
from fastslow.events import EnvStep, GateDecision, ListSink
from fastslow.swift.features import DENSE, ActionTable, SwiftState, dense_features
from fastslow.swift.imitation import ImitationSwift
from fastslow.vocab import PROCEDURE_RULES

TASK_RULE_DETAILS = ("life stages go from earliest to latest", "measurement task:")
"""How Gate-1's decisions from the task-specific rules read (``procedures.focus``), besides the
named-target rule's "... is not named in the task description"."""

MELT = (
    "Your task is to measure the melting point of chocolate. First, focus on the thermometer. "
    "If the melting point of chocolate is above 50.0 degrees celsius, focus on the blue box. "
    "If the melting point of chocolate is below 50.0 degrees celsius, focus on the orange box."
)


def _task_specific(decision: GateDecision) -> bool:
    return decision.detail.startswith(TASK_RULE_DETAILS) or decision.detail.endswith(
        "is not named in the task description"
    )


WITH_TASK_LOGIC = ["expert", "expert-amm-srm", "baseline", "full"]
LEARNED = ["swift-only", "swift-amm", "swift-srm", "swift-amm-srm"]
"""The fast-pathway 2x2 is the learned Swift with the general safety policy; `expert*` add the task logic."""


@pytest.mark.parametrize("name", WITH_TASK_LOGIC + LEARNED)
def test_the_configuration_names_say_whether_task_logic_runs(name: str) -> None:
    assert load_config(name).procedures.enabled is (name in WITH_TASK_LOGIC)
    for value in ("true", "false"):
        assert load_config(name, [f"procedures.enabled={value}"]).procedures.enabled is (value == "true")


def test_the_old_key_names_the_new_one() -> None:
    with pytest.raises(UsageError, match=r"procedures\.enabled"):
        load_config("swift-only", ["swift.procedures=false"])


@pytest.mark.parametrize("enabled", [True, False])
def test_the_build_composes_the_task_logic_only_when_on(enabled: bool) -> None:
    config = load_config("swift-srm", [f"procedures.enabled={str(enabled).lower()}"])
    agent = build_swiftsage(config)
    modules = agent.hook_factory
    assert isinstance(modules, Modules)
    assert (modules.procedures is not None) is enabled
    assert isinstance(modules.focus_judge, TaskFocusRules) is enabled
    assert isinstance(agent.swift, ImitationSwift) and agent.swift.box_features is enabled


def test_without_the_switch_the_answer_box_columns_stay_zero() -> None:
    actions = ["focus on blue box", "focus on orange box", "open oven"]
    reading = ("look at thermometer", "the thermometer measures a temperature of 80 degrees celsius", 0)
    state = SwiftState("measure-melting-point-known-substance", MELT, 0, "", "", [reading], [], actions)
    table = ActionTable(SEMANTICS)
    cols = [DENSE.index("box_agrees"), DENSE.index("box_unmeasured")]
    on = dense_features(table, table.ids(actions), state)[:, cols]
    off = dense_features(table, table.ids(actions), state, box=False)[:, cols]
    assert on.any() and not off.any()


@pytest.mark.slow
def test_switched_off_no_step_or_gate_decision_comes_from_task_logic(env: ScienceWorldAdapter) -> None:
    """swift-srm with ``procedures.enabled=false`` over one dev variation of every task (8 steps each):
    no procedure step, no Gate-1 decision from a task-specific rule."""
    config = load_config("swift-srm", ["env.step_limit=8", "procedures.enabled=false"])
    agent = make_agent(config)
    steps: list[EnvStep] = []
    decisions: list[GateDecision] = []
    for task_id in range(30):
        sink = ListSink()
        run_episode(env, agent, Episode(task_id, get_task(task_id).variations["dev"][0]), config, sink)
        steps += [e for e in sink.events if isinstance(e, EnvStep)]
        decisions += [e for e in sink.events if isinstance(e, GateDecision)]
    assert len(steps) >= 30 and decisions
    assert "procedure" not in {s.source for s in steps}  # the learned Swift, SRM's Critic, fallbacks
    assert not any(s.reason.startswith(PROCEDURE_RULES) for s in steps)
    assert not [d for d in decisions if _task_specific(d)]
