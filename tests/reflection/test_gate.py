"""SRM Gate-1 on real ScienceWorld states: a table of cases (normalize, every repair rule, every drop
reason) and a property test (whatever Gate-1 lets through is in the valid set)."""

from __future__ import annotations

import random

import pytest

from fastslow.core.procedures import Judged
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.paraphrase import apply_aliases, strip_qualifiers
from fastslow.env.scienceworld.procedures.focus import TaskFocusRules
from fastslow.env.scienceworld.procedures.logic import TaskLogic, general_focus_check
from fastslow.env.scienceworld.procedures.tasks import life_stage, life_stage_violation
from fastslow.env.scienceworld.semantics import focus_contents_mismatch, normalize, teleport_targets
from fastslow.events import GateDecision, GateOutcome, ListSink
from fastslow.reflection.config import GateConfig
from fastslow.reflection.gate import Gate1, GateConstraints
from fastslow.swift.policy import SafetyPolicy
from reflection.helpers import State, play

A, R, D = GateOutcome.ACCEPT, GateOutcome.REPAIR, GateOutcome.DROP
RULES = TaskFocusRules()
"""The task-specific focus rules the shipped configurations give Gate-1 (``procedures.enabled``)."""

# (state, proposed action, outcome, rule or reason, action let through)
CASES: list[tuple[str, str, GateOutcome, str, str]] = [
    # hallway of chemistry-mix (salt water), nothing done yet
    ("mix:hallway", "look around", A, "exact", "look around"),
    ("mix:hallway", "Look Around.", R, "normalize", "look around"),
    ("mix:hallway", "  look   around  ", R, "normalize", "look around"),
    ("mix:hallway", "look at the picture", R, "normalize", "look at picture"),
    ("mix:hallway", "LOOK AT PICTURE!", R, "normalize", "look at picture"),
    ("mix:hallway", "look", R, "alias", "look around"),
    ("mix:hallway", "examine picture", R, "alias", "look at picture"),
    ("mix:hallway", "inspect the picture", R, "alias", "look at picture"),
    ("mix:hallway", "go to kitchen", A, "exact", "go to kitchen"),
    ("mix:hallway", "go to the kitchen", R, "normalize", "go to kitchen"),
    ("mix:hallway", "go to foundry", R, "teleport", "teleport to foundry"),
    ("mix:hallway", "walk to the bathroom", R, "teleport", "teleport to bathroom"),
    ("mix:hallway", "goto outside", R, "teleport", "teleport to outside"),
    ("mix:hallway", "teleport to kitchen", A, "exact", "teleport to kitchen"),
    ("mix:hallway", "teleport to kitchn", R, "fuzzy", "teleport to kitchen"),
    ("mix:hallway", "teleport to the workshp", R, "fuzzy", "teleport to workshop"),
    ("mix:hallway", "put down the orange", R, "normalize", "put down orange"),
    ("mix:hallway", "drop orange", R, "alias", "put down orange"),
    ("mix:hallway", "move picture to the workshop", R, "normalize", "move picture to workshop"),
    ("mix:hallway", "put picture in workshop", R, "alias", "move picture to workshop"),
    ("mix:hallway", "inventory", A, "exact", "inventory"),
    ("mix:hallway", "i", R, "alias", "inventory"),
    ("mix:hallway", "check inventory", R, "alias", "inventory"),
    ("mix:hallway", "wait1", A, "exact", "wait1"),
    ("mix:hallway", "wait 1", R, "alias", "wait1"),
    ("mix:hallway", "", D, "empty", ""),
    ("mix:hallway", "...", D, "empty", ""),
    ("mix:hallway", "the", D, "empty", ""),
    ("mix:hallway", "open door to kitchen", D, "not_admissible", ""),
    ("mix:hallway", "fly to the moon", D, "not_admissible", ""),
    ("mix:hallway", "focus on the picture", D, "focus_not_allowed", ""),
    ("mix:hallway", "focus on air", D, "focus_not_allowed", ""),
    ("mix:hallway", "focus on kitchen", D, "focus_not_allowed", ""),
    # kitchen of chemistry-mix, tin cup in the inventory
    ("mix:kitchen", "pick up thermometer", A, "exact", "pick up thermometer"),
    ("mix:kitchen", "take thermometer", R, "alias", "pick up thermometer"),
    ("mix:kitchen", "get the thermometer.", R, "alias", "pick up thermometer"),
    ("mix:kitchen", "grab soap", R, "alias", "pick up soap"),
    ("mix:kitchen", "pick up orange", R, "qualifier", "pick up orange in bowl"),
    ("mix:kitchen", "Pick up the orange", R, "qualifier", "pick up orange in bowl"),
    (
        "mix:kitchen",
        "pick up cup containing nothing",
        R,
        "qualifier",
        "pick up cup containing nothing in table",
    ),
    ("mix:kitchen", "focus on orange", D, "ambiguous", ""),
    ("mix:kitchen", "move apple to cup containing nothing", D, "ambiguous", ""),
    ("mix:kitchen", "move the apple into the cupboard", R, "alias", "move apple to cupboard"),
    ("mix:kitchen", "place banana in cupboard", R, "alias", "move banana to cupboard"),
    ("mix:kitchen", "pick up thermometr", R, "fuzzy", "pick up thermometer"),
    ("mix:kitchen", "pick up sodium chlorid", R, "fuzzy", "pick up sodium chloride"),
    ("mix:kitchen", "open the fridge", R, "normalize", "open fridge"),
    ("mix:kitchen", "open refrigerator", D, "not_admissible", ""),
    ("mix:kitchen", "teleport to the living room", R, "normalize", "teleport to living room"),
    ("mix:kitchen", "go to bedroom", R, "teleport", "teleport to bedroom"),
    ("mix:kitchen", "go to hallway", A, "exact", "go to hallway"),
    ("mix:kitchen", "focus on salt water", D, "not_admissible", ""),
    ("mix:kitchen", "focus on sodium chloride", D, "focus_not_allowed", ""),
    ("mix:kitchen", "focus on cup containing nothing in inventory", D, "focus_not_allowed", ""),
    # ready to finish chemistry-mix: salt water made
    ("mix:ready", "focus on salt water", A, "exact", "focus on salt water"),
    ("mix:ready", "Focus on the salt water.", R, "normalize", "focus on salt water"),
    ("mix:ready", "focus salt water", R, "alias", "focus on salt water"),
    ("mix:ready", "focus on salt watr", D, "not_admissible", ""),
    ("mix:ready", "focus on instructions to make salt water", D, "focus_not_allowed", ""),  # the recipe
    # measure-melting-point: thermometer focused (1 of 3)
    ("melt:focus1", "focus on chocolate", A, "exact", "focus on chocolate"),
    ("melt:focus1", "focus on thermometer", D, "repeated_focus", ""),
    ("melt:focus1", "focus on thermometer in inventory", D, "repeated_focus", ""),
    # ... then chocolate focused (2 of 3)
    ("melt:focus2", "focus on chocolate", D, "repeated_focus", ""),
    # no reading of the chocolate yet: no box (the thermometer judgement, test_measurement.py)
    ("melt:focus2", "focus on blue box", D, "focus_not_allowed", ""),
    ("melt:focus2", "focus on the orange box", D, "focus_not_allowed", ""),
    ("melt:focus2", "focus on potato", D, "focus_not_allowed", ""),
    ("melt:focus2", "focus on kitchen", D, "focus_not_allowed", ""),
    ("melt:focus2", "focus on inventory", D, "focus_not_allowed", ""),
    ("melt:focus2", "move chocolate to the metal pot", R, "normalize", "move chocolate to metal pot"),
    # find-animal, outside: the target is not named in the task, so any object may be focused
    ("animal:outside", "focus on dove", A, "exact", "focus on dove"),
    ("animal:outside", "focus on the dove", R, "normalize", "focus on dove"),
    ("animal:outside", "focus on outside", D, "focus_not_allowed", ""),
    ("animal:outside", "pick up dove", A, "exact", "pick up dove"),
    ("animal:outside", "go to kitchen", A, "exact", "go to kitchen"),
]


