"""Hybrid ranking (``amm.retrieval.ranking: hybrid``): stored vectors on both real stores, the migration
of stores written before them, and the reciprocal rank fusion on records of real ScienceWorld episodes.

The embedder is the deterministic lexical stand-in (``models.embeddings.LexicalEmbedder``): the storage
and fusion code is the same for MiniLM, and these tests must not depend on a 90 MB model being installed.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from amm_helpers import play, start

from fastslow.config import load_config
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.eval.rundir import claim_run, memory_ranking, run_lock
from fastslow.events import ListSink, MemoryRetrieval
from fastslow.memory.config import AmmConfig, RetrievalConfig
from fastslow.memory.episode import Amm
from fastslow.memory.records import MemoryRecord
from fastslow.memory.retrieval import MemoryRetriever, authors_query, hybrid_search, rrf_fuse, state_query
from fastslow.memory.stores import BulkStore, MemoryStoreError
from fastslow.memory.stores import open_store as store_of
from fastslow.memory.stores.postgres import PostgresStore
from fastslow.memory.stores.sqlite import SqliteStore
from fastslow.memory.stores.vectors import embedder_for
from fastslow.models.embeddings import FloatArray, LexicalEmbedder

CHEMISTRY_MIX, FIND_NON_LIVING, LIFE_STAGES_2 = 2, 7, 13
GARBAGE = "xyzzy frobnicate the quux"
HYBRID = RetrievalConfig(ranking="hybrid", filter_tags=False, same_task_first=False, embedder="lexical")


class Counting(LexicalEmbedder):
    """The lexical stand-in, counting the texts it embeds (so a test sees what was read, not computed)."""

    def __init__(self) -> None:
        super().__init__()
        self.texts = 0

    def encode(self, texts: Sequence[str]) -> FloatArray:
        self.texts += len(texts)
        return super().encode(texts)


def open_store(
    location: str, table: str, embedder: LexicalEmbedder | None, readonly: bool = False
) -> BulkStore:
    if location.startswith("postgresql://"):
        return PostgresStore(location, table, embedder=embedder, readonly=readonly)
    return SqliteStore(location, embedder=embedder, readonly=readonly)


def stored_vectors(store: BulkStore) -> dict[str, tuple[bytes | None, str | None]]:
    """id -> (vec bytes, vec_model) read with SQL from either backend."""
    if isinstance(store, PostgresStore):
        rows = store._db.execute(f"SELECT id, vec, vec_model FROM {store.table}").fetchall()
    else:
        rows = store._db.execute("SELECT id, vec, vec_model FROM memories").fetchall()  # type: ignore[attr-defined]
    return {rid: (bytes(vec) if vec is not None else None, model) for rid, vec, model in rows}


@pytest.fixture(scope="module")
def real_records(env: ScienceWorldAdapter, tmp_path_factory: pytest.TempPathFactory) -> list[MemoryRecord]:
    """Records the paper configuration's write hook stores on real episodes: three gold paths, each after
    a refused action, each played once (module scope: ScienceWorld steps are the slow part)."""
    path = tmp_path_factory.mktemp("real") / "m.sqlite"
    cfg = AmmConfig(enabled=True, path=str(path), write=load_config("amm").amm.write)
    amm = Amm(cfg, store_of(cfg))
    try:
        for task in (CHEMISTRY_MIX, FIND_NON_LIVING, LIFE_STAGES_2):
            traj = start(env, task, 0, gold=True)
            play(env, traj, amm.episode(f"ep-{task}", ListSink()), [GARBAGE, *env.gold_actions])
        return list(amm.store.iter_all())
    finally:
        amm.store.close()


def test_vectors_are_written_with_the_rows_and_read_back(
    store_location: tuple[str, str], real_records: list[MemoryRecord]
) -> None:
    location, table = store_location
    writer = Counting()
    store = open_store(location, table, writer)
    try:
        assert store.add_many(real_records) == len(real_records)
        assert writer.texts == len(real_records)  # computed once, at write time, in one bulk load
        rows = stored_vectors(store)
        expected = LexicalEmbedder().encode([r.search_text() for r in real_records])
        for record, vector in zip(real_records, expected, strict=True):
            blob, model = rows[record.id]
            assert model == writer.name and blob is not None
            assert np.array_equal(np.frombuffer(blob, dtype="<f4"), vector)
    finally:
        store.close()
    # Another process opening the store reads the stored vectors: it embeds only its query.
    reader = Counting()
    again = open_store(location, table, reader)
    try:
        target = next(r for r in real_records if r.subtag == "subgoal_focus")
        found = again.vector_search(target.search_text(), k=3)
        assert found[0].id == target.id and reader.texts == 1
        assert again.vector_search("no such words at all", tags=["avoidance"], k=50)
        assert {r.tag for r in again.vector_search(target.action, tags=["avoidance"], k=50)} == {"avoidance"}
        assert {r.task_name for r in again.vector_search(target.action, task="chemistry-mix", k=50)} == {
            "chemistry-mix"
        }
        # A delete is seen by the next search: the deleted records are gone from the vector list too.
        gone = again.delete_episode(target.episode_id)
        assert gone and all(
            r.episode_id != target.episode_id for r in again.vector_search(target.action, k=50)
        )
    finally:
        again.close()


def _make_old(store: BulkStore) -> None:
    """Turn a store into what fastslow wrote before hybrid ranking: no vector columns, records without
    the authors' fields (the JSON of that version)."""
    if isinstance(store, PostgresStore):
        store._db.execute(
            f"ALTER TABLE {store.table} DROP COLUMN vec, DROP COLUMN vec_model, DROP COLUMN seq"
        )
        store._db.execute(f"UPDATE {store.table} SET data = data - 'task_description' - 'look'")
    else:
        db = store._db  # type: ignore[attr-defined]
        db.execute("ALTER TABLE memories DROP COLUMN vec")
        db.execute("ALTER TABLE memories DROP COLUMN vec_model")
        db.execute("UPDATE memories SET data = json_remove(data, '$.task_description', '$.look')")


