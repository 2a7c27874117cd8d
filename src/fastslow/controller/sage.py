"""Sage, SwiftSage's slow planner (paper §3, System 2): plan with five questions, then ground into actions.

Two LLM calls per round. Planning answers five questions about the task, the trajectory, the rooms seen,
the inventory, the failures and Swift's suggestion; grounding turns the plan into a numbered action list
with expected observations. Replies are parsed leniently (``parsing``), mapped onto the current
valid-action set (``grounding``) and retried once when nothing usable came back. A model error ends the
round with ``error`` set and no actions, so the controller falls back to Swift and the episode goes on;
so does a call that Sage's circuit breaker skipped (``models.breaker``: not counted in ``model_calls``).
Failed calls are in the event log, not on the console: the breaker says once when the model is out.

Prompts are Jinja2 templates in ``fastslow/prompts``; the system prompt and the task come first in both
calls so llama.cpp and vLLM reuse the cached prefix.

What Sage asks and how it reads the replies is a prompt profile (``SagePrompts``, ``controller.sage.prompt``),
chosen once when Sage is built: ``SwiftSagePrompts`` here (``swiftsage``), or the one
``fastslow.build.SAGE_PROMPTS`` names (the paper configurations' prompts live with their arbitration
profile). Sage itself runs the round the same way for every profile.

``controller.sage.constrain`` constrains both calls while the model generates: ``format`` asks for the
reply shapes the profile's reader reads (``SagePrompts.ground_shape``, ``parsing.plan_shape``), ``valid``
also makes every grounded action one of the state's valid actions the controller's grounding admits.
``none`` (the paper configurations) sends exactly the unconstrained calls.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from fastslow.controller.config import SageRunConfig
from fastslow.controller.grounding import Grounder
from fastslow.controller.parsing import (
    PLAN_LABELS,
    ParsedAction,
    numbered_readable,
    numbered_shape,
    parse_actions,
    plan_shape,
)
from fastslow.core.trajectory import Trajectory, Turn
from fastslow.env.world import get_world
from fastslow.errors import ModelError, UsageError
from fastslow.events import EventSink
from fastslow.models import ChatModel, CircuitOpenError, Constraint, Message, call_model
from fastslow.models.shape import ListShape
from fastslow.templates import prompt_template

log = logging.getLogger(__name__)

_HEADER = "Task Description:"


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
    line so the system prompt and task stay a stable cached prefix (a prompt profile may place it
    elsewhere); empty in the baseline."""
    instinct: str | None = None
    """Swift's top prediction (``arbiter.top_prediction``) when it grounds onto a valid action in this
    state, None when it does not or Swift was not asked (a forcing rule): the "instinct" line of the
    prompts that show one."""


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


class SageOff:
    """A ``Planner`` whose round at ``step`` env steps taken is switched off (``config.Intervention``,
    ``fastslow attribute``): it answers no action with the reason in ``error``, so the controller logs
    the round and its arbiter's fallback acts, as when Sage fails; every other round is ``inner``'s."""

    OFF = "switched off at this step (fastslow attribute)"

    def __init__(self, inner: Planner, step: int) -> None:
        self.inner, self.step = inner, step

    def plan(self, request: PlanRequest, sink: EventSink) -> SagePlan:
        if request.step == self.step:
            return SagePlan(actions=(), error=self.OFF)
        return self.inner.plan(request, sink)


class SagePrompts(Protocol):
    """One prompt profile of Sage (``controller.sage.prompt``, chosen once when Sage is built): the two
    conversations of a round, the reader of the grounding reply, and the reply shapes constrained decoding
    asks for (docs/controller.md, "Sage prompts" and "Constrained Sage and Critic")."""

    plan_label: str
    """How the planning reply numbers its answers (``parsing.plan_shape``)."""
    authors_only: bool
    """It needs the world's ``AuthorsProfile`` (``WorldSemantics.authors``)."""
    round_errors: tuple[type[Exception], ...]
    """What its prompts or its reader raise when the round cannot go on: the round ends as an error, with
    no actions (besides ``SagePromptError``, which every profile may raise)."""

    def plan(self, request: PlanRequest) -> list[Message]:
        """The planning conversation."""
        ...

    def ground(self, request: PlanRequest, plan_text: str) -> list[Message]:
        """The grounding conversation after the planning reply ``plan_text``."""
        ...

    def parse(self, reply: str, traj: Trajectory) -> list[ParsedAction]:
        """The actions of a grounding reply, as written."""
        ...

    def ground_shape(self, traj: Trajectory) -> ListShape:
        """The grounding reply's shape (``constrain: format``)."""
        ...

    def readable(self, admitted: Sequence[str], traj: Trajectory) -> list[str]:
        """The ``admitted`` valid actions written as the reader reads them (``constrain: valid``)."""
        ...


