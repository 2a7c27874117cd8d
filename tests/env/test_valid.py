"""The authors' valid-action filter and rewrites (``fastslow.env.scienceworld.valid``) on real
ScienceWorld states.

Every state here comes from the simulator (the session's shared adapter, "easy" simplification): a few
test-split episodes are reset and stepped once per module, and the tests read the captured
``StepResult``s. The module was also checked once, outside the suite, against the authors' own
functions (run from their eval_utils.py) on 1,179 states of the 30 tasks and ~580k candidate actions:
same filtered sets and the same rewrite of every action.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from pydantic import ValidationError

from fastslow.agents import Decision, EpisodeContext
from fastslow.config import EnvConfig, RunConfig
from fastslow.core.step import StepResult
from fastslow.env.episodes import Episode
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.semantics import NO_MATCH, ROOMS, Feedback, classify_feedback, verb_of
from fastslow.env.scienceworld.valid import (
    AUTHORS_ROOMS,
    FOCUS_COUNT,
    authors_failed,
    clean_unknown_substance,
    current_room,
    deterministic_fallback,
    filter_valid,
    focus_limit,
    focus_targets,
    is_action_text,
    rewrite,
)
from fastslow.env.scienceworld.wrappers import ValidFilter
from fastslow.env.wrappers import TimeLimit
from fastslow.errors import EnvError
from fastslow.eval.runner import run_episode
from fastslow.events import ListSink

# Test-split variations (fastslow.env.tasks): identify-life-stages-2 (13; focus count 4), find-animal
# (5; exempt from the focus rule), inclined-plane-determine-angle (14; exempt from the examine rule),
# boil (0), identify-life-stages-1 (12), measure-melting-point-unknown-substance (21) and
# test-conductivity-of-unknown-substances (28).
T13, T5, T14, T0, T12, T21, T28 = (13, 6), (5, 225), (14, 126), (0, 21), (12, 9), (21, 225), (28, 450)


@dataclass
class Captured:
    """Real states (``StepResult``) and observations, by name, and the task id of each state."""

    states: dict[str, StepResult] = field(default_factory=dict)
    task_of: dict[str, int] = field(default_factory=dict)
    observations: dict[str, str] = field(default_factory=dict)

    def valid(self, name: str) -> tuple[str, ...]:
        """The authors' valid actions of state ``name``."""
        state = self.states[name]
        return filter_valid(state.valid_actions, self.task_of[name], state.task_description)


@pytest.fixture(scope="module")
def real(env: ScienceWorldAdapter) -> Captured:
    got = Captured()

    def keep(name: str, task: int, state: StepResult) -> StepResult:
        got.states[name], got.task_of[name] = state, task
        return state

    keep("t13", 13, env.reset(*T13))
    keep("t13_outside", 13, env.step("teleport to outside"))
    keep("t5", 5, env.reset(*T5))
    keep("t14", 14, env.reset(*T14))
    keep("t0", 0, env.reset(*T0))
    env.step("teleport to outside")
    keep("t0_wood", 0, env.step("pick up wood"))  # "a substance called wood" in the inventory
    keep("t21", 21, env.reset(*T21))
    env.reset(*T28)
    got.observations["teleport"] = env.step("teleport to workshop").observation
    held = keep("t28_held", 28, env.step("pick up unknown substance"))
    got.observations["pick up"] = held.observation
    got.observations["look"] = env.step("look around").observation
    got.observations["no match"] = env.step("xyzzy").observation
    got.observations["refusal"] = env.step("open orange").observation
    got.observations["wait1"] = env.step("wait1").observation
    env.reset(*T12)
    state = env.step("teleport to outside")
    for _ in range(8):  # the frog egg hatches and grows up within a few waits
        if "look at adult adult frog" in state.valid_actions:
            break
        state = env.step("wait")
    keep("t12_frog", 12, state)
    return got