def test_a_store_written_before_vectors_is_migrated(
    store_location: tuple[str, str], real_records: list[MemoryRecord]
) -> None:
    location, table = store_location
    old_records = [r for r in real_records if r.task_id != LIFE_STAGES_2]
    store = open_store(location, table, None)
    store.add_many(old_records)
    _make_old(store)
    store.close()
    if not location.startswith("postgresql://"):
        # Read-only inspection of the old file changes no byte and still ranks (vectors in memory only).
        before = Path(location).read_bytes()
        ro = open_store(location, table, LexicalEmbedder(), readonly=True)
        try:
            assert ro.vector_search(old_records[0].search_text(), k=1)[0].action == old_records[0].action
        finally:
            ro.close()
        assert Path(location).read_bytes() == before
    embedder = Counting()
    migrated = open_store(location, table, embedder)
    try:
        by_id = {r.id: r for r in migrated.iter_all()}
        assert len(by_id) == len(old_records) and all(r.look == "" for r in by_id.values())  # old JSON reads
        assert all(vec is None for vec, _ in stored_vectors(migrated).values())  # columns added, empty
        hit = migrated.vector_search(old_records[-1].search_text(), k=1)
        assert hit[0].action == old_records[-1].action
        assert embedder.texts == len(old_records) + 1  # the old rows once (then stored), the query
        assert all(model == embedder.name for _, model in stored_vectors(migrated).values())
        # New records get theirs at write time beside the migrated ones.
        new = [r for r in real_records if r.task_id == LIFE_STAGES_2]
        migrated.add_many(new)
        assert all(stored_vectors(migrated)[r.id][0] is not None for r in new)
        assert migrated.vector_search(new[0].search_text(), k=1)[0].id == new[0].id
    finally:
        migrated.close()


def test_fusion_is_letta_reciprocal_rank_on_real_records(
    tmp_path: Path, real_records: list[MemoryRecord]
) -> None:
    store = SqliteStore(tmp_path / "m.sqlite", embedder=LexicalEmbedder())
    store.add_many(real_records)
    try:
        for probe in real_records[::7]:
            query = f"{probe.action} {probe.room} {probe.task_name}"
            vector = store.vector_search(query, k=10)
            lexical = store.search(query, k=10)
            assert vector and lexical
            # Letta's formula, by hand: 0.5 / (60 + rank) from each list the record is in (ranks from 1).
            score: dict[str, float] = {}
            for ranked in (vector, lexical):
                for rank, record in enumerate(ranked, start=1):
                    score[record.id] = score.get(record.id, 0.0) + 0.5 / (60 + rank)
            fused = hybrid_search(store, query, None, None, 5, HYBRID)
            assert [r.id for r in fused] == sorted(score, key=lambda i: -score[i])[:5]
            # A record both lists rank first is first; one in a single list scores at most 0.5/61.
            both = {r.id for r in vector} & {r.id for r in lexical}
            if vector[0].id == lexical[0].id:
                assert fused[0].id == vector[0].id
            assert all(score[i] > 0.5 / 61 for i in both)
        # Unfiltered: a success-tag query still gets avoidance records when they rank (Letta: no filter).
        refused = next(r for r in real_records if r.subtag == "invalid_action")
        assert refused.id in {r.id for r in hybrid_search(store, GARBAGE, None, None, 5, HYBRID)}
    finally:
        store.close()


