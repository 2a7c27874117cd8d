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

``controller.sage.prompt: authors`` (the paper configurations) builds both prompts as the paper's
authors do instead (``sage_authors``: content; ``prompts/sage_authors_*.j2``: our wording): one user
message per call, demo trajectories of the task (``demos``), the grounding reply read in their FUNC(args)
form from its first lines (``parsing.parse_authors``), no retry by default. Their planning prompt falls
back to a "lite" history when it is long, and a prompt over ``prompt_budget_tokens`` is clipped (history,
then demos) rather than sent to a model whose context it would not fit.

``controller.sage.constrain`` constrains both calls while the model generates: ``format`` asks for the
reply shapes the readers read (``parsing.plan_shape``, ``authors_shape``, ``numbered_shape``),
``valid`` also makes every grounded action one of the state's valid actions the controller's grounding
admits. ``none`` (the paper configurations) sends exactly the unconstrained calls.
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
    PlanFormatError,
    authors_shape,
    numbered_readable,
    numbered_shape,
    parse_actions,
    parse_authors,
    plan_shape,
)
from fastslow.core.authors import AuthorsProfile, Demo, GroundEntry, HistoryGrammarError, PlanEntry
from fastslow.core.trajectory import Trajectory, Turn
from fastslow.env.world import get_world
from fastslow.errors import ModelError
from fastslow.events import EventSink
from fastslow.models import (
    CHARS_PER_TOKEN,
    ChatModel,
    CircuitOpenError,
    Constraint,
    Message,
    call_model,
    estimate_tokens,
)
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
    line so the system prompt and task stay a stable cached prefix (the authors' profile: before the
    prompt, as theirs); empty in the baseline."""
    instinct: str | None = None
    """The authors' profile: Swift's top prediction when it is a valid action in this state (after their
    rewrites), None when it is not or Swift was not asked (a forcing rule); their "instinct" line."""


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
            task=_task(traj),
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
        system = render("sage_system.j2", world=traj.semantics.prompt_facts)
        return [Message(role="system", content=system), Message(role="user", content=user)]

    def parse(self, reply: str, traj: Trajectory) -> list[ParsedAction]:
        return parse_actions(reply, traj.semantics)

    def ground_shape(self, traj: Trajectory) -> ListShape:
        return numbered_shape(self.max_actions, traj.semantics)

    def readable(self, admitted: Sequence[str], traj: Trajectory) -> list[str]:
        return numbered_readable(admitted, traj.semantics)


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
        self.prompts: SagePrompts = PROMPTS[cfg.prompt](cfg, max_actions)
        """The prompt profile (``controller.sage.prompt``), chosen here once."""

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
        except (HistoryGrammarError, PlanFormatError, SagePromptError) as exc:
            # The authors' round fails here as a whole (their prompt or reader raises): no actions.
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
        ``ground`` admits, written as the reader reads it (``valid``: their FUNC form for the authors'
        profile). A state where no valid action can be written so gets the ``format`` shape."""
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