# -- constants -------------------------------------------------------------------------------------------
def test_rooms_and_focus_counts_are_the_authors() -> None:
    assert set(AUTHORS_ROOMS) == set(ROOMS) | {"green house"} and len(AUTHORS_ROOMS) == 11
    assert sorted(FOCUS_COUNT) == list(range(30))
    assert (FOCUS_COUNT[13], FOCUS_COUNT[12], FOCUS_COUNT[21], FOCUS_COUNT[5]) == (4, 4, 3, 1)


# -- filter ----------------------------------------------------------------------------------------------
STATES = ["t13", "t13_outside", "t5", "t14", "t0", "t28_held"]


@pytest.mark.parametrize("name", STATES)
def test_filter_drops_doors_and_adds_the_authors_actions(real: Captured, name: str) -> None:
    raw, valid = real.states[name].valid_actions, real.valid(name)
    assert any("door" in a and "open" not in a for a in raw)  # ScienceWorld lists "close door", ...
    assert not [a for a in valid if "door" in a and "open" not in a]
    for added in ("wait", "wait1", "open door to kitchen", "open door to green house"):
        assert added in valid
    assert {f"open door to {room}" for room in AUTHORS_ROOMS} <= set(valid)
    never = {"focus on agent", "focus on air", *(f"focus on {room}" for room in AUTHORS_ROOMS)}
    assert "focus on agent" in raw and not never & set(valid)


def _words(description: str) -> set[str]:
    text = description.removeprefix("Task Description:")
    return set("".join(c for c in text if c.isalnum() or c.isspace()).lower().split())


@pytest.mark.parametrize("name", ["t13", "t13_outside", "t0", "t28_held"])
def test_kept_focus_actions_share_a_word_with_the_description(real: Captured, name: str) -> None:
    state, valid = real.states[name], real.valid(name)
    words = _words(state.task_description)
    kept = [a for a in valid if a.startswith("focus on")]
    assert all(words & set(a.removeprefix("focus on").split()) for a in kept)
    dropped = [a for a in state.valid_actions if a.startswith("focus on") and a not in valid]
    assert dropped and "focus on orange" in dropped  # the orange of every inventory is off-topic


def test_kept_focus_actions_on_real_states(real: Captured) -> None:
    # Outside, the lemon trees share "lemon" with "... life stages of the lemon plant ...".
    assert "focus on lemon seed" in real.valid("t13_outside")
    # Function words count: "focus on substance in toilet" shares "substance" with "boil ... the substance".
    assert "focus on substance in toilet" in real.valid("t0")
    # In the greenhouse nothing is on topic (and "focus on door to hallway", which shares "to", is a door).
    assert not [a for a in real.valid("t13") if a.startswith("focus on")]


def test_exempt_task_keeps_its_focus_actions(real: Captured) -> None:
    state = real.states["t5"]  # find-animal: the target is "the thing", named by category
    raw_focus = [a for a in state.valid_actions if a.startswith("focus on") and "door" not in a]
    kept = [a for a in real.valid("t5") if a.startswith("focus on")]
    assert "focus on bowl" in kept and len(kept) == len(raw_focus) - 4  # agent, air, art studio, hallway
    as_if_not_exempt = filter_valid(state.valid_actions, 2, state.task_description)
    assert "focus on bowl" not in as_if_not_exempt


def test_examine_rule_and_its_exempt_tasks(real: Captured) -> None:
    state = real.states["t14"]
    # ScienceWorld 1.2.3 lists no "examine" action (it offers "look at"), so on its own list the rule
    # removes nothing; it acts on the examine forms of the state's real objects.
    assert not [a for a in state.valid_actions if a.startswith("examine")]
    looks = [a for a in state.valid_actions if a.startswith("look at ") and "door" not in a]
    examines = [a.replace("look at", "examine", 1) for a in looks]
    actions = (*state.valid_actions, *examines)
    exempt = filter_valid(actions, 14, state.task_description)  # inclined plane: all examine kept
    assert set(examines) <= set(exempt)
    ruled = filter_valid(actions, 0, state.task_description)
    words = _words(state.task_description)
    assert [a for a in examines if a in ruled] == [a for a in examines if words & set(a.split()[1:])]
    assert "examine chair" in exempt and "examine chair" not in ruled
    # The focus rule still applies to task 14: "focus on chair" shares nothing with its description.
    assert "focus on chair" in state.valid_actions and "focus on chair" not in exempt


