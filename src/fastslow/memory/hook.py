"""AMM as a loop hook (``core.hooks.LoopHook``; paper §3.1): T1 on Swift failure (the authors' profile:
also on a forced iteration), the action prior on every proposal (``amm.retrieval.prior``,
``memory.prior``), T4 for Sage, the write hook with T2/T3 after each step, and the Critic's
evidence (``critic_memories``), which ``fastslow.build`` hands to SRM's hook."""

from __future__ import annotations

from collections.abc import Sequence

from fastslow.core.hooks import NO_ACTIONS, BufferActions, LoopHook, ProposalTurn, Revision, StepDone
from fastslow.core.proposal import MemoryHint, Proposal
from fastslow.core.trajectory import Trajectory
from fastslow.memory.episode import EpisodeMemory


class AmmHook(LoopHook):
    """AMM for one episode (``memory.episode.EpisodeMemory`` holds its triggers and write path)."""

    def __init__(self, memory: EpisodeMemory, prior_off: int | None = None) -> None:
        self.memory = memory
        self.prior_off = prior_off
        """Env steps taken at which the action prior leaves Swift's proposal alone (``fastslow
        attribute``'s ``memory-prior`` fork, ``config.Intervention``); T1 and the rest still run there,
        which ``core.hooks.SwitchedOff`` (the whole hook off) could not give. None: every step."""

    def on_proposal(self, proposal: Proposal, turn: ProposalTurn) -> Revision:
        outcome = self.memory.swift_proposed(
            turn.traj,
            failed=turn.failed(proposal),
            forced=turn.forced,
            retry=lambda memories: self._retry(turn, memories),
            accept=lambda p: not turn.failed(p),
            again=turn.again,
        )
        if outcome is None or outcome.proposal is None:
            revised, note = self._prior(turn, proposal)
            return Revision(revised, note)
        where = f" instead of forced sage ({turn.forced})" if turn.forced is not None else ""
        revised, note = self._prior(turn, outcome.proposal)
        return Revision(
            revised, f", T1 {outcome.rung}{where}{note}", settles=self.memory.cfg.retrieval.t1_settles
        )

    def _prior(self, turn: ProposalTurn, proposal: Proposal) -> tuple[Proposal, str]:
        # A later iteration of the same step walks the hooks over the proposal they already revised.
        if turn.again:
            return proposal, ""
        return self.memory.prior(turn.traj, proposal, off=turn.result.steps == self.prior_off)

    def _retry(self, turn: ProposalTurn, memories: Sequence[MemoryHint]) -> Proposal:
        # The retried Swift reads the trajectory as AMM's profile shows it (scores hidden: authors').
        with self.memory.retry_view(turn.traj):
            return turn.retry(memories)

    def plan_memories(self, traj: Trajectory) -> str:
        return self.memory.t4(traj).text or ""

    def after_step(self, step: StepDone) -> BufferActions:
        self.memory.after_step(step.traj, step.action, step.prev, step.result)
        return NO_ACTIONS

    def critic_memories(self, traj: Trajectory, patterns: Sequence[str] | None = None) -> list[str]:
        """The Critic's memory block (``amm.retrieval.critic_evidence``: the cached T3, else T2, records,
        or a fresh search; ``patterns``: the stagnation report's, which decide whether an avoidance
        memory joins a fresh search); read (and logged) only by an LLM Critic call the budget allows,
        since reading consumes the cache."""
        text = self.memory.critic_evidence(traj, patterns).text
        return [text] if text else []
