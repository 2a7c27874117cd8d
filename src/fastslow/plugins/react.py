"""ReAct as a plug-in agent: the LLM thinks and acts at every step (Yao et al., "ReAct: Synergizing
Reasoning and Acting in Language Models", ICLR 2023).

The single-process agent SwiftSage is measured against (Lin et al., NeurIPS 2023, Table 1: 1,971 LLM
tokens per action against SwiftSage's 757). At each step one model call (role ``act``) answers

    Think: <one line of free text: what to do next and why>
    Act: <one action>

to a prompt of the task, the last ``history_steps`` steps (thought, action, observation) and the current
observation; the action is executed, its observation appended. The variant implemented here:

- **Dense thinking**: a thought precedes every action (the paper's ALFWorld prompts think only at some
  steps; its knowledge tasks at every step). ``think_max_chars: 0`` is its "Act only" ablation.
- **Zero-shot by default**: the paper's prompts carry hand-written few-shot trajectories with thoughts;
  the worlds here have none. ``demo: true`` puts the world's solved train game of the task
  (``World.sage_demos``: TextWorldExpress has one per game, ScienceWorld none) in the prompt, as
  action/observation lines without thoughts.
- **A bounded window**: only the last ``history_steps`` steps are in the prompt (the paper keeps the whole
  trajectory in its context; a 135M model's 4,096-token window does not hold 20 steps of it), each
  observation clipped to ``max_observation_chars``; the current place's look (clipped to
  ``max_look_chars``) is shown with the current observation.
- **Constrained actions** (``constrain: valid``, the embedded model's configs): the reply is generated in
  the two-line shape with the thought bounded to ``think_max_chars`` characters and the action one of the
  state's valid actions (``models.shape.choice_rules``), as the constrained Sage grounds its plans
  (docs/controller.md). ``constrain: none`` sends the unconstrained call, as the paper did: the action
  is read from the ``Act:`` line, mapped onto the valid action it normalizes to when there is one
  (``WorldSemantics.normalize``), else sent as written (the world answers that it does not know it).

A call that fails (``ModelError``, a circuit breaker open) or a reply without a readable action makes the
step a ``fallback`` step (``fallback_action`` when valid, else the first valid action); every step the
model chose is an ``llm`` step (``vocab.StepSource``), so step shares say how often the model acted.
The prompt's words are the world's (``WorldSemantics.prompt_facts``): the agent plays ScienceWorld and
TextWorldExpress alike. Settings: ``agent.settings`` (``Settings``); the model: ``sage.model`` (the run's
LLM, so ReAct and SwiftSage's Sage are the same model on the same server under one harness).

AMM and SRM compose with this agent (docs/agents.md, "AMM and SRM") through the same module hooks
SwiftSage's controller walks (``core.hooks``; the run's ``HookFactory`` from
``fastslow.build.build_modules``), walked by ``plugins._hooks.HookedLoop``:

- **SRM's Gate-1** judges the model's action as the model wrote it (``before_action``, source ``llm``,
  logged as ``gate_decision``): accepted, repaired (the repaired action runs), or dropped. A dropped
  action never runs: the step is a ``fallback`` step (``fallback_action``; in an ambiguity prompt "look
  around", which cancels it) whose reason names Gate-1's reason, and the model's next prompt says its
  action was refused, why, and what ran instead. With ``constrain: none`` (the server configs) Gate-1
  repairs or drops unconstrained text; with ``constrain: valid`` every action is valid and Gate-1's
  focus rules (ScienceWorld: focus budget, task-specific focus rules with ``procedures.enabled``) still
  apply.
- **SRM's stagnation detector and Critic** run after every step (``after_step``); the Critic's actions go
  to a small action buffer (``critic.max_actions``) that runs before the model is asked again, each
  action through Gate-1, as ``critic`` steps with the controller's ``buffer_push`` / ``buffer_pop`` /
  ``buffer_clear`` events. Its budget, cooldown and timing are SRM's own (``critic:``); the window of
  the next prompt shows those steps "chosen by the critic".
- **AMM** writes salient transitions after every step (and retrieves at T2/T3 for the Critic). Its T4
  block (``plan_memories``: retrieval and bounded injection, the audience ``sage``) is a section of the
  prompt after the task: retrieved at the first step and again after a step whose feedback the world
  classes as a failure, the block kept until the next retrieval (a retrieval per step would cost a
  search and its tokens at every step). AMM never acts.
- **Not composed**: AMM's T1 and action prior re-rank Swift's proposal (``on_proposal``), which ReAct
  has none of; SwiftSage's arbitration, Sage and Swift's safety policy and task procedures are the
  controller's own. With no module on, the agent is ReAct alone, event for event.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, ValidationError

from fastslow.agents import Decision, EpisodeContext
from fastslow.controller.resolver import FALLBACK_ACTION
from fastslow.core.hooks import HookFactory, NoHooks
from fastslow.core.step import StepResult
from fastslow.env.world import get_world
from fastslow.errors import ModelError, UsageError
from fastslow.models import ChatModel, Grammar, Message, call_model, make_model
from fastslow.models.breaker import guard
from fastslow.models.cache import cache_responses
from fastslow.models.shape import ITEM_RULE, choice_rules, regex_expression
from fastslow.plugins._hooks import HookedLoop, check_modules, module_models
from fastslow.strict import StrictModel

if TYPE_CHECKING:
    from fastslow.config import RunConfig
    from fastslow.models.cache import ResponseCache
    from fastslow.models.config import ModelConfig

ROLE = "act"
"""The ``model_call`` role of a step's call."""
THINK, ACT = "Think: ", "Act: "
"""The two lines of a reply, as the prompt asks for them and the constraint writes them."""
_ACT_LINE = re.compile(r"^\s*act\s*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
_THINK_LINE = re.compile(r"^\s*think\s*:\s*(.*?)\s*$", re.IGNORECASE | re.MULTILINE)


class Settings(StrictModel):
    """ReAct's settings (``agent.settings`` of a ``kind: react`` config)."""

    history_steps: int = Field(6, ge=0)
    """Steps (thought, action, observation) in the prompt, the most recent ones."""
    think_max_chars: int = Field(120, ge=0)
    """Longest thought in characters (one line); 0 = no thought, the paper's "Act only" ablation."""
    action_max_tokens: int = Field(32, ge=1)
    """Tokens the ``Act:`` line may take; a call may generate ``think_max_chars`` (at least one
    character per token) plus these."""
    max_observation_chars: int = Field(200, ge=20)
    """Each past observation in the prompt is clipped to this many characters."""
    max_look_chars: int = Field(300, ge=0)
    """The current place's look, clipped to this many characters (0 = not shown)."""
    constrain: Literal["valid", "none"] = "valid"
    """valid: the reply is generated in the Think/Act shape, the action one of the state's valid actions
    (the model must run grammars: the embedded model, llama.cpp's server, vLLM with
    ``constraint_format``); none: the unconstrained call, the action read from the reply."""
    demo: bool = False
    """Put the world's solved train game of the task (``World.sage_demos``) in the prompt; off:
    zero-shot. A world without demos for a task refuses the run (ScienceWorld has none)."""
    fallback_action: str = "look around"
    """What a step executes when the model gave no action (a failed call, an unreadable reply), if it
    is valid then; else the first valid action."""


def read_settings(config: RunConfig, model: type[StrictModel]) -> StrictModel:
    """``config.agent.settings`` read by ``model``, a one-line ``UsageError`` naming the key when they
    do not fit it."""
    try:
        return model.model_validate(config.agent.settings)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise UsageError(f"agent.settings.{where}: {err['msg']} ({config.agent.kind})") from None


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(limit - 3, 0)] + "..."


