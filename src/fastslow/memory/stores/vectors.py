"""Stored record vectors for AMM's hybrid ranking (paper §3.1; the authors' Letta archival search).

Letta embeds every archival passage when it is inserted and ranks a query by vector similarity beside
full-text BM25. The stores do the same: with an embedder, ``add_many`` computes each record's vector
from ``MemoryRecord.search_text`` and stores it with the row (float32 bytes, with the embedder's name, so
vectors of two models are never compared). A store keeps the vectors it has read in one in-memory
``VectorIndex`` and reads only rows newer than the last it saw, so a search costs one matrix product,
not a table scan. Rows without a vector of this embedder (written before hybrid ranking, or by a run
ranking with BM25 alone) get one when the index first reads them, written back unless the store is
read-only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fastslow.errors import ModelUnavailableError
from fastslow.memory.config import RetrievalConfig
from fastslow.memory.stores.base import MemoryStoreError
from fastslow.models.embeddings import Embedder, FloatArray, default_embedder

EMBED_BATCH = 256
"""Records embedded per model call when vectors are computed for many rows (bulk loads, backfills)."""


def embedder_for(cfg: RetrievalConfig) -> Embedder | None:
    """The embedder a store needs for this retrieval config: None for BM25 ranking, else the process's
    shared cached embedder of ``cfg.embedder`` (``auto``: MiniLM when the ``embed`` extra is
    installed, else the lexical stand-in)."""
    if cfg.ranking != "hybrid":
        return None
    return default_embedder(cfg.embedder)


def to_blob(vector: FloatArray) -> bytes:
    """A vector as the bytes a store keeps (little-endian float32)."""
    return np.ascontiguousarray(vector, dtype="<f4").tobytes()


def from_blob(blob: bytes | memoryview | None, dim: int) -> FloatArray | None:
    """The stored vector, or None if the bytes are missing or not ``dim`` float32 values."""
    if blob is None:
        return None
    raw = bytes(blob)
    if len(raw) != 4 * dim:
        return None
    out: FloatArray = np.frombuffer(raw, dtype="<f4").astype(np.float32)
    return out


def encode_in_batches(embedder: Embedder, texts: Sequence[str], batch: int = EMBED_BATCH) -> FloatArray:
    """``embedder.encode`` over ``texts`` a batch at a time (bounded memory for large loads).

    A model that cannot load is a ``MemoryStoreError``: the hooks then fall back as for any store
    failure (memory is informational, it must not end an episode)."""
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    try:
        parts = [embedder.encode(list(texts[i : i + batch])) for i in range(0, len(texts), batch)]
    except ModelUnavailableError as exc:
        raise MemoryStoreError(f"embedder {embedder.name}: {exc}") from exc
    return np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)


class VectorIndex:
    """The vectors of a store's records in memory, with each record's task and tag for filtering.

    Brute force: one matrix product over every vector per search. At 100k records of 384 dimensions that
    is a few milliseconds (``fastslow bench memory``), simpler and exact where an approximate index
    would be neither.
    """

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.cursor = 0
        """The store's position after the newest row read (SQLite rowid, PostgreSQL ``seq``)."""
        self._ids: list[str] = []
        self._known: set[str] = set()
        self._tasks: list[str] = []
        self._tags: list[str] = []
        self._rows: list[FloatArray] = []
        self._matrix: FloatArray | None = None
        self._task_arr: np.ndarray | None = None
        self._tag_arr: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, rec_id: object) -> bool:
        return rec_id in self._known

    def extend(
        self, ids: Sequence[str], tasks: Sequence[str], tags: Sequence[str], vectors: FloatArray
    ) -> None:
        """Add records; an id already held is skipped (a store may read a row twice, see postgres)."""
        for rec_id, task, tag, vector in zip(ids, tasks, tags, vectors, strict=True):
            if rec_id in self._known:
                continue
            self._known.add(rec_id)
            self._ids.append(rec_id)
            self._tasks.append(task)
            self._tags.append(tag)
            self._rows.append(vector)
        self._matrix = None  # rebuilt on the next search: appends are batched per sync, not per row

    def discard(self, ids: set[str]) -> None:
        """Forget deleted records (their rows are gone; a search must not return their ids)."""
        keep = [i for i, rid in enumerate(self._ids) if rid not in ids]
        if len(keep) == len(self._ids):
            return
        self._ids = [self._ids[i] for i in keep]
        self._known -= ids
        self._tasks = [self._tasks[i] for i in keep]
        self._tags = [self._tags[i] for i in keep]
        self._rows = [self._rows[i] for i in keep]
        self._matrix = None

    def _build(self) -> FloatArray:
        if self._matrix is None:
            self._matrix = (
                np.vstack(self._rows).astype(np.float32, copy=False)
                if self._rows
                else np.zeros((0, self.dim), dtype=np.float32)
            )
            self._task_arr = np.asarray(self._tasks, dtype=object)
            self._tag_arr = np.asarray(self._tags, dtype=object)
        return self._matrix

    def top(
        self, query: FloatArray, k: int, tags: Sequence[str] | None = None, task: str | None = None
    ) -> list[str]:
        """Ids of the ``k`` records most similar to ``query`` (cosine: the vectors are normalised),
        optionally only these tags / this task; ties keep the order the records were written in."""
        matrix = self._build()
        if k <= 0 or not len(matrix):
            return []
        # einsum, not BLAS: a matrix-vector product is memory-bound, and BLAS's thread pool, spinning on
        # a busy machine (the other workers, ScienceWorld's JVMs), cost 15-25 ms on 500 rows where one
        # thread needs well under one (measured on the 2-core machine).
        scores = np.einsum("ij,j->i", matrix, np.asarray(query, dtype=np.float32))
        mask = np.ones(len(scores), dtype=bool)
        if task and self._task_arr is not None:
            mask &= self._task_arr == task
        if tags and self._tag_arr is not None:
            mask &= np.isin(self._tag_arr, list(tags))
        candidates = np.flatnonzero(mask)
        if not len(candidates):
            return []
        sub = -scores[candidates]
        if len(sub) > k:  # only the best k need sorting: a partition first keeps 100k records cheap
            best = np.argpartition(sub, k - 1)[:k]
            sub_order = best[np.lexsort((best, sub[best]))]
        else:
            sub_order = np.lexsort((np.arange(len(sub)), sub))
        return [self._ids[i] for i in candidates[sub_order]]