def test_mix_actions_are_untouched(real: Captured) -> None:
    # The authors' mix rule never removes anything; "mix orange" (no container) stays.
    state = real.states["t13"]
    mixes = [a for a in state.valid_actions if a.startswith("mix") and "door" not in a]
    assert "mix orange" in mixes and set(mixes) <= set(real.valid("t13"))


def test_filter_is_deterministic_and_keeps_scienceworld_order(
    env: ScienceWorldAdapter, real: Captured
) -> None:
    state = real.states["t13"]
    valid = real.valid("t13")
    assert filter_valid(state.valid_actions, 13, state.task_description) == valid
    assert len(valid) == len(set(valid))
    again = env.reset(*T13)  # the same real state again
    assert filter_valid(again.valid_actions, 13, again.task_description) == valid
    added = [f"open door to {room}" for room in AUTHORS_ROOMS]
    assert list(valid[-len(added) :]) == added  # "wait", "wait1" are ScienceWorld's already
    kept = [a for a in state.valid_actions if a in valid]
    assert list(valid[: len(kept)]) == kept
    # The description's "Task Description:" heading makes no difference.
    heading = state.task_description.removeprefix("Task Description:\n")
    assert filter_valid(state.valid_actions, 13, heading) == valid


# -- rewrites --------------------------------------------------------------------------------------------
def _rewrite(real: Captured, name: str, action: str) -> str:
    state = real.states[name]
    return rewrite(action, real.valid(name), state.look, state.inventory)


def test_rewrite_waits_valid_actions_and_spellings(real: Captured) -> None:
    for action in ("wait", "wait1", "wait 5", "wait10"):
        assert _rewrite(real, "t13", action) == "wait"  # "wait1" too, although it is valid
    assert _rewrite(real, "t13", "look around") == "look around"
    assert _rewrite(real, "t13", "teleport to green house") == "teleport to greenhouse"
    assert _rewrite(real, "t12_frog", "look at adult frog") == "look at adult adult frog"


def test_rewrite_go_to(real: Captured) -> None:
    assert _rewrite(real, "t13", "go to kitchen") == "teleport to kitchen"
    # "teleport to green house" is not valid, but the filter's own "open door to green house" is:
    # the authors send a door action ScienceWorld does not know.
    assert _rewrite(real, "t13", "go to green house") == "open door to green house"
    assert "open door to green house" not in real.states["t13"].valid_actions


def test_rewrite_pick_up_container_form(real: Captured) -> None:
    state = real.states["t0"]
    assert "a substance called water" in state.look
    # The intended case never fires: the "called " test is one character off.
    assert _rewrite(real, "t0", "pick up water") == "pick up water"
    # A name preceded by "called " and one more character does fire ("called w|ater"), and the
    # "container" is the text around the last parentheses before it: "(containing nothing)" of the cup.
    assert _rewrite(real, "t0", "pick up ater") == "pick up  (containing nothing)"
    # "pick up cup" is valid, yet the form with "substance in " is what comes back.
    assert "pick up cup" in real.valid("t0")
    assert _rewrite(real, "t0", "pick up substance in cup") == "pick up substance in cup"


def test_rewrite_substance_in_inventory(real: Captured) -> None:
    assert "a substance called wood" in real.states["t0_wood"].inventory
    assert "focus on wood" not in real.valid("t0_wood")
    assert _rewrite(real, "t0_wood", "focus on wood") == "focus on substance in inventory"
    assert _rewrite(real, "t0_wood", "move wood to fire pit") == "move substance in inventory to fire pit"


