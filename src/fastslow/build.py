"""Assemble an agent from a run configuration (paper §3-§4: the four configurations are config diffs).

The one place that knows every component: it picks the Swift proposer, the Sage and Critic models, and
the module hooks the config switches on (``amm:``, ``srm:`` + ``critic:``, ``controller.swift_policy``,
``procedures:``: the world's hand-written task logic, its hook and the task-specific focus rules SRM
receives, asked of the run's ``World``), and hands them to the controller, which knows none of them by
name. The module hooks (``build_modules``) also go to the plug-in agents (``fastslow.plugins``: ReAct,
Reflexion), which walk them in their own loop. Tests build agents here too, injecting what the real run
would load (a scripted Sage, a scripted Swift, a store with known records).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from fastslow.agents import Agent, OracleAgent
from fastslow.config import BUILTIN_AGENTS, Intervention, RunConfig
from fastslow.controller import authors, escalation
from fastslow.controller.arbiter import Profile
from fastslow.controller.authors_sage import AuthorsPrompts
from fastslow.controller.controller import SwiftSageAgent
from fastslow.controller.sage import PROMPTS, Planner, Sage, SageOff, SwiftSagePrompts
from fastslow.core.focus import FocusJudge
from fastslow.core.hooks import LoopHook, SwitchedOff, SwitchPoint
from fastslow.core.procedures import TaskProcedures
from fastslow.core.proposal import Proposer
from fastslow.core.step import StepResult
from fastslow.env.world import get_world
from fastslow.errors import UsageError
from fastslow.events import EventSink
from fastslow.memory.episode import Amm
from fastslow.memory.hook import AmmHook
from fastslow.memory.stores import BulkStore, shared_store
from fastslow.models import ChatModel, make_model
from fastslow.models.breaker import guard
from fastslow.models.cache import ResponseCache, cache_responses
from fastslow.models.config import ModelConfig
from fastslow.models.embeddings import minilm_encoder
from fastslow.plugins import load_plugin
from fastslow.procedures.hook import ProcedureHook
from fastslow.reflection.config import CriticConfig, SrmConfig
from fastslow.reflection.hook import SrmHook
from fastslow.reflection.srm import Srm
from fastslow.swift.hook import PolicyHook
from fastslow.swift.policy import SafetyPolicy
from fastslow.vocab import Mechanism

PROFILES: dict[str, Profile] = {"swiftsage": escalation.PROFILE, "authors": authors.PROFILE}
"""The arbitration profiles by ``controller.loop`` name (paper §3; docs/controller.md). A profile kept
outside this list is named by its import path instead (``controller.loop: package.module:PROFILE``), so a
third profile is one module and one configuration file."""

SAGE_PROMPTS: dict[str, type[SwiftSagePrompts] | type[AuthorsPrompts]] = {
    **PROMPTS,
    "authors": AuthorsPrompts,
}
"""Sage's prompt profiles by ``controller.sage.prompt`` (a ``sage.SagePrompts`` class each): SwiftSage's,
and the paper authors' (``controller.authors_sage``, beside their arbitration profile). Picked here once
and handed to ``sage.Sage``."""


def profile(loop: str) -> Profile:
    """The ``Profile`` of ``controller.loop``: a registered name, or ``module:attribute`` of one."""
    if loop in PROFILES:
        return PROFILES[loop]
    module, _, name = loop.partition(":")
    try:
        found = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise UsageError(f"controller.loop: {loop!r} is no profile ({exc})") from exc
    if not isinstance(found, Profile):
        raise UsageError(f"controller.loop: {loop!r} is a {type(found).__name__}, not a Profile")
    return found


@dataclass
class Modules:
    """The module parts of one worker process (``core.hooks.HookFactory``), built once by
    ``build_modules`` (SwiftSage's controller and the plug-in agents get it; ``build_swiftsage`` adds
    Swift's policy and procedures); all None = the baseline. ``episode`` makes one episode's hooks."""

    srm: SrmConfig | None = None
    """SRM's section (Gate-1, stagnation, Critic switch); None = no SRM hook."""
    critic: CriticConfig = field(default_factory=CriticConfig)
    """The Critic's budget, cooldown, kind and model (used with ``srm``)."""
    amm: Amm | None = None
    """AMM with the process's store; None when ``amm.enabled`` is off (AMM is never constructed)."""
    critic_model: ChatModel | None = None
    """Shared model of the LLM Critic (Sage's own when both name the same model)."""
    policy: SafetyPolicy | None = None
    """Swift's safety policy (``controller.swift_policy``); None leaves Swift's ranking as proposed (and
    for a plug-in agent, which has no Swift)."""
    procedures: TaskProcedures | None = None
    """The world's hand-written task logic (``procedures.enabled``, with the policy;
    ``World.task_procedures``); None: no procedure hook."""
    focus_judge: FocusJudge | None = None
    """The task-specific focus rules SRM applies (``procedures.enabled``); None: its general rules."""
    warmup: bool = False
    """These episodes fill the store (``fastslow eval --warmup``): they write even in frozen mode."""
    markers: tuple[str, ...] | None = None
    """The run's failure markers (``env.failure_markers``), for SRM's stagnation detector (None: the
    world's default)."""
    intervention: Intervention | None = None
    """A mechanism off at one step (``fastslow attribute``): its hook wrapped in ``SwitchedOff``."""

    def episode(self, memory_key: str, sink: EventSink, first: StepResult) -> list[LoopHook]:
        """The hooks of one episode, in the order the controller walks them: policy, procedures, AMM,
        SRM (AMM's Critic evidence reaches SRM's hook as a callable)."""
        hooks: list[LoopHook] = []
        if self.policy is not None:
            hooks.append(PolicyHook(self.policy))
            if self.procedures is not None:
                hooks.append(ProcedureHook(self.procedures, self.policy.focus_allowed))
        amm = None
        if self.amm is not None:
            off = self.intervention
            prior_off = off.step if off is not None and off.mechanism == "memory-prior" else None
            amm = AmmHook(self.amm.episode(memory_key, sink, warmup=self.warmup), prior_off)
            hooks.append(
                self._switched(amm, {"t1-injection": "on_proposal", "t4-injection": "plan_memories"})
            )
        if self.srm is not None:
            srm = Srm.for_episode(
                self.srm,
                self.critic,
                first,
                sink=sink,
                model=self.critic_model,
                markers=self.markers,
                judge=self.focus_judge,
            )
            if srm is not None:
                hook = SrmHook(srm, amm.critic_memories if amm is not None else None)
                hooks.append(self._switched(hook, {"gate-drop": "before_action", "critic": "buffer_actions"}))
        return hooks

    def _switched(self, hook: LoopHook, points: dict[Mechanism, SwitchPoint]) -> LoopHook:
        """``hook``, or ``hook`` with the intervention's mechanism off at its step when it is one of
        ``points`` (the mechanisms this hook carries)."""
        off = self.intervention
        if off is None or off.mechanism not in points:
            return hook
        return SwitchedOff(hook, points[off.mechanism], off.step)


def required_models(config: RunConfig) -> dict[str, ModelConfig]:
    """The language models a swiftsage config will call, by role (sage, critic); a plug-in agent's
    (``fastslow.plugins``) as its module says."""
    if config.agent.kind not in BUILTIN_AGENTS:
        return load_plugin(config.agent.kind).models(config)
    if config.agent.kind != "swiftsage":
        return {}
    models = {"sage": config.sage.model} if config.controller.sage_enabled else {}
    srm = config.srm
    if srm.enabled and srm.stagnation.enabled and srm.critic.enabled and config.critic.kind == "llm":
        models["critic"] = config.critic.model
    return models


def sampled_models(config: RunConfig) -> dict[str, ModelConfig]:
    """The models of ``required_models`` whose answers a seed can change (``RunConfig.with_seed``):
    those that sample, at a temperature above 0, and read the seed (a scripted model does not)."""
    return {
        role: model
        for role, model in required_models(config).items()
        if model.kind != "scripted" and model.temperature > 0
    }


def constrained_models(config: RunConfig) -> dict[str, ModelConfig]:
    """The models of ``required_models`` whose calls pass constraints, by the key that says so
    (``controller.sage.constrain``, ``critic.constrain``); {} for a plug-in agent (its ``check`` probes
    the constraints it passes)."""
    if config.agent.kind not in BUILTIN_AGENTS:
        return {}
    needed = required_models(config)
    modes = {"sage": config.controller.sage.constrain, "critic": config.critic.constrain}
    keys = {"sage": "controller.sage.constrain", "critic": "critic.constrain"}
    return {keys[role]: cfg for role, cfg in needed.items() if modes[role] != "none"}


def check_world(config: RunConfig) -> None:
    """``UsageError`` when the config asks for a part of the paper authors' profile (their loop, Sage
    prompts, buffer rules: ``core.authors``) and its world has none (``WorldSemantics.authors`` None):
    such a run would quietly play without what it asked for. The ``controller:`` keys are SwiftSage's: a
    config of another agent kind is not judged by them (a plug-in's ``check`` judges its own)."""
    if config.agent.kind != "swiftsage":
        return
    world = get_world(config.env.world)
    semantics, ctl = world.semantics, config.controller
    if ctl.sage.demo:
        lacking = [t.name for t in world.tasks() if not world.sage_demos(t.task_id)]
        if lacking:
            raise UsageError(
                f"controller.sage.demo: env.world={world.name} has no plain demo for "
                f"{', '.join(lacking[:3])}{' ...' if len(lacking) > 3 else ''} (leave demo off there)"
            )
    if semantics.authors is not None:
        return
    asked = {
        f"controller.loop: {ctl.loop}": profile(ctl.loop).authors_only,
        f"controller.sage.prompt: {ctl.sage.prompt}": SAGE_PROMPTS[ctl.sage.prompt].authors_only,
        "controller.buffer.expected_alias": ctl.buffer.expected_alias,
        "controller.buffer.defer_unseen_focus": ctl.buffer.defer_unseen_focus,
    }
    named = [key for key, on in asked.items() if on]
    if named:
        raise UsageError(
            f"{', '.join(named)}: the paper authors' profile exists for ScienceWorld only, and the config "
            f"plays env.world={semantics.name} (use loop swiftsage, prompt swiftsage, as configs/twx-* do)"
        )


def check_models(config: RunConfig) -> None:
    """Fail fast, before any episode starts, if the config asks for what its world lacks
    (``check_world``) or a model the config needs cannot answer
    (``ModelUnavailableError``: a server that is down, a missing GGUF file or API key), cannot answer
    the constrained calls the config makes (the same error, from ``check_constraints``; a
    ``UsageError`` for ``constraint_format: openai``, which has no grammar), or its Swift checkpoint is
    missing (``UsageError``)."""
    check_world(config)
    if config.agent.kind == "swiftsage":
        from fastslow.swift import check_swift

        check_swift(config.swift)
    if config.agent.kind not in BUILTIN_AGENTS:
        load_plugin(config.agent.kind).check(config)  # its settings, models and constraints
        return
    constrained = constrained_models(config)
    for key, model_cfg in constrained.items():
        if model_cfg.kind == "openai" and model_cfg.constraint_format == "openai":
            raise UsageError(
                f"{key} constrains replies with a grammar, which constraint_format openai cannot send: "
                "set the model's constraint_format to llama_cpp, vllm or vllm_guided, or the key to none"
            )
    checked: list[ModelConfig] = []
    for model_cfg in required_models(config).values():
        if model_cfg not in checked:
            make_model(model_cfg).check_available()
            checked.append(model_cfg)
    probed: list[ModelConfig] = []
    for model_cfg in constrained.values():
        if model_cfg not in probed:
            make_model(model_cfg).check_constraints()
            probed.append(model_cfg)


def build_modules(
    config: RunConfig,
    *,
    sage_model: ChatModel | None = None,
    critic_model: ChatModel | None = None,
    store: BulkStore | None = None,
    response_cache: ResponseCache | None = None,
) -> Modules:
    """The module hooks of a run config (``core.hooks.HookFactory``): AMM with its store (``amm:``), SRM
    with the Critic's model (``srm:`` + ``critic:``), Gate-1's task-specific focus rules
    (``procedures.enabled``: ``World.focus_judge``), the warm-up flag, the failure markers and the
    intervention. Swift's safety policy and task procedures are SwiftSage's (``build_swiftsage`` adds
    them); a plug-in agent (``fastslow.plugins``) gets these modules as they are.

    The LLM Critic's model is ``critic.model`` (when ``required_models`` names a critic role): the
    ``critic_model`` given, else ``sage_model`` when both name the same model (one client per
    process, SwiftSage's Sage), else its own client; behind its own circuit breaker
    (``critic.model.breaker_after``) and the run's ``response_cache``. ``store`` replaces AMM's
    process store (tests)."""
    needed = required_models(config)
    if critic_model is None and "critic" in needed:
        # One model per process: the Critic shares Sage's when both name the same model.
        same = sage_model is not None and needed["critic"] == config.sage.model
        critic_model = sage_model if same else make_model(needed["critic"])
    if critic_model is not None:
        critic_model = cache_responses(
            guard(critic_model, "critic", config.critic.model), config.critic.model, response_cache
        )
    amm = None
    if config.amm.enabled:
        amm = Amm(config.amm, store if store is not None else shared_store(config.amm), config.env.world)
    srm = config.srm
    world = get_world(config.env.world)  # its focus rules (None in a world without them)
    return Modules(
        srm=srm if srm.enabled else None,
        critic=config.critic,
        amm=amm,
        critic_model=critic_model,
        focus_judge=world.focus_judge() if config.procedures.enabled else None,
        warmup=config.controller.warmup,
        markers=tuple(config.env.failure_markers),
        intervention=config.intervention,
    )


def build_swiftsage(
    config: RunConfig,
    *,
    swift: Proposer | None = None,
    sage_model: ChatModel | None = None,
    critic_model: ChatModel | None = None,
    store: BulkStore | None = None,
    response_cache: ResponseCache | None = None,
) -> SwiftSageAgent:
    """The controller of a run config with its module hooks (``build_modules``, plus Swift's safety
    policy and the world's task procedures). ``swift``, ``sage_model``, ``critic_model``
    and ``store`` replace what the config would load (tests; a shared client). Sage's and the Critic's
    models each get their own circuit breaker (``models.breaker``; ``sage.model.breaker_after``,
    ``critic.model.breaker_after``), also when they share one client, and each answers its
    temperature-0 calls from ``response_cache`` when its ``model.response_cache`` is on
    (``models.cache``: the cache sits outside the breaker, so a stored answer is served even while the
    breaker is open). None: no cache."""
    from fastslow.swift import make_policy, make_proposer

    ctl = config.controller
    needed = required_models(config)
    if sage_model is None and "sage" in needed:
        sage_model = make_model(needed["sage"])
    sage = (
        Sage(
            cache_responses(guard(sage_model, "sage", config.sage.model), config.sage.model, response_cache),
            ctl.sage,
            max_actions=ctl.buffer.size,
            cutoff=ctl.ground_cutoff,
            prompts=SAGE_PROMPTS[ctl.sage.prompt],
        )
        if sage_model is not None and ctl.sage_enabled
        else None
    )
    off = config.intervention
    planner: Planner | None = sage
    if sage is not None and off is not None and off.mechanism == "sage-round":
        planner = SageOff(sage, off.step)
    srm = config.srm
    modules = build_modules(
        config, sage_model=sage_model, critic_model=critic_model, store=store, response_cache=response_cache
    )
    procedures = config.procedures.enabled
    if ctl.swift_policy:
        modules.policy = make_policy(config.swift)
        # The task logic proposes through the policy's ranking (it needs the policy's focus rule).
        modules.procedures = get_world(config.env.world).task_procedures() if procedures else None
    if swift is None:
        swift = make_proposer(
            config.swift,
            top_k=config.swift.rerank_pool if ctl.swift_policy else None,
            box_features=procedures,
            embedder=minilm_encoder,
        )
    return SwiftSageAgent(
        swift,
        planner,
        ctl,
        arbiter=profile(ctl.loop).make,
        hooks=modules,
        min_confidence=config.swift.min_confidence,
        # Gate-1 on: text no check admitted never reaches the environment (a harmless look instead).
        unresolved_fallback=srm.enabled and srm.gate.enabled,
        markers=tuple(config.env.failure_markers),
    )


def make_agent(config: RunConfig, response_cache: ResponseCache | None = None) -> Agent:
    """Build the agent named by ``config.agent.kind`` (a plug-in kind: its module's ``build``,
    ``fastslow.plugins``, handed the run's module hooks, ``build_modules``); its model calls use
    ``response_cache`` (the run's, ``models.cache``) where the config allows it."""
    kind = config.agent.kind
    if kind == "oracle":
        return OracleAgent()
    if kind == "swiftsage":
        return build_swiftsage(config, response_cache=response_cache)
    # config.agent_kinds: it exists. The plug-in gets the run's module hooks (AMM, SRM) to walk.
    return load_plugin(kind).build(
        config, response_cache, build_modules(config, response_cache=response_cache)
    )
