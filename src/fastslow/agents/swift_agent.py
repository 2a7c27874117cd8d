"""Swift-only agent: the fast proposer acts alone, no Sage, no memory modules (paper §3, Swift).

An ablation and a floor for the dual-process agents: every step is Swift's best candidate after its
safety policy (``swift/policy.py``: no-effect rule, loop penalty, focus rule) has re-scored the
proposal's top candidates, and a focus the model is unsure of (probability below
``swift.focus_min_confidence``) is put off. With no admissible candidate it looks around, which is
always valid and harmless.
"""

from __future__ import annotations

import numpy as np

from fastslow.agents.base import Decision, EpisodeContext
from fastslow.agents.state import Trajectory
from fastslow.env.scienceworld import StepResult
from fastslow.swift.base import Candidate, Proposer
from fastslow.swift.policy import SafetyPolicy

FALLBACK_ACTION = "look around"


class SwiftAgent:
    needs_gold = False

    def __init__(self, proposer: Proposer, policy: SafetyPolicy, focus_min_confidence: float = 0.0) -> None:
        self.proposer = proposer
        self.policy = policy
        self.focus_min_confidence = focus_min_confidence
        self.traj: Trajectory | None = None

    def reset(self, ctx: EpisodeContext, first: StepResult) -> None:
        self.traj = Trajectory(ctx.task.task_id, ctx.task.name, ctx.variation, first.task_description, first)
        self.policy.reset()

    def act(self, result: StepResult) -> Decision:
        assert self.traj is not None, "reset() first"
        proposal = self.proposer.propose(self.traj)
        valid = set(result.valid_actions)
        cands = [c for c in proposal.candidates if c.action in valid]
        if not cands:
            return Decision(FALLBACK_ACTION, "swift", "no valid candidate")
        actions = [c.action for c in cands]
        scores = self.policy.adjust(
            actions, np.asarray([c.score for c in cands], dtype=np.float32), result, self.traj.task_name
        )
        best = int(np.argmax(scores))
        if actions[best].startswith("focus on ") and self._prob(cands, best) < self.focus_min_confidence:
            # A wrong focus ends the episode at -100; an unsure one waits for more evidence.
            scores[best] = -np.inf
            best = int(np.argmax(scores))
        if not np.isfinite(scores[best]):
            return Decision(FALLBACK_ACTION, "swift", "every candidate vetoed by the safety policy")
        note = "" if best == 0 else f", policy moved rank {best + 1} up"
        return Decision(actions[best], "swift", f"p={proposal.confidence:.2f}{note}")

    @staticmethod
    def _prob(cands: list[Candidate], i: int) -> float:
        """Softmax probability of candidate ``i`` among the proposal's candidates (model scores)."""
        raw = np.asarray([c.score for c in cands], dtype=np.float64)
        p = np.exp(raw - raw.max())
        return float(p[i] / p.sum())

    def observe(self, decision: Decision, result: StepResult) -> None:
        assert self.traj is not None, "reset() first"
        self.policy.observe(self.traj.current, decision.action, result)
        self.traj.record(decision.action, decision.source, result)
