"""AMM trigger-driven retrieval (paper §3.1): a full-text query built from the current state.

The query is the situation the agent is in - its last action and observation, room, inventory and
task - so records of similar situations rank first. Records of the current task come first; other
tasks fill up the remaining slots (same ScienceWorld topics share objects and rooms). Results are
deduplicated on (action, observation) so k slots hold k different pieces of evidence.

Two rankings (``amm.retrieval.ranking``): ``bm25``, full-text BM25 alone, and ``hybrid``, the authors'
Letta archival search: a BM25 list and a list by similarity of the records' stored embedding vectors,
fused by weighted reciprocal rank (``rrf_fuse``: a record at rank r of a list scores ``w / (k + r)``,
k=60, weights 0.5/0.5, as Letta's ``_reciprocal_rank_fusion``). The paper configurations rank hybrid
over every record (``filter_tags`` and ``same_task_first`` off), so a trigger's tags shape only its
query wording; the fast pathway keeps BM25 with the tag filter and the current task first.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from fastslow.core.trajectory import Trajectory
from fastslow.events import EventSink, MemoryRetrieval, MemoryTrigger
from fastslow.memory.config import RetrievalConfig
from fastslow.memory.records import MemoryRecord, inventory_summary
from fastslow.memory.stores.base import MemoryStore
from fastslow.memory.stores.vectors import embedder_for


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


@dataclass(frozen=True)
class QueryIntent:
    """What one of the authors' searches asks for: the lines that tell their rungs apart."""

    issue: str
    scope: str
    hint: str
    intent: str
    zero_scores: bool = False
    """The Critic's searches show rewards and score as 0 (their ``retrieve_for_critic``)."""


_SUCCESS = QueryIntent(
    "swift_failure",
    "subgoal_focus, terminal_task_completion",
    "episodic_success",
    "Swift has no valid next action: steps that completed a subgoal or the task in a similar state.",
)
_SUCCESS_NEAR_MISS = QueryIntent(
    "swift_failure",
    "subgoal_focus, terminal_task_completion, partial",
    "episodic_success, episodic_nearmiss",
    "Swift has no valid next action: steps that completed a subgoal or the task, or made partial "
    "progress, in a similar state.",
)
_AVOIDANCE = QueryIntent(
    "repeated_invalid_action",
    "avoidance, failure_pattern",
    "episodic_failure, episodic_nearmiss",
    "An action was refused or repeated to no effect: steps that warn against it and what worked instead.",
)
_STAGNATION = {
    rung: replace(
        base,
        issue="stagnation_no_progress",
        intent="The score has not risen for several steps: " + base.intent.split(": ", 1)[1],
    )
    for rung, base in (("success", _SUCCESS), ("success+near-miss", _SUCCESS_NEAR_MISS), ("", _SUCCESS))
}
QUERY_INTENTS: dict[tuple[str, str], QueryIntent] = {
    ("T1", "success"): _SUCCESS,
    ("T1", "success+near-miss"): _SUCCESS_NEAR_MISS,
    **{("T2", rung): intent for rung, intent in _STAGNATION.items()},
    ("T2", "critic"): replace(
        _SUCCESS_NEAR_MISS,
        issue="critic_stagnation",
        intent="The agent is stuck and needs a correction now: steps that broke a no-effect loop "
        "and the next admissible action that made progress.",
        zero_scores=True,
    ),
    ("T2", "critic-avoidance"): replace(
        _AVOIDANCE,
        issue="critic_stagnation_avoidance",
        intent="The agent repeats refused or no-effect actions: what not to repeat and a safer next action.",
        zero_scores=True,
    ),
    ("T3", ""): _AVOIDANCE,
    ("T4", ""): _SUCCESS_NEAR_MISS,
    ("T4", "avoidance"): _AVOIDANCE,
}
"""The authors' query of each (trigger, rung): their T4 reuses T1's success + near-miss query, their
T3 and T4-avoidance searches the avoidance query (``amm/retrieval.py``'s builders; our wording)."""


def authors_query(traj: Trajectory, trigger: str, rung: str) -> str:
    """``amm.retrieval.query: authors``: the structured search text of the authors' query builders for
    this trigger's rung (``QUERY_INTENTS``; a pair not listed uses the success + near-miss lines)."""
    intent = QUERY_INTENTS.get((trigger, rung), _SUCCESS_NEAR_MISS)
    cur = traj.current
    recent = traj.recent(5)
    rewards = [0.0] if intent.zero_scores else [float(t.reward) for t in recent]
    score = 0.0 if intent.zero_scores else float(cur.score)
    task = " ".join((cur.task_description or traj.task_description).split()).replace('"', '\\"')
    lines = [
        f'TASK: "{task}"',
        f"STATE: room={traj.room}; inventory=[{inventory_summary(cur.inventory, limit=400)}]; "
        f"recent_reward={json.dumps(rewards)}; current_score={score};",
        f'ACTION_CONTEXT: "{intent.intent}"',
        f"RECENT_ACTIONS: {json.dumps([t.action for t in recent])}",
        f"RECENT_OBS: {json.dumps([t.observation for t in recent])}",
        f'ISSUE: "{intent.issue}"',
        f"TAG_SCOPE: {intent.scope}",
        f"TAGS_HINT: {intent.hint}",
    ]
    return "\n".join(lines) + "\n"


