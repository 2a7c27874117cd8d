"""The semantics seam (issue 50): every world answers ``WorldSemantics``, and the modules that read a
world's text (the trajectory's rooms, Swift's features, SRM's stagnation detector, AMM's salience gate,
escalation) read TextWorldExpress's text by TextWorldExpress's rules, on the real TWX JVM."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fastslow.controller.arbiter import is_failure
from fastslow.controller.config import EscalationConfig
from fastslow.controller.escalation import SwiftSageArbiter
from fastslow.core.semantics import Feedback, WorldSemantics
from fastslow.core.trajectory import Trajectory
from fastslow.env.scienceworld import world as scienceworld
from fastslow.env.textworldexpress import semantics as twx_semantics
from fastslow.env.textworldexpress.adapter import TextWorldExpressAdapter
from fastslow.env.world import WORLD_MODULES, get_world
from fastslow.memory.config import SalienceConfig
from fastslow.memory.salience import Salience, classify
from fastslow.reflection.config import StagnationConfig
from fastslow.reflection.stagnation import StagnationDetector
from fastslow.swift.features import ActionTable, _template, candidate_keys, context_keys

TWX = twx_semantics.SEMANTICS
SW = scienceworld.SEMANTICS
COOKING, TWC, COIN, SIMON = 0, 1, 2, 6  # the benchmark's game ids (benchmark.yaml's order)
DEV = 10000


@pytest.fixture(scope="module")
def twx() -> Iterator[TextWorldExpressAdapter]:
    adapter = TextWorldExpressAdapter()
    yield adapter
    adapter.close()


@pytest.mark.parametrize("name", sorted(WORLD_MODULES))
def test_every_world_answers_the_protocol(name: str) -> None:
    semantics = get_world(name).semantics
    assert isinstance(semantics, WorldSemantics)
    assert semantics.name == name
    assert (semantics.success_score, semantics.failure_score) == (100, -100)
    assert semantics.navigation_verbs and semantics.argument_joiners
    assert semantics.classify_feedback("") is Feedback.OK
    hash(semantics)  # components cache per (semantics, text)


def test_the_worlds_read_the_same_words_their_own_way() -> None:
    # a place: ScienceWorld's look names its room so, TWX's so
    assert SW.location("This room is called the kitchen. In it, you see: ") == "kitchen"
    assert TWX.location("You are in the kitchen. In one part of the room you see a fridge.") == "kitchen"
    assert SW.location("You are in the kitchen.") == TWX.location("This room is called the kitchen.") == ""
    # going somewhere: by name in ScienceWorld, by direction in TWX
    assert SW.go_to("kitchen") == ("teleport to kitchen", "go to kitchen") and TWX.go_to("kitchen") == ()
    assert SW.navigation_verbs == {"teleport to", "go to"} and TWX.navigation_verbs == {"move"}
    assert TWX.places(["move north", "open door to west", "take coin"], ["kitchen"]) == {"north", "kitchen"}
    # a gesture is one verb in TWX; ScienceWorld reads its first words
    assert (
        TWX.verb_of("jump up and down") == "jump up and down" and SW.verb_of("jump up and down") == "jump up"
    )
    assert TWX.arguments("put clean blue socks in chest of drawers") == [
        "clean blue socks",
        "chest of drawers",
    ]
    # the irreversible commitment: ScienceWorld's focus; TWX has none
    assert SW.commitment_verb == "focus on" and TWX.commitment_verb is None
    # feedback: TWX's refusal rules ignore ScienceWorld's marker words
    refusal = "You can't move there, the door is closed."
    assert TWX.classify_feedback(refusal, ["doesn't"]) is Feedback.FAILURE
    assert SW.classify_feedback(refusal, ["doesn't"]) is Feedback.OK
    assert TWX.classify_feedback("That is not a command that I recognize.") is Feedback.INVALID


def _trajectory(twx: TextWorldExpressAdapter, game: int, actions: list[str]) -> Trajectory:
    first = twx.reset(game, DEV)
    traj = Trajectory(
        game, get_world("textworldexpress").task(game).name, DEV, first.task_description, first, TWX
    )
    for action in actions:
        traj.record(action, "swift", twx.step(action))
    return traj


def test_a_twx_trajectory_visits_twx_rooms(twx: TextWorldExpressAdapter) -> None:
    first = twx.reset(COOKING, DEV)
    move = next(a for a in first.valid_actions if a.startswith("move "))
    traj = _trajectory(twx, COOKING, [move])
    assert traj.visited_rooms[0] == "kitchen"
    assert len(traj.visited_rooms) == 2 and traj.room == traj.visited_rooms[1] != "kitchen"


def test_stagnation_and_escalation_count_twx_unknown_actions(twx: TextWorldExpressAdapter) -> None:
    traj = _trajectory(twx, COIN, ["look around", "inventory", "look around", "fly", "sing", "dance a jig"])
    assert [TWX.classify_feedback(t.observation) for t in traj.turns[-3:]] == [Feedback.INVALID] * 3
    assert all(is_failure(TWX, t.observation) for t in traj.turns[-3:])
    detector = StagnationDetector(StagnationConfig(), first=twx.reset(COIN, DEV))
    replay = _trajectory(twx, COIN, [])
    reports = []
    for turn in traj.turns:
        replay.record(turn.action, turn.source, twx.step(turn.action))
        reports.append(detector.update(replay))
    assert reports[-1] is not None and "invalid_loop" in reports[-1].patterns
    # a TWX refusal counts for escalation whatever the run's (ScienceWorld) markers say
    arbiter = SwiftSageArbiter(EscalationConfig(), TWX, markers=("doesn't",))
    assert is_failure(TWX, "You can't move there, the door is closed.", arbiter.markers)
    # no commitment verb: a TWX action never sends Swift to Sage as an early focus would
    arbiter.cfg = EscalationConfig(focus_needs_sage=True)
    assert arbiter.check("focus on coin", step=1) is None


def test_salience_reads_a_twx_failure_and_no_focus(twx: TextWorldExpressAdapter) -> None:
    first = twx.reset(SIMON, DEV)
    wrong = next(a for a in first.valid_actions if a not in first.task_description)
    result = twx.step(wrong)
    assert result.score == TWX.failure_score
    assert classify(TWX, wrong, first, result, SalienceConfig()) == Salience("avoidance", "task-failure")


def test_swift_reads_twx_actions_with_twx_verbs() -> None:
    # a TWX gesture is its own verb and template; ScienceWorld's reading splits it
    assert _template(TWX, "jump up and down") == "jump up and down"
    assert _template(SW, "jump up and down") == "jump up _"
    assert _template(TWX, "cook red potato in oven") == "cook _ in _"
    assert candidate_keys(TWX, "jump up and down") != candidate_keys(SW, "jump up and down")
    table = ActionTable(TWX)
    table.ids(["move north", "take coin"])
    assert table.is_teleport[:2].tolist() == [True, False]  # navigation, by TWX's verbs
    assert ActionTable(SW).semantics is SW
    # the context's room comes from the world's look
    from fastslow.swift.features import SwiftState

    state = SwiftState("coin", "", 0, "You are in the kitchen. ", "", [], [], ["move north"])
    assert context_keys(TWX, state) != context_keys(SW, state)


def test_gate1_repairs_twx_paraphrases_by_twx_rules(twx: TextWorldExpressAdapter) -> None:
    from fastslow.reflection.gate import Gate1

    traj = _trajectory(twx, TWC, [])
    gate = Gate1()
    cases = {
        "take key": ("accept", "exact", "take key"),
        "Take the key.": ("repair", "normalize", "take key"),
        "pick up the key": ("repair", "alias", "take key"),
        "go west": ("repair", "alias", "move west"),
        "w": ("repair", "alias", "move west"),
        "teleport to kitchen": ("drop", "", ""),  # ScienceWorld's verb is not TWX's
        "focus on key": ("drop", "", ""),
    }
    for proposed, (outcome, rule, action) in cases.items():
        decision = gate.check(proposed, traj.current, traj)
        assert (decision.outcome.value, decision.rule, decision.action) == (outcome, rule, action), proposed


def test_the_rules_critic_proposes_twx_actions(twx: TextWorldExpressAdapter) -> None:
    """Before the critic asked the world, its ScienceWorld verbs and teleports proposed nothing in TWX
    (266 answers without an action on the 700 test episodes)."""
    from fastslow.events import StagnationReport
    from fastslow.reflection.critic.rules import RulesCritic

    traj = _trajectory(twx, COOKING, [])
    look = traj.current.look
    assert TWX.exploration_moves(look, traj.current.valid_actions, traj.visited_rooms)
    report = StagnationReport(step=0, pattern="navigation_loop", patterns=["navigation_loop"])
    _, actions = RulesCritic().propose(report, traj, None)
    assert actions and all(a in traj.current.valid_actions for a in actions)
    assert all(TWX.verb_of(a) in {*TWX.critic_verbs, "move", "open"} for a in actions)
    # ScienceWorld's reading of the same state finds no teleport and none of its verbs but "open"
    assert SW.exploration_moves(look, traj.current.valid_actions, []) == []
