"""SRM's authors profile (configs/srm.yaml; paper §3.2) component by component on real ScienceWorld
states (chemistry-mix, variation 0, from the hallway): the authors' stagnation tests (open-door as
navigation, a report at every step, nothing before their step index 5, the paper's fifth signal kept),
Gate-1's focus budget as the authors count it, and the Critic's prompt with the whole filtered valid set.
The Critic's timing and accounting inside the loop: tests/integration/test_srm_authors.py."""

from __future__ import annotations

import pytest

from fastslow.config import CriticConfig
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.procedures.focus import TaskFocusRules
from fastslow.env.scienceworld.valid import FOCUS_COUNT
from fastslow.events import ListSink, StagnationReport
from fastslow.models import estimate_tokens
from fastslow.models.local_backend import default_gguf
from fastslow.models.scripted import ScriptedModel
from fastslow.reflection.config import GateConfig, StagnationConfig
from fastslow.reflection.critic import (
    Critic,
    LlmCritic,
    critic_action_list,
    relevant_actions,
    render_critic_prompt,
)
from fastslow.reflection.focus import focus_usage
from fastslow.reflection.gate import Gate1
from reflection.helpers import State, act, start
from reflection.test_stagnation import PAD, run

AUTHORS = StagnationConfig(no_effect="observation", open_door_navigates=True, repeat_after=1, min_step=6)
"""The detector as configs/srm.yaml sets it."""


def test_opening_a_door_is_navigation_for_the_authors(env: ScienceWorldAdapter) -> None:
    """Steps 5-9 move between the hallway and the kitchen, two of them "open door to kitchen" (the door
    is already open): five moves among two (room, inventory) states with the door actions counted,
    three without them (below the threshold of 4)."""
    loop = ["teleport to hallway", "open door to kitchen", "teleport to kitchen", "teleport to hallway"]
    actions = [*PAD, *loop, "open door to kitchen"]
    traj, reports = run(env, actions, AUTHORS)
    assert traj.turns[5].observation == "The door is already open."
    nav = [r for r in reports if "navigation_loop" in r.patterns]
    assert [r.step for r in nav] == [9]
    assert nav[0].evidence_steps == [5, 6, 7, 8, 9]
    without = AUTHORS.model_copy(update={"open_door_navigates": False})
    _, reports = run(env, actions, without)
    assert not any("navigation_loop" in r.patterns for r in reports)


def test_the_authors_report_at_every_step_from_their_step_index_five(env: ScienceWorldAdapter) -> None:
    """Four "look at picture" from step 5: the authors' detector reports at steps 6, 7 and 8 (each step
    the loop holds); fastslow's spaces the same pattern 5 steps apart. Two looks ending at step 5: the
    authors say nothing (their step index 4), fastslow reports."""
    looks = ["look at picture"] * 4
    _, reports = run(env, [*PAD, *looks], AUTHORS)
    assert [r.step for r in reports] == [6, 7, 8]
    assert {"repeated_action", "repeated_observation", "verb_loop"} <= set(reports[-1].patterns)
    _, ours = run(env, [*PAD, *looks])
    assert [r.step for r in ours] == [6, 7]
    early = [*PAD[:3], "look at picture", "look at picture"]
    assert run(env, early, AUTHORS)[1] == []
    assert [r.step for r in run(env, early)[1]] == [5]


def test_the_papers_fifth_signal_the_invalid_loop_is_kept(env: ScienceWorldAdapter) -> None:
    """The authors' code implements four signals; the paper's invalid-action loop is kept in their profile."""
    _, reports = run(env, [*PAD, "fly", "jump high", "sing"], AUTHORS)
    (report,) = reports
    assert (report.step, report.pattern) == (7, "invalid_loop")
    assert report.avoid[:3] == ["fly", "jump high", "sing"]