@pytest.mark.parametrize(("key", "proposed", "outcome", "code", "final"), CASES)
def test_gate_table(
    states: dict[str, State], key: str, proposed: str, outcome: GateOutcome, code: str, final: str
) -> None:
    state = states[key]
    decision = Gate1(judge=RULES).check(proposed, state.result, state.traj, source="swift")
    got_code = decision.reason if outcome is D else decision.rule
    assert (decision.outcome, got_code, decision.action) == (outcome, code, final), decision.detail
    if decision.accepted:
        assert decision.action in state.result.valid_actions
    assert decision.original == proposed and decision.step == state.result.steps


def test_table_is_large_and_covers_every_rule_and_reason() -> None:
    assert len(CASES) >= 60
    rules = {c[3] for c in CASES if c[2] is not D}
    reasons = {c[3] for c in CASES if c[2] is D}
    assert rules == {"exact", "normalize", "alias", "teleport", "qualifier", "fuzzy"}
    assert reasons >= {"empty", "not_admissible", "ambiguous", "repeated_focus", "focus_not_allowed"}


def test_constraints_focus_limit_and_avoid(states: dict[str, State]) -> None:
    state = states["melt:focus2"]
    gate = Gate1(judge=RULES)
    limited = gate.check("focus on blue box", state.result, state.traj, GateConstraints(focus_limit=2))
    assert (limited.outcome, limited.reason) == (D, "focus_limit")
    kitchen = states["mix:kitchen"]
    avoid = GateConstraints(avoid=frozenset({"pick up apple"}))
    for proposed in ("pick up apple", "Take the apple"):
        d = gate.check(proposed, kitchen.result, kitchen.traj, avoid)
        assert (d.outcome, d.reason) == (D, "avoided")
    # The configured limit applies when the controller passes none: one focus, already used.
    one = Gate1(GateConfig(focus_limit=1), judge=RULES).check(
        "focus on chocolate", states["melt:focus1"].result, states["melt:focus1"].traj
    )
    assert (one.outcome, one.reason) == (D, "focus_limit")


