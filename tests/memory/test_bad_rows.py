"""A stored row that is not an AMM record is skipped with a warning, never a crash (paper §3.1).

Rows are planted straight into the real store (sqlite3 / psycopg), as another program or an older
version might have written them: bad JSON, JSON that is not an object, an object missing fields.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path

import pytest
from amm_helpers import play, start
from store_helpers import plant_postgres_row, plant_sqlite_row

from fastslow.cli import main
from fastslow.core.proposal import Proposal, RankedAction
from fastslow.env.scienceworld.adapter import ScienceWorldAdapter
from fastslow.eval.metrics import memory_usage
from fastslow.events import EndState, EpisodeEnd, ListSink, MemoryFallback, MemoryInjection, MemoryRetrieval
from fastslow.memory.config import AmmConfig
from fastslow.memory.episode import Amm
from fastslow.memory.records import MemoryRecord
from fastslow.memory.stores import BulkStore
from fastslow.memory.stores.base import scoped_text
from fastslow.memory.stores.postgres import PostgresStore
from fastslow.memory.stores.sqlite import SqliteStore

GOOD = MemoryRecord(
    task_id=0,
    task_name="boil",
    task_family="1",
    episode_id="0-1",
    step=3,
    room="kitchen",
    inventory="a thermometer",
    recent=(),
    action="activate stove",
    observation="The stove is now activated.",
    score_before=10,
    score_after=27,
    tag="success",
    subtag="milestone",
)
SQLITE_BAD = {
    "bad-json": "{not json",
    "not-an-object": "[1, 2, 3]",
    "missing-fields": json.dumps({"task_id": 0, "task_name": "boil", "action": "activate stove"}),
    "wrong-type": json.dumps({**GOOD.to_dict(), "id": "x", "step": "three"}),
}
# JSONB is always valid JSON: what a PostgreSQL row can get wrong is the shape.
POSTGRES_BAD = {k: v for k, v in SQLITE_BAD.items() if k != "bad-json"} | {"a-string": '"activate stove"'}


def plant(store: BulkStore) -> list[str]:
    """Plant every bad row (matching the good records' words, so searches reach them); their ids."""
    body, scoped = GOOD.search_text(), scoped_text(GOOD)
    if isinstance(store, PostgresStore):
        for row_id, data in POSTGRES_BAD.items():
            plant_postgres_row(store, row_id, data, body, scoped)
        return list(POSTGRES_BAD)
    assert isinstance(store, SqliteStore)
    return [str(plant_sqlite_row(store.path, rid, data, body, scoped)) for rid, data in SQLITE_BAD.items()]


def test_bad_rows_are_skipped_warned_and_counted(store: BulkStore, caplog: pytest.LogCaptureFixture) -> None:
    good = [replace(GOOD, id=f"good{i}", created=GOOD.created + i) for i in range(3)]
    store.add_many(good)
    bad_ids = plant(store)
    caplog.set_level(logging.WARNING, logger="fastslow.memory.stores")
    ids = {r.id for r in good}
    for _ in range(2):  # twice: each bad row is warned about and counted once
        assert {r.id for r in store.search("activate stove", task="boil", k=20)} == ids
        assert {r.id for r in store.search("activate stove", task=None, k=20)} == ids
        assert {r.id for r in store.search("the is a", task="boil", k=20)} == ids  # newest first path
        assert sorted(r.id for r in store.iter_all()) == sorted(ids)
    assert store.count() == len(good) + len(bad_ids)  # the rows are there; reading skips them
    assert store.bad_rows == len(bad_ids)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == len(bad_ids)
    for row_id in bad_ids:
        [message] = [w for w in warnings if f"skipped row {row_id}:" in w]
        assert "store" in message and "not a memory record" in message
    if isinstance(store, SqliteStore):
        assert all(str(store.path) in w for w in warnings)
    else:
        assert isinstance(store, PostgresStore)
        assert all(f"table {store.table}" in w for w in warnings)


def test_memory_stats_reports_skipped_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.sqlite"
    store = SqliteStore(path)
    store.add_many([replace(GOOD, id=f"good{i}") for i in range(2)])
    plant(store)
    store.close()
    main(["memory", "stats", str(path)])
    summary_line, json_line = capsys.readouterr().out.strip().splitlines()
    summary = json.loads(json_line)
    assert summary["records"] == 2 and summary["skipped_rows"] == len(SQLITE_BAD)
    assert summary["by_tag"]["success"] == 2 and summary["episodes"] == 1
    assert summary_line.endswith(f"; {len(SQLITE_BAD)} unreadable rows skipped")
    main(["memory", "export", str(path), "--out", str(tmp_path / "all.jsonl")])
    exported = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert exported["records"] == 2 and exported["skipped_rows"] == len(SQLITE_BAD)
    assert len((tmp_path / "all.jsonl").read_text().splitlines()) == 2


def test_searches_that_skip_bad_rows_are_store_errors_in_the_log_and_metrics(
    store: BulkStore, env: ScienceWorldAdapter, caplog: pytest.LogCaptureFixture
) -> None:
    """T1 (into Swift) and T4 (into Sage) on a real boil state read the bad rows: each such search is one
    ``memory_fallback`` event (``store_error``), counted in ``store_errors``; the good record still goes
    into the blocks, and the console still gets one line per bad row, not one per search."""
    store.add_many([GOOD])  # one good record: every search also reads bad rows (k >= 3)
    bad_ids = plant(store)
    caplog.set_level(logging.WARNING, logger="fastslow.memory.stores")
    sink = ListSink()
    hooks = Amm(AmmConfig(enabled=True), store).episode("0-0", sink)
    traj = start(env, 0, 0)  # boil, the bad rows' task
    play(env, traj, hooks, ["teleport to kitchen"])  # the query now names the rows' room
    t1 = hooks.t1_ladder(traj, lambda memories: Proposal((RankedAction("xyzzy", 1.0),), 0.9))
    t4 = hooks.t4(traj)
    assert t1.proposal is None and t1.retries >= 1  # Swift was retried with the good memory
    assert t4.ok and [r.id for r in t4.records] == [GOOD.id]
    searches = [e for e in sink.events if isinstance(e, MemoryRetrieval)]
    errors = [e for e in sink.events if isinstance(e, MemoryFallback)]
    assert [(e.trigger, e.target) for e in errors] == [("T1", "swift")] * (len(searches) - 1) + [
        ("T4", "sage")
    ]
    store_name = f"sqlite store {store.path}" if isinstance(store, SqliteStore) else "postgres store "
    for event in errors:
        assert event.reason.startswith(f"store_error: {store_name}"), event.reason
        assert "skipped row " in event.reason and ": not a memory record (" in event.reason
    assert [e.target for e in sink.events if isinstance(e, MemoryInjection)] == ["swift"] * t1.retries + [
        "sage"
    ]
    end = EpisodeEnd(end=EndState.STEP_LIMIT, final_score=0, steps=1, moves=1, wall_s=1.0)
    assert memory_usage([[*sink.events, end]])["store_errors"] == len(errors) >= 2
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == store.bad_rows == len(bad_ids)
