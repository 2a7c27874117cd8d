"""The module hooks in a single-process agent's loop: AMM and SRM composed with ReAct and Reflexion
through the same ``core.hooks.LoopHook`` objects SwiftSage's controller walks (docs/agents.md, "AMM
and SRM"). The loop walks every hook the run's ``HookFactory`` made, in order, and never asks which
modules are on; with none it changes nothing the agent does.

One ``HookedLoop`` per agent; ``start`` at each episode and at each Reflexion trial (a trial is an env
reset: a new ``core.trajectory.Trajectory`` and new hooks from ``factory.episode``, with the episode's
memory key). What it gives the agent:

- ``from_buffer``: the next action of the action buffer that may run now (SRM's Critic fills it through
  ``after_step`` / ``on_buffer_empty``: ``BufferActions``), labelled with its source (``critic``) and
  logged with the controller's ``buffer_push`` / ``buffer_pop`` / ``buffer_clear`` events; the agent
  runs it before asking its model again. Each passes the ``before_action`` hooks (Gate-1) first; one
  they refuse is skipped, as the controller's buffer skips it.
- ``admit``: the model's action through the ``before_action`` hooks (``controller.resolver.Resolver``
  with the agent's own grounding): Gate-1 accepts, repairs or drops it with its usual ``gate_decision``
  event (source ``llm``).
- ``memories``: the hooks' planning block (``plan_memories``: AMM's T4 retrieval and its bounded
  injection, audience ``sage``), asked at a trial's first step and again after a step whose feedback
  the world's semantics class as a failure (``controller.arbiter.is_failure``, the run's
  ``env.failure_markers``); the block stays the same until the next retrieval. Each retrieval costs a
  search and prompt tokens, so not every step.
- ``observe``: the step recorded in the trajectory, then ``after_step`` (AMM's salience-gated writes and
  T2/T3; SRM's stagnation detector and Critic) and, at the trial's end, ``on_episode_end``.

Steps: the hooks see a trial's states numbered in the episode's env steps (the ``env_step`` events'
numbering across trials), so their events, ``fastslow attribute``'s intervention steps and the viewer
agree; a later trial's trajectory starts at the steps the earlier ones took.

What does not compose: ``on_proposal`` (AMM's T1 and its action prior re-rank Swift's proposal; these
agents have no proposal, so the hook is never called), and whatever is SwiftSage's own (Sage, the
arbitration, Swift's safety policy and task procedures: ``fastslow.build.build_swiftsage``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from fastslow.agents import Decision, EpisodeContext
from fastslow.controller.arbiter import is_failure
from fastslow.controller.buffer import ActionBuffer, handed
from fastslow.controller.resolver import IndexedView, Resolver
from fastslow.core.hooks import BufferActions, Candidate, HookFactory, LoopHook, StepDone
from fastslow.core.step import StepResult
from fastslow.core.trajectory import Trajectory
from fastslow.errors import UsageError
from fastslow.events import BufferClear, BufferPop, BufferPush, EventSink
from fastslow.models import make_model
from fastslow.vocab import StepSource

if TYPE_CHECKING:
    from fastslow.config import RunConfig
    from fastslow.models.config import ModelConfig

Ground = Callable[[str, StepResult], str | None]
"""An agent's grounding: the action ``text`` becomes in the state ``result``, or None."""


