"""Glue between the SwiftSage controller and its optional modules: AMM (paper §3.1), SRM (paper §3.2)
and Swift's safety policy.

The controller loop stays the baseline's; at four points it asks an ``EpisodeModules`` object, which
answers as the baseline would when a module is off:

- ``admit`` (right before an action leaves ``act``): SRM Gate-1; returns the action to execute (the
  repaired text) or None for DROP. Without Gate-1 every action is admitted as it is.
- ``rerank`` (Swift proposed): the Swift-only safety policy re-scores the candidates, as SwiftAgent does.
- ``t1`` (Swift failed) and ``t4`` (Sage plans): AMM evidence; None / "" leave the baseline input.
- ``after_step`` (after ``traj.record``): AMM's write hook with T2/T3, then SRM's detector and Critic;
  returns the Critic's actions for the FIFO buffer. ``finish`` settles the Critic at episode end.

``Modules`` holds what lives for a whole worker process (the AMM store, the Critic's model, the
policy) and hands out one ``EpisodeModules`` per episode. docs/controller.md ("Modules") has the
contract; docs/amm.md and docs/srm.md the modules themselves.
"""

from __future__ import annotations

import atexit
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import overload

import numpy as np

from fastslow.agents.state import Trajectory
from fastslow.config import RunConfig
from fastslow.env.scienceworld import StepResult
from fastslow.events import EventSink
from fastslow.memory.config import AmmConfig
from fastslow.memory.hooks import Amm, AmmHooks
from fastslow.memory.records import MemoryRecord
from fastslow.memory.stores import BulkStore, open_store
from fastslow.models import ChatModel
from fastslow.reflection.srm import Srm
from fastslow.swift.base import Candidate, Proposal
from fastslow.swift.policy import SafetyPolicy

_STORES: dict[tuple[str, str | None, str, str | None, str], BulkStore] = {}
"""AMM stores opened by this process, one per location: every agent of a worker process shares it."""


def process_amm(cfg: AmmConfig) -> Amm:
    """The ``Amm`` of this worker process for ``cfg``'s store (opened once, closed at exit)."""
    key = (cfg.store, cfg.path, cfg.dsn, cfg.password_env, cfg.table)
    store = _STORES.get(key)
    if store is None:
        store = open_store(cfg)
        _STORES[key] = store
        atexit.register(store.close)
    return Amm(cfg, store)


class LazyEvidence(Sequence[str]):
    """AMM's Critic evidence, fetched on first read.

    ``AmmHooks.critic_evidence`` consumes the T2/T3 cache and logs an injection, so it must run only
    when a Critic backend actually reads its memories (the LLM Critic, on a call the budget allows),
    not after every step."""

    def __init__(self, fetch: Callable[[], str | None]) -> None:
        self._fetch = fetch
        self._items: list[str] | None = None

    def _resolve(self) -> list[str]:
        if self._items is None:
            text = self._fetch()
            self._items = [text] if text else []
        return self._items

    def __len__(self) -> int:
        return len(self._resolve())

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._resolve()[index]

    def __iter__(self) -> Iterator[str]:
        return iter(self._resolve())


@dataclass
class Modules:
    """Process-wide module parts, built once by ``build_swiftsage``; all None = the baseline."""

    config: RunConfig | None = None
    """The run configuration (its ``srm:`` and ``critic:`` sections build SRM per episode)."""
    amm: Amm | None = None
    """AMM with the process's store; None when ``amm.enabled`` is off (AMM is never constructed)."""
    critic_model: ChatModel | None = None
    """Shared model of the LLM Critic (Sage's own when both name the same model)."""
    policy: SafetyPolicy | None = None
    """Swift's safety policy (``controller.swift_policy``); None leaves Swift's ranking as proposed."""
    warmup: bool = False
    """These episodes fill the store (``fastslow eval --warmup``): they write even in frozen mode."""

    def episode(self, episode_id: str, sink: EventSink, first: StepResult) -> EpisodeModules:
        srm = (
            Srm.for_episode(self.config, first, sink=sink, model=self.critic_model)
            if self.config is not None
            else None
        )
        memory = self.amm.episode(episode_id, sink, warmup=self.warmup) if self.amm is not None else None
        if self.policy is not None:
            self.policy.reset()
        return EpisodeModules(srm, memory, self.policy)