@dataclass(frozen=True)
class Step:
    """One step of the trajectory as ReAct's prompt shows it."""

    thought: str
    action: str
    observation: str
    by: str = ""
    """Who chose the action when it was not the model (the Critic): shown beside it in the window."""


@dataclass(frozen=True)
class Reply:
    """What a reply said: the thought (may be empty) and the action (None: none readable)."""

    thought: str
    action: str | None


def reply_grammar(valid_actions: Sequence[str], think_max_chars: int) -> Grammar:
    """The constrained reply: ``Think: <1..think_max_chars characters but a line break>`` (left out at
    0), a line break, ``Act: <one of valid_actions>``."""
    rules = choice_rules(ITEM_RULE, valid_actions)
    act = f"{_literal(ACT)} {ITEM_RULE}"
    if think_max_chars:
        think = regex_expression(f"[^\\n]{{1,{think_max_chars}}}")
        root = f'{_literal(THINK)} ({think}) "\\n" {act}'
    else:
        root = act
    return Grammar("\n".join([f"root ::= {root}", *rules]))


def _literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def parse_reply(text: str) -> Reply:
    """The thought and the action of a reply: its last ``Act:`` line (case-insensitive), and its first
    ``Think:`` line; a reply without an ``Act:`` line whose single line is not a ``Think:`` line is
    read as the action itself (a model that answers with the action alone)."""
    thought = _THINK_LINE.search(text)
    acts = _ACT_LINE.findall(text)
    action: str | None = acts[-1] if acts else None
    if action is None:
        lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
        if len(lines) == 1 and not _THINK_LINE.match(lines[0]):
            action = lines[0]
    if action is not None:
        action = action.strip().strip("\"'`").rstrip(".").strip() or None
    return Reply(thought.group(1) if thought else "", action)


