"""ScienceWorld's semantics, defined once (fastslow.env.scienceworld.semantics): feedback classes, ambiguity
options, action text, focus targets, and what each consumer (SwiftSage's escalation, SRM's stagnation
detector, AMM's salience gate) counts.

The feedback table holds real observations, played in the real simulator (task 0 variation 0, "easy"),
as literal strings so the table runs without a JVM; ``test_table_is_what_scienceworld_says`` re-plays
the script in the JVM, so the table stays ScienceWorld's own text.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fastslow.agents.base import Decision
from fastslow.config import load_config
from fastslow.controller.arbiter import is_failure as escalation_failure
from fastslow.controller.config import EscalationConfig
from fastslow.controller.escalation import SwiftSageArbiter
from fastslow.core.step import StepResult
from fastslow.core.trajectory import Trajectory
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.semantics import (
    DEFAULT_FAILURE_MARKERS,
    DESCRIPTION_STOPWORDS,
    FAILURE_SCORE,
    ROOMS,
    STOPWORDS,
    SUCCESS_SCORE,
    Feedback,
    ambiguous_options,
    arguments,
    classify_feedback,
    clean,
    focus_confirmed,
    focus_head,
    focus_target,
    known_rooms,
    normalize,
    places,
    resolve_focus_target,
    strip_locations,
    teleport_targets,
    verb_of,
)
from fastslow.env.scienceworld.world import SEMANTICS
from fastslow.errors import UsageError
from fastslow.events import EndState
from fastslow.memory.records import RECORD_STOPWORDS
from fastslow.memory.salience import is_invalid_feedback
from fastslow.reflection.config import StagnationConfig
from fastslow.reflection.stagnation import StagnationDetector
from fastslow.reflection.stagnation import is_failure as stagnation_failure

OK, INVALID, AMBIGUOUS, CANCELLED = Feedback.OK, Feedback.INVALID, Feedback.AMBIGUOUS, Feedback.CANCELLED
FAILURE, NO_EFFECT = Feedback.FAILURE, Feedback.NO_EFFECT

HALLWAY_LOOK = (
    "This room is called the hallway. In it, you see: \n\tthe agent\n\ta substance called air\n\ta picture\n"
    "You also see:\n\tA door to the art studio (that is open)\n\tA door to the bedroom (that is open)\n"
    "\tA door to the greenhouse (that is open)\n\tA door to the kitchen (that is open)\n"
    "\tA door to the living room (that is open)\n\tA door to the workshop (that is open)"
)
AMBIGUOUS_SUBSTANCE = (
    "Ambiguous request: Please enter the number for the action you intended (or blank to cancel):\n"
    "0:\tfocus on air (in kitchen)\n1:\tfocus on soap (in kitchen)\n"
)
AMBIGUOUS_ORANGE = (
    "Ambiguous request: Please enter the number for the action you intended (or blank to cancel):\n"
    "0:\tfocus on orange (in bowl, in counter, in kitchen)\n"
    "1:\tfocus on orange (in inventory, in agent, in kitchen)\n"
)
CANCELLED_TEXT = (
    "Unknown action.  Type 'help' for a list of actions, and 'objects' for a list of possible object "
    "referents. "
)

# (action, observation, class), in the order they were played from reset(0, 0).
TABLE: list[tuple[str, str, Feedback]] = [
    ("xyzzy", "No known action matches that input.", INVALID),
    ("look around", HALLWAY_LOOK, OK),
    ("inventory", "In your inventory, you see:\n\tan orange", OK),
    ("teleport to kitchen", "You teleport to the kitchen.", OK),
    ("open fridge", "The fridge is now open.", OK),
    ("open fridge", "The fridge is already open.", NO_EFFECT),
    ("close fridge", "The fridge is now closed.", OK),
    ("look in fridge", "The fridge isn't open, so you can't see inside.", FAILURE),
    ("open table", "The table is not openable.", FAILURE),
    ("close chair", "The chair is not closeable.", FAILURE),
    ("pick up stove", "The stove is not moveable.", FAILURE),
    ("activate stove", "The stove is now activated.", OK),
    ("activate stove", "The stove is already activated.", NO_EFFECT),
    ("deactivate table", "The table is not something that can be activated.", FAILURE),
    ("eat chair", "The chair is not edible.", FAILURE),
    ("pick up air", "You can't pick up a gas directly.", FAILURE),
    ("move chair to chair", "You can't move something into itself.", FAILURE),
    ("move chair to thermometer", "That can't be moved there, because the thermometer isn't open.", FAILURE),
    ("read table", "It's not clear how to read that.", FAILURE),
    ("open door to hallway", "The door is already open.", NO_EFFECT),
    # A marker word wins over "nothing changed": SwiftSage counted this as a failure message.
    ("mix bowl", "Mixing the contents of the bowl does not appear to produce anything new.", FAILURE),
    ("pick up glass cup", "You move the glass cup to the inventory.", OK),
    ("mix glass cup", "That container is empty, so there are no items to mix.", NO_EFFECT),
    ("use thermometer on glass cup", "the thermometer measures a temperature of 10 degrees celsius", OK),
    ("0", "No known action matches that input.", INVALID),  # a number with no question pending
    ("focus on substance", AMBIGUOUS_SUBSTANCE, AMBIGUOUS),
    ("pick up thermometer", CANCELLED_TEXT, CANCELLED),  # not an option number: the question is dropped
    ("wait1", "You decide to wait for 1 iterations.", OK),
    ("go to hallway", "You move to the hallway.", OK),
    ("go to hallway", "It's not clear how to get there from here.", FAILURE),  # no door to where it is
    ("teleport to kitchen", "You teleport to the kitchen.", OK),
    ("focus on orange", AMBIGUOUS_ORANGE, AMBIGUOUS),
    # The wrong focus fails the task (score -100), but the text only confirms the focus.
    ("1", "You focus on the orange.", OK),
]


@pytest.mark.parametrize(
    ("action", "observation", "expected"), TABLE, ids=[f"{i}:{a}" for i, (a, _, _) in enumerate(TABLE)]
)
def test_feedback_table(action: str, observation: str, expected: Feedback) -> None:
    assert classify_feedback(observation) is expected


@pytest.mark.parametrize(
    ("action", "observation", "expected"), TABLE, ids=[f"{i}:{a}" for i, (a, _, _) in enumerate(TABLE)]
)
def test_what_each_consumer_counts(action: str, observation: str, expected: Feedback) -> None:
    # SwiftSage's failure messages: no-match and refusals; an ambiguity is answered, not a failure.
    assert escalation_failure(SEMANTICS, observation) is (expected in {INVALID, FAILURE})
    # SRM's invalid loop: also an ambiguity prompt (the step's input was not executed).
    assert stagnation_failure(SEMANTICS, observation) is (expected in {INVALID, AMBIGUOUS, FAILURE})
    # AMM's invalid-action avoidance: the no-match reply only.
    assert is_invalid_feedback(SEMANTICS, observation) is (expected is INVALID)


@pytest.fixture
def fresh_env() -> Iterator[ScienceWorldAdapter]:
    """A JVM of its own. On constant hash codes (the adapter's default) ScienceWorld's texts do not
    depend on what the JVM played before; on the JVM's own codes they did (objects listed, and replies
    worded, in another order after the same variation was reset in the same JVM before), and a first
    reset keeps these exact texts pinned whatever the setting's future."""
    with ScienceWorldAdapter("easy") as adapter:
        yield adapter