def test_rules_and_focus_rules_can_be_switched_off(states: dict[str, State]) -> None:
    state = states["mix:hallway"]
    strict = Gate1(GateConfig(repairs=[]), judge=RULES)
    assert strict.check("Look Around.", state.result, state.traj).reason == "not_admissible"
    no_fuzzy = Gate1(GateConfig(repairs=["normalize", "alias", "teleport", "qualifier"]), judge=RULES)
    assert no_fuzzy.check("teleport to kitchn", state.result, state.traj).reason == "not_admissible"
    free = Gate1(GateConfig(focus_rules=False), judge=RULES)
    assert free.check("focus on air", state.result, state.traj).outcome is A


def test_decisions_are_logged_with_source(states: dict[str, State]) -> None:
    state = states["mix:hallway"]
    sink = ListSink()
    gate = Gate1(sink=sink, judge=RULES)
    gate.check("look", state.result, state.traj, source="sage")
    gate.check("fly", state.result, state.traj, source="critic")
    events = [e for e in sink.events if isinstance(e, GateDecision)]
    assert [(e.source, e.outcome, e.rule or e.reason) for e in events] == [
        ("sage", R, "alias"),
        ("critic", D, "not_admissible"),
    ]


# -- property: whatever Gate-1 lets through is in the valid set --------------------------------------
def _perturb(action: str, rng: random.Random, valid: tuple[str, ...]) -> str:
    kind = rng.randrange(8)
    words = action.split(" ")
    if kind == 0:
        return action.upper()
    if kind == 1:
        return "  " + action.replace(" ", "   ") + " . "
    if kind == 2 and len(words) > 1:
        cut = 2 if words[1] in {"up", "at", "on", "to", "in", "down"} else 1
        return " ".join([*words[:cut], "the", *words[cut:]]) + "!"
    if kind == 3 and len(action) > 6:
        i = rng.randrange(len(action))
        return action[:i] + action[i + 1 :]  # a typo: one character missing
    if kind == 4:
        return action.replace("pick up", "take").replace("look at", "examine").replace("teleport to", "go to")
    if kind == 5 and " in " in action:
        return action.split(" in ", 1)[0]  # qualifier dropped
    if kind == 6:
        return rng.choice(valid) + " " + rng.choice(valid)  # garbage
    return action


