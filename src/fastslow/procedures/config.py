"""The hand-written task logic's config section (``procedures:``), owned by the component and composed
into ``RunConfig`` by ``fastslow.config``."""

from __future__ import annotations

from fastslow.strict import StrictModel


class ProceduresConfig(StrictModel):
    """Hand-written task logic (``fastslow.procedures``): the task procedures, the judgements, their
    vetoes, Gate-1's task-specific focus rules and the answer-box features of the imitation Swift."""

    enabled: bool = False
    """The one switch. true: the procedures and judgements propose their task's next step (with the
    safety policy, ``controller.swift_policy``), their vetoes and Gate-1's task-specific focus rules
    (named target, life stages, thermometer, per-task focus budgets) apply, and the imitation Swift
    reads its answer-box features. false: no code path reads a task's name or family (docs/swift.md)."""