def test_table_is_what_scienceworld_says(fresh_env: ScienceWorldAdapter) -> None:
    env = fresh_env
    env.reset(0, 0)
    played = []
    for action, _, _ in TABLE:
        result = env.step(action)
        played.append((action, result.observation))
    assert played == [(a, o) for a, o, _ in TABLE]
    assert result.score == FAILURE_SCORE and result.end is EndState.FAILURE  # the wrong focus
    assert {classify_feedback(o) for _, o in played} == set(Feedback)  # every class occurs for real


def test_every_class_is_in_the_table() -> None:
    assert {expected for _, _, expected in TABLE} == set(Feedback)
    assert len(TABLE) >= 20


def test_ambiguous_options_are_the_numbered_lines() -> None:
    assert ambiguous_options(AMBIGUOUS_SUBSTANCE) == [
        "focus on air (in kitchen)",
        "focus on soap (in kitchen)",
    ]
    options = ambiguous_options(AMBIGUOUS_ORANGE)
    assert options == [
        "focus on orange (in bowl, in counter, in kitchen)",
        "focus on orange (in inventory, in agent, in kitchen)",
    ]
    assert [strip_locations(o) for o in options] == ["focus on orange", "focus on orange"]
    assert ambiguous_options("The fridge is now open.") == []
    assert ambiguous_options(CANCELLED_TEXT) == []


