"""Sage, SwiftSage's slow planner (paper §3, System 2): plan with five questions, then ground into actions.

Two LLM calls per round. Planning answers five questions about the task, the trajectory, the rooms seen,
the inventory, the failures and Swift's suggestion; grounding turns the plan into a numbered action list
with expected observations. Replies are parsed leniently (``parsing``), mapped onto the current
valid-action set (``grounding``) and retried once when nothing usable came back. A model error ends the
round with ``error`` set and no actions, so the controller falls back to Swift and the episode goes on.

Prompts are Jinja2 templates in ``fastslow/prompts``; the system prompt and the task come first in both
calls so llama.cpp and vLLM reuse the cached prefix.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from fastslow.controller.config import SageRunConfig
from fastslow.controller.grounding import Grounder
from fastslow.controller.parsing import ParsedAction, parse_actions
from fastslow.core.trajectory import Trajectory, Turn
from fastslow.errors import ModelError
from fastslow.events import EventSink
from fastslow.models import ChatModel, Message, call_model
from fastslow.templates import prompt_template

log = logging.getLogger(__name__)


def render(name: str, **values: Any) -> str:
    """A Sage prompt (``prompts/<name>``), laid out with block trimming as the templates are written."""
    return prompt_template(name, trim=True).render(**values).strip()


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


@dataclass(frozen=True)
class PlanRequest:
    """What the controller hands Sage for one round."""

    traj: Trajectory
    step: int
    """Env steps taken so far (recorded on the ModelCall events)."""
    failures: Sequence[Turn] = ()
    """Recent steps whose observation was a failure message."""
    suggestion: Sequence[str] = ()
    """Swift's top candidates."""
    memories: Sequence[str] = ()
    """Formatted AMM memories, one line each; empty in the baseline."""
    ground: Callable[[str], str | None] | None = None
    """The controller's grounding of this state (``Resolver.ground`` on its ``StepView``): tells which
    parsed actions are valid now. None: a grounder of its own (Sage used outside the controller)."""
    memory_block: str = ""
    """AMM's delimited T4 block (``format_memory_block``, audience sage), rendered right after the task
    line so the system prompt and task stay a stable cached prefix; empty in the baseline."""


@dataclass(frozen=True)
class SagePlan:
    """Outcome of one Sage round."""

    actions: tuple[ParsedAction, ...]
    """Planned actions in order, as Sage wrote them (the resolver grounds each when the buffer reaches
    it). Empty when none of them was valid now."""
    parsed: tuple[ParsedAction, ...] = ()
    """Actions as parsed from the last grounding reply, before grounding."""
    model_calls: int = 0
    retried: bool = False
    error: str | None = None
    latency_s: float = 0.0
    plan_text: str = ""
    prompt_tokens: list[int] = field(default_factory=list)
    """Prompt tokens of each LLM call, in order."""


class Planner(Protocol):
    """The Sage seam: a plan for the current state (the Critic of SRM meets a similar one)."""

    def plan(self, request: PlanRequest, sink: EventSink) -> SagePlan: ...