def rrf_fuse(
    lists: Sequence[Sequence[MemoryRecord]], weights: Sequence[float], k: int, rrf_k: int = 60
) -> list[MemoryRecord]:
    """Weighted reciprocal rank fusion of ranked record lists: the best ``k``.

    A record at rank r (from 1) of list i adds ``weights[i] / (rrf_k + r)``; one missing from a list
    adds nothing there. Ties keep the order of first appearance (the first list first), so with equal
    weights a record both lists rank equally follows the first list's order.
    """
    scores: dict[str, float] = {}
    by_id: dict[str, MemoryRecord] = {}
    for ranked, weight in zip(lists, weights, strict=True):
        for rank, record in enumerate(ranked, start=1):
            by_id.setdefault(record.id, record)
            scores[record.id] = scores.get(record.id, 0.0) + weight / (rrf_k + rank)
    order = sorted(scores, key=lambda rid: -scores[rid])  # stable: first appearance breaks ties
    return [by_id[rid] for rid in order[:k]]


def hybrid_search(
    store: MemoryStore,
    query: str,
    tags: Sequence[str] | None,
    task: str | None,
    k: int,
    cfg: RetrievalConfig,
) -> list[MemoryRecord]:
    """The authors' Letta archival search on our store: the BM25 list and the embedding list (each
    ``max(k, rrf_depth)`` long, the embedding one listed first as Letta does) fused by ``rrf_fuse``."""
    depth = max(k, cfg.rrf_depth)
    vector = store.vector_search(query, tags=tags, task=task, k=depth)
    lexical = store.search(query, tags=tags, task=task, k=depth)
    return rrf_fuse([vector, lexical], [cfg.vector_weight, cfg.fts_weight], k, cfg.rrf_k)


def writer_name(record_episode: str, own_key: str) -> str:
    """The episode that wrote a record (its ``episode_id``, a ``<run_id>/<episode>`` key), named
    relative to the run of the episode reading it (``own_key``, its own key): ``13-0027`` for an
    evaluation episode of that run, ``warmup/13-0001`` for its warm-up, the whole key for another run's
    record (a store shared on purpose). Outside a run (no run id) keys are bare and stay as they are."""
    run, sep, _ = own_key.partition("/")
    prefix = f"{run}/" if sep else ""
    return (
        record_episode.removeprefix(prefix)
        if prefix and record_episode.startswith(prefix)
        else record_episode
    )


def dedup_key(record: MemoryRecord) -> tuple[str, str]:
    return (record.action.strip().lower(), " ".join(record.observation.lower().split())[:80])


QUERIES: dict[str, Callable[[Trajectory, str, str], str]] = {
    "state": lambda traj, trigger, rung: state_query(traj),
    "authors": authors_query,
}
"""The search texts by ``amm.retrieval.query``: (trajectory, trigger, rung) -> query."""


class MemoryRetriever:
    """Searches the store when a trigger fires and logs a ``MemoryRetrieval`` event."""

    def __init__(
        self, store: MemoryStore, cfg: RetrievalConfig, sink: EventSink, provenance: str | None = None
    ) -> None:
        self.store = store
        self.cfg = cfg
        self.sink = sink
        self.provenance = provenance
        """The reading episode's own key (``amm.provenance`` on): each event then names the writer of
        every record it returns (``writer_name``); None: no ``writers`` in the events."""
        if cfg.ranking == "hybrid" and store.embedder is None:
            # A store handed in without one (tests, tools): hybrid ranking needs the vectors.
            store.embedder = embedder_for(cfg)

    def search(self, query: str, tags: Sequence[str] | None, task: str | None, k: int) -> list[MemoryRecord]:
        """One ranked search with the configured ranking (``bm25`` or ``hybrid``)."""
        if self.cfg.ranking == "hybrid":
            return hybrid_search(self.store, query, tags, task, k, self.cfg)
        return self.store.search(query, tags=tags, task=task, k=k)

    def retrieve(
        self,
        trigger: MemoryTrigger,
        traj: Trajectory,
        k: int,
        tags: Sequence[str],
        rung: str = "",
        query: str | None = None,
        filter_tags: bool | None = None,
    ) -> list[MemoryRecord]:
        """Up to ``k`` distinct records with one of ``tags`` (any tag when ``filter_tags`` is off);
        raises ``MemoryStoreError`` on store failure.

        ``query``: the search text, e.g. a rung's own wording (the authors' rungs differ only in it);
        None = ``state_query(traj)``. ``filter_tags``: this call's choice, None = ``cfg.filter_tags``.
        """
        start = time.perf_counter()
        if query is None:
            query = QUERIES[self.cfg.query](traj, trigger, rung)
        use_filter = self.cfg.filter_tags if filter_tags is None else filter_tags
        wanted = tags if use_filter else None
        found: list[MemoryRecord] = []
        if self.cfg.same_task_first:
            found = self.search(query, wanted, traj.task_name, k)
        if len(found) < k:
            # Over-fetch: some of the cross-task hits may duplicate what the task search returned.
            found += self.search(query, wanted, None, 2 * k)
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
                writers=(
                    [writer_name(r.episode_id, self.provenance) for r in records]
                    if self.provenance is not None
                    else None
                ),
            )
        )
        return records