def test_answering_an_option_executes_that_option(fresh_env: ScienceWorldAdapter) -> None:
    """Option i is what answering i executes: here the orange in the bowl, not the one carried (the
    options are in ScienceWorld's order on constant hash codes; on the JVM's own, the carried orange
    came first)."""
    env = fresh_env
    env.reset(0, 0)
    env.step("teleport to kitchen")
    asked = env.step("move orange to table")
    options = ambiguous_options(asked.observation)
    assert classify_feedback(asked.observation) is AMBIGUOUS
    assert options == [
        "move orange (in bowl, in counter, in kitchen) to table (in kitchen)",
        "move orange (in inventory, in agent, in kitchen) to table (in kitchen)",
    ]
    assert strip_locations(options[0]) == "move orange to table"
    done = env.step("0")
    assert done.observation == "You move the orange to the table."
    assert "orange" in done.inventory  # the carried orange stayed: option 0 was the bowl's
    assert "a bowl (containing a red apple, a banana, a potato)" in done.look


def test_refusal_markers_are_one_configurable_set() -> None:
    """Rules the real table cannot show: ScienceWorld 1.2.3 never writes "cannot"."""
    assert DEFAULT_FAILURE_MARKERS == ("can't", "not", "doesn't")
    assert classify_feedback("You cannot do that.") is FAILURE  # read as "can not"
    assert escalation_failure(SEMANTICS, "You cannot do that.") and stagnation_failure(
        SEMANTICS, "You cannot do that."
    )
    assert not is_invalid_feedback(SEMANTICS, "You cannot do that.")
    # Other markers change every consumer alike; the fixed ScienceWorld replies do not move.
    assert classify_feedback("The table is not openable.", ["can't"]) is OK
    assert classify_feedback("You can't pick up a gas directly.", ["can't"]) is FAILURE
    assert not stagnation_failure(SEMANTICS, "The table is not openable.", ["can't"])
    assert not escalation_failure(SEMANTICS, "The table is not openable.", ["can't"])
    assert classify_feedback("No known action matches that input.", []) is INVALID
    assert classify_feedback("The Table Is NOT openable.") is FAILURE  # case-insensitive
    assert classify_feedback("a notable painting") is OK  # whole words only
    with pytest.raises(ValueError, match="blank"):
        classify_feedback("anything", ["not", " "])