class ReActAgent:
    """The ReAct agent (module docstring). One instance per worker process plays episode after episode;
    ``reset`` starts one."""

    needs_gold = False
    source_name = "ReAct"
    """How the prompt's system message names the method (Reflexion's actor keeps it)."""

    def __init__(
        self,
        model: ChatModel,
        settings: Settings,
        hooks: HookFactory | None = None,
        *,
        markers: tuple[str, ...] | None = None,
        buffer_size: int = 5,
    ) -> None:
        self.model, self.settings = model, settings
        self.max_tokens = settings.think_max_chars + settings.action_max_tokens
        self._ctx: EpisodeContext | None = None
        self._history: list[Step] = []
        self._pending = Step("", "", "")
        self._before = 0
        """Env steps of earlier trials of this episode (Reflexion): model calls log the episode's step."""
        self.loop = HookedLoop(
            hooks or NoHooks(),
            ground=self._ground,
            strict=lambda text, result: self._ground(text, result, strict=True),
            buffer_size=buffer_size,
            markers=markers,
        )
        """The module hooks (AMM, SRM) this agent walks (``plugins._hooks``; none: ReAct alone)."""
        self._refused = ""
        """The model's last action a ``before_action`` hook refused, and why: its next prompt says so."""

    # -- the Agent seam ----------------------------------------------------------------------------------
    def reset(self, ctx: EpisodeContext, first: StepResult) -> None:
        self._ctx, self._history = ctx, []
        self._before = self._carried_steps()
        self._refused = ""
        self.loop.start(ctx, first, self._before)

    def _carried_steps(self) -> int:
        """Env steps of the episode taken before this reset (Reflexion's earlier trials; ReAct: 0)."""
        return 0

    def act(self, result: StepResult) -> Decision:
        ctx = self._require_ctx()
        buffered = self.loop.from_buffer(result)
        if buffered is not None:  # the Critic's actions run before the model is asked again
            self._pending = Step("", buffered.action, "", by=buffered.source)
            return buffered
        messages = self.messages(result)
        self._refused = ""
        try:
            done = call_model(
                self.model,
                messages,
                sink=ctx.sink,
                role=ROLE,
                step=self._before + result.steps,
                max_tokens=self.max_tokens,
                constraint=self.constraint(result),
            )
        except ModelError as exc:
            return self._fallback(result, f"model call failed: {type(exc).__name__}")
        reply = parse_reply(done.text)
        if reply.action is None:
            return self._fallback(result, "no action in the reply", reply.thought)
        # The action through the before_action hooks (SRM's Gate-1 judges the text as the model wrote it).
        candidate = self.loop.admit(reply.action, "llm", result)
        if candidate.refused_by is not None:
            why = candidate.why or candidate.refused_by
            decision = self._fallback(
                result, f"{candidate.refused_by} dropped {reply.action!r} ({why})", cancel=True
            )
            self._refused = (
                f'Your action "{reply.action}" was refused ({why}); "{decision.action}" ran instead.'
            )
            return decision
        action = candidate.action
        if action is None:
            return self._fallback(result, "no action in the reply", reply.thought)
        self._pending = Step(reply.thought, action, "")
        note = f" [{reply.action!r} repaired]" if action != self._ground(reply.action, result) else ""
        return Decision(action, "llm", _clip(f"{self.source_name}: {reply.thought}", 160) + note)

    def observe(self, decision: Decision, result: StepResult) -> None:
        pending = self._pending
        same = pending.action == decision.action
        self._history.append(
            Step(
                pending.thought if same else "",
                decision.action,
                result.observation,
                pending.by if same else "",
            )
        )
        self._pending = Step("", "", "")
        self.loop.observe(decision, result)

    # -- prompt and reply --------------------------------------------------------------------------------
    def messages(self, result: StepResult) -> list[Message]:
        """The step's conversation: a system message of the world's facts and the reply format, and one
        user message with the task, ``extra_sections`` (Reflexion's reflections), the demo, the window
        of recent steps and the current observation."""
        ctx, s = self._require_ctx(), self.settings
        facts = ctx.semantics.prompt_facts
        reply = f"{THINK}<your thought>\n{ACT}<one action>" if s.think_max_chars else f"{ACT}<one action>"
        system = "\n".join(
            [
                f"You are an agent that {facts.agent}. "
                f"You solve the task one step at a time ({self.source_name}).",
                "At each step you think about what to do next, then do one action. "
                "Answer in exactly this form:",
                reply,
                f"Actions are short commands in these forms (OBJ is an object, LOC {facts.places_word}):",
                *facts.action_forms,
                *(["Rules: " + " ".join(facts.rules)] if facts.rules else []),
            ]
        )
        parts = [f"Task: {task_line(result.task_description)}"]
        parts += self.extra_sections()
        memories = self.loop.memories().strip()
        if memories:  # AMM's T4 block (plugins._hooks: retrieved at the first step and after failures)
            parts.append(memories)
        if s.demo:
            parts.append(self._demo_section(ctx))
        recent = self._history[-s.history_steps :] if s.history_steps else []
        if recent:
            first = len(self._history) - len(recent) + 1
            lines = [f"Your last {len(recent)} steps (from step {first}):"]
            for step in recent:
                if step.thought:
                    lines.append(f"{THINK}{step.thought}")
                by = f" (chosen by the {step.by})" if step.by else ""
                lines.append(f"{ACT}{step.action}{by}")
                lines.append(f"Observation: {_clip(step.observation, s.max_observation_chars)}")
            parts.append("\n".join(lines))
        if self._refused:  # a hook (SRM's Gate-1) refused the model's last action; a fallback ran
            parts.append(self._refused)
        now = [f"Observation: {_clip(result.observation, s.max_observation_chars)}"]
        if s.max_look_chars and result.look.strip() and result.look.strip() != result.observation.strip():
            now.append(f"Where you are: {_clip(result.look, s.max_look_chars)}")
        parts.append("\n".join([f"Now (step {len(self._history) + 1}):", *now]))
        parts.append("What is your next step?")
        return [Message(role="system", content=system), Message(role="user", content="\n\n".join(parts))]

    def extra_sections(self) -> list[str]:
        """Prompt sections after the task line (none for ReAct; Reflexion's reflections)."""
        return []

    def constraint(self, result: StepResult) -> Grammar | None:
        """The step's constraint: None with ``constrain: none`` or no valid action; else the reply's
        shape with the action one of ``result.valid_actions`` (``reply_grammar``)."""
        if self.settings.constrain == "none" or not any(result.valid_actions):
            return None
        return reply_grammar(result.valid_actions, self.settings.think_max_chars)

    def _ground(self, action: str | None, result: StepResult, strict: bool = False) -> str | None:
        """The action to execute: a valid action as written, or the one it normalizes to; with
        ``constrain: none`` any other text as written (the world answers it) unless ``strict`` (a
        buffered action); None for no action."""
        if action is None:
            return None
        if action in result.valid_actions:
            return action
        norm = self._require_ctx().semantics.normalize
        wanted = norm(action)
        for valid in result.valid_actions:
            if norm(valid) == wanted:
                return valid
        return action if self.settings.constrain == "none" and not strict else None

    def _fallback(self, result: StepResult, why: str, thought: str = "", cancel: bool = False) -> Decision:
        """A ``fallback`` step: ``fallback_action`` when valid, else the first valid action. ``cancel``
        (a refused action): in a world's ambiguity prompt "look around", which cancels the request
        (an option number would complete the refused action)."""
        valid = result.valid_actions
        action = self.settings.fallback_action
        if cancel and self.loop.view(result).ambiguous:
            action = FALLBACK_ACTION
        elif action not in valid and valid:
            action = valid[0]
        self._pending = Step(thought, action, "")
        return Decision(action, "fallback", f"{self.source_name}: {why}")

    def _demo_section(self, ctx: EpisodeContext) -> str:
        demos = get_world(ctx.semantics.name).sage_demos(ctx.task.task_id)
        if not demos:  # check() refuses such a run before it starts
            raise UsageError(
                f"agent.settings.demo: no demo for task {ctx.task.task_id} of {ctx.semantics.name}"
            )
        demo = demos[0]
        return "\n".join([f"A solved example of this kind of task ({demo.task}):", *demo.lines])

    def _require_ctx(self) -> EpisodeContext:
        if self._ctx is None:
            raise UsageError(f"{type(self).__name__}.act before reset")
        return self._ctx