class AuthorsPrompts:
    """The paper authors' prompts (``prompt: authors``; docs/fidelity.md P1-P11): one user message per
    call with demo trajectories of the task, their cleaned history ("lite" when long), the looks of
    other visited rooms, what was focused on, Swift's valid top prediction as "instinct", the failure
    messages since Sage last ran and the task's focus whitelist; a grounding reply in FUNC(args) form of
    which the first ``parse_lines`` lines are read (``parsing.parse_authors``). A prompt over
    ``prompt_budget_tokens`` is clipped (history, then demos)."""

    plan_label = PLAN_LABELS["authors"]
    authors_only = True
    """It reads the world's ``AuthorsProfile`` (configuration checks refuse it in a world without one)."""

    def __init__(self, cfg: SageRunConfig, max_actions: int) -> None:
        self.cfg = cfg

    def plan(self, request: PlanRequest) -> list[Message]:
        return [Message(role="user", content=self._authors_plan(request))]

    def ground(self, request: PlanRequest, plan_text: str) -> list[Message]:
        return [Message(role="user", content=self._authors_ground(request, plan_text))]

    def parse(self, reply: str, traj: Trajectory) -> list[ParsedAction]:
        return parse_authors(reply, traj.semantics, self.cfg.parse_lines)

    def ground_shape(self, traj: Trajectory) -> ListShape:
        return authors_shape(self.cfg.parse_lines, _profile(traj))

    def readable(self, admitted: Sequence[str], traj: Trajectory) -> list[str]:
        return list(_profile(traj).func_forms(admitted).values())

    def _demos(self, traj: Trajectory) -> tuple[Demo, ...]:
        demos = _profile(traj).demos(traj.task_id)
        if not demos:
            raise SagePromptError(f"no demo trajectory for task {traj.task_id} (fastslow data sage-demos)")
        return demos

    def _authors_plan(self, request: PlanRequest) -> str:
        """The authors' planning prompt: full history, or lite when long (``lite_above_tokens``)."""
        cfg = self.cfg
        lite = cfg.lite_above_tokens == 0
        text = self._plan_text(request, lite, None)
        if not lite and estimate_tokens(text) >= cfg.lite_above_tokens:
            lite = True
            text = self._plan_text(request, lite, None)
        if not cfg.prompt_budget_tokens or estimate_tokens(text) <= cfg.prompt_budget_tokens:
            return text
        return self._fit_plan(request, lite)

    def _plan_text(self, request: PlanRequest, lite: bool, clip: tuple[int, int] | None) -> str:
        """``clip``: (history entries, demo lines) to leave out from the oldest / the last."""
        traj, cfg = request.traj, self.cfg
        content = _profile(traj)
        demo = self._demos(traj)[0]
        history = _plan_lines(content.plan_history(traj, lite))
        if lite:
            history = history[-cfg.history_turns :] if cfg.history_turns else []
        demo_lines = _plan_demo_lines(demo, content)
        if clip is not None:
            history = history[clip[0] :]
            demo_lines = demo_lines[: max(len(demo_lines) - clip[1], 0)]
        here = traj.places[-1] if traj.places else ""
        other_looks = []
        if not lite and len(traj.place_looks) >= 2:
            other_looks = [
                (room, ", ".join(content.clean_look(look, lite=True)))
                for room, look in traj.place_looks.items()
                if room != here
            ]
        return render(
            "sage_authors_plan.j2",
            memory_block="" if lite else request.memory_block.strip(),
            demo={"task": demo.task, "lines": demo_lines},
            task=_task(traj),
            history=history,
            other_looks=other_looks,
            look=_look(traj.current.look, content),
            inventory=_inventory(traj.current.inventory, plan=True),
            focused=content.focused(traj),
            instinct=request.instinct,
            failures=content.failure_messages(request.failures, traj),
            whitelist=content.focus_whitelist(_task(traj)),
        )

    def _fit_plan(self, request: PlanRequest, lite: bool) -> str:
        budget = self.cfg.prompt_budget_tokens
        content = _profile(request.traj)
        entries = len(content.plan_history(request.traj, lite))
        lines = len(_plan_demo_lines(self._demos(request.traj)[0], content))
        text = ""
        for clip in _clips(entries, lines):
            text = self._plan_text(request, lite, clip)
            if estimate_tokens(text) <= budget:
                break
        return text

    def _authors_ground(self, request: PlanRequest, plan_text: str) -> str:
        cfg = self.cfg
        demos = self._demos(request.traj)[:2]
        history = _profile(request.traj).ground_history(
            request.traj, demos[0].lines, cfg.ground_history_turns, cfg.strict_history
        )
        advice = plan_text.strip().replace("Question", "Answer").replace("Answer", "Advice")
        text = self._ground_text(request, demos, _ground_lines(history), advice)
        budget = cfg.prompt_budget_tokens
        if not budget or estimate_tokens(text) <= budget:
            return text
        # Clip, in turn: the oldest history entries, the second demo, the end of the advice, demo lines.
        lines = _ground_lines(history)
        while lines and estimate_tokens(text) > budget:
            lines = lines[1:]
            text = self._ground_text(request, demos, lines, advice)
        if len(demos) > 1 and estimate_tokens(text) > budget:
            demos = demos[:1]
            text = self._ground_text(request, demos, lines, advice)
        over = int((estimate_tokens(text) - budget) * CHARS_PER_TOKEN)
        if over > 0:
            advice = advice[: max(len(advice) - over, 0)]
            text = self._ground_text(request, demos, lines, advice)
        first = demos[0]
        while first.lines and estimate_tokens(text) > budget:
            first = Demo(first.task_id, first.variation, first.task, first.lines[:-1])
            text = self._ground_text(request, (first,), lines, advice)
        return text

    def _ground_text(
        self, request: PlanRequest, demos: Sequence[Demo], history: Sequence[str], advice: str
    ) -> str:
        traj = request.traj
        content = _profile(traj)
        return render(
            "sage_authors_ground.j2",
            demos=[{"task": d.task, "lines": list(d.lines)} for d in demos],
            task=_task(traj),
            k=self.cfg.ground_history_turns,
            history=list(history),
            focused=content.focused(traj),
            failures=content.failure_messages(request.failures, traj),
            advice=advice,
            look=_look(traj.current.look, content),
            inventory=_inventory(traj.current.inventory, plan=False),
            action_types=content.action_types(demos[0].lines),
            whitelist=content.focus_whitelist(_task(traj)),
        )


