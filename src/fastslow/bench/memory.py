"""``fastslow bench memory``: AMM store retrieval latency at 1k, 10k and 100k records (paper §3.1).

Retrieval sits on the decision path (T1 fires before a Swift retry, T4 before every Sage plan), so it
must cost milliseconds, not an LLM call. The records are synthetic but ScienceWorld-shaped (real task
names, rooms, verbs and objects, typical observation sentences: ScienceWorld's ``World.sample_text``;
the paper's tag mix: mostly near-miss), and every query is a retriever-style call: state words, a task
filter and a tag filter, k=5.

``hybrid`` (the paper configurations' retrieval profile, configs/amm.yaml) is timed beside it: the same
records with their stored embedding vectors, every query an unfiltered call as the authors' Letta search
is (BM25 list + embedding list, reciprocal rank fusion, k=5), query embedding included, and every query
in the shape of their structured query (``retrieval.authors_query``: about 90 distinct content words,
all of which the BM25 half reads, ``amm.retrieval.query_terms``).
Embedding 100k records with MiniLM on a CPU takes minutes, so the bench keeps the record vectors it
computed in ``$XDG_CACHE_HOME/fastslow/bench-memory/`` (chunk files, resumable); later runs only load
them. Query vectors are never cached: each timed search embeds its query afresh.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from fastslow.config import load_config
from fastslow.env.bench import SampleText
from fastslow.env.config import DEFAULT_WORLD
from fastslow.env.world import World, get_world
from fastslow.memory.config import RetrievalConfig
from fastslow.memory.records import MemoryRecord, Tag
from fastslow.memory.retrieval import QUERY_INTENTS, hybrid_search
from fastslow.memory.stores import BulkStore, open_location
from fastslow.memory.stores.base import MemoryStoreError
from fastslow.memory.stores.vectors import encode_in_batches
from fastslow.models.embeddings import (
    Embedder,
    EmbedderKind,
    FloatArray,
    LexicalEmbedder,
    MiniLMEmbedder,
    minilm_available,
)

SIZES = (1_000, 10_000, 100_000)
TAG_MIX: tuple[tuple[Tag, str, float], ...] = (
    ("near-miss", "progress", 0.6),
    ("success", "milestone", 0.15),
    ("success", "focus", 0.05),
    ("avoidance", "invalid-action", 0.2),
)


def scienceworld_text() -> tuple[World, SampleText]:
    """ScienceWorld and its ``sample_text`` (objects, verbs, observation templates, rooms): what the
    synthetic records and queries are drawn from."""
    world = get_world(DEFAULT_WORLD)
    text = world.sample_text
    if text is None:  # ScienceWorld's World always has one
        raise RuntimeError(f"world {world.name} offers no sample text")
    return world, text


def synthetic_records(n: int, seed: int = 0, episode_prefix: str = "bench") -> Iterator[MemoryRecord]:
    """``n`` ScienceWorld-shaped records (module docstring), the same ones for the same ``seed``."""
    rng = random.Random(seed)
    world, text = scienceworld_text()
    tasks = world.tasks()
    weights = [w for _, _, w in TAG_MIX]
    for i in range(n):
        task = rng.choice(tasks)
        obj, other = rng.sample(text.objects, 2)
        verb = rng.choice(text.verbs)
        tag, subtag, _ = rng.choices(TAG_MIX, weights)[0]
        before = rng.randrange(0, 90)
        after = before if tag == "avoidance" else before + rng.choice((8, 17, 25))
        yield MemoryRecord(
            task_id=task.task_id,
            task_name=task.name,
            task_family=world.family(task.task_id),
            episode_id=f"{episode_prefix}-{task.task_id}-{i // 50}",
            step=i % 50 + 1,
            room=rng.choice(text.rooms),
            inventory=", ".join(rng.sample(text.objects, rng.randrange(0, 3))) or "empty",
            recent=(text.recent_move.format(room=rng.choice(text.rooms), other=rng.choice(text.rooms)),),
            action=f"{verb} {obj}",
            observation=rng.choice(text.observations).format(o=obj, p=other),
            score_before=before,
            score_after=after,
            tag=tag,
            subtag=subtag,
        )


def synthetic_queries(n: int, seed: int = 1) -> list[tuple[str, str, tuple[str, ...]]]:
    """(state text, task name, tags) triples shaped like the retriever's T1/T4 calls."""
    rng = random.Random(seed)
    world, sample = scienceworld_text()
    names = [t.name for t in world.tasks()]
    tag_sets: tuple[tuple[str, ...], ...] = (("success",), ("success", "near-miss"))
    out = []
    for _ in range(n):
        obj, other = rng.sample(sample.objects, 2)
        text = (
            f"{rng.choice(sample.verbs)} {obj} {rng.choice(sample.observations).format(o=obj, p=other)} "
            f"{rng.choice(sample.rooms)} {other} {rng.choice(names).replace('-', ' ')}"
        )
        out.append((text, rng.choice(names), rng.choice(tag_sets)))
    return out