def test_rrf_weights_and_ties() -> None:
    a, b, c = (
        MemoryRecord(1, "t", "1", "e", i, "r", "i", (), f"act {i}", "o", 0, 0, "success", "s", id=i)
        for i in "abc"
    )
    assert [r.id for r in rrf_fuse([[a, b], [b, c]], [0.5, 0.5], 3)] == ["b", "a", "c"]
    assert [r.id for r in rrf_fuse([[a, b], [b, c]], [1.0, 0.0], 3)] == ["a", "b", "c"]
    assert [r.id for r in rrf_fuse([[a], [c]], [0.5, 0.5], 2)] == ["a", "c"]  # a tie: first list first


def test_the_retriever_ranks_hybrid_without_filters(env: ScienceWorldAdapter, tmp_path: Path) -> None:
    cfg = AmmConfig(enabled=True, path=str(tmp_path / "m.sqlite"), write=load_config("amm").amm.write,
                    retrieval=HYBRID)  # fmt: skip
    amm = Amm(cfg, store_of(cfg))
    sink = ListSink()
    hooks = amm.episode("ep", sink)
    traj = start(env, FIND_NON_LIVING, 0, gold=True)
    play(env, traj, hooks, [GARBAGE, GARBAGE, *env.gold_actions[:3]])
    assert amm.store.embedder is not None and amm.store.embedder.name == LexicalEmbedder().name
    retriever = MemoryRetriever(amm.store, cfg.retrieval, sink)
    got = retriever.retrieve("T1", traj, 3, ("success",), rung="success", query=GARBAGE)
    assert got and got[0].subtag == "invalid_action"  # no tag filter: the best match wins
    assert retriever.retrieve("T1", traj, 3, ("success",)) == retriever.retrieve(
        "T1", traj, 3, ("success",), query=state_query(traj)
    )
    forced = retriever.retrieve("T1", traj, 3, ("near-miss",), query=GARBAGE, filter_tags=True)
    assert forced and {r.tag for r in forced} == {"near-miss"}  # one call may still filter
    bm25 = MemoryRetriever(amm.store, RetrievalConfig(), sink)  # today's profile: filtered, BM25
    assert {r.tag for r in bm25.retrieve("T1", traj, 3, ("success",), query=GARBAGE)} <= {"success"}
    assert [e.rung for e in sink.events if isinstance(e, MemoryRetrieval) and e.trigger == "T1"] == [
        "success",
        "",
        "",
        "",
        "",
    ]
    amm.store.close()


