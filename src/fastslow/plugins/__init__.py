"""Plug-in agents: agents other than SwiftSage that play through the same harness (docs/agents.md).

An ``agent.kind`` that is not built in (``config.BUILTIN_AGENTS``: oracle, swiftsage) names a module of
this package: kind ``K`` is ``fastslow.plugins.K`` (``config.agent_kinds`` lists them from the files,
so a new agent is one module here and one configuration file, and nothing else is edited). Such a
module provides (``AgentPlugin``)

- ``build(config, response_cache, hooks) -> Agent``: the agent of a run config
  (``fastslow.build.make_agent``); ``hooks`` is the run's ``core.hooks.HookFactory``
  (``fastslow.build.build_modules``: AMM, SRM and its Critic's model as the config switches them on),
  which the agent walks as SwiftSage's controller does (``_hooks.HookedLoop``), or ignores;
- ``check(config) -> None``: every refusal before a run writes anything: its settings
  (``agent.settings``, read by the module's own pydantic model, unknown keys refused), its world, its
  models (a server that is down, a missing GGUF file, constraints the server cannot run), and a module
  switched on that it does not walk (``amm.enabled``, ``srm.enabled``: never silently ignored);
- ``models(config) -> dict[str, ModelConfig]``: the language models it calls, by role, the modules'
  included (``fastslow.build.required_models``: ``--seeds`` asks which of them sample; the LLM
  Critic's ``critic`` role, ``_hooks.module_models``).

The agents log their model calls through ``models.call_model`` (``model_call`` events with tokens and
seconds) and label their steps with a ``vocab.StepSource``, so the event log, metrics.json, ``fastslow
report``, the viewer and forks treat them as they treat SwiftSage. Shipped plug-ins: ``react`` (ReAct,
Yao et al., ICLR 2023) and ``reflexion`` (Reflexion, Shinn et al., NeurIPS 2023); docs/agents.md. Both
walk the module hooks through ``_hooks.HookedLoop`` (a module whose name starts with ``_`` is no agent
kind): AMM's writes, its T2/T3 and its T4 memory block in the prompt; SRM's Gate-1 on every action,
its stagnation detector and Critic, whose actions run from a small action buffer. What does not
compose, and why: AMM's T1 and action prior act on Swift's proposal, which these agents do not have;
SwiftSage's arbitration, Sage and the Swift policy are the controller's own (docs/agents.md).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Protocol, cast

if TYPE_CHECKING:
    from fastslow.agents import Agent
    from fastslow.config import RunConfig
    from fastslow.core.hooks import HookFactory
    from fastslow.models.cache import ResponseCache
    from fastslow.models.config import ModelConfig


class AgentPlugin(Protocol):
    """What a plug-in module provides (module docstring)."""

    def build(self, config: RunConfig, response_cache: ResponseCache | None, hooks: HookFactory) -> Agent: ...

    def check(self, config: RunConfig) -> None: ...

    def models(self, config: RunConfig) -> dict[str, ModelConfig]: ...


def load_plugin(kind: str) -> AgentPlugin:
    """The module of plug-in kind ``kind`` (``fastslow.plugins.<kind>``); the config has checked that
    it exists (``config.agent_kinds``)."""
    return cast("AgentPlugin", importlib.import_module(f"{__name__}.{kind}"))
