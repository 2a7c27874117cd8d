"""Reflexion as a plug-in agent: ReAct plus verbal self-reflection carried across trials (Shinn et al.,
"Reflexion: Language Agents with Verbal Reinforcement Learning", NeurIPS 2023).

The second single-process agent SwiftSage is measured against (Lin et al., NeurIPS 2023, Table 1: 2,983
LLM tokens per action). The variant implemented here is the paper's decision-making one (its ALFWorld
setup):

- **Actor**: the ReAct agent of ``fastslow.plugins.react`` (same prompt, constraint and window), its
  prompt carrying the reflections kept so far after the task line.
- **Evaluator**: the environment's own outcome, a binary one: a trial that did not complete the task
  (it failed, reached the step limit ``env.step_limit``, which counts each trial's steps, or was
  stopped) is a failed trial. The paper's ALFWorld evaluator adds a heuristic (the same action and
  observation three times, more than 30 actions); here the step limit is the budget.
- **Self-reflection**: after a failed trial one model call (role ``reflect``) reads the task, the trial's
  last ``reflect_history_steps`` steps and how it ended, and writes a short lesson and plan (one line,
  at most ``reflection_max_chars`` characters; constrained to that shape with ``constrain: valid``).
- **Memory**: the last ``max_reflections`` reflections (3, as the paper's ALFWorld runs) are in the
  actor's prompt of the following trials of the same episode; up to ``max_trials`` trials per episode.

Trials and the harness: the agent is an ``agents.base.Trials``, so the runner resets the environment to
the same task and variation after a failed trial and plays the next one in the same episode log: a
``trial_end`` event after each trial, ``env_step`` events numbered on across trials. The episode is
scored by its last trial in both conventions (``eval.metrics.summarize_log``): as the agent stops at the
first success, its success rate is the paper's "success after N trials"; every trial's steps and model
calls count in the cost metrics (tokens per action, calls and seconds per episode), as they are spent.

AMM and SRM compose with this agent as with ReAct (``fastslow.plugins.react``; docs/agents.md). Each
trial is an env reset: it gets a new trajectory and new module hooks (a new stagnation detector, Critic
budget and Gate-1 focus count; AMM's T4 block asked again at its first step), under the episode's memory
key. AMM writes each record when its step happens, so a later trial retrieves what an earlier one
wrote, beside the reflections: both carry lessons across trials. The hooks see every trial's states
numbered in the episode's env steps, as the ``env_step`` events are (forks and the viewer agree).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from fastslow.agents import EpisodeContext
from fastslow.core.hooks import HookFactory
from fastslow.core.step import StepResult
from fastslow.errors import ModelError
from fastslow.events import EndState
from fastslow.models import ChatModel, Grammar, Message, call_model
from fastslow.models.shape import regex_expression
from fastslow.plugins import react
from fastslow.plugins._hooks import module_models
from fastslow.plugins.react import (
    ReActAgent,
    check_plugin,
    loop_settings,
    model_of,
    read_settings,
    task_line,
)

if TYPE_CHECKING:
    from fastslow.config import RunConfig
    from fastslow.models.cache import ResponseCache
    from fastslow.models.config import ModelConfig

ROLE = "reflect"
"""The ``model_call`` role of a self-reflection."""


class Settings(react.Settings):
    """Reflexion's settings (``agent.settings`` of a ``kind: reflexion`` config): the actor's (ReAct's)
    and these."""

    max_trials: int = Field(3, ge=1)
    """Trials per episode at most (1 = ReAct with no reflection)."""
    max_reflections: int = Field(3, ge=1)
    """Reflections kept in the actor's prompt, the most recent ones (3 in the paper's ALFWorld runs)."""
    reflection_max_chars: int = Field(200, ge=20)
    """Longest reflection in characters (one line); the call may generate as many tokens."""
    reflect_history_steps: int = Field(12, ge=1)
    """Steps of the failed trial (its last ones) the reflection prompt shows."""


class ReflexionAgent(ReActAgent):
    """The Reflexion agent (module docstring): ReAct's steps, reflections between trials."""

    source_name = "Reflexion"

    def __init__(
        self, model: ChatModel, settings: Settings, hooks: HookFactory | None = None, **loop: Any
    ) -> None:
        super().__init__(model, settings, hooks, **loop)
        self.reflexion = settings
        self.reflections: list[str] = []
        """Reflections of this episode's failed trials, oldest first (the last ``max_reflections`` are
        in the prompt)."""
        self.trial = 1
        self._continuing = False

    def reset(self, ctx: EpisodeContext, first: StepResult) -> None:
        continuing = self._continuing
        super().reset(ctx, first)  # a new trajectory and new module hooks for the trial
        if continuing:  # the next trial of the same episode: keep the reflections
            self.trial += 1
        else:
            self.reflections, self.trial = [], 1
        self._continuing = False

    def _carried_steps(self) -> int:
        return self._before if self._continuing else 0

    def next_trial(self, end: EndState, result: StepResult) -> bool:
        """After a trial: False when it completed the task, ended in an error or was the last one; else
        reflect on it (one model call; a failed call adds no reflection) and play another."""
        if end in (EndState.SUCCESS, EndState.ERROR) or self.trial >= self.reflexion.max_trials:
            return False
        ctx = self._require_ctx()
        s = self.reflexion
        constraint = None
        if s.constrain == "valid":
            line = "[^\\n]{1," + str(s.reflection_max_chars) + "}"
            constraint = Grammar(f"root ::= {regex_expression(line)}")
        try:
            done = call_model(
                self.model,
                self.reflection_messages(end, result),
                sink=ctx.sink,
                role=ROLE,
                step=self._before + result.steps,
                max_tokens=s.reflection_max_chars,
                constraint=constraint,
            )
            text = " ".join(done.text.split())
            if text:
                self.reflections.append(text)
        except ModelError:
            pass  # the event log has the failed call; the next trial plays with the reflections it has
        self._before += result.steps
        self._continuing = True
        return True

    def extra_sections(self) -> list[str]:
        kept = self.reflections[-self.reflexion.max_reflections :]
        if not kept:
            return []
        first = len(self.reflections) - len(kept) + 1
        lines = [f"This is trial {self.trial} of this task. Your reflections on the trials you failed:"]
        lines += [f"Trial {first + i}: {text}" for i, text in enumerate(kept)]
        return ["\n".join(lines)]

    def reflection_messages(self, end: EndState, result: StepResult) -> list[Message]:
        """The self-reflection prompt (after the paper's: the failed trajectory, then "think about the
        strategy and path you took ... devise a concise, new plan of action")."""
        ctx, s = self._require_ctx(), self.reflexion
        facts = ctx.semantics.prompt_facts
        system = (
            f"You are an agent that {facts.agent}. You tried a task and did not complete it. "
            "Do not summarize what you saw: think about the strategy and the actions you took, say in one "
            "sentence what went wrong, and give a concise new plan that names the actions you should take."
        )
        steps = self._history[-s.reflect_history_steps :]
        first = len(self._history) - len(steps) + 1
        lines = [f"Task: {task_line(result.task_description)}", f"Your trial (from step {first}):"]
        for step in steps:
            lines.append(f"> {step.action}")
            lines.append(" ".join(step.observation.split())[: s.max_observation_chars])
        how = {
            EndState.FAILURE: "The task failed.",
            EndState.STEP_LIMIT: f"You ran out of steps ({result.steps}).",
            EndState.EARLY_STOP: "The trial was stopped.",
        }.get(end, f"The trial ended ({end}).")
        lines += [f"{how} Score: {result.score}.", "Reflection and new plan (one line):"]
        return [Message(role="system", content=system), Message(role="user", content="\n".join(lines))]


# -- the plug-in interface (fastslow.plugins) --------------------------------------------------------------


def build(config: RunConfig, response_cache: ResponseCache | None, hooks: HookFactory) -> ReflexionAgent:
    """The Reflexion agent of ``config`` (``agent.settings``: ``Settings``; the model: ``sage.model``,
    for acting and reflecting) walking the run's module ``hooks`` in every trial."""
    settings = read_settings(config, Settings)
    assert isinstance(settings, Settings)
    return ReflexionAgent(model_of(config, response_cache), settings, hooks, **loop_settings(config))


def models(config: RunConfig) -> dict[str, ModelConfig]:
    """The models Reflexion calls, by role (the same one acts and reflects; the LLM Critic's when SRM
    calls one)."""
    return {react.ROLE: config.sage.model, ROLE: config.sage.model, **module_models(config)}


def check(config: RunConfig) -> None:
    """Every refusal before a run writes anything (``react.check``'s, with Reflexion's settings)."""
    settings = read_settings(config, Settings)
    assert isinstance(settings, Settings)
    check_plugin(config, demo=settings.demo, constrained=settings.constrain == "valid")