def test_the_authors_focus_budget_counts_every_executed_focus(env: ScienceWorldAdapter) -> None:
    """Chemistry-mix allows one focus (their ``focus_on_count``). A focus ScienceWorld does not know
    still counts for the authors: Gate-1 then drops a valid focus for the budget; fastslow's budget
    counts confirmed focuses only and, with the task logic's focus rules (``procedures.enabled``), drops
    it for another reason (the picture is not the task's)."""
    traj = start(env)
    act(env, traj, "focus on unicorn")
    assert traj.current.observation == "No known action matches that input."
    assert focus_usage(traj, "authors") == (1, FOCUS_COUNT[2]) == (1, 1)
    assert focus_usage(traj, "gold")[0] == 0
    authors = Gate1(GateConfig(focus_budget="authors")).check("focus on picture", traj.current, traj)
    ours = Gate1(GateConfig(), judge=TaskFocusRules()).check("focus on picture", traj.current, traj)
    assert (authors.accepted, authors.reason) == (False, "focus_limit")
    assert (ours.accepted, ours.reason) == (False, "focus_not_allowed")


def test_the_authors_prompt_lists_the_whole_filtered_valid_set(states: dict[str, State]) -> None:
    """Every valid action but looks, room inspections and actions on the air or the agent, one per line;
    the authors' constraints in words; answers outside that list are not kept."""
    traj = states["mix:kitchen"].traj
    listed = critic_action_list(traj)
    assert len(listed) > 100 and listed == sorted(listed)
    assert not any(a.startswith("look") or " air" in a or " agent" in a for a in listed)
    assert set(listed) < set(traj.current.valid_actions)
    move = next(a for a in listed if a.startswith("move "))
    reply = f"Diagnosis: stuck.\nActions:\n1) look around\n2) {move}\n3) fly away"
    model = ScriptedModel([reply])
    sink = ListSink()
    cfg = CriticConfig(prompt_actions="all", charge="injected")
    critic = Critic(cfg, LlmCritic(model, sink=sink, all_actions=True, focus_budget="authors"), sink=sink)
    report = StagnationReport(step=traj.current.steps, pattern="verb_loop", patterns=["verb_loop"])
    assert critic.maybe_call(report, traj) == [move]
    prompt = model.prompts[0][0]["content"]
    lines = set(prompt.splitlines())
    assert all(a in lines for a in listed)
    assert "focus actions used: 0 of 1" in prompt and "look around" not in lines


def test_a_prompt_budget_lists_the_most_relevant_actions_that_fit(states: dict[str, State]) -> None:
    """The embedded Critic (srm.yaml: 3,400 estimated tokens): the whole list of the kitchen state
    overflows it, so the prompt lists the task-relevant actions first and as many others as fit, says
    it is a part of the list, and SmolLM2's own tokenizer finds room for the 512-token answer in its
    4,096-token context. An answer may still name any action of the whole list."""
    traj = states["mix:kitchen"].traj
    listed = critic_action_list(traj)
    report = StagnationReport(step=traj.current.steps, pattern="verb_loop", patterns=["verb_loop"])
    whole = render_critic_prompt(report, traj, all_actions=True, focus_budget="authors")
    assert estimate_tokens(whole) > 3400
    prompt = render_critic_prompt(report, traj, all_actions=True, focus_budget="authors", budget_tokens=3400)
    assert estimate_tokens(prompt) <= 3400
    shown = [a for a in prompt.splitlines() if a in set(listed)]
    assert 20 <= len(shown) < len(listed) and shown == sorted(shown)
    assert f"the {len(shown)} most relevant to the task of {len(listed)}" in prompt
    relevant = [a for a in relevant_actions(traj, len(listed)) if a in set(listed)]
    assert relevant and set(relevant[: len(shown) // 2]) <= set(shown)
    short = render_critic_prompt(report, traj, all_actions=True, focus_budget="authors", budget_tokens=10**6)
    assert short == whole
    hidden = next(a for a in listed if a not in shown and not a.startswith("teleport"))
    model = ScriptedModel([f"Diagnosis: stuck.\nActions:\n1. {hidden}"])
    cfg = CriticConfig(prompt_actions="all", charge="injected")
    critic = Critic(cfg, LlmCritic(model, all_actions=True, focus_budget="authors", budget_tokens=3400))
    assert critic.maybe_call(report, traj) == [hidden]
    llama_cpp = pytest.importorskip("llama_cpp")
    vocab = llama_cpp.Llama(model_path=str(default_gguf()), vocab_only=True, verbose=False)
    assert len(vocab.tokenize(prompt.encode())) + 512 < 4096 < len(vocab.tokenize(whole.encode()))