def structured_queries(n: int, seed: int = 2) -> list[str]:
    """Search texts shaped like the paper profile's (``retrieval.authors_query``): task, state line,
    intent lines of a rung, the last five actions and observations."""
    rng = random.Random(seed)
    world, sample = scienceworld_text()
    names = [t.name for t in world.tasks()]
    intents = list(QUERY_INTENTS.values())
    out = []
    for _ in range(n):
        objs = rng.sample(sample.objects, 7)
        intent = rng.choice(intents)
        task = rng.choice(names).replace("-", " ")
        actions = [f"{rng.choice(sample.verbs)} {o}" for o in objs[:5]]
        obs = [rng.choice(sample.observations).format(o=o, p=objs[5]) for o in objs[:5]]
        description = sample.task_description.format(
            task=task, o=objs[5], p=objs[6], room=rng.choice(sample.rooms)
        )
        out.append(
            "\n".join(
                [
                    f'TASK: "{description}"',
                    f"STATE: room={rng.choice(sample.rooms)}; inventory=[{objs[6]}]; "
                    "recent_reward=[0.0, 0.0]; current_score=0.0;",
                    f'ACTION_CONTEXT: "{intent.intent}"',
                    f"RECENT_ACTIONS: {json.dumps(actions)}",
                    f"RECENT_OBS: {json.dumps(obs)}",
                    f'ISSUE: "{intent.issue}"',
                    f"TAG_SCOPE: {intent.scope}",
                    f"TAGS_HINT: {intent.hint}",
                ]
            )
        )
    return out


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def latency_summary(runs: list[list[float]]) -> dict[str, float]:
    """p50 / p95 / max over queries of each query's best time across ``runs`` (repeats of the same
    query list), and the p95 of the first run alone (cold-ish caches)."""
    times = [min(per_query) for per_query in zip(*runs, strict=True)]
    return {
        "p50_ms": round(statistics.median(times), 3),
        "p95_ms": round(_percentile(times, 0.95), 3),
        "max_ms": round(max(times), 3),
        "p95_single_ms": round(_percentile(runs[0], 0.95), 3),
    }


def time_searches(
    store: BulkStore, queries: list[tuple[str, str, tuple[str, ...]]], k: int = 5
) -> list[float]:
    times = []
    for text, task, tags in queries:
        start = time.perf_counter()
        store.search(text, tags=tags, task=task, k=k)
        times.append((time.perf_counter() - start) * 1000)
    return times


def bench_store(
    store: BulkStore,
    sizes: tuple[int, ...],
    n_queries: int,
    progress: Callable[[str], None],
    repeats: int = 3,
) -> dict[str, Any]:
    """Grow the store to each size and time ``n_queries`` searches; latency in ms.

    Each query runs ``repeats`` times and its latency is the fastest run: on a shared machine a single
    pass also measures whoever else had the CPU. The first pass's p95 is reported too (``p95_single_ms``).
    """
    out: dict[str, Any] = {}
    loaded = 0
    queries = synthetic_queries(n_queries)
    time_searches(store, queries[: min(20, n_queries)])  # warm caches and the query planner
    for size in sizes:
        start = time.perf_counter()
        loaded += store.add_many(synthetic_records(size - loaded, seed=size))
        load_s = time.perf_counter() - start
        runs = [time_searches(store, queries) for _ in range(max(repeats, 1))]
        row = {"records": store.count(), **latency_summary(runs), "load_s": round(load_s, 2)}
        out[str(size)] = row
        progress(
            f"  {size:>7} records: p50 {row['p50_ms']} ms, p95 {row['p95_ms']} ms "
            f"(single pass p95 {row['p95_single_ms']} ms; load {row['load_s']} s)"
        )
    return out


# -- hybrid ranking ------------------------------------------------------------------------------------
CACHE_CHUNK = 2048
"""Record vectors per cache file: an interrupted build keeps every finished chunk."""


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "fastslow" / "bench-memory"


def bench_embedder(kind: EmbedderKind = "auto") -> Embedder:
    """The embedder the hybrid bench uses, uncached (a query must cost its model call)."""
    if kind == "auto":
        kind = "minilm" if minilm_available() else "lexical"
    return MiniLMEmbedder(torch_threads=1) if kind == "minilm" else LexicalEmbedder()


