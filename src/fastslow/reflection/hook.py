"""SRM as a loop hook (``core.hooks.LoopHook``; paper §3.2): Gate-1 on every candidate; after each step
the stagnation detector and, on a report, the bounded Critic, whose actions go to the action buffer."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from fastslow.core.hooks import BufferActions, Candidate, LoopHook, StepDone, StepView, refuse
from fastslow.core.trajectory import Trajectory
from fastslow.reflection.srm import Srm

CriticEvidence = Callable[[Trajectory, Sequence[str] | None], list[str]]
"""The memory block an LLM Critic call reads (AMM's ``AmmHook.critic_memories``), given the stagnation
report's patterns; read only when the Critic's budget allows a call."""


class SrmHook(LoopHook):
    """SRM for one episode (``reflection.srm.Srm``)."""

    def __init__(self, srm: Srm, evidence: CriticEvidence | None = None) -> None:
        self.srm = srm
        self.evidence = evidence

    def before_action(self, candidate: Candidate, view: StepView) -> Candidate:
        gate = self.srm.gate
        if gate is None:
            return candidate
        constraints = self.srm.constraints(view.traj)
        if candidate.answers is not None:
            # An option number is judged as the action it completes (a bare "0" is not harmless).
            decision = gate.check_answer(
                candidate.proposed,
                candidate.answers,
                view.result,
                view.traj,
                constraints,
                source=candidate.source,
            )
        else:
            decision = gate.check(
                candidate.proposed, view.result, view.traj, constraints, source=candidate.source
            )
        if decision.accepted:
            return replace(candidate, action=decision.action)
        # srm.gate.drop_as_failure: a Swift action the authors' final gate drops is one of their
        # failure messages; the authors' loop records it (controller.authors.AuthorsArbiter).
        failure = None
        if gate.config.drop_as_failure and candidate.source == "swift":
            failure = f"GATE_INVALID:{decision.reason}"
        why = f"{decision.reason}: {decision.detail}" if decision.detail else decision.reason
        return refuse(candidate, "gate", failure, why)

    def _memories(self, traj: Trajectory) -> Callable[[Sequence[str]], list[str]] | None:
        evidence = self.evidence
        if evidence is None:
            return None
        return lambda patterns: evidence(traj, patterns)

    def _actions(self, actions: list[str]) -> BufferActions:
        return BufferActions(tuple(actions), "critic", replace=bool(actions) and self.srm.replaces_buffer)

    def after_step(self, step: StepDone) -> BufferActions:
        return self._actions(
            self.srm.after_step(step.traj, self._memories(step.traj), buffer_empty=step.buffer_empty)
        )

    def on_buffer_empty(self, traj: Trajectory) -> BufferActions:
        return self._actions(self.srm.on_buffer_empty(traj, self._memories(traj)))

    def on_episode_end(self, traj: Trajectory) -> None:
        self.srm.finish(traj)
