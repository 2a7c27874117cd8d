"""AMM stores (paper §3.1): one suite over both real backends, SQLite and PostgreSQL."""

from __future__ import annotations

import multiprocessing
import time
from dataclasses import replace

import pytest

from fastslow.bench.memory import synthetic_records, write_records
from fastslow.memory.records import MemoryRecord, Tag
from fastslow.memory.stores import BulkStore, open_location
from fastslow.memory.stores.base import prune_by_frequency


def rec(
    action: str, observation: str, tag: Tag = "near-miss", task: str = "boil", **kw: object
) -> MemoryRecord:
    base = MemoryRecord(
        task_id=0,
        task_name=task,
        task_family="1",
        episode_id="0-1",
        step=3,
        room="kitchen",
        inventory="a thermometer",
        recent=("go to kitchen -> You move to the kitchen.",),
        action=action,
        observation=observation,
        score_before=10,
        score_after=27,
        tag=tag,
        subtag="progress",
    )
    return replace(base, **kw)


def test_add_count_iter_roundtrip(store: BulkStore) -> None:
    records = [
        rec("pick up thermometer", "You move the thermometer to the inventory."),
        rec("open freezer", "The freezer is now open.", tag="success"),
    ]
    for r in records:
        store.add(r)
    assert store.count() == 2
    assert sorted(store.iter_all(), key=lambda r: r.id) == sorted(records, key=lambda r: r.id)


def test_search_ranks_matching_records_first(store: BulkStore) -> None:
    store.add_many(
        [
            rec("pick up thermometer", "You move the thermometer to the inventory."),
            rec("open freezer", "The freezer is now open."),
            rec("activate stove", "The stove is now activated."),
        ]
    )
    hits = store.search("stove activated heat the water", task="boil", k=3)
    assert hits and hits[0].action == "activate stove"
    hits = store.search("stove activated heat the water", task=None, k=3)
    assert hits and hits[0].action == "activate stove"


@pytest.mark.parametrize("task", ["boil", None])
def test_search_filters_by_tag_and_task(store: BulkStore, task: str | None) -> None:
    store.add_many(
        [
            rec("activate stove", "The stove is now activated.", tag="success"),
            rec("activate stove", "The stove is now activated.", tag="avoidance"),
            rec("activate stove", "The stove is now activated.", tag="success", task="melt"),
        ]
    )
    hits = store.search("activate stove", tags=["success"], task=task, k=5)
    assert {h.tag for h in hits} == {"success"}
    assert len(hits) == (1 if task else 2)
    assert {h.task_name for h in hits} == ({"boil"} if task else {"boil", "melt"})
    assert store.search("activate stove", tags=["near-miss"], task=task, k=5) == []


def test_query_without_content_words_returns_newest(store: BulkStore) -> None:
    old = rec("open freezer", "The freezer is now open.", created=time.time() - 100)
    new = rec("activate stove", "The stove is now activated.")
    store.add_many([old, new])
    assert [h.id for h in store.search("the is a", task="boil", k=1)] == [new.id]
    assert store.search("stove", k=0) == []


def test_search_scales_to_many_records(store: BulkStore) -> None:
    store.add_many(synthetic_records(2000, seed=3))
    assert store.count() == 2000
    hits = store.search("focus on thermometer kitchen", tags=["success", "near-miss"], task="boil", k=5)
    assert 0 < len(hits) <= 5 and all(h.task_name == "boil" and h.tag != "avoidance" for h in hits)


def test_prune_by_frequency_keeps_rarest_within_budget() -> None:
    assert prune_by_frequency({"a": 300, "b": 5, "c": 90, "d": 0}, 100) == ["b", "c"]
    assert prune_by_frequency({"a": 300, "b": 500}, 100) == ["a"]  # at least one token
    assert prune_by_frequency({"a": 0}, 100) == []


def test_four_processes_writing_at_once(store_location: tuple[str, str]) -> None:
    """Acceptance: 4 processes x 1,000 single-record writes into one store -> exactly 4,000 records."""
    location, table = store_location
    open_location(location, table).close()  # schema exists before the race starts
    ctx = multiprocessing.get_context("spawn")  # no fork of a process holding a JVM or connections
    with ctx.Pool(4) as pool:
        written = pool.starmap(write_records, [(location, 1000, seed, table) for seed in range(4)])
    assert written == [1000] * 4
    store = open_location(location, table)
    try:
        records = list(store.iter_all())
        assert store.count() == 4000 and len(records) == 4000
        assert len({r.id for r in records}) == 4000
        assert {r.episode_id.split("-")[0] for r in records} == {f"writer{i}" for i in range(4)}
    finally:
        store.close()
