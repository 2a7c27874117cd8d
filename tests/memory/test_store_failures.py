"""AMM store failures name their real cause (paper §3.1: memory failures fall back, visibly).

Real SQLite files made to fail the way disks fail: a full database (``max_page_count``, so SQLite itself
returns SQLITE_FULL) and a file with corrupted pages (SQLITE_CORRUPT). The error a caller sees, and the
``MemoryFallback`` reason the hooks log, must carry SQLite's cause - not the "cannot rollback" that an
unconditional ROLLBACK after SQLite's own rollback used to put in its place.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from amm_helpers import play, start
from store_helpers import corrupt_second_half

from fastslow.bench.memory import synthetic_records
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.events import ListSink, MemoryFallback, MemoryWrite
from fastslow.memory.config import AmmConfig
from fastslow.memory.episode import Amm
from fastslow.memory.stores import MemoryStoreError
from fastslow.memory.stores.sqlite import SqliteStore

FIND_NON_LIVING = 7
GARBAGE = "xyzzy frobnicate the quux"
MALFORMED = "database disk image is malformed"


@pytest.fixture
def corrupted(tmp_path: Path) -> Iterator[SqliteStore]:
    path = tmp_path / "m.sqlite"
    store = SqliteStore(path)
    store.add_many(synthetic_records(500, seed=1))
    store.close()  # checkpoints the WAL: every row is in the main file now
    assert corrupt_second_half(path) > 50
    reopened = SqliteStore(path)  # the schema pages survived, so the store opens ...
    yield reopened
    reopened.close()


def test_corrupted_pages_are_reported_as_corruption(corrupted: SqliteStore) -> None:
    """... and each operation that meets the garbage says so, with SQLite's result code."""
    failures: dict[str, Callable[[], object]] = {
        "write": lambda: corrupted.add_many(synthetic_records(50, seed=3)),
        "search": lambda: corrupted.search("focus on thermometer kitchen", task="boil", k=5),
        "count": corrupted.count,
        "read": lambda: list(corrupted.iter_all()),
    }
    for what, call in failures.items():
        with pytest.raises(MemoryStoreError) as err:
            call()
        message = str(err.value)
        assert f"{what} failed: {MALFORMED} (SQLITE_CORRUPT)" in message, message
        assert "cannot rollback" not in message


def test_full_database_is_reported_as_full(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "m.sqlite")
    try:
        store.add_many(synthetic_records(100, seed=1))
        pages = store._db.execute("PRAGMA page_count").fetchone()[0]
        # SQLite's own limit: the file may not grow past its current size, so the next batch cannot fit.
        store._db.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(MemoryStoreError) as err:
            store.add_many(synthetic_records(300, seed=2))
        message = str(err.value)
        assert "write failed: database or disk is full (SQLITE_FULL)" in message, message
        assert "cannot rollback" not in message
        # The failed batch left nothing behind and the store still works once there is room again.
        assert store.count() == 100 and not store._db.in_transaction
        store._db.execute(f"PRAGMA max_page_count = {pages * 100}")
        assert store.add_many(synthetic_records(300, seed=2)) == 300 and store.count() == 400
    finally:
        store.close()


def test_hooks_log_store_error_with_the_real_cause(env: ScienceWorldAdapter, corrupted: SqliteStore) -> None:
    """Write hook and every read path: ``MemoryFallback`` reasons ``store_error: <SQLite's cause>``."""
    sink = ListSink()
    hooks = Amm(AmmConfig(enabled=True), corrupted).episode("7-0", sink)
    traj = start(env, FIND_NON_LIVING, 0)
    play(env, traj, hooks, [GARBAGE, GARBAGE])  # an avoidance write, then T3 (repeated invalid action)
    t1 = hooks.t1_ladder(traj, lambda mems: pytest.fail("no retry without memories"))
    t4 = hooks.t4(traj)
    assert t1.proposal is None and t1.rung == "escalate" and not t4.ok
    assert not [e for e in sink.events if isinstance(e, MemoryWrite)]
    fallbacks = [e for e in sink.events if isinstance(e, MemoryFallback)]
    assert [(e.trigger, e.target) for e in fallbacks] == [
        ("write", "store"),
        ("write", "store"),  # a failed write is not remembered as done, so the repeat tries again
        ("T3", "cache"),
        ("T1", "swift"),
        ("T4", "sage"),
    ]
    for event in fallbacks:
        assert event.reason.startswith("store_error: sqlite store "), event.reason
        assert event.reason.endswith(f"{MALFORMED} (SQLITE_CORRUPT)"), event.reason
    assert t4.fallback == fallbacks[-1].reason