class EpisodeModules:
    """The modules of one episode, behind the four calls the controller makes."""

    def __init__(self, srm: Srm | None, memory: AmmHooks | None, policy: SafetyPolicy | None) -> None:
        self.srm = srm
        self.memory = memory
        self.policy = policy

    @property
    def gated(self) -> bool:
        return self.srm is not None and self.srm.gate is not None

    # -- before env.step -------------------------------------------------------------------------
    def admit(self, action: str, source: str, result: StepResult, traj: Trajectory) -> str | None:
        """Gate-1: the action to execute (repaired if need be), or None when it is dropped."""
        if self.srm is None or self.srm.gate is None:
            return action
        decision = self.srm.gate.check(action, result, traj, self.srm.constraints(traj), source=source)
        return decision.action if decision.accepted else None

    def rerank(self, proposal: Proposal, result: StepResult, traj: Trajectory) -> Proposal:
        """The safety policy's order of Swift's valid candidates (vetoed ones removed), as SwiftAgent
        plays them; the proposal unchanged without a policy."""
        if self.policy is None:
            return proposal
        valid = set(result.valid_actions)
        cands = [c for c in proposal.candidates if c.action in valid]
        if not cands:
            return Proposal((), proposal.confidence)
        scores = self.policy.adjust(
            [c.action for c in cands],
            np.asarray([c.score for c in cands], dtype=np.float32),
            result,
            traj.task_name,
        )
        # A stable sort keeps Swift's own order among equal scores, as argmax does in SwiftAgent.
        order = sorted(range(len(cands)), key=lambda i: -float(scores[i]))
        kept = tuple(Candidate(cands[i].action, float(scores[i])) for i in order if np.isfinite(scores[i]))
        return Proposal(kept, proposal.confidence)

    def t1(
        self,
        traj: Trajectory,
        retry: Callable[[list[MemoryRecord]], Proposal],
        accept: Callable[[Proposal], bool],
    ) -> tuple[Proposal, str] | None:
        """AMM T1 ladder: a memory-conditioned Swift proposal the controller accepts, with its rung;
        None without AMM or when the ladder escalates."""
        if self.memory is None:
            return None
        outcome = self.memory.t1_ladder(traj, retry, accept)
        return (outcome.proposal, outcome.rung) if outcome.proposal is not None else None

    def t4(self, traj: Trajectory) -> str:
        """AMM T4: the memory block for Sage's planning prompt ("" = the baseline prompt)."""
        if self.memory is None:
            return ""
        return self.memory.t4(traj).text or ""

    # -- after env.step --------------------------------------------------------------------------
    def observe_policy(self, before: StepResult, action: str, after: StepResult) -> None:
        if self.policy is not None:
            self.policy.observe(before, action, after)

    def after_step(self, traj: Trajectory, action: str, prev: StepResult, result: StepResult) -> list[str]:
        """AMM write + T2/T3, then SRM detector + Critic. Call after ``traj.record``; returns the
        Critic's actions (exact valid strings at this step) for the buffer."""
        if self.memory is not None:
            self.memory.after_step(traj, action, prev, result)
        if self.srm is None:
            return []
        memory = self.memory
        evidence: Sequence[str] = (
            LazyEvidence(lambda: memory.critic_evidence(traj).text) if memory is not None else ()
        )
        return self.srm.after_step(traj, evidence)

    def finish(self, traj: Trajectory) -> None:
        """Episode over (any end): settle a Critic call still in its effect window."""
        if self.srm is not None:
            self.srm.finish(traj)