class HookedLoop:
    """The module hooks of one agent, episode after episode (module docstring)."""

    def __init__(
        self,
        factory: HookFactory,
        *,
        ground: Ground,
        strict: Ground,
        buffer_size: int,
        markers: tuple[str, ...] | None = None,
    ) -> None:
        self.factory = factory
        self.ground, self.strict = ground, strict
        """``ground``: the agent's grounding of its model's text; ``strict``: of a buffered action (a
        valid action, or None: a Critic action no longer valid is skipped, never sent as written)."""
        self.buffer_size = buffer_size
        self.markers = markers
        """The run's failure markers (``env.failure_markers``): a failure feedback asks for memories."""
        self.hooks: list[LoopHook] = []
        self.sink: EventSink | None = None
        self.traj: Trajectory | None = None
        self.before = 0
        """Env steps of the episode's earlier trials: the hooks' states are numbered on from them."""
        self.buffer = ActionBuffer(buffer_size)
        self._llm = Resolver(0, [], fallback_when_unresolved=True)
        self._buffered = Resolver(0, [], fallback_when_unresolved=True)
        self._due = True
        self._block = ""
        self._finished = False

    # -- one trial ---------------------------------------------------------------------------------------
    def start(self, ctx: EpisodeContext, first: StepResult, before: int = 0) -> None:
        """A new trial (an episode's first, or a Reflexion trial after an env reset): a new trajectory
        and new hooks (``factory.episode`` with the episode's memory key, so AMM's records of every
        trial are the episode's and a later trial retrieves an earlier one's), an empty buffer."""
        self.before, self.sink = before, ctx.sink
        first = self._number(first)
        self.traj = Trajectory(
            ctx.task.task_id, ctx.task.name, ctx.variation, first.task_description, first, ctx.semantics
        )
        self.hooks = self.factory.episode(ctx.memory_key, ctx.sink, first)
        ground, strict = self.ground, self.strict
        self._llm = Resolver(
            0, list(self.hooks), fallback_when_unresolved=True, grounding=lambda t, v, _: ground(t, v.result)
        )
        self._buffered = Resolver(
            0, list(self.hooks), fallback_when_unresolved=True, grounding=lambda t, v, _: strict(t, v.result)
        )
        self.buffer = ActionBuffer(self.buffer_size)
        self._due, self._block, self._finished = True, "", False

    def _number(self, result: StepResult) -> StepResult:
        """``result`` numbered in the episode's env steps (a later trial's on from the earlier ones)."""
        return replace(result, steps=self.before + result.steps) if self.before else result

    def view(self, result: StepResult) -> IndexedView:
        """The state ``result`` as the hooks judge candidates in it."""
        return IndexedView(self._number(result), self._traj())

    def _traj(self) -> Trajectory:
        if self.traj is None:
            raise UsageError("HookedLoop used before start")
        return self.traj

    # -- before the model --------------------------------------------------------------------------------
    def from_buffer(self, result: StepResult) -> Decision | None:
        """The next buffered action that may run now (None: the model acts). An empty buffer, or one
        whose every head was refused, asks the ``on_buffer_empty`` hooks first (SRM's Critic answers a
        report that waited for it)."""
        if not self.hooks:
            return None  # nothing can fill the buffer
        view = self.view(result)
        dry = True
        if self.buffer:
            decision, dry = self._pop(view)
            if decision is not None:
                return decision
        if dry and self._push([hook.on_buffer_empty(self._traj()) for hook in self.hooks], view.result.steps):
            return self._pop(view)[0]
        return None

    def memories(self) -> str:
        """The hooks' memory block for the model's prompt: retrieved when due (a trial's first step, a
        failure feedback since), else the last one ("" without AMM, or when nothing was found)."""
        if self._due:
            traj = self._traj()
            self._block = "".join(hook.plan_memories(traj) for hook in self.hooks)
            self._due = False
        return self._block

    def admit(self, text: str, source: StepSource, result: StepResult) -> Candidate:
        """The model's ``text`` grounded by the agent and through the ``before_action`` hooks
        (``action`` None: refused, ``refused_by`` and ``why`` say by whom and why; or not groundable)."""
        return self._llm.candidate(text, source, self.view(result))

    # -- after the step ----------------------------------------------------------------------------------
    def observe(self, decision: Decision, result: StepResult) -> None:
        """Record the step, walk ``after_step`` (what the hooks hand over joins the buffer) and, at the
        trial's end, ``on_episode_end``."""
        traj = self._traj()
        numbered = self._number(result)
        prev = traj.current
        traj.record(decision.action, decision.source, numbered)
        done = StepDone(traj, decision.action, decision.source, prev, numbered, buffer_empty=not self.buffer)
        self._push([hook.after_step(done) for hook in self.hooks], numbered.steps)
        if is_failure(traj.semantics, result.observation, self.markers):
            self._due = True
        if result.done:
            self.finish()

    def finish(self) -> None:
        """The trial ended: ``on_episode_end`` once (SRM settles its Critic's last call)."""
        if not self._finished and self.traj is not None:
            self._finished = True
            for hook in self.hooks:
                hook.on_episode_end(self.traj)

    # -- the buffer (the controller's events, so metrics and the viewer count it) ---------------------------
    def _pop(self, view: IndexedView) -> tuple[Decision | None, bool]:
        popped = self.buffer.pop_admitted(lambda item: self._buffered.resolve(item.action, item.source, view))
        self._emit(
            BufferPop(
                step=view.result.steps,
                action=popped.item.action if popped.item else None,
                skipped=[b.action for b in popped.skipped],
                deferred=[],
                remaining=len(self.buffer),
            )
        )
        if popped.item is None:
            return None, not self.buffer
        return Decision(popped.item.action, popped.item.source, popped.item.reason), False

    def _push(self, batches: Sequence[BufferActions], step: int) -> bool:
        given = handed(batches, step)
        if given is None:
            return False
        source = given.source
        if given.replace and self.buffer:
            left = [b.action for b in self.buffer.clear()]
            self._emit(BufferClear(step=step, reason=f"{source} actions replace the buffer", dropped=left))
        dropped = self.buffer.push(given.items)
        self._emit(
            BufferPush(
                step=step,
                source=source,
                actions=[b.action for b in self.buffer.items],
                dropped=[b.action for b in dropped],
            )
        )
        return True

    def _emit(self, event: BufferPop | BufferPush | BufferClear) -> None:
        if self.sink is not None:
            self.sink.emit(event)


# -- the plug-in interface's part for the modules ------------------------------------------------------


def module_models(config: RunConfig) -> dict[str, ModelConfig]:
    """The models the modules call, by role: SRM's LLM Critic (``critic.model``), as
    ``fastslow.build.required_models`` names it for SwiftSage."""
    srm = config.srm
    if srm.enabled and srm.stagnation.enabled and srm.critic.enabled and config.critic.kind == "llm":
        return {"critic": config.critic.model}
    return {}


def check_modules(config: RunConfig, checked: Sequence[ModelConfig] = ()) -> None:
    """The modules' refusals before a run writes anything: the LLM Critic's model answers (unless it is
    one of ``checked``) and runs the grammar ``critic.constrain`` asks for."""
    for cfg in module_models(config).values():
        constrained = config.critic.constrain != "none"
        if constrained and cfg.kind == "openai" and cfg.constraint_format in ("none", "openai"):
            raise UsageError(
                f"critic.constrain {config.critic.constrain} needs grammars, which critic.model."
                f"constraint_format {cfg.constraint_format} cannot send: set it to llama_cpp, vllm or "
                "vllm_guided, or critic.constrain to none"
            )
        model = make_model(cfg)
        if cfg not in checked:
            model.check_available()
        if constrained:
            model.check_constraints()