def test_rewrite_in_clauses_and_unknown_substances(real: Captured) -> None:
    assert _rewrite(real, "t13", "look at sink in greenhouse") == "look at sink"
    # " in <room>" in the middle: deleted, leaving two spaces.
    assert _rewrite(real, "t13", "move shovel in greenhouse to jug") == "move shovel  to jug"
    assert _rewrite(real, "t0_wood", "go to kitchen in hallway") == "go to kitchen"
    # "move" + "to" anywhere (tomato) but no "move ... to" pattern: returned as written.
    assert _rewrite(real, "t13", "move tomato in greenhouse") == "move tomato in greenhouse"
    assert "unknown substance U" in real.states["t28_held"].inventory
    held = "t28_held"
    assert _rewrite(real, held, "focus on unknown substance U in inventory") == "focus on unknown substance"
    assert _rewrite(real, held, "move unknown substance U to red box") == "move unknown substance to red box"


def test_clean_unknown_substance() -> None:
    assert clean_unknown_substance("focus on unknown substance U") == "focus on unknown substance"
    assert clean_unknown_substance("connect unknown substance U terminal 1") == (
        "connect unknown substance terminal 1"
    )
    assert clean_unknown_substance("read book Pride") == "read book Pride"  # no unknown substance


# -- failure test, focus, room, fallback -----------------------------------------------------------------
def test_authors_failed_on_real_observations(real: Captured) -> None:
    obs = real.observations
    assert obs["no match"] == NO_MATCH and authors_failed(obs["no match"])
    assert obs["refusal"] == "The orange is not openable." and authors_failed(obs["refusal"])
    for name in ("teleport", "pick up", "wait1"):
        assert not authors_failed(obs[name]), obs[name]
    # Substrings: a look listing an empty box is a failure to the authors, not to semantics.
    assert "(containing nothing)" in obs["look"]
    assert authors_failed(obs["look"]) and classify_feedback(obs["look"]) is Feedback.OK
    assert not authors_failed(NO_MATCH + " ")  # compared whole


def test_is_action_text_on_real_actions_and_observations(real: Captured) -> None:
    # The authors' grammar covers most of ScienceWorld's verbs; these real ones (and "2".."4", answers
    # to an ambiguity prompt beyond "0" and "1") it does not know.
    unknown = {"eat", "flush", "put down", "disconnect", "look in", "reset", "task", "inventory"}
    unknown |= {"2", "3", "4"}
    for name in ("t13", "t28_held", "t0_wood"):
        actions = real.states[name].valid_actions
        assert {verb_of(a) for a in actions if not is_action_text(a)} <= unknown
        assert not [a for a in actions if verb_of(a) in unknown and is_action_text(a)]
    for observation in real.observations.values():
        assert not is_action_text(observation), observation
    # Lower-cased first, ends stripped for the bare actions, an object needed after a verb.
    assert is_action_text("Open door to kitchen") and is_action_text(" wait1 ")
    assert is_action_text("pour cup into pot") and not is_action_text("focus on")
    assert not is_action_text("move cup")


def test_focus_targets_and_limit_on_real_descriptions(real: Captured) -> None:
    d13, d21 = real.states["t13"].task_description, real.states["t21"].task_description
    assert focus_targets(d13) == ["life stages of  lemon plant"]
    assert focus_targets(d21) == ["thermometer", "solid unknown substance Y", "blue box", "orange box"]
    assert focus_limit(13, d13) == 4
    # Two alternative boxes both count: the limit is 4 although 3 focus actions are rewarded.
    assert FOCUS_COUNT[21] == 3 and focus_limit(21, d21) == 4
    assert clean_unknown_substance(focus_targets(d21)[1]) == "solid unknown substance"