class SwiftSagePrompts:
    """SwiftSage's prompts (``prompt: swiftsage``): a system message with the action forms, the five
    questions over the last ``history_turns`` steps, a grounding call for numbered actions read leniently
    (``parsing.parse_actions``)."""

    plan_label = PLAN_LABELS["swiftsage"]
    authors_only = False
    round_errors: tuple[type[Exception], ...] = ()

    def __init__(self, cfg: SageRunConfig, max_actions: int) -> None:
        self.cfg, self.max_actions = cfg, max_actions

    def plan(self, request: PlanRequest) -> list[Message]:
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
            task=task_text(traj),
            demo=self._plain_demo(traj),
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
        system = render("sage_system.j2", world=traj.semantics.prompt_facts)
        return [Message(role="system", content=system), Message(role="user", content=user)]

    def _plain_demo(self, traj: Trajectory) -> dict[str, Any] | None:
        """The planning prompt's demo with ``demo`` on (``World.sage_demos``): the first of the task."""
        if not self.cfg.demo:
            return None
        demos = get_world(traj.semantics.name).sage_demos(traj.task_id)
        if not demos:
            raise SagePromptError(f"no demo for task {traj.task_id} of {traj.semantics.name}")
        return {"game": traj.task_name, "task": demos[0].task, "lines": list(demos[0].lines)}

    def ground(self, request: PlanRequest, plan_text: str) -> list[Message]:
        traj = request.traj
        last = traj.turns[-1] if traj.turns else None
        user = render(
            "sage_ground.j2",
            task=task_text(traj),
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
        system = render("sage_system.j2", world=traj.semantics.prompt_facts)
        return [Message(role="system", content=system), Message(role="user", content=user)]

    def parse(self, reply: str, traj: Trajectory) -> list[ParsedAction]:
        return parse_actions(reply, traj.semantics)

    def ground_shape(self, traj: Trajectory) -> ListShape:
        return numbered_shape(self.max_actions, traj.semantics)

    def readable(self, admitted: Sequence[str], traj: Trajectory) -> list[str]:
        return numbered_readable(admitted, traj.semantics)


class PromptsFactory(Protocol):
    """Makes a prompt profile from Sage's settings and the most actions a reply may list (a
    ``SagePrompts`` class)."""

    def __call__(self, cfg: SageRunConfig, max_actions: int) -> SagePrompts: ...


PROMPTS: dict[str, type[SwiftSagePrompts]] = {"swiftsage": SwiftSagePrompts}
"""The prompt profiles this module holds, by ``controller.sage.prompt`` (``fastslow.build.SAGE_PROMPTS``
holds every one)."""


class Sage:
    """Two-stage LLM planner over any ``ChatModel`` backend."""

    def __init__(
        self,
        model: ChatModel,
        cfg: SageRunConfig,
        *,
        max_actions: int = 5,
        cutoff: float = 75.0,
        prompts: PromptsFactory | None = None,
    ) -> None:
        self.model = model
        self.cfg = cfg
        self.max_actions = max_actions
        self.cutoff = cutoff
        """Lowest rapidfuzz score at which a planned action counts as valid now."""
        factory = prompts or PROMPTS.get(cfg.prompt)
        if factory is None:
            raise UsageError(
                f"controller.sage.prompt: {cfg.prompt}: Sage is handed these prompts "
                "(fastslow.build.SAGE_PROMPTS)"
            )
        self.prompts: SagePrompts = factory(cfg, max_actions)
        """The prompt profile (``controller.sage.prompt``: ``prompts``, else this module's by name),
        chosen here once."""
        self.round_errors: tuple[type[Exception], ...] = (SagePromptError, *self.prompts.round_errors)
        """What ends a round as an error without a plan, besides a model error."""

    def messages(self, request: PlanRequest) -> list[Message]:
        """The planning conversation (public so prompt size can be measured on a real state)."""
        return self.prompts.plan(request)

    def _ground_messages(self, request: PlanRequest, plan_text: str) -> list[Message]:
        return self.prompts.ground(request, plan_text)

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
                constraint=self.plan_constraint(),
            )
            calls, latency, plan_text = 1, done.latency_s, done.text
            tokens.append(done.prompt_tokens)
            ground = request.ground or _own_grounding(request.traj, self.cutoff)
            conversation = self._ground_messages(request, plan_text)
            constraint = self.ground_constraint(request.traj, ground)
            for attempt in range(1 + max(self.cfg.parse_retries, 0)):
                if attempt:
                    # Retry in the same conversation: the model sees its unusable reply and the format.
                    retried = True
                    conversation = [
                        *conversation,
                        Message(role="assistant", content=reply),
                        Message(
                            role="user",
                            content=render("sage_ground_retry.j2", world=request.traj.semantics.prompt_facts),
                        ),
                    ]
                done = call_model(
                    self.model,
                    conversation,
                    sink=sink,
                    role="sage_ground",
                    step=request.step,
                    max_tokens=self.cfg.ground_max_tokens,
                    constraint=constraint,
                )
                calls, latency, reply = calls + 1, latency + done.latency_s, done.text
                tokens.append(done.prompt_tokens)
                parsed = self._parse(reply, request.traj)
                grounded = self._usable(parsed, ground)
                if grounded:
                    break
        except self.round_errors as exc:
            # The round fails here as a whole (the profile's prompt or reader raises): no actions.
            log.info("Sage round at step %d ended without a plan: %s", request.step, exc)
            return SagePlan(
                (), tuple(parsed), calls, retried, f"{type(exc).__name__}: {exc}", latency, plan_text, tokens
            )
        except ModelError as exc:
            # One line per failed call would flood the console while a server is down (every Sage round
            # fails): the event log has each one, the circuit breaker announces the outage once.
            skipped = isinstance(exc, CircuitOpenError)
            log.info(
                "Sage call at step %d %s, Swift acts instead: %s",
                request.step,
                "skipped" if skipped else "failed",
                exc,
            )
            return SagePlan(
                (),
                tuple(parsed),
                calls + (0 if skipped else 1),
                retried,
                f"{type(exc).__name__}: {exc}",
                latency,
                plan_text,
                tokens,
            )
        return SagePlan(tuple(grounded), tuple(parsed), calls, retried, None, latency, plan_text, tokens)

    def plan_constraint(self) -> Constraint | None:
        """The planning call's constraint: None with ``constrain: none``, else the planning reply's
        shape (``parsing.plan_shape``)."""
        if self.cfg.constrain == "none":
            return None
        return plan_shape(self.prompts.plan_label, self.cfg.plan_max_tokens).constraint()

    def ground_constraint(self, traj: Trajectory, ground: Callable[[str], str | None]) -> Constraint | None:
        """The grounding call's constraint in ``traj``'s state: None with ``constrain: none``; the shape
        the profile's reader reads (``format``); that shape with every action one of the valid actions
        ``ground`` admits, written as the reader reads it (``valid``: ``SagePrompts.readable``). A state
        where no valid action can be written so gets the ``format`` shape."""
        cfg = self.cfg
        if cfg.constrain == "none":
            return None
        shape = self.prompts.ground_shape(traj)
        if cfg.constrain == "format":
            return shape.constraint()
        admitted = [a for a in traj.current.valid_actions if ground(a) is not None]
        options = self.prompts.readable(admitted, traj)
        return shape.constraint(options) if options else shape.constraint()

    def _parse(self, reply: str, traj: Trajectory) -> list[ParsedAction]:
        return self.prompts.parse(reply, traj)

    def _usable(
        self, parsed: Sequence[ParsedAction], ground: Callable[[str], str | None]
    ) -> list[ParsedAction]:
        """The parsed actions, as written, if at least one of them is valid now; else [] (retry).

        They stay as Sage wrote them: the controller's resolver grounds each one when the buffer
        reaches it (a plan's later actions only become valid after its earlier ones ran, ``pick up X``
        after ``teleport to`` X's room), and SRM's Gate-1 must judge the text Sage proposed."""
        return list(parsed) if any(ground(item.action) is not None for item in parsed) else []


def _own_grounding(traj: Trajectory, cutoff: float) -> Callable[[str], str | None]:
    grounder = Grounder(traj.current.valid_actions, traj.semantics)

    def ground(text: str) -> str | None:
        hit = grounder.ground(text, cutoff)
        return hit.action if hit else None

    return ground


def task_text(traj: Trajectory) -> str:
    """The task as the prompts state it: the description without its header."""
    text = traj.task_description.strip()
    return text.removeprefix(_HEADER).strip()


class SagePromptError(ValueError):
    """A prompt cannot be built (no demo for the task, or a world without what the profile needs): the
    round ends as an error."""