_HEADER = re.compile(r"^\s*task description:\s*", re.IGNORECASE)


def task_line(description: str) -> str:
    """The task description on one line, without a leading "Task Description:" header (the prompt
    writes its own "Task:")."""
    return _HEADER.sub("", " ".join(description.split()))


# -- the plug-in interface (fastslow.plugins) --------------------------------------------------------------


def model_of(config: RunConfig, response_cache: ResponseCache | None, role: str = ROLE) -> ChatModel:
    """The run's LLM (``sage.model``) behind its circuit breaker and the run's response cache."""
    cfg = config.sage.model
    return cache_responses(guard(make_model(cfg), role, cfg), cfg, response_cache)


def build(config: RunConfig, response_cache: ResponseCache | None, hooks: HookFactory) -> ReActAgent:
    """The ReAct agent of ``config`` (``agent.settings``: ``Settings``; the model: ``sage.model``) walking
    the run's module ``hooks`` (``fastslow.build.build_modules``)."""
    settings = read_settings(config, Settings)
    assert isinstance(settings, Settings)
    return ReActAgent(model_of(config, response_cache), settings, hooks, **loop_settings(config))


def loop_settings(config: RunConfig) -> dict[str, Any]:
    """The hooks' loop settings of a config: the failure markers, the buffer's size (the Critic's
    ``critic.max_actions``)."""
    return {"markers": tuple(config.env.failure_markers), "buffer_size": config.critic.max_actions}