def test_current_room_on_real_looks(real: Captured) -> None:
    assert current_room(real.states["t13"].look) == "greenhouse"
    assert current_room(real.states["t5"].look) == "art studio"
    assert current_room(real.states["t13_outside"].look) == "outside"
    assert current_room(real.states["t14"].look) == "living room"
    assert current_room(real.observations["no match"]) is None


def test_deterministic_fallback_on_real_states(real: Captured) -> None:
    valid = real.valid("t13")
    assert deterministic_fallback(valid, "greenhouse") == "look around"
    assert deterministic_fallback([a for a in valid if a != "look around"], "greenhouse") == "inventory"
    no_look = [a for a in valid if a not in ("look around", "inventory")]
    # first destination alphabetically ("art studio"), then first action: "open" < "teleport"
    assert deterministic_fallback(no_look, "greenhouse") == "open door to art studio"
    art = [a for a in real.valid("t5") if a not in ("look around", "inventory")]
    assert deterministic_fallback(art, current_room(real.states["t5"].look)) == "open door to bathroom"
    no_moves = [a for a in no_look if not a.startswith(("teleport to", "open door to", "go to"))]
    assert deterministic_fallback(no_moves, "greenhouse") == min(no_moves)
    assert deterministic_fallback([], "greenhouse") is None


# -- wrapper, config, runner -----------------------------------------------------------------------------
def test_valid_filter_wrapper_on_real_steps(env: ScienceWorldAdapter) -> None:
    wrapped = ValidFilter(env)
    with pytest.raises(EnvError, match="reset"):
        wrapped.step("look around")  # the wrapper has no episode (the shared adapter may have one)
    first = wrapped.reset(*T13)
    raw = env.reset(*T13)
    assert first.valid_actions == filter_valid(raw.valid_actions, 13, raw.task_description)
    assert first == ValidFilter(env).reset("identify-life-stages-2", T13[1])  # task by name
    step = wrapped.step("teleport to outside")
    assert "focus on lemon seed" in step.valid_actions and "focus on orange" not in step.valid_actions
    assert not [a for a in step.valid_actions if "door" in a and "open" not in a]
    assert {"wait", "wait1", "open door to kitchen"} <= set(step.valid_actions)
    stacked = TimeLimit(ValidFilter(env), 3)
    assert stacked.unwrapped is env and TimeLimit(TimeLimit(wrapped, 5), 2).unwrapped is env
    assert "open door to green house" in stacked.reset(*T13).valid_actions


def test_config_valid_filter_values() -> None:
    assert EnvConfig().valid_filter == "none"
    assert EnvConfig(valid_filter="authors").valid_filter == "authors"
    with pytest.raises(ValidationError, match="valid_filter"):
        EnvConfig(valid_filter="swiftsage")


@dataclass
class _Recorder:
    """Looks around and records the valid actions the runner shows it."""

    needs_gold: bool = False
    seen: list[tuple[str, ...]] = field(default_factory=list)

    def reset(self, ctx: EpisodeContext, first: StepResult) -> None:
        self.seen = [first.valid_actions]

    def act(self, result: StepResult) -> Decision:
        return Decision("look around", "scripted")

    def observe(self, decision: Decision, result: StepResult) -> None:
        self.seen.append(result.valid_actions)


@pytest.mark.parametrize("valid_filter", ["none", "authors"])
def test_runner_applies_the_configured_filter(env: ScienceWorldAdapter, valid_filter: str) -> None:
    config = RunConfig(name="test-valid", env=EnvConfig(step_limit=2, valid_filter=valid_filter))
    agent = _Recorder()
    run_episode(env, agent, Episode(*T13), config, ListSink())
    assert len(agent.seen) == 3
    filtered = [("open door to green house" in v, "close door to hallway" in v) for v in agent.seen]
    assert set(filtered) == ({(True, False)} if valid_filter == "authors" else {(False, True)})