def test_the_authors_queries_differ_only_in_their_rung_lines(
    env: ScienceWorldAdapter, tmp_path: Path
) -> None:
    """``amm.retrieval.query: authors`` on a real state: task, state line, the last five actions and
    observations, then the rung's lines; T1's two rungs differ only in those, T4 asks as T1's second
    rung, the Critic's search shows rewards and score as 0, and a retrieval without an explicit
    query searches with that text."""
    cfg = AmmConfig(enabled=True, path=str(tmp_path / "m.sqlite"), write=load_config("amm").amm.write,
                    retrieval=HYBRID.model_copy(update={"query": "authors"}))  # fmt: skip
    amm = Amm(cfg, store_of(cfg))
    sink = ListSink()
    hooks = amm.episode("ep", sink)
    traj = start(env, FIND_NON_LIVING, 0, gold=True)
    play(env, traj, hooks, [GARBAGE, *env.gold_actions[:6]])
    s1, s2 = (authors_query(traj, "T1", rung) for rung in ("success", "success+near-miss"))
    differ = [a.split(":")[0] for a, b in zip(s1.splitlines(), s2.splitlines(), strict=True) if a != b]
    assert differ == ["ACTION_CONTEXT", "TAG_SCOPE", "TAGS_HINT"]
    lines = dict(line.split(": ", 1) for line in s2.splitlines())
    assert lines["TASK"] == json.dumps(" ".join(traj.task_description.split()))
    assert (
        f"room={traj.room};" in lines["STATE"]
        and f"current_score={float(traj.current.score)};" in lines["STATE"]
    )
    assert json.loads(lines["RECENT_ACTIONS"]) == [t.action for t in traj.turns[-5:]]
    assert json.loads(lines["RECENT_OBS"]) == [t.observation for t in traj.turns[-5:]]
    assert (lines["ISSUE"], lines["TAGS_HINT"]) == ('"swift_failure"', "episodic_success, episodic_nearmiss")
    assert authors_query(traj, "T4", "") == s2
    avoid = dict(line.split(": ", 1) for line in authors_query(traj, "T3", "").splitlines())
    assert avoid["ISSUE"] == '"repeated_invalid_action"' and "avoidance" in avoid["TAG_SCOPE"]
    critic = authors_query(traj, "T2", "critic")
    assert traj.current.score > 0 and "recent_reward=[0.0]; current_score=0.0;" in critic
    retriever = MemoryRetriever(amm.store, cfg.retrieval, sink)
    assert retriever.retrieve("T1", traj, 3, ("success",), rung="success") == retriever.retrieve(
        "T1", traj, 3, ("success",), rung="success", query=s1
    )
    amm.store.close()


def test_run_json_records_ranking_and_embedder(tmp_path: Path) -> None:
    for name, ranking in (("amm", "hybrid"), ("swift-amm", "bm25")):
        cfg = load_config(name)
        out = tmp_path / name
        with run_lock(out):
            claim_run(out, cfg, ["13-0000"])
        start_record = json.loads((out / "run.json").read_text())["starts"][-1]
        embedder = embedder_for(cfg.amm.retrieval)
        assert start_record["memory_ranking"] == ranking
        assert start_record["memory_embedder"] == (embedder.name if embedder is not None else None)
        assert memory_ranking(cfg) == (ranking, start_record["memory_embedder"])
    assert load_config("amm").amm.retrieval.embedder == "auto"  # MiniLM with the extra, else the stand-in


def test_fast_pathway_configs_keep_todays_retrieval() -> None:
    for name in ("swift-amm", "swift-amm-srm"):
        r = load_config(name).amm.retrieval
        assert (r.ranking, r.filter_tags, r.same_task_first, r.query) == ("bm25", True, True, "state"), name
    for name in ("amm", "full", "paper-amm", "paper-full"):
        r = load_config(name).amm.retrieval
        assert (r.ranking, r.filter_tags, r.same_task_first, r.query) == (
            "hybrid",
            False,
            False,
            "authors",
        ), name


def test_vector_search_needs_an_embedder(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "m.sqlite")
    try:
        with pytest.raises(MemoryStoreError, match="embedder"):
            store.vector_search("pick up thermometer")
    finally:
        store.close()
    # A file whose vector columns were never added is still readable (older fastslow, read-only open).
    db = sqlite3.connect(tmp_path / "m.sqlite")
    db.execute("ALTER TABLE memories DROP COLUMN vec_model")
    db.commit()
    db.close()
    ro = SqliteStore(tmp_path / "m.sqlite", readonly=True, embedder=LexicalEmbedder())
    try:
        assert ro.vector_search("pick up thermometer") == [] and ro.count() == 0
    finally:
        ro.close()


def test_postgres_vectors_committed_out_of_order_are_not_missed(
    pg_dsn: str, real_records: list[MemoryRecord]
) -> None:
    """Two writers: the first takes its seq value but commits after the second; a reader that synced
    in between still finds the first writer's record afterwards (the re-read window)."""
    table = f"test_{uuid.uuid4().hex[:12]}"
    first, second = real_records[0], real_records[1]
    a, b, reader = (PostgresStore(pg_dsn, table, embedder=LexicalEmbedder()) for _ in range(3))
    try:
        with a._db.transaction():  # add_many's own transaction becomes a savepoint of this one
            a.add_many([first])
            b.add_many([second])
            seen = {r.id for r in reader.vector_search(first.search_text(), k=10)}
            assert seen == {second.id}
        seen = {r.id for r in reader.vector_search(first.search_text(), k=10)}
        assert seen == {first.id, second.id}
    finally:
        a.drop()
        for store in (a, b, reader):
            store.close()
