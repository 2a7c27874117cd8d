"""Swift-only safety policy: no-effect rule, loop penalty, no reset, focus rule."""

from __future__ import annotations

import numpy as np

from fastslow.core.step import StepResult
from fastslow.events import EndState
from fastslow.swift.policy import ANCHORED, NAMED_ONLY, SafetyPolicy
from fastslow.swift.train import FocusVocabulary

VALID = ("teleport to kitchen", "teleport to greenhouse", "open oven", "focus on kitchen", "wait1")


def result(look: str = "This room is called the kitchen.", reward: int = 0, inv: str = "") -> StepResult:
    return StepResult(
        observation="",
        score=0,
        reward=reward,
        moves=0,
        steps=0,
        look=look,
        inventory=inv,
        task_description="Your task is to boil water. Focus on the substance.",
        valid_actions=VALID,
        end=EndState.RUNNING,
    )


def test_no_effect_action_is_not_repeated_until_state_changes() -> None:
    policy = SafetyPolicy()
    before = result()
    policy.observe(before, "open oven", before)
    scores = policy.adjust(["open oven", "wait1"], np.array([5.0, 1.0], dtype=np.float32), before, "boil")
    assert scores[0] == -np.inf
    changed = result(look="This room is called the kitchen. A pot.")
    scores = policy.adjust(["open oven", "wait1"], np.array([5.0, 1.0], dtype=np.float32), changed, "boil")
    assert np.isfinite(scores[0])


def test_waiting_is_exempt_but_penalised_when_repeated() -> None:
    policy = SafetyPolicy(repeat_penalty=1.5)
    state = result()
    policy.observe(state, "wait1", state)
    policy.observe(state, "wait1", state)
    scores = policy.adjust(["wait1"], np.array([5.0], dtype=np.float32), state, "boil")
    assert scores[0] == 5.0 - 2 * 1.5


def test_reset_task_is_never_chosen_whatever_its_score() -> None:
    """ScienceWorld's meta action erases the goal progress: vetoed even when everything else is
    penalised below it (where the imitation ranker used to pick it)."""
    policy = SafetyPolicy(repeat_penalty=6.0)
    state = result()
    for _ in range(3):
        policy.observe(state, "wait1", state)
    scores = policy.adjust(["wait1", "reset task"], np.array([5.0, 1.0], dtype=np.float32), state, "boil")
    assert scores[1] == -np.inf and scores[0] == 5.0 - 3 * 6.0


def test_focus_rule() -> None:
    policy = SafetyPolicy(focus_words={"boil": {"water"}})
    state = result()
    actions = ["focus on water", "focus on substance in pot", "focus on kitchen", "focus on oven"]
    scores = policy.adjust(actions, np.zeros(4, dtype=np.float32), state, "boil")
    # Named in training / in the task: allowed. A room, or an object named nowhere: vetoed.
    assert np.isfinite(scores[0]) and np.isfinite(scores[1])
    assert scores[2] == -np.inf and scores[3] == -np.inf
    policy.observe(state, "focus on water", state)
    assert policy.adjust(["focus on water"], np.zeros(1, dtype=np.float32), state, "boil")[0] == -np.inf


def test_no_focus_on_the_container_the_task_puts_its_object_into() -> None:
    """ "Move it to the orange box": the box is named in the task but is where the focused thing goes.
    A box the task says to focus on ("if dominant, focus on the red box") stays allowed."""
    find = (
        "Your task is to find a(n) living thing. First, focus on the thing. "
        "Then, move it to the orange box in the kitchen."
    )
    policy = SafetyPolicy(focus_words={"find-living-thing": {"frog"}})
    assert not policy.focus_allowed("focus on orange box", "find-living-thing", find, set())
    assert policy.focus_allowed("focus on frog", "find-living-thing", find, set())
    genetics = "Is tall plant height dominant? If the trait is dominant, focus on the red box."
    assert policy.focus_allowed("focus on red box", "mendelian-genetics-known-plant", genetics, set())


