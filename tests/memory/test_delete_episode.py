"""``delete_episode`` (paper §3.1 store): a replayed episode starts without its killed attempt's records.

On both real backends, a store that had an episode and deleted it must be indistinguishable from one
that never had it: same records, same searches, same slice-term document frequencies (which drive
``prune_by_frequency``), and for SQLite an FTS index that passes its own integrity check.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from store_helpers import plant_sqlite_row, term_counts

from fastslow.bench.memory import synthetic_queries, synthetic_records
from fastslow.memory.records import MemoryRecord
from fastslow.memory.stores import BulkStore, open_location
from fastslow.memory.stores.base import scoped_text
from fastslow.memory.stores.postgres import PostgresStore
from fastslow.memory.stores.sqlite import SqliteStore

KILLED, KEPT = "run-7-0", "run-8-0"


def episodes() -> tuple[list[MemoryRecord], list[MemoryRecord]]:
    """Two episodes' records with overlapping tasks and words (shared slice tokens get decremented)."""
    records = list(synthetic_records(240, seed=5))
    killed = [replace(r, episode_id=KILLED) for r in records[:120]]
    kept = [replace(r, episode_id=KEPT) for r in records[120:]]
    return killed, kept


@pytest.fixture
def reference(store_location: tuple[str, str]) -> Iterator[BulkStore]:
    """A second store of the same backend, built with the kept episode only."""
    location, table = store_location
    if location.startswith("postgresql://"):
        pg = PostgresStore(location, f"{table}_ref")
        yield pg
        pg.drop()
        pg.close()
    else:
        lite = SqliteStore(location + ".ref")
        yield lite
        lite.close()


def results(store: BulkStore, queries: list[tuple[str, str, tuple[str, ...]]]) -> list[set[str]]:
    found = []
    for text, task, tags in queries:
        found.append({r.id for r in store.search(text, tags=tags, task=task, k=500)})
        found.append({r.id for r in store.search(text, tags=tags, task=None, k=500)})
    return found


def test_delete_episode_leaves_the_store_as_if_never_written(store: BulkStore, reference: BulkStore) -> None:
    killed, kept = episodes()
    store.add_many(killed[:60])
    store.add_many(kept)
    store.add_many(killed[60:])  # the killed attempt's rows before and after the other episode's
    reference.add_many(kept)
    before = term_counts(store)

    assert store.delete_episode(KILLED) == len(killed)
    assert store.delete_episode(KILLED) == 0  # nothing left to remove: a second call is harmless
    assert store.delete_episode("never-played") == 0

    assert store.count() == reference.count() == len(kept)
    assert sorted(r.id for r in store.iter_all()) == sorted(r.id for r in kept)
    terms = term_counts(store)
    assert terms == term_counts(reference)
    assert all(n > 0 for n in terms.values()) and len(terms) < len(before)  # emptied tokens are gone
    queries = synthetic_queries(40, seed=2)
    found = results(store, queries)
    assert found == results(reference, queries)
    assert any(found) and not set().union(*found) & {r.id for r in killed}
    if isinstance(store, SqliteStore):
        # FTS5 checks its index against the rows; a leftover or missing entry raises SQLITE_CORRUPT_VTAB.
        store._db.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)")
        fts_rows = store._db.execute("SELECT count(*) FROM memories_fts").fetchone()[0]
        assert fts_rows == len(kept)


def test_delete_episode_then_replay_writes_again(store_location: tuple[str, str]) -> None:
    """The harness's use: delete, replay the same episode; the store holds exactly one attempt."""
    location, table = store_location
    killed, _ = episodes()
    store = open_location(location, table)
    try:
        store.add_many(killed[:30])  # the attempt killed with -9 after 30 writes
        store.delete_episode(KILLED)
        replay = [replace(r, id=uuid.uuid4().hex[:16]) for r in killed]
        store.add_many(replay)
        assert sorted(r.id for r in store.iter_all()) == sorted(r.id for r in replay)
        assert store.count() == len(killed)
        # Each slice token counted once per replayed record that has it, none left from the attempt.
        assert term_counts(store) == dict(Counter(t for r in replay for t in scoped_text(r).split()))
    finally:
        store.close()


def test_sqlite_delete_episode_survives_a_bad_row(tmp_path: Path) -> None:
    """A row of bad JSON cannot be matched to an episode, and must not make the delete fail."""
    path = tmp_path / "m.sqlite"
    killed, kept = episodes()
    store = SqliteStore(path)
    try:
        store.add_many(killed[:10] + kept[:10])
        plant_sqlite_row(path, "bad", "{not json", "activate stove", "")
        assert store.delete_episode(KILLED) == 10
        assert store.count() == 11 and sorted(r.id for r in store.iter_all()) == sorted(
            r.id for r in kept[:10]
        )
    finally:
        store.close()