def test_property_let_through_is_always_valid(states: dict[str, State]) -> None:
    rng = random.Random(7)
    checked = repaired = 0
    for state in states.values():
        gate = Gate1(judge=RULES)
        valid = state.result.valid_actions
        valid_set = set(valid)
        for action in rng.sample(valid, min(250, len(valid))):
            proposed = _perturb(action, rng, valid)
            d = gate.check(proposed, state.result, state.traj)
            checked += 1
            if d.accepted:
                assert d.action in valid_set, (proposed, d)
                repaired += d.outcome is R
            # Pure case / spacing / punctuation changes of a valid action are always recovered
            # (unless two valid actions share the canonical form, or a focus rule refuses it).
            same_form = [v for v in valid if normalize(v) == normalize(proposed)]
            if same_form == [action] and not action.startswith("focus on"):
                assert d.action == action, (proposed, d)
    assert checked > 1000 and repaired > 100


def test_normalize_helpers() -> None:
    assert normalize("  Pick UP the Thermometer. ") == "pick up thermometer"
    assert normalize("focus on green-blue paint") == "focus on green-blue paint"
    assert apply_aliases("put cup in sink") == "move cup to sink"
    assert apply_aliases("pour water in cup") == "pour water into cup"
    assert apply_aliases("put down cup") == "put down cup"
    assert apply_aliases("focus on salt water") == "focus on salt water"
    assert strip_qualifiers("focus on water in metal pot") == "focus on water"
    assert strip_qualifiers("move cup in inventory to sink in kitchen") == "move cup to sink"


POT_OF_WATER = [
    "teleport to kitchen",
    "open cupboard",
    "pick up metal pot",
    "move metal pot to sink",
    "activate sink",
    "deactivate sink",
    "pick up metal pot",
]
"""The water route of boil's training variations: a metal pot of water in the inventory."""


def test_a_focus_on_contents_the_task_does_not_name_is_dropped(env: ScienceWorldAdapter) -> None:
    """Boil, test variation 21 ("boil lead") on the water route of training: "focus on substance in
    metal pot" would focus on the water (-100, as swift-amm-srm did on the 271 test episodes). Gate-1
    and Swift's safety policy resolve the pot's contents and refuse; in a train variation that boils
    water the same focus on the same state is let through, and so is "focus on lead" in the lead task."""
    lead = play(env, 0, 21, POT_OF_WATER)
    assert "lead" in lead.traj.task_description and "water" in lead.result.inventory
    focus = "focus on substance in metal pot"
    cur = lead.result
    found = focus_contents_mismatch("substance in metal pot", cur.look, cur.inventory, cur.task_description)
    assert found == "water"
    decision = Gate1(GateConfig(), judge=RULES).check(focus, cur, lead.traj)
    assert (decision.accepted, decision.reason) == (False, "focus_not_allowed")
    assert "holds water" in decision.detail
    policy = SafetyPolicy()
    rooms = teleport_targets(cur.valid_actions)
    assert not policy.focus_allowed(focus, "boil", cur.task_description, rooms, cur)
    assert policy.focus_allowed("focus on lead", "boil", cur.task_description, rooms, cur)

    water = play(env, 0, 0, POT_OF_WATER)
    assert "boil water" in water.traj.task_description
    cur = water.result
    assert Gate1(GateConfig(), judge=RULES).check(focus, cur, water.traj).accepted
    assert policy.focus_allowed(focus, "boil", cur.task_description, rooms, cur)


