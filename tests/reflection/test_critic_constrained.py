"""The constrained Critic (``critic.constrain``): its answer shape against ``parse_critic_reply`` on real
lines, ``none`` sending today's call, and a ``valid`` answer of the embedded model on a real state whose
actions the scheduler keeps and the resolver admits."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from fastslow.controller.authors import authors_grounding
from fastslow.controller.resolver import IndexedView, Resolver
from fastslow.core.trajectory import Trajectory
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.env.scienceworld.world import SEMANTICS
from fastslow.events import CriticCall, ListSink, ModelCall, StagnationReport
from fastslow.models import ModelConfig, make_model
from fastslow.models.scripted import ScriptedModel
from fastslow.reflection.config import CriticConfig
from fastslow.reflection.critic import make_critic, parse_critic_reply
from fastslow.reflection.critic.llm import answerable, critic_shape
from reflection.helpers import act, start

REPORT = StagnationReport(
    step=2, pattern="repeated_action", evidence_steps=[1, 2], avoid=["look at picture"], constraints=["c1"]
)


@pytest.fixture(scope="module")
def stuck(env: ScienceWorldAdapter) -> Trajectory:
    """A real state after a repeated action (chemistry-mix, in the hallway)."""
    traj = start(env)
    for action in ("look at picture", "look at picture"):
        act(env, traj, action)
    return traj


def test_the_shape_accepts_the_answers_the_reader_reads(stuck: Trajectory) -> None:
    """Over the state's valid actions, in answers of one to five lines with a real observation as the
    diagnosis: the shape's pattern matches exactly when ``parse_critic_reply`` reads the diagnosis and
    every action back."""
    shape = critic_shape(5, SEMANTICS)
    pattern = re.compile(shape.pattern())
    reason = " ".join(stuck.turns[-1].observation.split())[:60]
    actions = list(stuck.current.valid_actions)
    assert len(actions) > 50
    for k, i in enumerate(range(0, len(actions), 5)):
        chunk = actions[i : i + 1 + k % 5]
        text = "\n".join([f"Diagnosis: {reason}", "Correction: act.", "Actions:"])
        text += "".join(f"\n{n}. {a}" for n, a in enumerate(chunk, 1))
        assert pattern.fullmatch(text), text
        assert parse_critic_reply(text) == (f"{reason} act.", chunk)
    for text in (
        "Diagnosis: x\nCorrection: y\nActions:",  # no action
        "Diagnosis: x\nActions:\n1. look around",  # no correction
        "Diagnosis: x\nCorrection: y\nActions:\n1. look around.",  # the reader drops the period
        "Diagnosis: x\nCorrection: y\nActions:\n" + "\n".join(f"{n}. wait" for n in range(1, 7)),
    ):
        assert not pattern.fullmatch(text), text


def scripted_call(traj: Trajectory, mode: str) -> tuple[list[ModelCall], list[str]]:
    sink = ListSink()
    reply = "Diagnosis: stuck.\nCorrection: move on.\nActions:\n1. teleport to kitchen"
    cfg = CriticConfig(constrain=mode, prompt_actions="all")
    critic = make_critic(cfg, sink=sink, model=ScriptedModel([reply]))
    actions = critic.maybe_call(REPORT, traj)
    return [e for e in sink.events if isinstance(e, ModelCall)], actions


def test_none_sends_the_unconstrained_call_and_the_modes_only_add_a_grammar(stuck: Trajectory) -> None:
    assert CriticConfig().constrain == "none"
    (plain,), kept = scripted_call(stuck, "none")
    assert plain.constraint is None and kept == ["teleport to kitchen"]
    for mode in ("format", "valid"):
        (call,), same = scripted_call(stuck, mode)
        assert (call.constraint, call.messages, call.completion, same) == (
            "grammar",
            plain.messages,
            plain.completion,
            kept,
        )


def test_valid_choices_are_what_the_scheduler_keeps(stuck: Trajectory) -> None:
    everything = answerable(REPORT, stuck, all_actions=True)
    sample = answerable(REPORT, stuck, all_actions=False)
    assert "look at picture" not in sample and "teleport to kitchen" in sample
    assert "look around" not in everything and "teleport to kitchen" in everything


@pytest.fixture(scope="module")
def local() -> Iterator[Any]:
    yield make_model(ModelConfig(max_tokens=160))  # room for two full reason lines and an action


def test_a_valid_answer_of_the_embedded_model_is_kept_and_admitted(local: Any, stuck: Trajectory) -> None:
    """SmolLM2-135M's answer, constrained to the actions the Critic may answer with, is read into
    actions the scheduler keeps and the resolver admits (a short prompt: a fast test)."""
    sink = ListSink()
    cfg = CriticConfig(constrain="valid", prompt_actions="all", prompt_budget_tokens=500, history=2)
    critic = make_critic(cfg, sink=sink, model=local)
    actions = critic.maybe_call(REPORT, stuck)
    (model_call,) = [e for e in sink.events if isinstance(e, ModelCall)]
    (call,) = [e for e in sink.events if isinstance(e, CriticCall)]
    assert model_call.constraint == "grammar" and model_call.error is None
    assert actions and call.proposed[: len(actions)] == actions, model_call.completion
    resolver = Resolver(80, [], fallback_when_unresolved=False, grounding=authors_grounding)
    view = IndexedView(stuck.current, stuck)
    assert all(resolver.resolve(a, "critic", view) == a for a in actions)
