"""The embedded imitation Swift: a hashed-feature listwise linear ranker (paper §3, Swift on CPU).

SwiftSage's Swift is a fine-tuned Flan-T5 that generates the next action (``swift/t5.py``). This is
the default stand-in that needs no GPU and no download: a linear scorer over the valid actions,
trained by listwise imitation of gold trajectories (``fastslow train swift``). Its ~2 MB float16
weights ship inside the package (``swift/weights/imitation.npz``). The confidence of a proposal is the softmax
probability of the top candidate over all valid actions; retrieved AMM memories enter the score as
dense features (``features.DENSE``: exact match with a success / near-miss / avoidance action and word
overlap with good actions).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from fastslow.core.proposal import MemoryHint, Proposal, RankedAction
from fastslow.core.semantics import WorldSemantics
from fastslow.core.trajectory import Trajectory
from fastslow.errors import UsageError
from fastslow.swift.features import (
    DENSE,
    ActionTable,
    FloatArray,
    Scratch,
    SwiftState,
    h,
    linear_scores,
)

ARTIFACT = "imitation.npz"

#: Weights of the memory features that ``fastslow train swift`` writes. Gold trajectories carry no
#: memories, so imitation cannot learn them; these are set by hand (a success memory's action a strong
#: hint, an avoidance one a strong veto, a near-miss a weak hint) until ``fastslow train swift-memory``
#: fits them from a warm-up's store, as the packaged model's are (docs/swift.md 2c, 2g).
MEMORY_WEIGHTS = {"mem_success": 3.0, "mem_near_miss": 1.0, "mem_avoid": -4.0, "mem_overlap": 1.0}


def dense_global_index(name: str, buckets: int) -> int:
    """Index of the global weight of a dense feature in a weight vector of ``buckets`` (same hashing
    as ``feature_index``)."""
    col = np.uint64(DENSE.index(name) + 1)
    with np.errstate(over="ignore"):
        return int((col * np.uint64(0x9E3779B97F4A7C15)) % np.uint64(buckets))


@dataclass
class SwiftWeights:
    w: FloatArray
    focus_words: dict[str, set[str]] = field(default_factory=dict)
    """Per task: words of the objects that gold paths focus on (the focus rule, ``swift/policy.py``)."""
    meta: dict[str, object] = field(default_factory=dict)

    @property
    def evidence(self) -> bool:
        """Whether the model was trained with the evidence keys (``features.evidence_keys``)."""
        return bool(self.meta.get("evidence", False))

    @property
    def states(self) -> bool:
        """Whether the model was trained with the object-state keys (``features.object_state_keys``)."""
        return bool(self.meta.get("object_states", False))

    def save(self, path: Path) -> None:
        payload = {"focus_words": {k: sorted(v) for k, v in self.focus_words.items()}, "meta": self.meta}
        w16 = self.w.astype(np.float16)
        with path.open("wb") as fh:
            np.savez_compressed(fh, w=w16, info=np.frombuffer(json.dumps(payload).encode(), dtype=np.uint8))

    @classmethod
    def load(cls, path: Path | None = None) -> SwiftWeights:
        """Load weights from ``path``, or the artifact shipped in the package."""
        if path is None:
            ref = resources.files("fastslow.swift") / "weights" / ARTIFACT
            if not ref.is_file():
                raise UsageError("the packaged Swift model is missing; build it with `fastslow train swift`")
            with ref.open("rb") as fh:
                return cls._from(np.load(fh))
        if not path.is_file():
            raise UsageError(f"Swift model not found: {path}")
        with path.open("rb") as fh:
            return cls._from(np.load(fh))

    @classmethod
    def _from(cls, arrays: np.lib.npyio.NpzFile) -> SwiftWeights:
        payload = json.loads(bytes(arrays["info"]).decode())
        w = arrays["w"].astype(np.float32)
        if len(w) < 2 or len(w) & (len(w) - 1):
            raise UsageError(f"Swift weights of {len(w)} buckets: a weights file holds a power of two")
        return cls(
            w,
            {k: set(v) for k, v in payload["focus_words"].items()},
            payload["meta"],
        )


class ImitationSwift:
    """The default ``Proposer``: ranks every valid action with the imitation-trained linear model."""

    name = "imitation"

    def __init__(
        self, weights: SwiftWeights | None = None, top_k: int = 5, *, box_features: bool = True
    ) -> None:
        self.weights = weights if weights is not None else SwiftWeights.load()
        self.top_k = top_k
        self.box_features = box_features
        """Fill the answer-box feature columns (``answer_box``; hand-written task logic, trained with
        them): ``make_proposer`` sets it from ``procedures.enabled``."""
        self.table: ActionTable | None = None
        """Made for the world of the first state scored (``table_for``)."""
        self.scratch = Scratch()

    def table_for(self, semantics: WorldSemantics) -> ActionTable:
        """The action table reading actions with ``semantics`` (a new one when the world changes)."""
        if self.table is None or self.table.semantics is not semantics:
            if self.table is not None:  # the kept sums index the old table's actions
                self.scratch = Scratch()
            self.table = ActionTable(semantics)
        return self.table

    def score_state(self, state: SwiftState, semantics: WorldSemantics) -> FloatArray:
        """Model score of every valid action of ``state`` (same order), read with ``semantics``."""
        table = self.table_for(semantics)
        ids = table.ids(state.valid_actions)
        w = self.weights
        return linear_scores(table, ids, state, w.w, self.box_features, self.scratch, w.evidence, w.states)

    def state_of(self, traj: Trajectory, memories: Sequence[MemoryHint] | None = None) -> SwiftState:
        state = SwiftState.from_trajectory(traj)
        if memories:
            state.memories = [(m.action, m.observation, m.tag) for m in memories]
        return state

    def propose(self, traj: Trajectory, memories: Sequence[MemoryHint] | None = None) -> Proposal:
        state = self.state_of(traj, memories)
        if not state.valid_actions:
            return Proposal((), 0.0)
        return ranked(state.valid_actions, self.score_state(state, traj.semantics), self.top_k)


def ranked(actions: Sequence[str], scores: FloatArray, top_k: int) -> Proposal:
    """Top-k candidates and the softmax probability of the best one over all actions."""
    finite = np.isfinite(scores)
    if not finite.any():
        return Proposal((), 0.0)
    k = min(top_k, int(finite.sum()))
    # The k best in a stable order (ties by position, as a stable argsort of all of them), sorting
    # only the scores at or above the k-th best instead of all ~3,000.
    kth = np.partition(scores, len(scores) - k)[len(scores) - k]
    best = np.flatnonzero(scores >= kth)
    order = best[np.argsort(-scores[best], kind="stable")][:k]
    top = float(scores[order[0]])
    probs = np.exp(scores[finite] - top)
    confidence = float(1.0 / probs.sum())
    return Proposal(tuple(RankedAction(actions[i], float(scores[i])) for i in order), confidence)


def task_key(task_name: str) -> int:
    return h("t:" + task_name)
