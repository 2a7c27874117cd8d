"""AMM trigger-driven retrieval (paper §3.1): a full-text query built from the current state.

The query is the situation the agent is in - its last action and observation, room, inventory and
task - so records of similar situations rank first. Records of the current task come first; other
tasks fill up the remaining slots (same ScienceWorld topics share objects and rooms). Results are
deduplicated on (action, observation) so k slots hold k different pieces of evidence.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from fastslow.core.trajectory import Trajectory
from fastslow.events import EventSink, MemoryRetrieval, MemoryTrigger
from fastslow.memory.config import RetrievalConfig
from fastslow.memory.records import MemoryRecord, inventory_summary
from fastslow.memory.stores.base import MemoryStore


def state_query(traj: Trajectory) -> str:
    """Free-text query for the current state, most specific words first (the store keeps the first N)."""
    cur = traj.current
    last = traj.turns[-1] if traj.turns else None
    parts = [
        last.action if last else "",
        cur.observation[:200],
        traj.room,
        inventory_summary(cur.inventory),
        cur.task_description or traj.task_description,
    ]
    return " ".join(p for p in parts if p)


def dedup_key(record: MemoryRecord) -> tuple[str, str]:
    return (record.action.strip().lower(), " ".join(record.observation.lower().split())[:80])


class MemoryRetriever:
    """Searches the store when a trigger fires and logs a ``MemoryRetrieval`` event."""

    def __init__(self, store: MemoryStore, cfg: RetrievalConfig, sink: EventSink) -> None:
        self.store = store
        self.cfg = cfg
        self.sink = sink

    def retrieve(
        self, trigger: MemoryTrigger, traj: Trajectory, k: int, tags: Sequence[str], rung: str = ""
    ) -> list[MemoryRecord]:
        """Up to ``k`` distinct records with one of ``tags``; raises ``MemoryStoreError`` on store failure."""
        start = time.perf_counter()
        query = state_query(traj)
        found: list[MemoryRecord] = []
        if self.cfg.same_task_first:
            found = self.store.search(query, tags=tags, task=traj.task_name, k=k)
        if len(found) < k:
            # Over-fetch: some of the cross-task hits may duplicate what the task search returned.
            found += self.store.search(query, tags=tags, task=None, k=2 * k)
        records: list[MemoryRecord] = []
        seen_ids: set[str] = set()
        seen_keys: set[tuple[str, str]] = set()
        for record in found:
            key = dedup_key(record)
            if record.id in seen_ids or key in seen_keys:
                continue
            seen_ids.add(record.id)
            seen_keys.add(key)
            records.append(record)
            if len(records) >= k:
                break
        self.sink.emit(
            MemoryRetrieval(
                step=traj.current.steps,
                trigger=trigger,
                rung=rung,
                n=len(records),
                ids=[r.id for r in records],
                latency_ms=round((time.perf_counter() - start) * 1000, 3),
            )
        )
        return records