class Precomputed:
    """An embedder serving known texts from a table (the bench's cached record vectors) and sending any
    other text - the queries - to the real model, uncached."""

    def __init__(self, inner: Embedder, table: dict[str, FloatArray]) -> None:
        self.inner = inner
        self.table = table

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    def encode(self, texts: Sequence[str]) -> FloatArray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        unknown = [i for i, t in enumerate(texts) if t not in self.table]
        for i, text in enumerate(texts):
            if text in self.table:
                out[i] = self.table[text]
        if unknown:
            out[unknown] = self.inner.encode([texts[i] for i in unknown])
        return out


def cached_vectors(
    embedder: Embedder, n: int, seed: int, progress: Callable[[str], None]
) -> tuple[list[MemoryRecord], FloatArray, float]:
    """The ``n`` synthetic records of ``seed`` and their vectors, from the cache or computed (and
    cached chunk by chunk); returns the seconds spent computing (0.0 when all came from the cache)."""
    records = list(synthetic_records(n, seed=seed))
    texts = [r.search_text() for r in records]
    where = cache_dir() / f"{embedder.name}-n{n}-seed{seed}"
    where.mkdir(parents=True, exist_ok=True)
    parts: list[FloatArray] = []
    spent = 0.0
    for first in range(0, n, CACHE_CHUNK):
        chunk = where / f"{first:07d}.npy"
        want = texts[first : first + CACHE_CHUNK]
        if chunk.is_file():
            vectors = np.load(chunk)
            if vectors.shape == (len(want), embedder.dim):
                parts.append(vectors.astype(np.float32, copy=False))
                continue
        start = time.perf_counter()
        vectors = encode_in_batches(embedder, want)
        spent += time.perf_counter() - start
        tmp = chunk.with_suffix(".tmp.npy")
        np.save(tmp, vectors)
        tmp.replace(chunk)  # a chunk is either whole or absent
        parts.append(vectors)
        progress(f"    embedded {min(first + CACHE_CHUNK, n)}/{n} records ({spent:.0f} s so far)")
    return records, np.concatenate(parts) if parts else np.zeros((0, embedder.dim), np.float32), spent


def paper_retrieval() -> RetrievalConfig:
    """The paper configurations' retrieval profile (configs/amm.yaml's ``amm.retrieval``)."""
    return load_config("amm").amm.retrieval


def time_hybrid(store: BulkStore, queries: list[str], k: int = 5) -> list[float]:
    cfg = paper_retrieval()
    times = []
    for text in queries:
        start = time.perf_counter()
        hybrid_search(store, text, None, None, k, cfg)
        times.append((time.perf_counter() - start) * 1000)
    return times


def bench_hybrid(
    location: str,
    sizes: tuple[int, ...],
    n_queries: int,
    progress: Callable[[str], None],
    embedder_kind: EmbedderKind = "auto",
    repeats: int = 3,
    table: str = "amm_memories",
) -> dict[str, Any]:
    """Hybrid ranking at each size: record vectors stored with the rows (from the bench cache), each
    query an unfiltered hybrid search with its own query embedding; latency in ms."""
    inner = bench_embedder(embedder_kind)
    precomputed = Precomputed(inner, {})
    terms = paper_retrieval().query_terms
    store = open_location(location, table, embedder=precomputed, max_terms=terms)
    out: dict[str, Any] = {"embedder": inner.name, "query_terms": terms}
    try:
        loaded = 0
        queries = structured_queries(n_queries)
        for size in sizes:
            records, vectors, embed_s = cached_vectors(inner, size - loaded, size, progress)
            precomputed.table = {r.search_text(): v for r, v in zip(records, vectors, strict=True)}
            start = time.perf_counter()
            loaded += store.add_many(records)
            load_s = time.perf_counter() - start
            start = time.perf_counter()
            time_hybrid(store, queries[:1])  # the first search reads the new vectors into memory
            index_s = time.perf_counter() - start
            runs = [time_hybrid(store, queries) for _ in range(max(repeats, 1))]
            row = {
                "records": store.count(),
                **latency_summary(runs),
                "load_s": round(load_s, 2),
                "embed_s": round(embed_s, 1),
                "index_load_s": round(index_s, 2),
            }
            out[str(size)] = row
            progress(
                f"  {size:>7} records: p50 {row['p50_ms']} ms, p95 {row['p95_ms']} ms "
                f"(single pass p95 {row['p95_single_ms']} ms; load {row['load_s']} s, embedding "
                f"{row['embed_s']} s{' (cached)' if not embed_s else ''}, "
                f"first search {row['index_load_s']} s)"
            )
    finally:
        drop = getattr(store, "drop", None)
        if callable(drop):
            drop()
        store.close()
    return out