def test_life_stages_go_from_earliest_to_latest(env: ScienceWorldAdapter) -> None:
    """identify-life-stages-1, train variation 0 (the 4 stages of the turtle), outside at the start,
    where only eggs lie: the turtle's egg is the one focus Gate-1 and Swift's safety policy allow (not
    another organism's egg) and the task logic's judgement proposes it; the adult comes last and only last.
    identify-life-stages-2 (the apple plant), outside: its pots name no stage in the valid actions, so
    the stage is read from the look (pot 6 holds the seedling): the seed first, then the seedling, then
    the adult tree, skipping none."""
    state = play(env, 12, 0, ["teleport to outside"])
    cur, traj = state.result, state.traj
    description = cur.task_description
    valid = [a for a in cur.valid_actions if a.startswith("focus on ")]
    assert "focus on egg turtle" in valid and "focus on egg parrot" in valid
    gate = Gate1(GateConfig(), judge=RULES)
    assert gate.check("focus on egg turtle", cur, traj).accepted
    decision = gate.check("focus on egg parrot", cur, traj)
    assert (decision.accepted, decision.reason) == (False, "focus_not_allowed")
    assert decision.detail == "'egg parrot' is not named in the task description"  # a task-specific rule
    # without the task logic (procedures.enabled off) Gate-1 applies its general rules only
    assert Gate1(GateConfig()).check("focus on egg parrot", cur, traj).accepted
    assert life_stage_violation("egg parrot", cur.valid_actions, [], description) == "it is not a turtle"
    # Swift's policy learns the organisms its training variations focused on: its general focus rule
    # lets the parrot's egg through, the task logic vetoes it and its judgement proposes the turtle's
    policy = SafetyPolicy(focus_words={traj.task_name: {"egg", "parrot"}})
    rooms = teleport_targets(cur.valid_actions)
    assert policy.focus_allowed("focus on egg parrot", traj.task_name, description, rooms, cur)
    logic = TaskLogic()
    assert logic.vetoed("focus on egg parrot", cur, traj.task_name)
    judged = logic.judged(cur, traj.task_name, general_focus_check(policy.focus_allowed, traj.task_name))
    assert judged == Judged("focus on egg turtle", "judgement:life-stages")
    assert (
        life_stage_violation("adult turtle", cur.valid_actions, [], description)
        == "the adult stage comes last"
    )
    done = ["egg turtle", "hatchling turtle", "juvenile turtle"]
    assert life_stage_violation("adult turtle", cur.valid_actions, done, description) is None
    assert life_stage_violation("juvenile turtle", cur.valid_actions, done[:2], description) is None
    assert life_stage_violation("hatchling turtle", cur.valid_actions, done, description) is not None

    apple = play(env, 13, 0, ["teleport to outside"])
    look = env.step("look around").observation
    assert "self watering flower pot 6 (containing a apple tree in the seedling stage" in look
    plants, description = apple.result, apple.result.task_description
    seedling = "apple tree in self watering flower pot 6"
    assert life_stage(seedling, look) == 1 and life_stage("apple seed") == 0
    assert life_stage_violation("apple seed", plants.valid_actions, [], description, look) is None
    assert life_stage_violation(seedling, plants.valid_actions, [], description, look) is not None
    assert life_stage_violation(seedling, plants.valid_actions, ["apple seed"], description, look) is None
    assert life_stage_violation("adult apple tree", plants.valid_actions, ["apple seed"], description, look)
    two = ["apple seed", seedling]
    assert life_stage_violation("adult apple tree", plants.valid_actions, two, description, look) is None
