"""``fastslow eval --stream`` and the learning curve (issue 51, the adaptation measurement; ``eval.stream``,
``eval.curve``).

Real TextWorldExpress JVMs, no mocks: two games' first 4 dev seeds with twx-swift-amm after its warm-up,
played as a stream by 2 worker processes and again by 1, and twx-swift-only as the memory-off arm.
T2's window is shortened (``amm.retrieval.stagnation_window=2``) so the streams retrieve often: in
twx-swift-amm T2 only retrieves and caches, so the actions stay Swift's. Checked: a record written by the
episode at position k is never returned to an episode before k (and records of earlier positions are
returned: the check is not vacuous); the run's store holds exactly the records the logs say were written;
1 and 2 workers play the same streams, event for event; every number of the curve equals a count made
here from the raw JSON lines; logs without the new fields still report, without a curve.
"""

from __future__ import annotations

import csv
import json
import shutil
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fastslow.cli import main
from fastslow.config import load_config
from fastslow.env.episodes import Episode
from fastslow.errors import UsageError
from fastslow.eval.curve import slope, slope_ci
from fastslow.eval.rundir import check_claim
from fastslow.eval.stream import STREAM_DIR, Stream, check_stream, stream_positions
from fastslow.events import EpisodeStart, MemoryRetrieval
from fastslow.memory.records import MemoryRecord
from fastslow.memory.stores.sqlite import SqliteStore

GAMES = ["--set", "dev", "--tasks", "twc,cookingworld", "--limit-per-task", "4"]
OFTEN = ["-o", "amm.retrieval.stagnation_window=2"]


def _eval(out: Path, config: str, *args: str) -> None:
    main(["eval", "--config", config, *GAMES, *args, "--out", str(out)])


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("stream")
    out = {"two": root / "two", "one": root / "one", "off": root / "off"}
    _eval(out["two"], "twx-swift-amm", "--warmup", "--stream", "--workers", "2", *OFTEN)
    _eval(out["one"], "twx-swift-amm", "--warmup", "--stream", "--workers", "1", *OFTEN)
    _eval(out["off"], "twx-swift-only", "--stream", "--workers", "2")
    return out


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _logs(run: Path) -> dict[str, list[dict[str, Any]]]:
    return {p.stem: _lines(p) for p in sorted((run / "events").glob("*.jsonl"))}


def test_a_record_is_never_visible_to_an_episode_before_its_writer(runs: dict[str, Path]) -> None:
    run = runs["two"]
    record = json.loads((run / "run.json").read_text())
    assert record["stream"] is True and record["starts"][-1]["workers"] == 2
    logs = _logs(run)
    assert sorted(logs) == sorted(record["episodes"])
    positions = {i: log[0]["stream_position"] for i, log in logs.items()}
    # the set's own order: each game's seeds ascending, positions 0..3
    assert positions == {f"{g}-{10000 + k}": k for g in ("00", "01") for k in range(4)}
    assert positions == stream_positions(record["episodes"])
    seen: Counter[str] = Counter()
    for episode_id, log in logs.items():
        mine = positions[episode_id]
        for event in log:
            if event["event"] != "memory_retrieval":
                continue
            assert len(event["writers"]) == len(event["ids"]) == event["n"]
            for writer in event["writers"]:
                if writer.startswith("warmup/"):
                    seen["warmup"] += 1
                elif writer == episode_id:
                    seen["own"] += 1
                else:
                    assert positions[writer] < mine, (episode_id, writer)
                    seen["earlier"] += 1
    assert seen["earlier"] > 0 and seen["warmup"] > 0 and seen["own"] > 0
    # Every copy was merged and removed; the store holds exactly the records the logs say were written
    # (warm-up and evaluation), each under its writer's key.
    assert not any((run / STREAM_DIR).iterdir())
    written: Counter[str] = Counter()
    for folder, prefix in ((run / "warmup" / "events", "warmup/"), (run / "events", "")):
        for path in folder.glob("*.jsonl"):
            log = _lines(path)
            written[prefix + path.stem] += sum(e["event"] == "memory_write" for e in log)
    store = SqliteStore(run / "memory.sqlite", readonly=True)
    try:
        stored = Counter(r.episode_id.removeprefix(record["run_id"] + "/") for r in store.iter_all())
    finally:
        store.close()
    assert stored == +written