def write_records(location: str, n: int, seed: int, table: str = "amm_memories") -> int:
    """Worker of the concurrent-writers check: ``n`` single-record writes, as the write hook does them."""
    store = open_location(location, table)
    try:
        for record in synthetic_records(n, seed=seed, episode_prefix=f"writer{seed}"):
            store.add(record)
    finally:
        store.close()
    return n


def script_path() -> Path:
    return Path(__file__).resolve().parents[3] / "scripts" / "start-postgres.sh"


def start_postgres(workdir: Path) -> str:
    """A throwaway cluster via scripts/start-postgres.sh (source checkouts only); returns its DSN."""
    script = script_path()
    if not script.is_file():
        raise MemoryStoreError(f"no FASTSLOW_PG_DSN and no {script} to start a server")
    proc = subprocess.run(
        [str(script), "start", str(workdir)], capture_output=True, text=True, timeout=120, check=False
    )
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise MemoryStoreError(f"start-postgres.sh failed ({proc.returncode}): {tail}")
    return proc.stdout.strip().splitlines()[-1]


def stop_postgres(workdir: Path) -> None:
    subprocess.run([str(script_path()), "stop", str(workdir)], capture_output=True, timeout=60, check=False)


def bench_memory(
    sizes: tuple[int, ...] = SIZES,
    n_queries: int = 200,
    stores: tuple[str, ...] = ("sqlite", "postgres"),
    pg_dsn: str | None = None,
    progress: Callable[[str], None] = lambda _: None,
    rankings: tuple[str, ...] = ("bm25", "hybrid"),
    embedder: EmbedderKind = "auto",
) -> dict[str, Any]:
    result: dict[str, Any] = {"sizes": list(sizes), "queries": n_queries, "k": 5}
    with tempfile.TemporaryDirectory(prefix="fastslow-bench-memory-") as tmp:
        if "sqlite" in stores and "bm25" in rankings:
            progress("sqlite (FTS5 BM25, WAL)")
            store = open_location(str(Path(tmp) / "bench.sqlite"))
            try:
                result["sqlite"] = bench_store(store, sizes, n_queries, progress)
            finally:
                store.close()
        if "sqlite" in stores and "hybrid" in rankings:
            progress("sqlite hybrid (FTS5 BM25 + stored vectors, reciprocal rank fusion, no filters)")
            result["sqlite_hybrid"] = bench_hybrid(
                str(Path(tmp) / "bench-hybrid.sqlite"), sizes, n_queries, progress, embedder
            )
        if "postgres" in stores:
            progress("postgres (tsvector + GIN, ts_rank)")
            # The cluster directory sits directly under the system temp dir: initdb runs as the
            # postgres user, who cannot enter this process's private (0700) temp directory.
            pg_dir = Path(tempfile.mkdtemp(prefix="fastslow-bench-pg-"))
            result.update(_bench_postgres(sizes, n_queries, pg_dsn, pg_dir, progress, rankings, embedder))
    return result


def _bench_postgres(
    sizes: tuple[int, ...],
    n_queries: int,
    dsn: str | None,
    workdir: Path,
    progress: Callable[[str], None],
    rankings: tuple[str, ...] = ("bm25",),
    embedder: EmbedderKind = "auto",
) -> dict[str, Any]:
    """``{"postgres": ..., "postgres_hybrid": ...}`` for the rankings asked for."""
    started = False
    out: dict[str, Any] = {}
    try:
        dsn = dsn or os.environ.get("FASTSLOW_PG_DSN") or None
        if dsn is None:
            dsn = start_postgres(workdir)
            started = True
        table = f"bench_{os.getpid()}_{int(time.time())}"
        if "bm25" in rankings:
            store = open_location(dsn, table)
            try:
                out["postgres"] = bench_store(store, sizes, n_queries, progress)
            finally:
                drop = getattr(store, "drop", None)
                if callable(drop):
                    drop()
                store.close()
        if "hybrid" in rankings:
            progress("postgres hybrid (tsvector BM25 + stored vectors, reciprocal rank fusion, no filters)")
            out["postgres_hybrid"] = bench_hybrid(
                dsn, sizes, n_queries, progress, embedder, table=f"{table}_h"
            )
        return out
    except MemoryStoreError as exc:
        progress(f"  postgres unavailable: {exc}")
        # The part that failed (BM25 or hybrid) carries the error; a part that finished keeps its numbers.
        failed = "postgres_hybrid" if "postgres" in out else "postgres"
        return {**out, failed: {"error": str(exc)}}
    finally:
        if started:
            stop_postgres(workdir)  # stops the cluster and deletes its directory
        else:
            shutil.rmtree(workdir, ignore_errors=True)
