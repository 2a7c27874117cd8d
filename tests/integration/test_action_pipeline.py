"""The one action pipeline on real ScienceWorld (docs/controller.md "One timestep"): every candidate is
resolved once, Gate-1 judges the text as its source proposed it (not a pre-grounded one), and an answer
to an ambiguous request is judged as the action it completes."""

from __future__ import annotations

from collections.abc import Callable

from controller.helpers import Run, ScriptedSwift, sage_replies
from fastslow.build import build_swiftsage
from fastslow.config import load_config
from fastslow.core.step import StepResult
from fastslow.core.trajectory import Trajectory
from fastslow.env.episodes import Episode
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.tasks import get_task
from fastslow.env.scienceworld.world import SEMANTICS
from fastslow.eval.runner import run_episode
from fastslow.events import EnvStep, GateOutcome, ListSink
from fastslow.reflection.config import GateConfig
from fastslow.reflection.gate import Gate1, GateConstraints

Play = Callable[..., Run]
SRM = ["srm.enabled=true", "critic.kind=rules"]


def test_gate_sees_the_text_sage_proposed(play_modules: Play) -> None:
    """Sage writes ``focus on orange bx`` in the living room of find-non-living-thing (which has an
    orange box). SwiftSage's fuzzy grounding alone would make it ``focus on orange box``; with
    ``srm.gate.fuzzy_focus: false`` Gate-1 must see and drop the text as written."""
    swift = ScriptedSwift(lambda traj: ["teleport to living room"] if not traj.turns else ["dance wildly"])
    run = play_modules(
        swift,
        sage_replies("1. focus on orange bx"),
        overrides=[*SRM, "srm.gate.fuzzy_focus=false"],
        task=7,
        variation=225,
        step_limit=4,
    )
    sage_checks = [g for g in run.of("gate_decision") if g.source == "sage"]
    assert sage_checks, "Sage's action never reached Gate-1"
    drop = sage_checks[0]
    assert drop.outcome == GateOutcome.DROP and drop.original == "focus on orange bx"
    assert drop.reason == "not_admissible"
    assert not any(s.action.startswith("focus on") for s in run.steps)


PREFIX = ["teleport to art studio", "open large cupboard"]
"""In mix-paint-secondary (task 3) variation 18 these make ``focus on paint`` ambiguous (several paints)."""


def _ambiguous(env: ScienceWorldAdapter) -> tuple[StepResult, Trajectory]:
    first = env.reset(3, 18)
    traj = Trajectory(3, get_task(3).name, 18, first.task_description, first, semantics=SEMANTICS)
    result = first
    for action in [*PREFIX, "focus on paint"]:
        result = env.step(action)
        traj.record(action, "swift", result)
    return result, traj


def test_gate_judges_an_ambiguity_answer_as_the_focus_it_completes(env: ScienceWorldAdapter) -> None:
    result, traj = _ambiguous(env)
    options = SEMANTICS.ambiguity_options(result.observation)
    assert len(options) > 1 and options["0"].startswith("focus on ") and "(" not in options["0"]
    sink = ListSink()
    gate = Gate1(GateConfig(), sink=sink)
    ok = gate.check_answer("0", options["0"], result, traj, source="swift")
    assert ok.outcome == GateOutcome.ACCEPT and ok.action == "0" and options["0"] in ok.detail
    # the same answer when the focus budget is spent: dropped, because it is a focus
    spent = gate.check_answer("0", options["0"], result, traj, GateConstraints(focus_limit=0), source="swift")
    assert spent.outcome == GateOutcome.DROP and spent.reason == "focus_limit"
    assert spent.original == "0" and f"answers '{options['0']}'" in spent.detail
    # a plain Gate-1 check of "0" (what the controller did before) would have let it through
    assert gate.check("0", result, traj, GateConstraints(focus_limit=0)).outcome == GateOutcome.ACCEPT


def test_swift_srm_never_focuses_by_answering_an_ambiguous_focus() -> None:
    """swift-srm (policy + Gate-1) in the ambiguous state: neither the controller's default answer "0"
    nor Swift's own digit runs, so no wrong paint is focused through a bare number (variation 18 used
    to end at -100 on exactly that, on the JVM's own hash codes). Variation 21: the policy only lets
    through a valid action, and on constant hash codes it is the dev variation whose valid actions list
    "focus on paint" after the prefix (18's name its paints)."""
    # the paint procedure would mix and focus by itself: this test is about the scripted Swift's digits
    config = load_config("swift-srm", ["env.step_limit=6", "procedures.enabled=false"])
    plan = [*PREFIX, "focus on paint"]
    agent = build_swiftsage(
        config, swift=ScriptedSwift(lambda traj: plan[len(traj.turns) : len(traj.turns) + 1] or ["0", "1"])
    )
    sink = ListSink()
    with ScienceWorldAdapter("easy") as fresh:
        run_episode(fresh, agent, Episode(3, 21), config, sink)
    steps = [e for e in sink.events if isinstance(e, EnvStep)]
    asked = [i for i, s in enumerate(steps) if s.observation.startswith("Ambiguous request")]
    assert asked, "focus on paint was not ambiguous"
    answered = [steps[i + 1] for i in asked if i + 1 < len(steps)]
    assert answered and not any(s.action.isdigit() for s in answered)
    assert all(s.score != -100 for s in steps)