def models(config: RunConfig) -> dict[str, ModelConfig]:
    """The models ReAct calls, by role: its own, and the LLM Critic's when SRM calls one."""
    return {ROLE: config.sage.model, **module_models(config)}


def check(config: RunConfig) -> None:
    """Every refusal before a run writes anything: settings that do not fit ``Settings``, ``demo`` in a
    world without demos, a model that cannot answer, or cannot run the grammar of ``constrain: valid``."""
    settings = read_settings(config, Settings)
    assert isinstance(settings, Settings)
    check_plugin(config, demo=settings.demo, constrained=settings.constrain == "valid")


def check_plugin(config: RunConfig, *, demo: bool, constrained: bool) -> None:
    """The world and model checks of a ReAct-based agent (Reflexion's too)."""
    world = get_world(config.env.world)
    if demo:
        lacking = [t.name for t in world.tasks() if not world.sage_demos(t.task_id)]
        if lacking:
            raise UsageError(
                f"agent.settings.demo: env.world={world.name} has no demo for {', '.join(lacking[:3])}"
                f"{' ...' if len(lacking) > 3 else ''} (leave demo off there: zero-shot)"
            )
    cfg = config.sage.model
    if constrained and cfg.kind == "openai" and cfg.constraint_format in ("none", "openai"):
        raise UsageError(
            f"agent.settings.constrain valid needs grammars, which sage.model.constraint_format "
            f"{cfg.constraint_format} cannot send: set it to llama_cpp, vllm or vllm_guided, "
            "or agent.settings.constrain to none"
        )
    model = make_model(cfg)
    model.check_available()
    if constrained:
        model.check_constraints()
    check_modules(config, [cfg])