def test_no_number_answers_an_ambiguous_focus() -> None:
    policy = SafetyPolicy()
    state = result()
    policy.observe(state, "focus on substance", state)
    asked = StepResult(**{**state.__dict__, "observation": "Ambiguous request: Please enter the number"})
    scores = policy.adjust(["0", "wait1"], np.zeros(2, dtype=np.float32), asked, "boil")
    assert scores[0] == -np.inf and np.isfinite(scores[1])


def test_a_refused_action_is_not_proposed_until_state_changes() -> None:
    policy = SafetyPolicy()
    state = result()
    policy.refused("open oven", state)  # SRM's Gate-1 dropped it here (swift.hook.PolicyHook)
    scores = policy.adjust(["open oven", "wait1"], np.array([5.0, 1.0], dtype=np.float32), state, "boil")
    assert scores[0] == -np.inf and np.isfinite(scores[1])
    changed = result(inv="In your inventory, you see:\n\ta metal pot (containing nothing)")
    scores = policy.adjust(["open oven", "wait1"], np.array([5.0, 1.0], dtype=np.float32), changed, "boil")
    assert np.isfinite(scores[0])


STUDIO = (
    "This room is called the art studio. In it, you see: \n\ta table. On the table is: a bowl (containing {})"
)


def test_the_focus_rule_compares_objects_not_names() -> None:
    """A bowl's "paint in bowl" is the orange paint before the mix and the yellow-orange paint after."""
    policy = SafetyPolicy()
    paint = "Your task is to use chemistry to create yellow-orange paint. Focus on the orange paint."

    def at(contents: str) -> StepResult:
        return StepResult(**{**result(STUDIO.format(contents)).__dict__, "task_description": paint})

    def allowed(action: str, state: StepResult) -> bool:
        return policy.focus_allowed(action, "paint", paint, set(), state)

    orange = at("orange paint")
    policy.observe(
        orange,
        "focus on paint in bowl",
        StepResult(**{**orange.__dict__, "observation": "You focus on the orange paint."}),
    )
    assert not allowed("focus on paint in bowl", orange)
    assert not allowed("focus on orange paint", orange)  # the same object, named otherwise
    mixed = at("yellow-orange paint")
    assert allowed("focus on paint in bowl", mixed)


def test_an_anchored_task_refuses_a_focus_that_shares_no_word_with_it() -> None:
    """Life stages: every gold target names the description's animal ("egg turtle"), so the vocabulary
    marks the task ANCHORED and a variation about the moth refuses "egg turtle" and "beaver" (words
    training saw) while "egg moth" stays allowed. Find-animal's gold targets share no word with its
    description: it keeps its open vocabulary."""
    turtle = "Your task is to focus on the 4 life stages of the turtle, starting from earliest to latest."
    beaver = "Your task is to focus on the 3 life stages of the beaver, starting from earliest to latest."
    animal = "Your task is to find a(n) animal. First, focus on the thing. Then, move it to the red box."
    vocabulary = FocusVocabulary()
    vocabulary.add("identify-life-stages-1", turtle, "focus on egg turtle in outside")
    vocabulary.add("identify-life-stages-1", beaver, "focus on baby beaver in outside")
    vocabulary.add("find-animal", animal, "focus on egg turtle")
    vocabulary.add("find-animal", animal, "focus on crocodile")
    words = vocabulary.result()
    assert ANCHORED in words["identify-life-stages-1"]
    assert ANCHORED not in words["find-animal"] and NAMED_ONLY not in words["find-animal"]
    policy = SafetyPolicy(focus_words=words)
    moth = "Your task is to focus on the 4 life stages of the moth, starting from earliest to latest."
    assert not policy.focus_allowed("focus on egg turtle", "identify-life-stages-1", moth, set())
    assert not policy.focus_allowed("focus on beaver", "identify-life-stages-1", moth, set())
    assert policy.focus_allowed("focus on egg moth", "identify-life-stages-1", moth, set())
    assert policy.focus_allowed("focus on egg turtle", "find-animal", animal, set())
