"""Fixed vocabularies of the event log: the names the paper's mechanisms write into it (paper §3, §3.1,
§3.2, Appendices D-E), and who chose each step's action (``StepSource``, ``ProcedureRule``).

They live at the bottom layer, below ``events`` and every module that emits events, so that the event
schema can validate them without importing the controller, memory or reflection packages; those
packages take their names from here. A log line whose value is outside its vocabulary does not parse
(``events.iter_events`` raises ``CorruptLogError`` naming the file and line), and a misspelt name in
code fails where the event is built instead of silently starting a new counter in metrics.json.

The tuples keep each vocabulary's order where the order means something (the stagnation patterns'
priority); ``typing.get_args`` of the Literal gives the same values.
"""

from __future__ import annotations

from typing import Literal, get_args

EscalationRule = Literal[
    "invalid_action", "failure_messages", "focus_before_sage", "no_progress", "no_env_step"
]
"""SwiftSage's arbitration rules that send a timestep to Sage (paper §3; ``controller.arbiter.Rule``)."""
ESCALATION_RULES: tuple[EscalationRule, ...] = get_args(EscalationRule)

EscalationBlock = Literal["cooldown", "consecutive_sage", "per_step"]
"""Why Sage was not called although a rule fired (``controller.arbiter.Block``)."""
ESCALATION_BLOCKS: tuple[EscalationBlock, ...] = get_args(EscalationBlock)

StagnationPattern = Literal[
    "invalid_loop", "repeated_action", "repeated_observation", "verb_loop", "navigation_loop"
]
"""SRM stagnation detector patterns (paper §3.2), main pattern first when several fire at once
(``reflection.stagnation.PATTERNS``)."""
STAGNATION_PATTERNS: tuple[StagnationPattern, ...] = get_args(StagnationPattern)
NAVIGATION_LOOP: StagnationPattern = "navigation_loop"
"""The navigation pattern, which AMM's Critic evidence and the Critic treat apart (a report of only this
one is the authors' "move spam" exception)."""

CriticKind = Literal["llm", "rules"]
"""The SRM Critic's backends (paper §3.2: the LLM Critic; the fast pathway's deterministic rules)."""
CRITIC_KINDS: tuple[CriticKind, ...] = get_args(CriticKind)

CRITIC_NO_ACTIONS = "no actions in the answer"
CRITIC_NO_VALID_ACTIONS = "no valid actions in the answer"
"""A Critic call's ``error`` when its model answered but the answer held no action / no valid one (any
other error is the model call's own)."""

CriticEffectReason = Literal["score_increase", "no_progress_in_window", "no_actions", "episode_end"]
"""How a Critic call's effect was decided (``reflection.critic``)."""
CRITIC_EFFECT_REASONS: tuple[CriticEffectReason, ...] = get_args(CriticEffectReason)

MemoryTrigger = Literal["T1", "T2", "T3", "T4"]
"""AMM retrieval triggers (paper §3.1): T1 Swift failure, T2 stagnation, T3 repeated invalid action,
T4 Sage planning."""
MEMORY_TRIGGERS: tuple[MemoryTrigger, ...] = get_args(MemoryTrigger)

MemoryTag = Literal["success", "near-miss", "avoidance"]
"""What an AMM record says about its transition (paper §3.1, App. D; ``memory.records.Tag``)."""
MEMORY_TAGS: tuple[MemoryTag, ...] = get_args(MemoryTag)

MemoryTarget = Literal["swift", "sage", "critic"]
"""Models a memory block can be injected into (paper §3.1; ``memory.injection.Audience``)."""
MEMORY_TARGETS: tuple[MemoryTarget, ...] = get_args(MemoryTarget)

FallbackTrigger = Literal["T1", "T2", "T3", "T4", "write"]
"""What an AMM fallback interrupted: a trigger's retrieval or injection, or the write hook."""
FALLBACK_TRIGGERS: tuple[FallbackTrigger, ...] = get_args(FallbackTrigger)

FallbackTarget = Literal["swift", "sage", "critic", "store", "cache"]
"""Where an AMM fallback left the baseline input unchanged: a model's input, the store (a failed write),
or the T2/T3 cache kept for the Critic (a failed retrieval)."""
FALLBACK_TARGETS: tuple[FallbackTarget, ...] = get_args(FallbackTarget)

ModelRole = Literal[
    "sage_plan", "sage_ground", "critic", "bench", "bench_warmup", "bench_prompt", "bench_gen"
]
"""Why a language model was called: Sage's two stages (paper §3), the LLM Critic (§3.2), and
``fastslow bench llm``'s calls."""
MODEL_ROLES: tuple[ModelRole, ...] = get_args(ModelRole)

StepSource = Literal["swift", "procedure", "fallback", "sage", "critic", "oracle", "scripted"]
"""Who chose an env step's action (``EnvStep.source``):

- ``swift``: the learned Swift's ranking (its first candidate the resolver and the hooks let through);
- ``procedure``: hand-written task logic - a task procedure (matter, paint, incline, grow, circuit) or a
  judgement (life stages, thermometer) of Swift's safety policy put its action on top of Swift's ranking
  and that action ran; the step's ``reason`` names the rule (``ProcedureRule``);
- ``fallback``: the controller's own pick when neither Swift's ranking nor a procedure gave an action
  that may run (the deterministic fallback, the authors' nearest-valid search and loop-break, the
  resolver's harmless action);
- ``sage`` / ``critic``: from the action buffer, planned by Sage or handed over by SRM's Critic;
- ``oracle``: the gold path; ``scripted``: an agent replaying a fixed list of actions (tests).

An ambiguity answer carries the source of the request it completes. Logs written before ``procedure``
and ``fallback`` existed label those steps ``swift``."""
STEP_SOURCES: tuple[StepSource, ...] = get_args(StepSource)

SWIFT_BRANCH: tuple[StepSource, ...] = ("swift", "procedure", "fallback")
"""Sources of the controller's Swift branch (actions not from the buffer): SwiftSage's arbitration and
the authors' loop treat them all as Swift's action, and the authors' counter
(``mechanisms.paper.swift_step_share``) counts them all as Swift's steps."""

BUFFER_SOURCES: tuple[StepSource, ...] = ("sage", "critic")
"""Sources whose actions came out of the action buffer."""

Refuser = Literal["gate", "policy", "focus_gate", "focus_done"]
"""Which ``before_action`` hook refused a candidate (``core.hooks.Candidate.refused_by``): SRM's Gate-1,
Swift's safety policy (an ambiguity answer completing a forbidden focus), the authors' focus gate (a
Swift focus before Sage has focused) and its focus limit (the task's focus count reached)."""

Mechanism = Literal["gate-drop", "critic", "t1-injection", "sage-round"]
"""A mechanism ``fastslow attribute`` switches off at one step (``config.Intervention``): SRM's Gate-1
drops, the Critic's inserted actions, AMM's T1 retrieval into Swift, a Sage round."""
MECHANISMS: tuple[Mechanism, ...] = get_args(Mechanism)

ProcedureRule = Literal[
    "procedure:matter",
    "procedure:paint",
    "procedure:incline",
    "procedure:grow",
    "procedure:circuit",
    "judgement:life-stages",
    "judgement:thermometer",
]
"""The hand-written rule that decided a ``procedure`` step (``procedures.logic.TaskLogic.judged``): a
task procedure (``procedures.matter``, ``procedures.paint``, ``procedures.incline``, ``procedures.grow``,
``procedures.circuit``) or a judgement (the life-stages order, the thermometer tasks' measurement)."""
PROCEDURE_RULES: tuple[ProcedureRule, ...] = get_args(ProcedureRule)