def test_configured_markers_reach_escalation_and_stagnation(env: ScienceWorldAdapter) -> None:
    def executed(arbiter: SwiftSageArbiter, action: str, observation: str, step: int) -> None:
        result = StepResult(observation, 0, 0, step, step, "", "", "", (), EndState.RUNNING)
        arbiter.executed(Decision(action, "swift"), result)

    arbiter = SwiftSageArbiter(EscalationConfig(), SEMANTICS, markers=("can't",))
    executed(arbiter, "open table", "The table is not openable.", 1)
    assert arbiter.failure_streak == 0
    executed(arbiter, "pick up air", "You can't pick up a gas directly.", 2)
    assert arbiter.failure_streak == 1
    default = SwiftSageArbiter(EscalationConfig(), SEMANTICS)
    executed(default, "open table", "The table is not openable.", 1)
    assert default.failure_streak == 1
    # The stagnation detector's invalid loop with and without "not" as a marker, on real refusals.
    runs = {}
    for markers in (DEFAULT_FAILURE_MARKERS, ("can't",)):
        first = env.reset(0, 0)
        traj = Trajectory(0, "boil", 0, first.task_description, first, semantics=SEMANTICS)
        detector = StagnationDetector(StagnationConfig(), first=first, markers=markers)
        reports = []
        for action in [
            "teleport to kitchen",
            "open table",
            "close chair",
            "eat chair",
            "open table",
            "eat chair",
        ]:
            traj.record(action, "swift", env.step(action))
            reports.append(detector.update(traj))
        runs[markers] = [r.pattern for r in reports if r is not None]
    assert "invalid_loop" in runs[DEFAULT_FAILURE_MARKERS]
    assert "invalid_loop" not in runs[("can't",)]


def test_the_marker_set_is_configured_once_as_env_failure_markers() -> None:
    cfg = load_config("baseline")
    assert cfg.env.failure_markers == list(DEFAULT_FAILURE_MARKERS)
    assert load_config("baseline", ["env.failure_markers=['not']"]).env.failure_markers == ["not"]
    with pytest.raises(UsageError, match=r"env\.failure_markers"):
        load_config("baseline", ["env.failure_markers=['not', '']"])
    with pytest.raises(UsageError, match="unknown key"):
        load_config("baseline", ["controller.escalation.failure_markers=['not']"])
    # the controller reads the run's set: there is no second place to configure it
    assert not hasattr(cfg.controller.escalation, "failure_markers")


def test_normalize_is_the_canonical_form_and_clean_keeps_every_word() -> None:
    assert normalize('Pick up the "Thermometer".') == "pick up thermometer"
    assert normalize("focus on green-blue paint!") == "focus on green-blue paint"
    assert clean('  "Pick up the Thermometer."  ') == "pick up the thermometer"
    assert clean("focus on unknown substance a") == "focus on unknown substance a"
    assert normalize("focus on unknown substance a") == "focus on unknown substance"  # why clean exists
    assert normalize.cache_info().maxsize and clean.cache_info().maxsize  # cached: hot per step


def test_verbs_and_arguments() -> None:
    assert verb_of("pick up thermometer") == "pick up"
    assert verb_of("Look at the stove.") == "look at"
    assert verb_of("teleport to art studio") == "teleport to"
    assert verb_of("move metal pot to stove") == "move"
    assert verb_of("wait1") == "wait1"
    assert arguments("move metal pot to stove") == ["metal pot", "stove"]
    assert arguments("pour cup containing water into jug") == ["cup containing water", "jug"]
    assert arguments("focus on substance in metal pot") == ["substance", "metal pot"]
    assert arguments("open door to kitchen") == ["door", "kitchen"]
    assert arguments("look around") == []


def test_verb_is_a_prefix_of_every_real_valid_action(env: ScienceWorldAdapter) -> None:
    """Swift slices ``action[len(verb):]`` for its hashed features: the verb must be the action's prefix."""
    result = env.reset(0, 0)
    result = env.step("teleport to kitchen")
    assert len(result.valid_actions) > 500
    for action in result.valid_actions:
        verb = verb_of(action)
        assert action == verb or action.startswith(verb + " "), action
    # Under "easy" every room is a teleport target, the current one included: ScienceWorld's ten rooms.
    assert (
        teleport_targets(result.valid_actions) == set(ROOMS) == known_rooms(result.valid_actions, ["hallway"])
    )
    assert places(result.valid_actions) == set(ROOMS) | {"agent", "inventory"}
    assert known_rooms((), ["hallway"]) == {"hallway"}


