"""Scripted Swift proposers and scripted Sage replies for controller tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from fastslow.controller.controller import SwiftSageAgent
from fastslow.controller.parsing import parse_actions
from fastslow.core.proposal import MemoryHint, Proposal, RankedAction
from fastslow.core.trajectory import Trajectory
from fastslow.env.scienceworld.func_actions import to_func
from fastslow.env.scienceworld.world import SEMANTICS
from fastslow.eval.runner import EpisodeOutcome
from fastslow.events import Event
from fastslow.models.base import Message
from fastslow.models.scripted import ScriptedModel


class ScriptedSwift:
    """Proposes ``script[i]`` at the i-th query (the last one repeats), or what ``script(traj)`` returns."""

    name = "scripted"

    def __init__(self, script: Sequence[str] | Callable[[Trajectory], Sequence[str]]) -> None:
        self.script = script
        self.calls = 0

    def propose(self, traj: Trajectory, memories: Sequence[MemoryHint] | None = None) -> Proposal:
        if callable(self.script):
            actions = list(self.script(traj))
        else:
            actions = [self.script[min(self.calls, len(self.script) - 1)]]
        self.calls += 1
        cands = tuple(RankedAction(a, 1.0 - 0.1 * i) for i, a in enumerate(actions))
        return Proposal(cands, 0.9 if cands else 0.0)


def gold_swift(gold: Sequence[str]) -> ScriptedSwift:
    """Swift that proposes the gold action for the number of steps taken so far."""
    return ScriptedSwift(
        lambda traj: [gold[len(traj.turns)]] if len(traj.turns) < len(gold) else ["look around"]
    )


AUTHORS_GROUND_MARK = "Answer in this format:"
"""Ends the grounding prompt of the authors' profile (``prompts/sage_authors_ground.j2``)."""


def is_plan_prompt(messages: Sequence[Message]) -> bool:
    """A planning prompt of either profile (SwiftSage's says "five questions"; the authors' asks
    "Question 5" and, unlike their grounding prompt, holds no advice)."""
    text = messages[-1]["content"]
    return "five questions" in text or ("Question 5:" in text and AUTHORS_GROUND_MARK not in text)


def as_authors_reply(reply: str) -> str:
    """A numbered grounding reply written in the authors' format ("Action 1: OPEN(door) --> ..."): an
    action with no FUNC form stays plain text, which their reader skips."""
    lines = []
    for i, item in enumerate(parse_actions(reply, SEMANTICS), 1):
        guess = f" --> {item.expected}" if item.expected else ""
        lines.append(f"Action {i}: {to_func(item.action) or item.action}{guess}")
    return "\n".join(lines) or reply


def sage_replies(*grounding: str) -> Callable[[Sequence[Message]], str]:
    """Scripted Sage: a fixed plan, then the given grounding replies in order (the last one repeats),
    numbered as SwiftSage's prompt asks, rewritten into FUNC form when the authors' prompt asks."""
    state = {"n": 0}

    def respond(messages: Sequence[Message]) -> str:
        if is_plan_prompt(messages):
            return "1. objects: here. 2. nothing. 3. act. 4. next: act. 5. none."
        reply = grounding[min(state["n"], len(grounding) - 1)]
        state["n"] += 1
        return as_authors_reply(reply) if AUTHORS_GROUND_MARK in messages[-1]["content"] else reply

    return respond


@dataclass
class Run:
    outcome: EpisodeOutcome
    events: list[Event]
    agent: SwiftSageAgent
    model: ScriptedModel
    steps: list[Any] = field(default_factory=list)

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.event == kind]
