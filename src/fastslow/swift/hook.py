"""Swift's safety policy as a loop hook (``core.hooks.LoopHook``): the general rules over Swift's ranking
that make a learned ranker safe to act alone (docs/swift.md)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from fastslow.core.hooks import (
    NO_ACTIONS,
    BufferActions,
    Candidate,
    LoopHook,
    ProposalTurn,
    Revision,
    StepDone,
    StepView,
    refuse,
)
from fastslow.core.proposal import Proposal
from fastslow.swift.policy import SafetyPolicy


class PolicyHook(LoopHook):
    """Re-scores Swift's valid candidates, learns what changed nothing, and refuses an ambiguity answer
    that would complete a focus the focus rule forbids."""

    def __init__(self, policy: SafetyPolicy) -> None:
        self.policy = policy
        policy.reset()

    def on_proposal(self, proposal: Proposal, turn: ProposalTurn) -> Revision:
        valid = set(turn.result.valid_actions)
        cands = [c for c in proposal.candidates if c.action in valid]
        if not cands:
            return Revision(Proposal((), proposal.confidence))
        scores = self.policy.adjust(
            [c.action for c in cands],
            np.asarray([c.score for c in cands], dtype=np.float32),
            turn.result,
            turn.traj.task_name,
        )
        # A stable sort keeps Swift's own order among equal scores.
        order = sorted(range(len(cands)), key=lambda i: -float(scores[i]))
        kept = tuple(replace(cands[i], score=float(scores[i])) for i in order if np.isfinite(scores[i]))
        return Revision(Proposal(kept, proposal.confidence))

    def before_action(self, candidate: Candidate, view: StepView) -> Candidate:
        # The policy never focuses by answering an ambiguity prompt: the controller's default answer
        # picks the first of several same-named objects, which Swift never chose (swift/policy.py).
        completes, verb = candidate.answers, self.policy.semantics.commitment_verb
        if self.policy.focus_rule and completes is not None and verb and completes.startswith(f"{verb} "):
            return refuse(candidate, "policy")
        return candidate

    def on_refused(self, candidate: Candidate, view: StepView) -> None:
        # What Gate-1 dropped here it drops again in this state: the policy stops proposing it until
        # the state changes.
        if candidate.refused_by == "gate":
            self.policy.refused(candidate.proposed, view.result)

    def after_step(self, step: StepDone) -> BufferActions:
        self.policy.observe(step.prev, step.action, step.result)
        return NO_ACTIONS