PROMPTS: dict[str, type[SwiftSagePrompts] | type[AuthorsPrompts]] = {
    "swiftsage": SwiftSagePrompts,
    "authors": AuthorsPrompts,
}
"""The prompt profiles by ``controller.sage.prompt``."""


def _own_grounding(traj: Trajectory, cutoff: float) -> Callable[[str], str | None]:
    grounder = Grounder(traj.current.valid_actions, traj.semantics)

    def ground(text: str) -> str | None:
        hit = grounder.ground(text, cutoff)
        return hit.action if hit else None

    return ground


def _task(traj: Trajectory) -> str:
    text = traj.task_description.strip()
    return text.removeprefix(_HEADER).strip()


class SagePromptError(ValueError):
    """The authors' prompt cannot be built (no demo for the task, or a world without the authors'
    profile): the round ends as an error."""


def _profile(traj: Trajectory) -> AuthorsProfile:
    """The episode's world's ``AuthorsProfile`` (``WorldSemantics.authors``); ``SagePromptError`` in a
    world without one (configuration checks refuse the authors' prompts there before a run starts)."""
    profile = traj.semantics.authors
    if profile is None:
        raise SagePromptError(f"the authors' prompts do not exist for {traj.semantics.name}")
    return profile


def _look(look: str, content: AuthorsProfile) -> str:
    return "\n - ".join(content.clean_look(look, lite=False))


def _inventory(inventory: str, *, plan: bool) -> str:
    lines = [" ".join(line.split()) for line in inventory.strip().splitlines() if line.strip()]
    text = "\n".join(lines)
    # The authors' planning prompt speaks as the student ("My inventory"); a no-op on ScienceWorld's
    # "In your inventory, you see:", kept so other texts read the same.
    return text.replace("Your ", "My ") if plan else text


def _plan_demo_lines(demo: Demo, content: AuthorsProfile) -> list[str]:
    """The planning prompt's demo: action lines only, their action written as the world's text (the
    authors convert FUNC back to text here and leave out "Repeat" lines and what does not convert)."""
    out: list[str] = []
    for line in demo.lines:
        if "Action: " not in line or " -->" not in line:
            continue
        start = line.index("Action: ") + len("Action: ")
        end = line.index(" -->")
        action = content.from_func(line[start:end])
        if action is not None:
            out.append(line[:start] + action + line[end:])
    return out


def _plan_lines(entries: Sequence[PlanEntry]) -> list[str]:
    """Numbered history lines of the planning prompt (numbers before the lite cut, as the authors')."""
    lines = []
    for number, entry in enumerate(entries, 1):
        if entry.repeats:
            text = f"(the step above was repeated {entry.repeats} more times)"
        elif entry.moved:
            text = entry.observation
        elif entry.action:
            text = f"In the {entry.room}: {entry.action} --> {entry.observation}"
        else:
            text = f"In the {entry.room}: {entry.observation}"
        lines.append(f"{number}. {' '.join(text.split())}")
    return lines


def _ground_lines(entries: Sequence[GroundEntry]) -> list[str]:
    out = []
    for e in entries:
        if e.repeats:
            out.append(f"(the action above was repeated {e.repeats} more times)")
        else:
            out.append(f"- (in {e.room}) Action: {e.func} --> {' '.join(e.observation.split())}")
    return out


def _clips(entries: int, demo_lines: int) -> list[tuple[int, int]]:
    """Ever larger cuts: history entries from the oldest (in tenths), then demo lines from the last."""
    steps = [(min(entries, round(entries * k / 10)), 0) for k in range(1, 11)]
    steps += [(entries, min(demo_lines, round(demo_lines * k / 10))) for k in range(1, 11)]
    return steps
