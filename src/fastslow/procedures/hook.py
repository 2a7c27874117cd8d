"""The hand-written task logic as a loop hook (``core.hooks.LoopHook``), walked after Swift's safety
policy: labelled ``procedure`` wherever it decides an action (``vocab.StepSource``).

World-neutral: it drives the world's logic through ``core.procedures.TaskProcedures`` (ScienceWorld's is
``fastslow.env.scienceworld.procedures.logic.TaskLogic``, made by ``World.task_procedures``)."""

from __future__ import annotations

from fastslow.core.hooks import (
    NO_ACTIONS,
    BufferActions,
    Candidate,
    LoopHook,
    ProposalTurn,
    Revision,
    StepDone,
    StepView,
)
from fastslow.core.procedures import FocusAllowed, TaskProcedures
from fastslow.core.proposal import Proposal, RankedAction


class ProcedureHook(LoopHook):
    """Drops the candidates its task's rules veto and puts the action a procedure or judgement decides on
    top (``RankedAction.decided_by`` names its rule, so the step that runs it is logged as
    ``procedure``). It keeps its own record of the episode (every executed step, Gate-1's drops)."""

    def __init__(self, logic: TaskProcedures, focus_allowed: FocusAllowed) -> None:
        self.logic = logic
        self.focus_allowed = focus_allowed
        """The general focus rule the life-stages judgement respects (``SafetyPolicy.focus_allowed``)."""
        logic.reset()

    def on_proposal(self, proposal: Proposal, turn: ProposalTurn) -> Revision:
        current, task_name = turn.result, turn.traj.task_name
        if not current.valid_actions:
            return Revision(proposal)
        kept = tuple(c for c in proposal.candidates if not self.logic.vetoed(c.action, current, task_name))
        general = self.logic.focus_check(self.focus_allowed, task_name)
        judged = self.logic.judged(current, task_name, general)
        if judged is not None:
            # A judgement rule outranks the imitation scores (its action may lie outside Swift's pool).
            # The candidate carries the rule: its step is a procedure step, even when Swift's model
            # ranked the same action first.
            top = max((r.score for r in kept), default=0.0) + 1.0
            decided = RankedAction(judged.action, top, decided_by=judged.rule)
            kept = (decided, *(r for r in kept if r.action != judged.action))
        return Revision(Proposal(kept, proposal.confidence))

    def on_refused(self, candidate: Candidate, view: StepView) -> None:
        # A Gate-1 drop reaches the procedures too: they step aside from it until the state changes.
        if candidate.refused_by == "gate":
            self.logic.refused(candidate.proposed, view.result)

    def after_step(self, step: StepDone) -> BufferActions:
        self.logic.observe(step.prev, step.action, step.result)
        return NO_ACTIONS
