"""AMM surfaces: `fastslow memory` and `fastslow bench memory` as subprocesses, events, metrics."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fastslow.bench.memory import synthetic_records
from fastslow.config import load_config
from fastslow.eval.metrics import memory_episode, memory_usage
from fastslow.events import (
    EndState,
    EpisodeEnd,
    Event,
    MemoryFallback,
    MemoryInjection,
    MemoryRetrieval,
    MemoryWrite,
    dump_events,
    parse_event,
)
from fastslow.memory.stores.sqlite import SqliteStore

FASTSLOW = [sys.executable, "-m", "fastslow.cli"]


def fastslow(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*FASTSLOW, *args], capture_output=True, text=True, timeout=300)


def test_memory_stats_search_export(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite"
    store = SqliteStore(db)
    store.add_many(synthetic_records(300, seed=2))
    store.close()
    stats = fastslow("memory", "stats", str(db))
    assert stats.returncode == 0, stats.stderr
    summary = json.loads(stats.stdout.strip().splitlines()[-1])
    assert summary["records"] == 300 and sum(summary["by_tag"].values()) == 300
    found = fastslow("memory", "search", str(db), "focus on thermometer", "--tag", "success", "-k", "3")
    rows = [json.loads(line) for line in found.stdout.splitlines()]
    assert found.returncode == 0 and 0 < len(rows) <= 3 and {r["tag"] for r in rows} == {"success"}
    out = tmp_path / "all.jsonl"
    exported = fastslow("memory", "export", str(db), "--out", str(out))
    assert exported.returncode == 0 and len(out.read_text().splitlines()) == 300


def test_memory_cli_bad_input(tmp_path: Path) -> None:
    missing = fastslow("memory", "stats", str(tmp_path / "nope.sqlite"))
    assert missing.returncode == 2 and "memory store not found" in missing.stderr
    assert not (tmp_path / "nope.sqlite").exists()
    bad = fastslow("bench", "memory", "--sizes", "ten")
    assert bad.returncode == 2 and "--sizes" in bad.stderr


def test_bench_memory_prints_json_last_line() -> None:
    # 5 searches a size (each hybrid search embeds its query with MiniLM): enough for the order of the
    # percentiles checked here
    proc = fastslow("bench", "memory", "--sizes", "200,400", "--queries", "5", "--stores", "sqlite")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(result["sqlite"]) == {"200", "400"}
    row = result["sqlite"]["400"]
    assert row["records"] == 400 and 0 < row["p50_ms"] <= row["p95_ms"] <= row["max_ms"]
    # the paper profile's hybrid search, with its structured queries read whole by the BM25 half
    hybrid = result["sqlite_hybrid"]
    assert hybrid["query_terms"] == load_config("amm").amm.retrieval.query_terms == 128
    assert hybrid["400"]["records"] == 400 and 0 < hybrid["400"]["p50_ms"] <= hybrid["400"]["p95_ms"]


EPISODE: list[Event] = [
    MemoryWrite(step=2, record_id="a", tag="near-miss", subtag="progress"),
    MemoryWrite(step=5, record_id="b", tag="success", subtag="focus"),
    MemoryRetrieval(step=6, trigger="T1", rung="success", n=0, ids=[]),
    MemoryFallback(step=6, trigger="T1", target="swift", reason="no_records"),
    MemoryRetrieval(step=6, trigger="T1", rung="success+near-miss", n=1, ids=["a"]),
    MemoryInjection(step=6, trigger="T1", target="swift", n=1, chars=300),
    MemoryRetrieval(step=7, trigger="T4", n=2, ids=["b", "a"]),
    MemoryInjection(step=7, trigger="T4", target="sage", n=2, chars=500),
    MemoryRetrieval(step=9, trigger="T3", n=1, ids=["a"]),
    MemoryFallback(step=9, trigger="write", target="store", reason="store_error: disk I/O error"),
    EpisodeEnd(end=EndState.SUCCESS, final_score=100, steps=9, moves=9, wall_s=1.0),
]


def test_memory_events_roundtrip_as_jsonl() -> None:
    lines = dump_events(EPISODE).splitlines()
    assert [parse_event(line) for line in lines] == EPISODE


def test_memory_counters_from_events() -> None:
    one = memory_episode(EPISODE)
    assert one["writes"] == 2 and one["writes_by_tag"] == {"success": 1, "near-miss": 1, "avoidance": 0}
    assert one["triggers"] == {"T1": 1, "T2": 0, "T3": 1, "T4": 1}  # a two-rung ladder is one T1
    assert one["injections"] == {"swift": 1, "sage": 1, "critic": 0} and one["injected_chars"] == 800
    assert one["fallbacks"] == {"no_records": 1, "store_error": 1}
    usage = memory_usage([EPISODE, EPISODE[:2]])  # the second never finished: skipped
    assert usage["episodes"] == 1 and usage["writes_per_episode"] == 2
    assert usage["triggers_per_episode"]["T4"] == 1 and usage["injections_per_episode"]["swift"] == 1