def test_stopword_sets() -> None:
    # Swift's packaged weights were trained with exactly these 14 function words.
    assert len(STOPWORDS) == 14 and STOPWORDS <= RECORD_STOPWORDS
    assert {"called", "containing", "nothing", "room"} <= RECORD_STOPWORDS
    assert "into" not in DESCRIPTION_STOPWORDS and {"task", "focus", "thing"} <= DESCRIPTION_STOPWORDS


def test_scores() -> None:
    assert (SUCCESS_SCORE, FAILURE_SCORE) == (100, -100)


LOOK_WITH_POT = (
    "This room is called the kitchen. In it, you see: \n\tthe agent\n"
    "\ta counter. On the counter is: a bowl (containing a red apple, a banana, an orange, a potato), "
    "a drawer.\n"
    "\ta table. On the table is: a glass cup (containing nothing).\n"
)
INVENTORY_WITH_POT = "In your inventory, you see:\n\ta metal pot (containing a substance called water)\n"


def test_focus_targets() -> None:
    assert focus_target("focus on substance in metal pot") == "substance in metal pot"
    assert focus_target("pick up metal pot") is None
    assert focus_head("water in metal pot") == "water"
    assert focus_head("thermometer in inventory") == "thermometer"
    assert focus_confirmed("You focus on the water.") == "water"
    assert focus_confirmed("The table is not openable.") is None
    assert resolve_focus_target("substance in metal pot", LOOK_WITH_POT, INVENTORY_WITH_POT) == "water"
    assert resolve_focus_target("green paint", LOOK_WITH_POT) == "green paint"
    # Nothing, several things, or no such container: the head stays unresolved.
    assert resolve_focus_target("substance in glass cup", LOOK_WITH_POT) == "substance"
    assert resolve_focus_target("substance in bowl", LOOK_WITH_POT) == "substance"
    assert resolve_focus_target("substance in metal pot", LOOK_WITH_POT) == "substance"


@pytest.mark.parametrize(("task", "nth"), [(0, 0), (29, 1)])
def test_resolved_focus_target_is_what_scienceworld_focuses_on(
    env: ScienceWorldAdapter, task: int, nth: int
) -> None:
    """Replay the gold path to its nth focus: the resolved target is the object ScienceWorld confirms."""
    env.reset(task, 0, gold=True)
    gold = list(env.gold_actions)
    result = env.reset(task, 0)
    seen = 0
    for action in gold:
        target = focus_target(action)
        if target is not None and seen == nth:
            resolved = resolve_focus_target(target, result.look, result.inventory)
            after = env.step(action)
            confirmed = focus_confirmed(after.observation)
            assert confirmed is not None and after.reward > 0
            assert resolved == normalize(confirmed), (action, resolved, confirmed)
            return
        seen += target is not None
        result = env.step(action)
    pytest.fail("gold path has no such focus")


def test_semantics_imports_only_the_standard_library() -> None:
    """Cheap to import anywhere: no JVM adapter, py4j or scienceworld, no third-party package. Read in a
    fresh interpreter: what importing ScienceWorld's semantics (and the protocol it implements) loads is
    the standard library and stdlib-only modules of the bottom layer (``fastslow.core.semantics``, its
    text cleaning) under their packages, whose ``__init__`` files import nothing."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import fastslow.env.scienceworld.semantics\n"
        "print('\\n'.join(sorted(set(sys.modules) - before)))\n"
    )
    run = subprocess.run
    proc = run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    loaded = set(proc.stdout.split())
    ours = {name for name in loaded if name.split(".")[0] == "fastslow"}
    assert "fastslow.env.scienceworld.semantics" in ours  # the probe sees the import
    assert ours <= {
        "fastslow",
        "fastslow.core",
        "fastslow.core.semantics",
        "fastslow.core.text",
        "fastslow.env",
        "fastslow.env.scienceworld",
        "fastslow.env.scienceworld.semantics",
    }
    others = {name.split(".")[0] for name in loaded - ours}
    assert others <= set(sys.stdlib_module_names) | {"__future__"}, others - set(sys.stdlib_module_names)