class Sage:
    """Two-stage LLM planner over any ``ChatModel`` backend."""

    def __init__(
        self, model: ChatModel, cfg: SageRunConfig, *, max_actions: int = 5, cutoff: float = 75.0
    ) -> None:
        self.model = model
        self.cfg = cfg
        self.max_actions = max_actions
        self.cutoff = cutoff
        """Lowest rapidfuzz score at which a planned action counts as valid now."""

    def messages(self, request: PlanRequest) -> list[Message]:
        """The planning conversation (public so prompt size can be measured on a real state)."""
        traj, cfg = request.traj, self.cfg
        here = traj.room
        other_looks = [
            (room, _clip(traj.room_looks[room], cfg.max_look_chars))
            for room in traj.visited_rooms
            if room != here
        ]
        history = [
            Turn(t.step, t.action, t.source, _clip(t.observation, 200), t.score, t.reward)
            for t in traj.recent(cfg.history_turns)
        ]
        failures = [
            Turn(t.step, t.action, t.source, _clip(t.observation, 120), t.score, t.reward)
            for t in list(request.failures)[-cfg.max_failures :]
        ]
        user = render(
            "sage_plan.j2",
            task=_task(traj),
            memories=list(request.memories),
            memory_block=request.memory_block.strip(),
            score=traj.current.score,
            steps=traj.current.steps,
            history=history,
            other_looks=other_looks,
            look=" ".join(traj.current.look.split()),
            inventory=" ".join(traj.current.inventory.split()),
            failures=failures,
            suggestion=list(request.suggestion)[: cfg.swift_candidates],
        )
        return [Message(role="system", content=render("sage_system.j2")), Message(role="user", content=user)]

    def _ground_messages(self, request: PlanRequest, plan_text: str) -> list[Message]:
        traj = request.traj
        last = traj.turns[-1] if traj.turns else None
        user = render(
            "sage_ground.j2",
            task=_task(traj),
            plan=plan_text.strip(),
            look=" ".join(traj.current.look.split()),
            inventory=" ".join(traj.current.inventory.split()),
            recent=Turn(
                last.step, last.action, last.source, _clip(last.observation, 200), last.score, last.reward
            )
            if last
            else None,
            max_actions=self.max_actions,
        )
        return [Message(role="system", content=render("sage_system.j2")), Message(role="user", content=user)]

    def plan(self, request: PlanRequest, sink: EventSink) -> SagePlan:
        calls, latency, tokens = 0, 0.0, []
        plan_text = ""
        parsed: list[ParsedAction] = []
        grounded: list[ParsedAction] = []
        retried = False
        reply = ""
        try:
            done = call_model(
                self.model,
                self.messages(request),
                sink=sink,
                role="sage_plan",
                step=request.step,
                max_tokens=self.cfg.plan_max_tokens,
            )
            calls, latency, plan_text = 1, done.latency_s, done.text
            tokens.append(done.prompt_tokens)
            ground = request.ground or _own_grounding(request.traj, self.cutoff)
            conversation = self._ground_messages(request, plan_text)
            for attempt in range(1 + max(self.cfg.parse_retries, 0)):
                if attempt:
                    # Retry in the same conversation: the model sees its unusable reply and the format.
                    retried = True
                    conversation = [
                        *conversation,
                        Message(role="assistant", content=reply),
                        Message(role="user", content=render("sage_ground_retry.j2")),
                    ]
                done = call_model(
                    self.model,
                    conversation,
                    sink=sink,
                    role="sage_ground",
                    step=request.step,
                    max_tokens=self.cfg.ground_max_tokens,
                )
                calls, latency, reply = calls + 1, latency + done.latency_s, done.text
                tokens.append(done.prompt_tokens)
                parsed = parse_actions(reply)
                grounded = self._usable(parsed, ground)
                if grounded:
                    break
        except ModelError as exc:
            log.warning("Sage call at step %d failed, Swift acts instead: %s", request.step, exc)
            return SagePlan(
                (),
                tuple(parsed),
                calls + 1,
                retried,
                f"{type(exc).__name__}: {exc}",
                latency,
                plan_text,
                tokens,
            )
        return SagePlan(tuple(grounded), tuple(parsed), calls, retried, None, latency, plan_text, tokens)

    def _usable(
        self, parsed: Sequence[ParsedAction], ground: Callable[[str], str | None]
    ) -> list[ParsedAction]:
        """The parsed actions, as written, if at least one of them is valid now; else [] (retry).

        They stay as Sage wrote them: the controller's resolver grounds each one when the buffer
        reaches it (a plan's later actions only become valid after its earlier ones ran, ``pick up X``
        after ``teleport to`` X's room), and SRM's Gate-1 must judge the text Sage proposed."""
        return list(parsed) if any(ground(item.action) is not None for item in parsed) else []


def _own_grounding(traj: Trajectory, cutoff: float) -> Callable[[str], str | None]:
    grounder = Grounder(traj.current.valid_actions)

    def ground(text: str) -> str | None:
        hit = grounder.ground(text, cutoff)
        return hit.action if hit else None

    return ground


def _task(traj: Trajectory) -> str:
    text = traj.task_description.strip()
    return text.removeprefix("Task Description:").strip()
