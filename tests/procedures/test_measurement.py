"""The thermometer judgement (``procedures.tasks.measurement_*``, the task logic ``procedures.logic`` and
Gate-1 with the task focus rules) on real ScienceWorld: gold paths of train variations of the three
thermometer tasks are replayed, and at every step the rule must agree with the gold path: no box before
the thermometer, the subject and a deciding reading; at the gold path's box step the readings decide the
gold box, the judgement proposes it, and the other box is vetoed by the task logic and (a focus) refused
by Gate-1."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fastslow.core.step import StepResult
from fastslow.core.trajectory import Trajectory
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.procedures.focus import TaskFocusRules
from fastslow.env.scienceworld.procedures.knowledge import KNOWLEDGE_TASKS, spread_variations
from fastslow.env.scienceworld.procedures.logic import TaskLogic
from fastslow.env.scienceworld.procedures.tasks import (
    known_melting_bounds,
    known_plain_states,
    measured_choice,
    measurement_task,
    measurement_violation,
    subject_words,
    substance_state,
    substances_path,
    thermometer_readings,
)
from fastslow.env.scienceworld.semantics import focus_head, resolve_focus_target
from fastslow.env.scienceworld.tasks import get_task
from fastslow.env.scienceworld.world import SEMANTICS
from fastslow.reflection.config import GateConfig
from fastslow.reflection.gate import Gate1
from fastslow.swift.policy import SafetyPolicy


def _judgement(logic: TaskLogic, current: StepResult, task_name: str) -> str | None:
    """The action the task logic decides (the general focus rule left out: a thermometer task's
    judgement does not read it)."""
    judged = logic.judged(current, task_name, lambda action, state: True)
    return judged.action if judged is not None else None


# (task, train variation, whether the readings decide at the gold path's box step, what it is)
GOLD = [
    # The gold path knows chocolate melts above -10: its readings (10 to 35, plain "chocolate") prove
    # nothing without that knowledge, and ScienceWorld also writes "solid chocolate" (in a freezer), so
    # train paths leave plain chocolate's state unknown: the rule waits for "liquid chocolate".
    (20, 0, False, "chocolate, never melted"),
    (20, 1, True, "lead: the plain name is solid (known from train paths, and from 'liquid lead')"),
    (21, 0, True, "solid unknown substance C"),
    (21, 1, True, "liquid unknown substance J: cooled until it is solid"),
    (29, 0, True, "temperature of unknown substance B, placed into the box"),
]


def test_the_task_descriptions_parse(env: ScienceWorldAdapter) -> None:
    melt = measurement_task(env.reset(20, 1).task_description)
    assert melt is not None and (melt.quantity, melt.subject, melt.place) == ("melting point", "lead", False)
    temp = measurement_task(env.reset(29, 0).task_description)
    assert temp is not None and (temp.quantity, temp.subject, temp.place) == (
        "temperature",
        "unknown substance b",
        True,
    )
    assert {temp.above, temp.below} <= {"red box", "green box", "blue box", "orange box", "yellow box"}
    assert measurement_task(env.reset(0, 0).task_description) is None  # boil: no box to choose
    # valid actions drop an unknown substance's letter; state words and water's own names
    assert substance_state("unknown substance", "unknown substance b") == "bare"
    assert substance_state("liquid unknown substance o", "solid unknown substance o") == "liquid"
    assert substance_state("ice", "water") == "solid" and substance_state("lead", "tin") is None


def _box_of(action: str, place: bool) -> str | None:
    if place:
        return (
            focus_head(action.rsplit(" to ", 1)[1])
            if action.startswith("move ") and " to " in action
            else None
        )
    return focus_head(action[len("focus on ") :]) if action.startswith("focus on ") else None


@pytest.mark.parametrize(("task", "variation", "decides", "what"), GOLD)
def test_the_rule_agrees_with_the_gold_path(
    env: ScienceWorldAdapter, task: int, variation: int, decides: bool, what: str
) -> None:
    first = env.reset(task, variation, gold=True)
    gold = list(env.gold_actions)
    measure = measurement_task(first.task_description)
    assert measure is not None, what
    boxes = (measure.above, measure.below)
    info = get_task(task)
    traj = Trajectory(info.task_id, info.name, variation, first.task_description, first, semantics=SEMANTICS)
    logic = TaskLogic()
    gate = Gate1(GateConfig(), judge=TaskFocusRules())
    steps: list[tuple[str, str]] = []
    foci = 0
    current = first
    chosen = None
    for action in gold:
        box = _box_of(action, measure.place)
        if box in boxes:
            other = boxes[1 - boxes.index(box)]
            if not decides:
                assert measured_choice(measure, thermometer_readings(measure, steps)) is None
                assert measurement_violation(measure, box, steps, foci) is not None
                assert _judgement(logic, current, info.name) is None
                chosen = action
                break
            placing = measure.place
            assert measurement_violation(measure, box, steps, foci, placing=placing) is None, (
                what,
                steps[-4:],
            )
            assert measurement_violation(measure, other, steps, foci, placing=placing) is not None
            if placing:  # the subject goes into the box: a focus on it would fail the task
                assert measurement_violation(measure, box, steps, foci) is not None
            assert measured_choice(measure, thermometer_readings(measure, steps)) == box
            judged = _judgement(logic, current, info.name)
            assert judged in current.valid_actions and _box_of(judged, measure.place) == box, (what, judged)
            if measure.place:
                assert not any(
                    a.endswith(f" to {other}") and not logic.vetoed(a, current, info.name)
                    for a in current.valid_actions
                    if a.startswith("move unknown substance")
                )
            else:
                other_focus = next(a for a in current.valid_actions if a == f"focus on {other}")
                assert logic.vetoed(other_focus, current, info.name)
                assert gate.check(action, current, traj).accepted
                assert not gate.check(other_focus, current, traj).accepted
            chosen = action
            break
        if box is None and foci < 2 and not measure.place:
            # before the thermometer and the subject, neither box may be focused on
            assert measurement_violation(measure, boxes[0], steps, foci) is not None
        if action.startswith("focus on ") and box is None:  # the gold path's own foci pass
            assert measurement_violation(measure, focus_head(action[9:]), steps, foci) is None, action
            if foci == 1:  # the subject's turn: the judgement proposes a focus on it (by name or container)
                judged = _judgement(logic, current, info.name)
                assert judged is not None and judged.startswith("focus on "), (what, judged)
                named = resolve_focus_target(judged[9:], current.look, current.inventory)
                assert subject_words(measure.subject) <= set(named.split()) or named in ("ice", "water")
        result = env.step(action)
        logic.observe(current, action, result)
        traj.record(action, "gold", result)
        steps.append((action, result.observation))
        foci += action.startswith("focus on ") and result.observation.startswith("You focus on")
        current = result
    assert chosen is not None, f"{what}: the gold path chose no box"


def test_no_box_before_the_thermometer_and_the_subject(env: ScienceWorldAdapter) -> None:
    """The fast pathway's -100 in measure-melting-point (train variation 1, lead): right after the
    thermometer focus, a box focus; the safety policy with the task logic and Gate-1 both refuse every
    box then, and a focus on anything but the thermometer, the lead and the boxes (in the dev variations
    that measure orange juice, Swift focused on an orange: the task names an orange box)."""
    first = env.reset(20, 1)
    info = get_task(20)
    traj = Trajectory(info.task_id, info.name, 1, first.task_description, first, semantics=SEMANTICS)
    policy, logic = SafetyPolicy(), TaskLogic()
    current = first
    for action in ["teleport to kitchen", "pick up thermometer", "focus on thermometer in inventory"]:
        result = env.step(action)
        policy.observe(current, action, result)
        logic.observe(current, action, result)
        traj.record(action, "scripted", result)
        current = result
    boxes = [a for a in current.valid_actions if a.startswith("focus on ") and a.endswith(" box")]
    assert len(boxes) >= 2
    # nor anything but the thermometer, the lead and the boxes: the orange juice, the cup of lead
    for other in ("focus on orange juice", "focus on cup containing lead"):
        assert other in current.valid_actions
        boxes.append(other)
    gate = Gate1(GateConfig(), judge=TaskFocusRules())
    for focus in boxes:
        allowed = policy.focus_allowed(focus, info.name, first.task_description, set(), current)
        assert not allowed or logic.vetoed(focus, current, info.name), focus
        decision = gate.check(focus, current, traj)
        assert not decision.accepted, decision
        if focus.endswith(" box"):
            assert decision.detail.startswith("measurement task"), decision
    assert _judgement(logic, current, info.name) == "focus on lead"  # the task's next focus


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], Path]:
    """``fastslow data substances --tasks 20 --per-task 2`` run once: (the process, the file it wrote).
    The command writes what ``build_substances`` returns."""
    out = tmp_path_factory.mktemp("substances") / "substances.json"
    cmd = [sys.executable, "-m", "fastslow.cli", "data", "substances", "--out", str(out)]
    done = subprocess.run(
        [*cmd, "--tasks", "20", "--per-task", "2"], capture_output=True, text=True, timeout=600
    )
    return done, out


def test_the_shipped_knowledge_is_what_the_command_makes_from_train_paths(
    made: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """``fastslow data substances`` replays train variations only; two of each melting-point task
    already show lead melting (plain lead is solid), as the shipped file says."""
    for task in KNOWLEDGE_TASKS:
        assert set(spread_variations(task)) <= set(get_task(task).variations["train"])
    done, out = made
    assert done.returncode == 0, done.stderr
    built = json.loads(out.read_text(encoding="utf-8"))  # build_substances((20,), per_task=2)
    assert built["split"] == "train"
    shipped = json.loads(substances_path().read_text(encoding="utf-8"))
    assert shipped["split"] == "train" and shipped["scienceworld_version"] == built["scienceworld_version"]
    for name, entry in built["substances"].items():
        assert set(entry["named"]) <= set(shipped["substances"][name]["named"]), name
    assert known_plain_states()["lead"] == "solid"
    low, high = known_melting_bounds("lead")
    assert low < 327.5 <= high  # lead melts at 327.5 C


def test_the_command_writes_its_file_and_refuses_bad_input(
    tmp_path: Path, made: tuple[subprocess.CompletedProcess[str], Path]
) -> None:
    out = tmp_path / "substances.json"
    base = [sys.executable, "-m", "fastslow.cli", "data", "substances", "--out", str(out)]
    bad = subprocess.run([*base, "--per-task", "0"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and not out.exists()
    assert len(bad.stderr.strip().splitlines()) == 1 and "--per-task" in bad.stderr
    done, written = made  # the same command with good input (--tasks 20 --per-task 2)
    assert done.returncode == 0, done.stderr
    data = json.loads(written.read_text(encoding="utf-8"))
    assert data["split"] == "train" and data["tasks"] == [20] and data["per_task"] == 2
    assert json.loads(done.stdout.strip().splitlines()[-1])["substances"] == len(data["substances"])


def test_a_decided_box_out_of_reach_is_gone_to(env: ScienceWorldAdapter) -> None:
    """use-thermometer, train variation 0: the reading decided the box, but the agent stands in the
    kitchen, not in the bathroom where the task says the boxes are: the judgement goes there (the
    subject in hand),
    then puts the subject into the decided box."""
    first = env.reset(29, 0, gold=True)
    gold = list(env.gold_actions)
    measure = measurement_task(first.task_description)
    assert measure is not None and measure.boxes_in == "bathroom"
    info = get_task(29)
    logic = TaskLogic()
    current = first
    place_at = next(i for i, a in enumerate(gold) if a.startswith("move ") and a.endswith(" box"))
    for action in [*gold[:place_at], "teleport to kitchen"]:
        result = env.step(action)
        logic.observe(current, action, result)
        current = result
    assert _judgement(logic, current, info.name) == "teleport to bathroom"
    result = env.step("teleport to bathroom")
    logic.observe(current, "teleport to bathroom", result)
    judged = _judgement(logic, result, info.name)
    assert (
        judged is not None
        and judged.startswith("move unknown substance")
        and judged.endswith(gold[place_at][-8:])
    )
