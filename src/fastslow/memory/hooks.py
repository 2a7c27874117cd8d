"""AMM hooks the controller calls (paper §3.1): the write hook and triggers T1-T4.

- ``after_step`` (after every env step, once the step is recorded in the trajectory): salience-gated
  write, then the T3 / T2 checks, which only retrieve and cache.
- ``t1_ladder`` (Swift failed): retry Swift with success-only memories, then with success+near-miss
  memories; if neither retry gives an acceptable proposal, the controller escalates to Sage.
- ``t4`` (Sage is about to plan): a block of success and near-miss memories for the planning prompt.
- ``critic_evidence`` (full system): the cached T2/T3 records as a Critic block.

AMM is informational: every method returns evidence or a proposal for the controller to arbitrate,
none executes anything, and every failure leaves the baseline input unchanged (``MemoryFallback``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fastslow.core.step import StepResult
from fastslow.core.trajectory import Trajectory
from fastslow.events import EventSink, MemoryFallback, MemoryInjection, MemoryTrigger
from fastslow.memory.config import AmmConfig
from fastslow.memory.injection import Audience, InjectionResult, format_memory_block
from fastslow.memory.records import MemoryRecord, Tag
from fastslow.memory.retrieval import MemoryRetriever
from fastslow.memory.salience import STORE_ERROR, MemoryWriter, is_invalid_feedback
from fastslow.memory.stores import BulkStore, MemoryStore, MemoryStoreError, open_store
from fastslow.swift.base import MemoryHint, Proposal

if TYPE_CHECKING:
    # mypy proves here that records can be handed to Swift as they are.
    _HINT: type[MemoryHint] = MemoryRecord

T1_RUNGS: tuple[tuple[str, tuple[Tag, ...]], ...] = (
    ("success", ("success",)),
    ("success+near-miss", ("success", "near-miss")),
)
PLANNING_TAGS: tuple[Tag, ...] = ("success", "near-miss")
ALL_TAGS: tuple[Tag, ...] = ("success", "near-miss", "avoidance")


@dataclass(frozen=True)
class T1Outcome:
    """Result of the T1 ladder: an accepted memory-conditioned proposal, or escalate (``proposal`` None)."""

    proposal: Proposal | None
    rung: str
    """Rung that produced the accepted proposal; ``escalate`` when none did, ``disabled`` if T1 is off."""
    records: tuple[MemoryRecord, ...] = ()
    """Memories the accepted retry saw."""
    retries: int = 0
    """Swift calls the ladder made."""


def repeated_invalid(traj: Trajectory) -> bool:
    """T3 condition: the last two actions are the same and both got the invalid-action reply."""
    turns = traj.turns
    return (
        len(turns) >= 2
        and turns[-1].action.strip().lower() == turns[-2].action.strip().lower()
        and is_invalid_feedback(turns[-1].observation)
        and is_invalid_feedback(turns[-2].observation)
    )


def stagnant(traj: Trajectory, window: int) -> bool:
    """T2 condition: ``window`` steps without a score gain, showing at most two distinct observations."""
    recent = traj.recent(window)
    return (
        window > 0
        and len(recent) == window
        and all(t.reward <= 0 for t in recent)
        and len({" ".join(t.observation.split()) for t in recent}) <= 2
    )


class AmmHooks:
    """AMM for one episode."""

    def __init__(
        self, cfg: AmmConfig, store: MemoryStore, sink: EventSink, episode_id: str, writable: bool = True
    ) -> None:
        self.cfg = cfg
        self.sink = sink
        self.writer = MemoryWriter(store, cfg.write, sink, episode_id, writable)
        self.retriever = MemoryRetriever(store, cfg.retrieval, sink)
        self.cache: dict[MemoryTrigger, list[MemoryRecord]] = {}
        """Records retrieved at T2/T3, kept for the Critic; never injected in the AMM-only configuration."""
        self._last_t2_step = -(10**9)

    # -- write side ---------------------------------------------------------------------------------
    def after_step(
        self, traj: Trajectory, action: str, prev: StepResult, result: StepResult
    ) -> MemoryRecord | None:
        """Write hook plus T3/T2 checks. Call after ``traj.record(action, source, result)``."""
        record = self.writer.after_step(traj, action, prev, result)
        rcfg = self.cfg.retrieval
        # T3 fires on the first repeat of an invalid action, not again on every further repeat.
        streak_start = len(traj.turns) < 3 or traj.turns[-3].action.strip().lower() != action.strip().lower()
        if rcfg.t3 and repeated_invalid(traj) and streak_start:
            self.t3(traj)
        elif (
            rcfg.t2
            and stagnant(traj, rcfg.stagnation_window)
            and result.steps - self._last_t2_step >= rcfg.stagnation_window
        ):
            self._last_t2_step = result.steps
            self.t2(traj)
        return record

    # -- read side ----------------------------------------------------------------------------------
    def _fallback(self, traj: Trajectory, trigger: MemoryTrigger, target: str, reason: str) -> None:
        self.sink.emit(MemoryFallback(step=traj.current.steps, trigger=trigger, target=target, reason=reason))

    def _block(
        self, traj: Trajectory, trigger: MemoryTrigger, records: list[MemoryRecord], audience: Audience
    ) -> InjectionResult:
        icfg = self.cfg.injection
        budget = {"swift": icfg.swift_budget, "sage": icfg.sage_budget, "critic": icfg.critic_budget}[
            audience
        ]
        block = format_memory_block(records, budget, audience, icfg.unit, icfg.observation_chars)
        if block.ok:
            self.sink.emit(
                MemoryInjection(
                    step=traj.current.steps,
                    trigger=trigger,
                    target=audience,
                    n=len(block.records),
                    chars=block.chars,
                )
            )
        else:
            self._fallback(traj, trigger, audience, block.fallback or "unknown")
        return block

    def t1_ladder(
        self,
        traj: Trajectory,
        retry: Callable[[list[MemoryRecord]], Proposal],
        accept: Callable[[Proposal], bool] | None = None,
    ) -> T1Outcome:
        """Swift failed: retry it with memories, success-only first, then success+near-miss.

        ``retry`` calls Swift with the given memories; ``accept`` says whether a proposal is good enough
        (default: its top action is in the current valid set). A rung whose records equal the previous
        rung's is skipped, since the retry would see the same evidence.
        """
        if not self.cfg.retrieval.t1:
            return T1Outcome(None, "disabled")
        ok = accept or (lambda p: p.top is not None and p.top in traj.current.valid_actions)
        previous: tuple[str, ...] | None = None
        retries = 0
        for rung, tags in T1_RUNGS:
            try:
                records = self.retriever.retrieve("T1", traj, self.cfg.retrieval.t1_k, tags, rung=rung)
            except MemoryStoreError as exc:
                self._fallback(traj, "T1", "swift", f"{STORE_ERROR}{exc}")
                break
            ids = tuple(r.id for r in records)
            if ids == previous:
                continue
            previous = ids
            block = self._block(traj, "T1", records, "swift")
            if not block.ok:
                continue
            proposal = retry(list(block.records))
            retries += 1
            if ok(proposal):
                return T1Outcome(proposal, rung, block.records, retries)
        return T1Outcome(None, "escalate", retries=retries)

    def t4(self, traj: Trajectory) -> InjectionResult:
        """Sage is about to plan: the memory block for its planning prompt (``text`` None: use baseline)."""
        if not self.cfg.retrieval.t4:
            return InjectionResult(None, fallback="disabled")
        try:
            records = self.retriever.retrieve("T4", traj, self.cfg.retrieval.t4_k, PLANNING_TAGS)
        except MemoryStoreError as exc:
            self._fallback(traj, "T4", "sage", f"{STORE_ERROR}{exc}")
            return InjectionResult(None, fallback=f"{STORE_ERROR}{exc}")
        return self._block(traj, "T4", records, "sage")

    def _cache(self, trigger: MemoryTrigger, traj: Trajectory) -> list[MemoryRecord]:
        try:
            records = self.retriever.retrieve(trigger, traj, self.cfg.retrieval.cache_k, ALL_TAGS)
        except MemoryStoreError as exc:
            self._fallback(traj, trigger, "cache", f"{STORE_ERROR}{exc}")
            records = []
        self.cache[trigger] = records
        return records

    def t2(self, traj: Trajectory) -> list[MemoryRecord]:
        """Stagnation: retrieve and cache; changes no model input in the AMM-only configuration."""
        return self._cache("T2", traj)

    def t3(self, traj: Trajectory) -> list[MemoryRecord]:
        """Repeated invalid action: retrieve and cache; no model input changes in the AMM-only config."""
        return self._cache("T3", traj)

    def critic_evidence(self, traj: Trajectory) -> InjectionResult:
        """Full system: the cached T3 (else T2) records as a Critic block; the cache is consumed."""
        trigger: MemoryTrigger = "T3" if self.cache.get("T3") else "T2"
        records = self.cache.pop(trigger, [])
        return self._block(traj, trigger, records, "critic")


class Amm:
    """AMM for a run (one per worker process): owns the store, hands out per-episode hooks."""

    def __init__(self, cfg: AmmConfig, store: BulkStore | None = None) -> None:
        self.cfg = cfg
        self.store = store if store is not None else open_store(cfg)

    def episode(self, episode_id: str, sink: EventSink, warmup: bool = False) -> AmmHooks:
        """Hooks for one episode; frozen mode writes only during warm-up episodes."""
        writable = warmup or self.cfg.mode == "online"
        return AmmHooks(self.cfg, self.store, sink, episode_id, writable)

    def close(self) -> None:
        self.store.close()
