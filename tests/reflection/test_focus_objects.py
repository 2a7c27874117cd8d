"""Gate-1 and the safety policy judge the object a focus lands on, not its name, and the policy hears
of Gate-1's drops.

The case: chemistry-mix-paint-tertiary-color, dev variation 24 (violet-red paint). Its gold path
focuses twice on "paint in cup containing ...": first on the violet paint, then, after red paint is
poured in and mixed, on the violet-red paint in the same cup. Both targets' head is "paint": a rule on
names calls the second focus a repeat, and the task cannot be completed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pytest

from fastslow.controller.resolver import Resolver
from fastslow.core.hooks import LoopHook, ProposalTurn, StepDone
from fastslow.core.proposal import MemoryHint, Proposal, RankedAction
from fastslow.core.step import StepResult
from fastslow.core.trajectory import Trajectory
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.procedures.focus import TaskFocusRules
from fastslow.env.scienceworld.procedures.logic import TaskLogic, general_focus_check
from fastslow.env.scienceworld.semantics import focus_head, focus_object
from fastslow.env.scienceworld.world import SEMANTICS
from fastslow.events import GateDecision, GateOutcome, ListSink
from fastslow.procedures.hook import ProcedureHook
from fastslow.reflection.config import CriticConfig, GateConfig, SrmConfig
from fastslow.reflection.gate import Gate1
from fastslow.reflection.hook import SrmHook
from fastslow.reflection.srm import Srm
from fastslow.swift.hook import PolicyHook
from fastslow.swift.policy import SafetyPolicy
from reflection.helpers import act, new_trajectory

RULES = TaskFocusRules()
"""The task-specific focus rules the shipped configurations give Gate-1 (``procedures.enabled``)."""

TASK, VARIATION = 4, 24  # chemistry-mix-paint-tertiary-color, a dev variation
FIRST_FOCUS = "focus on paint in cup containing violet paint"
# From the variation's gold path (ScienceWorld's parser takes these referents whatever the valid list
# of the moment shows); teleporting replaces the walk through the doors.
ROUTE = [
    "teleport to art studio",
    "pour cup containing red paint in art studio in cup containing nothing in table",
    "pour cup containing blue paint in art studio in cup containing red paint in table",
    "mix cup containing blue paint and red paint",
    FIRST_FOCUS,
    "open large cupboard",
    "pour cup containing red paint in cup containing violet paint",
    "mix cup containing red paint and violet paint",
]


# Lines of real looks (chemistry-mix-paint-tertiary-color dev 18, identify-life-stages-2 train 0).
STUDIO = """This room is called the art studio. In it, you see:
\ta large cupboard. The large cupboard door is open. In the large cupboard is: a drawer, a wood cup \
(containing blue paint), a wood cup (containing nothing), a wood cup (containing red paint).
\ta table. On the table is: a bowl (containing yellow-orange paint).
\ta wood cup (containing blue paint)
\ta wood cup (containing nothing)"""
POTS = """\ta self watering flower pot 4 (containing a apple seed, soil, a substance called water)
\ta self watering flower pot 6 (containing a apple tree in the seedling stage, soil, a substance called \
water)"""


@pytest.mark.parametrize(
    ("look", "target", "name", "contents"),
    [
        (STUDIO, "paint in bowl", "yellow-orange paint", None),  # a container's one content
        (STUDIO, "substance in bowl", "yellow-orange paint", None),
        (STUDIO, "yellow-orange paint", "yellow-orange paint", None),
        (STUDIO, "bowl", "bowl", ("yellow-orange paint",)),  # a container: its contents with it
        (STUDIO, "cup containing red paint", "wood cup", ("red paint",)),
        (STUDIO, "cup containing blue paint in art studio", "wood cup", ("blue paint",)),
        (STUDIO, "paint in cup containing red paint", "red paint", None),
        (STUDIO, "wood cup", "wood cup", None),  # several wood cups, different contents
        (STUDIO, "paint", None, None),  # which paint? not pinned down
        (
            POTS,
            "apple tree in the seedling stage in self watering flower pot 6",
            "apple tree in seedling stage",
            None,
        ),
        (POTS, "apple tree in self watering flower pot 6", "apple tree in seedling stage", None),
        (POTS, "substance in self watering flower pot 4", None, None),  # seed, soil and water
    ],
)
def test_focus_object_reads_the_look(
    look: str, target: str, name: str | None, contents: tuple[str, ...] | None
) -> None:
    found = focus_object(target, look)
    assert (found.name, found.contents) == (name, contents)


@dataclass
class Played:
    traj: Trajectory
    gate: Gate1
    """Gate-1 as it ran during the route: it checked each focus before it was sent."""
    steps: list[tuple[StepResult, str, StepResult]]
    """Every executed step: (state before, action, state after)."""
    after_first_focus: StepResult

    def hooks(self) -> tuple[PolicyHook, ProcedureHook]:
        """The safety policy's and the task logic's hooks, fed the route's steps as the controller feeds
        them."""
        policy = SafetyPolicy()
        hooks = (PolicyHook(policy), ProcedureHook(TaskLogic(), policy.focus_allowed))
        for prev, action, result in self.steps:
            for hook in hooks:
                hook.after_step(StepDone(self.traj, action, "swift", prev, result))
        return hooks


def _foci(result: StepResult, name: str, head: str | None = None) -> list[str]:
    """The valid focus actions on the object called ``name`` now (and written with ``head``)."""
    return [
        a
        for a in result.valid_actions
        if a.startswith("focus on ")
        and focus_object(a[9:], result.look, result.inventory).name == name
        and (head is None or focus_head(a[9:]) == head)
    ]


@pytest.fixture(scope="module")
def played(env: ScienceWorldAdapter) -> Played:
    first = env.reset(TASK, VARIATION)
    traj = new_trajectory(env, TASK, VARIATION, first)
    gate = Gate1(judge=RULES)
    steps = []
    after_first_focus = first
    for action in ROUTE:
        if action.startswith("focus on "):
            assert gate.check(action, traj.current, traj).accepted
        prev = traj.current
        result = act(env, traj, action)
        assert not result.observation.startswith("No known action"), action
        steps.append((prev, action, result))
        if action == FIRST_FOCUS:
            assert result.observation == "You focus on the violet paint."
            after_first_focus = result
    # ScienceWorld lists one referent per object in a valid list, chosen anew each step: look until the
    # mixed paint is offered as "paint in <its cup>", the form that shares its name with the first focus.
    for _ in range(5):
        if _foci(traj.current, "violet-red paint", head="paint"):
            break
        prev = traj.current
        steps.append((prev, "look around", act(env, traj, "look around")))
    return Played(traj, gate, steps, after_first_focus)


def test_the_mixed_paint_is_another_object_than_the_intermediate_one(played: Played) -> None:
    traj, now = played.traj, played.traj.current
    policy_hook, procedure_hook = played.hooks()
    policy, logic = policy_hook.policy, procedure_hook.logic
    wanted = _foci(now, "violet-red paint", head="paint")
    assert wanted, "no valid 'focus on paint in ...' on the violet-red paint"
    # the case as it was: the same name, so a rule on names calls the second focus a repeat
    assert focus_head(FIRST_FOCUS[9:]) == focus_head(wanted[0][9:]) == "paint"
    for action in wanted:
        # Gate-1 with what the cup held at the first focus, and from ScienceWorld's answer alone
        for gate in (played.gate, Gate1(judge=RULES)):
            decision = gate.check(action, now, traj)
            assert decision.outcome is GateOutcome.ACCEPT, decision.detail
        assert policy.focus_allowed(action, traj.task_name, traj.task_description, set(), now)
    # the procedure's next step is a focus on the violet-red paint, and Gate-1 lets it through
    decided = logic.judged(now, traj.task_name, general_focus_check(policy.focus_allowed, traj.task_name))
    judged = decided.action if decided is not None else None
    assert judged is not None and judged.startswith("focus on ")
    assert focus_object(judged[9:], now.look, now.inventory).name == "violet-red paint"
    assert played.gate.check(judged, now, traj).accepted


def test_the_same_object_is_still_never_focused_on_twice(played: Played) -> None:
    """Right after the first focus, every valid focus on the violet paint is a repeat, whatever its
    wording (its name or "paint in <its cup>"), for Gate-1 and the policy alike."""
    state = played.after_first_focus
    start = played.steps[0][0]
    traj = Trajectory(
        TASK, played.traj.task_name, VARIATION, start.task_description, start, semantics=SEMANTICS
    )
    hook = PolicyHook(SafetyPolicy())
    for prev, action, result in played.steps:  # the route up to the first focus, recorded as it ran
        traj.record(action, "scripted", result)
        hook.after_step(StepDone(traj, action, "swift", prev, result))
        if result is state:
            break
    again = _foci(state, "violet paint")
    assert again
    for action in again:
        decision = Gate1(judge=RULES).check(action, state, traj)
        assert (decision.outcome, decision.reason) == (GateOutcome.DROP, "repeated_focus"), action
        assert not hook.policy.focus_allowed(action, traj.task_name, traj.task_description, set(), state)


def test_a_gate_drop_reaches_the_policy_until_the_state_changes(
    env: ScienceWorldAdapter, played: Played
) -> None:
    """The policy's and the task logic's hooks hear of Gate-1's drop through the resolver
    (``LoopHook.on_refused``): in the same state neither the ranking nor the procedure proposes the
    dropped action again."""
    traj, now = played.traj, played.traj.current
    sink = ListSink()
    # One focus allowed: the procedure's focus on the violet-red paint is dropped (focus_limit).
    srm_cfg = SrmConfig(enabled=True, gate=GateConfig(focus_limit=1))
    srm = Srm.for_episode(srm_cfg, CriticConfig(), now, sink=sink, judge=RULES)
    assert srm is not None
    policy_hook, procedure_hook = played.hooks()
    hooks: list[LoopHook] = [policy_hook, procedure_hook, SrmHook(srm, None)]
    resolver = Resolver(0.5, list(hooks), fallback_when_unresolved=True)
    swift = Proposal((RankedAction("look around", 1.0), RankedAction("wait1", 0.5)), 0.9)

    def ranked() -> list[str]:
        proposal = ProposalTurn(_Unasked(), traj, now, hooks, lambda p: False).run(swift).proposal
        return [c.action for c in proposal.candidates]

    first = ranked()
    top = first[0]
    assert focus_object(top[9:], now.look, now.inventory).name == "violet-red paint"
    assert resolver.first(first, "swift", resolver.view(now, traj)) == "look around"
    drops = [e for e in sink.events if isinstance(e, GateDecision) and e.outcome is GateOutcome.DROP]
    assert [(d.original, d.reason) for d in drops] == [(top, "focus_limit")]
    # the same state: nobody proposes the dropped focus again
    assert top not in ranked()
    policy, logic = policy_hook.policy, procedure_hook.logic
    decided = logic.judged(now, traj.task_name, general_focus_check(policy.focus_allowed, traj.task_name))
    assert decided is None or decided.action != top
    # another state (the cup picked up): the refusal no longer holds
    moved = env.step("pick up cup containing violet-red paint")
    assert moved.inventory != now.inventory
    assert np.isfinite(policy.adjust([top], np.zeros(1, dtype=np.float32), moved, traj.task_name)[0])


class _Unasked:
    """``ProposalTurn.run`` is handed Swift's proposal here: Swift itself is never asked."""

    name = "unasked"

    def propose(self, traj: Trajectory, memories: Sequence[MemoryHint] | None = None) -> Proposal:
        raise AssertionError("Swift is not asked in this test")