def test_the_order_not_the_scheduling_decides_what_each_episode_reads(runs: dict[str, Path]) -> None:
    """1 and 2 workers: the same actions, retrievals and writers in every episode."""
    one, two = _logs(runs["one"]), _logs(runs["two"])
    assert sorted(one) == sorted(two)

    def play(log: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        return [
            (e["event"], e.get("step"), e.get("action"), e.get("n"), tuple(e.get("writers") or ()))
            for e in log
            if e["event"] in ("env_step", "memory_retrieval", "memory_write", "episode_end")
        ] + [("position", log[0]["stream_position"])]

    for episode_id in one:
        assert play(one[episode_id]) == play(two[episode_id]), episode_id
    # The warm-up the stream starts from is itself a stream (what a warm-up episode reads may change
    # its actions, with the prior on): the same with 1 worker or 2, its copies gone once merged.
    warm_one, warm_two = (_logs(runs[k] / "warmup") for k in ("one", "two"))
    assert warm_one and sorted(warm_one) == sorted(warm_two)
    for episode_id in warm_one:
        assert play(warm_one[episode_id]) == play(warm_two[episode_id]), episode_id
    assert not any((runs["two"] / "warmup" / STREAM_DIR).iterdir())


def _table(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _count(log: list[dict[str, Any]], positions: dict[str, int]) -> dict[str, Any]:
    """One episode counted from its raw lines: position, both scores, where its records came from."""
    header, end = log[0], log[-1]
    best = max([0] + [e["score"] for e in log if e["event"] == "env_step"])
    sources: Counter[str] = Counter()
    for e in log:
        for w in e.get("writers") or () if e["event"] == "memory_retrieval" else ():
            if w.startswith("warmup/"):
                sources["warmup"] += 1
            elif w == header["episode_id"]:
                sources["own"] += 1
            else:
                sources["earlier" if positions[w] < header["stream_position"] else "not visible"] += 1
    return {
        "task": header["task_id"],
        "k": header["stream_position"],
        "paper": float(max(best, end["final_score"], 0)),
        "strict": float(max(end["final_score"], 0)),
        "sources": sources,
    }


def _within_slope(rows: list[tuple[int, int, float]]) -> float:
    by_task: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for task, k, value in rows:
        by_task[task].append((k, value))
    xs, ys = [], []
    for points in by_task.values():
        x = np.array([k for k, _ in points], dtype=float)
        y = np.array([v for _, v in points])
        xs.append(x - x.mean())
        ys.append(y - y.mean())
    return float(np.polyfit(np.concatenate(xs), np.concatenate(ys), 1)[0])


def test_the_curve_equals_a_count_from_the_event_logs(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    main(["report", str(runs["two"]), str(runs["off"]), "--out", str(out)])
    counted = {}
    for name in ("two", "off"):
        logs = _logs(runs[name])
        positions = {i: log[0]["stream_position"] for i, log in logs.items()}
        counted[name] = {i: _count(log, positions) for i, log in logs.items()}
    curve = _table(out / "curve.csv")
    assert [row["position"] for row in curve] == ["0", "1", "2", "3"]
    for row in curve:
        k = int(row["position"])
        for name, config in (("two", "twx-swift-amm"), ("off", "twx-swift-only")):
            at = [c for c in counted[name].values() if c["k"] == k]
            assert row[f"{config} n"] == str(len(at))
            assert row[f"{config} paper"] == f"{np.mean([c['paper'] for c in at]):.2f}"
            assert row[f"{config} strict"] == f"{np.mean([c['strict'] for c in at]):.2f}"
            sources: Counter[str] = sum((c["sources"] for c in at), Counter())
            assert row[f"{config} retrieved"] == str(sum(sources.values()))
            assert row[f"{config} from warm-up"] == str(sources["warmup"])
            assert row[f"{config} from earlier"] == str(sources["earlier"])
    # every run over all its tasks, then each game alone (twc is task 1 of TextWorldExpress's table)
    names = {0: "cookingworld", 1: "twc"}
    slopes = {(row["config"], row["task"]): row for row in _table(out / "curve_slopes.csv")}
    assert len(slopes) == 6
    for name, config in (("two", "twx-swift-amm"), ("off", "twx-swift-only")):
        for task in ("all", *names.values()):
            mine = [c for c in counted[name].values() if task in ("all", names[c["task"]])]
            assert slopes[config, task]["episodes"] == str(len(mine))
            for measure, column in (("paper", "slope (paper)"), ("strict", "slope (strict)")):
                rows = [(c["task"], c["k"], c[measure]) for c in mine]
                assert slopes[config, task][column] == f"{_within_slope(rows):.2f}"
    assert slopes["twx-swift-amm", "all"]["memory"] == "on"
    assert slopes["twx-swift-only", "twc"]["memory"] == "off"
    pairs = {row["task"]: row for row in _table(out / "curve_memory.csv")}
    assert sorted(pairs) == ["all", "cookingworld", "twc"]
    on, off = counted["two"], counted["off"]
    for task, pair in pairs.items():
        ids = [i for i in on if task in ("all", names[on[i]["task"]])]
        diffs = [on[i]["paper"] - off[i]["paper"] for i in ids]
        assert pair["mean diff (paper)"] == f"{np.mean(diffs):.2f}"
        assert pair["paired episodes"] == str(len(ids)) == ("8" if task == "all" else "4")
        paired = [(on[i]["task"], on[i]["k"], on[i]["paper"] - off[i]["paper"]) for i in ids]
        assert pair["slope diff (paper)"] == f"{_within_slope(paired):.2f}"
    (sources_row, off_row) = _table(out / "curve_sources.csv")
    total: Counter[str] = sum((c["sources"] for c in on.values()), Counter())
    assert sources_row["not visible"] == "0" and off_row["retrieved"] == "0"
    assert sources_row["share warm-up"] == f"{100 * total['warmup'] / sum(total.values()):.2f}%"
    assert sources_row["share earlier"] == f"{100 * total['earlier'] / sum(total.values()):.2f}%"
    assert "Learning curve" in (out / "report.md").read_text() and (out / "curve.png").is_file()


def test_slope_and_its_interval_are_seeded_and_within_task() -> None:
    # two tasks at different levels, each rising 2 points a position: composition does not matter
    rows = [(0, k, 10.0 + 2 * k) for k in range(4)] + [(1, k, 80.0 + 2 * k) for k in range(2)]
    assert slope(rows) == 2.0
    assert slope_ci(rows) == (2.0, 2.0)
    noisy = [(t, k, float((7 * k + 3 * t) % 5)) for t in range(3) for k in range(5)]
    assert slope_ci(noisy) == slope_ci(noisy)  # seeded
    assert slope([(0, 0, 1.0), (1, 0, 2.0)]) is None and slope_ci([(0, 0, 1.0)]) is None


def test_logs_without_the_stream_fields_still_report(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run whose logs lack ``stream_position`` and ``writers`` (every log before streams) reports as
    before, without a curve; such a header and retrieval read as None."""
    old = tmp_path / "old"
    shutil.copytree(runs["two"], old)
    for path in (old / "events").glob("*.jsonl"):
        lines = []
        for event in _lines(path):
            event.pop("stream_position", None)
            event.pop("writers", None)
            lines.append(json.dumps(event))
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    header = EpisodeStart.model_validate(_lines(next((old / "events").glob("*.jsonl")))[0])
    assert header.stream_position is None
    retrieval = MemoryRetrieval(step=1, trigger="T2", n=0, ids=[])
    assert retrieval.writers is None
    out = tmp_path / "report"
    main(["report", str(old), "--out", str(out)])
    assert (out / "main.csv").is_file() and not (out / "curve.csv").exists()
    assert "Learning curve" not in (out / "report.md").read_text()


def test_a_stream_run_resumes_only_as_a_stream_and_needs_an_sqlite_store(runs: dict[str, Path]) -> None:
    config = load_config("twx-swift-amm", ["amm.retrieval.stagnation_window=2"])
    record = json.loads((runs["two"] / "run.json").read_text())
    spec = record["warmup"]
    with pytest.raises(UsageError, match="played as a stream"):
        check_claim(runs["two"], config, record["episodes"], overrides=OFTEN[1:], warmup=spec)
    check_claim(runs["two"], config, record["episodes"], overrides=OFTEN[1:], warmup=spec, stream=True)
    with pytest.raises(UsageError, match="use an SQLite store"):
        check_stream(load_config("twx-swift-amm", ["amm.store=postgres"]))


def _record(episode_id: str, action: str) -> MemoryRecord:
    return MemoryRecord(1, "twc", "1", episode_id, 1, "kitchen", "", (), action, "ok", 0, 10, "success", "m")


def test_a_merge_cut_short_is_done_again_and_a_copy_hides_later_positions(tmp_path: Path) -> None:
    store_path = tmp_path / "memory.sqlite"
    config = load_config("twx-swift-amm", [f"amm.path={store_path}"])
    stream = Stream(config, tmp_path, "run1", ["01-0000", "01-0001", "02-0000"])
    store = SqliteStore(store_path)
    store.add_many([_record("run1/warmup/01-0009", "take key"), _record("run1/01-0001", "open door")])
    store.close()
    # nothing to play: every position is still a round (its leftover copies are merged)
    assert [k for k, _ in stream.rounds([])] == [0, 1]
    episode = Episode.from_id("01-0000")
    stream.before(0, [episode])
    copy = SqliteStore(stream.copy_path("01-0000"))
    # position 1's record (left by an earlier start) is not in the copy of position 0; the warm-up's is
    assert [r.action for r in copy.iter_all()] == ["take key"]
    copy.add_many([_record("run1/01-0000", "go east"), _record("run1/01-0000", "go west")])
    copy.close()
    assert stream.after(0) == 2 and not stream.copy_path("01-0000").exists()
    # a copy left behind by a kill after its merge is merged again to the same records
    stream.before(0, [episode])
    copy = SqliteStore(stream.copy_path("01-0000"))
    copy.add_many([_record("run1/01-0000", "go east"), _record("run1/01-0000", "go west")])
    copy.close()
    assert stream.after(0) == 2
    store = SqliteStore(store_path, readonly=True)
    actions = Counter(r.action for r in store.iter_all())
    store.close()
    assert actions == Counter({"take key": 1, "open door": 1, "go east": 1, "go west": 1})
