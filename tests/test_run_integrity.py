"""Runs that cannot mix, leak or lie: run identity, a memory store per run, the directory lock, resume
after kill -9 without ghost records, corrupted logs, a full disk, and no orphaned workers or JVMs.

Every case drives the real command line (subprocesses, real ScienceWorld, real SQLite files)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from fastslow.config import load_config
from fastslow.env.episodes import Episode
from fastslow.env.scienceworld.episodes import select_episodes
from fastslow.eval.evaluate import evaluate
from fastslow.events import EpisodeEnd, MemoryRetrieval, MemoryWrite, read_events
from fastslow.manifest import BOOKKEEPING

FASTSLOW = [sys.executable, "-m", "fastslow.cli"]
SHORT = ["--set", "test", "--tasks", "13", "--limit-per-task", "1"]
FIRST_13 = select_episodes("test", "13", None, 1)[0]
"""The episode SHORT selects."""


def fastslow(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*FASTSLOW, *args], capture_output=True, text=True, timeout=600)


def one_error_line(proc: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """The command failed with exit 2 and one stderr line holding every fragment."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-500:], proc.stderr[-2000:])
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def snapshot(out: Path) -> dict[str, bytes]:
    """Every file of a run directory and its bytes, its bookkeeping aside: the lock file only names its
    holder, and the written-files record (``fastslow.manifest``) grows with every start's run.json."""
    return {
        str(p.relative_to(out)): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.name not in BOOKKEEPING
    }


def store_rows(path: Path) -> list[dict[str, object]]:
    with sqlite3.connect(path) as db:
        return [json.loads(row[0]) for row in db.execute("SELECT data FROM memories ORDER BY rid")]


NAMED = ["eval", "--config", "swift-amm", *SHORT, "-o", "env.step_limit=25"]
"""A swift-amm run of the SHORT episode; ``-o amm.path=...`` names its store."""


@pytest.fixture(scope="module")
def named_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store named with ``amm.path`` and written by one real run (NAMED): the first run of the
    named-store test, and the seed the broken-store tests each copy before breaking it."""
    store = tmp_path_factory.mktemp("named") / "shared.sqlite"
    first = fastslow(*NAMED, "-o", f"amm.path={store}", "--out", str(store.parent / "a"))
    assert first.returncode == 0, first.stderr
    return store


ORACLE_7_13 = ["eval", "--config", "oracle", "--set", "test", "--tasks", "7,13", "--limit-per-task", "1"]


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One finished oracle eval (ORACLE_7_13); the tests that change it work on a copy."""
    out = tmp_path_factory.mktemp("oracle") / "d"
    assert fastslow(*ORACLE_7_13, "--out", str(out)).returncode == 0
    return out


# -- a memory store per run ----------------------------------------------------------------------------


def test_two_default_amm_runs_share_no_record(tmp_path: Path) -> None:
    """The same swift-amm command into two --out directories: each has its own store; the second run
    neither sees nor retrieves a record of the first (before: 8 then 16 records in one shared file)."""
    args = ["eval", "--config", "swift-amm", "--set", "test", "--tasks", "3,13", "--limit-per-task", "1"]
    args += ["-o", "env.step_limit=25"]
    for name in ("r1", "r2"):
        proc = fastslow(*args, "--out", str(tmp_path / name))
        assert proc.returncode == 0, proc.stderr
        # The console wraps long paths anywhere: compare without whitespace.
        assert f"memorystore:{tmp_path / name / 'memory.sqlite'}" in "".join(proc.stdout.split())
    rows1, rows2 = (
        store_rows(tmp_path / "r1" / "memory.sqlite"),
        store_rows(tmp_path / "r2" / "memory.sqlite"),
    )
    assert rows1 and rows2, "swift-amm wrote no memories in 25 steps: pick a livelier episode"
    assert not {r["id"] for r in rows1} & {r["id"] for r in rows2}
    for name, rows in (("r1", rows1), ("r2", rows2)):
        record = json.loads((tmp_path / name / "run.json").read_text())
        assert record["store"] == {
            "kind": "sqlite",
            "location": str((tmp_path / name / "memory.sqlite").resolve()),
            "per_run": True,
        }
        assert record["starts"][0]["store_records"] == 0
        # every record carries its own run's id, and every retrieval of the run returned its own records
        assert {str(r["episode_id"]).split("/")[0] for r in rows} == {record["run_id"]}
        own = {r["id"] for r in rows}
        for log in (tmp_path / name / "events").glob("*.jsonl"):
            for event in read_events(log):
                if isinstance(event, MemoryRetrieval):
                    assert set(event.ids) <= own
    assert (
        not Path("runs/memory.sqlite").exists()
        or Path("runs/memory.sqlite").stat().st_mtime < time.time() - 600
    )


def test_a_named_store_is_shared_on_purpose_and_its_size_recorded(tmp_path: Path, named_store: Path) -> None:
    """A second run naming the store the fixture's run wrote (the same command, another --out)."""
    n = len(store_rows(named_store))
    second = fastslow(*NAMED, "-o", f"amm.path={named_store}", "--out", str(tmp_path / "b"))
    assert second.returncode == 0, second.stderr
    record = json.loads((tmp_path / "b" / "run.json").read_text())
    assert record["store"]["per_run"] is False and record["starts"][0]["store_records"] == n
    assert "shared on purpose" in " ".join(second.stdout.split())


# -- run identity ----------------------------------------------------------------------------------------


def test_a_reused_out_dir_refuses_another_config_overrides_or_selection(tmp_path: Path) -> None:
    out = tmp_path / "d"
    done = fastslow("eval", "--config", "swift-only", *SHORT, "-o", "env.step_limit=8", "--out", str(out))
    assert done.returncode == 0, done.stderr
    before = snapshot(out)
    # another config, the same selection: refused, nothing relabelled
    other = fastslow("eval", "--config", "swift-srm", *SHORT, "-o", "env.step_limit=8", "--out", str(out))
    one_error_line(other, "'swift-only'", "'swift-srm'", "--restart")
    # the same config with another override
    changed = fastslow("eval", "--config", "swift-only", *SHORT, "-o", "env.step_limit=5", "--out", str(out))
    one_error_line(changed, "env.step_limit: 8 -> 5")
    # a wider selection
    wider = ["eval", "--config", "swift-only", "--set", "test", "--tasks", "13,17", "--limit-per-task", "1"]
    one_error_line(fastslow(*wider, "-o", "env.step_limit=8", "--out", str(out)), "--extend")
    assert snapshot(out) == before
    # the same command resumes: nothing replayed, nothing rewritten but run.json's list of starts
    again = fastslow("eval", "--config", "swift-only", *SHORT, "-o", "env.step_limit=8", "--out", str(out))
    assert again.returncode == 0, again.stderr
    after = snapshot(out)
    assert {k: v for k, v in after.items() if k != "run.json"} == {
        k: v for k, v in before.items() if k != "run.json"
    }
    assert len(json.loads(after["run.json"])["starts"]) == 2
    # --extend plays only the new episode and reports both
    extended = fastslow(*wider, "-o", "env.step_limit=8", "--extend", "--out", str(out))
    assert extended.returncode == 0, extended.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    kept = f"events/{FIRST_13.episode_id}.jsonl"
    assert metrics["episodes"] == 2 and (out / kept).read_bytes() == before[kept]
    # --restart discards the run and starts the other config
    restarted = fastslow(
        "eval", "--config", "swift-srm", *SHORT, "-o", "env.step_limit=8", "--restart", "--out", str(out)
    )
    assert restarted.returncode == 0, restarted.stderr
    record = json.loads((out / "run.json").read_text())
    assert record["config_name"] == "swift-srm" and record["episodes"] == [FIRST_13.episode_id]
    assert sorted(p.name for p in (out / "events").glob("*.jsonl")) == [f"{FIRST_13.episode_id}.jsonl"]


def test_run_refuses_an_eval_directory(tmp_path: Path, oracle_run: Path) -> None:
    out = tmp_path / "d"
    shutil.copytree(oracle_run, out)  # an eval's directory, holding the log of FIRST_13
    before = snapshot(out)
    proc = fastslow(
        "run", "--config", "oracle", "--task", "13", "--variation", str(FIRST_13.variation), "--out", str(out)
    )
    one_error_line(proc, "eval run's directory")
    assert snapshot(out) == before


def test_a_selection_naming_a_task_twice_plays_it_once(tmp_path: Path) -> None:
    chosen = select_episodes("test", "3,3,13", None, 1)
    assert [e.task_id for e in chosen] == [3, 13]
    out = tmp_path / "d"
    proc = fastslow(
        "eval",
        "--config",
        "oracle",
        "--set",
        "test",
        "--tasks",
        "7,7",
        "--limit-per-task",
        "1",
        "--out",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "metrics.json").read_text())["episodes"] == 1
    assert len(json.loads((out / "run.json").read_text())["episodes"]) == 1


def test_a_directory_without_run_record_is_refused(tmp_path: Path) -> None:
    """No readable fastslow run.json: fastslow cannot tell what in DIR is whose, so it refuses, with
    --restart too, and suggests no deleting flag."""
    out = tmp_path / "d"
    (out / "events").mkdir(parents=True)
    (out / "events" / f"{FIRST_13.episode_id}.jsonl").write_text("{}\n")
    for extra in ([], ["--restart"]):
        line = one_error_line(
            fastslow("eval", "--config", "oracle", *SHORT, "--out", str(out), *extra),
            "no fastslow run record",
        )
        assert "--restart" not in line
    (out / "run.json").write_text(json.dumps({"config_name": "oracle", "episodes": [str(FIRST_13)]}))
    before = snapshot(out)
    for extra in ([], ["--restart"]):
        line = one_error_line(
            fastslow("eval", "--config", "oracle", *SHORT, "--out", str(out), *extra), "older fastslow"
        )
        assert "--restart" not in line
    assert snapshot(out) == before


# -- the lock ------------------------------------------------------------------------------------------


def test_a_second_eval_into_a_directory_in_use_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "d"
    args = ["eval", "--config", "oracle", "--set", "test", "--tasks", "0-4", "--limit-per-task", "1"]
    # 3 steps an episode: the holder still loads five tasks (its lock is held for seconds), and the
    # resume below plays them without their long gold paths
    args += ["-o", "env.step_limit=3"]
    first = subprocess.Popen(
        [*FASTSLOW, *args, "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 120
        while not (out / "run.json").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        second = fastslow(*args, "--out", str(out))
        line = one_error_line(second, "is in use by", f"pid {first.pid}")
        assert "wait for it" in line
    finally:
        first.kill()
        first.wait(timeout=60)
    # its owner died (kill -9): the lock is free and the same command resumes the run
    resumed = fastslow(*args, "--out", str(out))
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads((out / "metrics.json").read_text())["episodes"] == 5


# -- kill -9: no ghost records, no orphans ---------------------------------------------------------------


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (workers and their JVMs)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # gone between the listing and the read
        return b""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_kill_9_of_eval_leaves_no_worker_or_jvm(tmp_path: Path) -> None:
    out = tmp_path / "d"
    args = ["eval", "--config", "swift-only", "--set", "test", "--tasks", "0-9", "--limit-per-task", "2"]
    parent = subprocess.Popen(
        [*FASTSLOW, *args, "--workers", "2", "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # Wait until both workers play (each has its own JVM) and a log exists: a worker's JVM can come up
    # after the other worker has already opened two logs, so the JVMs are what the wait counts.
    deadline = time.monotonic() + 180
    family: set[int] = set()
    jvms: list[int] = []
    while time.monotonic() < deadline:
        family = _descendants(parent.pid)
        jvms = [p for p in family if b"scienceworld.jar" in _cmdline(p)]
        if len(jvms) == 2 and list((out / "events").glob("*.jsonl")):
            break
        time.sleep(0.2)
    assert len(jvms) == 2, "expected two workers with a JVM each"
    family = _descendants(parent.pid)
    parent.send_signal(signal.SIGKILL)  # only the parent: its workers must notice on their own
    parent.wait(timeout=30)
    deadline = time.monotonic() + 10  # all of them gone within 10 s; polled, not slept through
    while (survivors := [p for p in family if _alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not survivors, f"orphans 10 s after kill -9: {survivors}"
    logs_then = len(list((out / "events").glob("*.jsonl")))
    time.sleep(2)
    assert len(list((out / "events").glob("*.jsonl"))) == logs_then, "something still plays into DIR"


def test_a_replayed_episode_leaves_no_records_of_its_killed_attempt(tmp_path: Path) -> None:
    """An attempt that wrote memories and did not finish (its log lacks episode_end, as after kill -9):
    the replay removes that attempt's records first, so the store holds each episode's records once."""
    config = load_config("swift-amm", ["env.step_limit=25"])
    episodes = [Episode(3, select_episodes("test", "3", None, 1)[0].variation)]
    out = tmp_path / "d"
    evaluate(config, episodes, out)
    log = out / "events" / f"{episodes[0].episode_id}.jsonl"
    first_writes = [e.record_id for e in read_events(log) if isinstance(e, MemoryWrite)]
    assert first_writes, "no memories written: pick an episode with salient steps"
    # the kill: the log loses its last line (episode_end) and metrics are not yet written
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:-1]))
    (out / "metrics.json").unlink()
    evaluate(config, episodes, out)
    rows = store_rows(out / "memory.sqlite")
    replay_writes = [e.record_id for e in read_events(log) if isinstance(e, MemoryWrite)]
    assert sorted(str(r["id"]) for r in rows) == sorted(replay_writes)
    assert not set(first_writes) & {str(r["id"]) for r in rows}


# -- logs and disks that fail ------------------------------------------------------------------------------


def test_a_corrupted_event_log_is_named_and_replayed_on_resume(tmp_path: Path, oracle_run: Path) -> None:
    out = tmp_path / "d"
    shutil.copytree(oracle_run, out)  # a finished run of ORACLE_7_13
    args = ORACLE_7_13
    log = out / "events" / f"{FIRST_13.episode_id}.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    lines[2] = '{"event": "env_step", "step": "garbage"}\n'
    log.write_text("".join(lines))
    reported = fastslow("report", str(out))  # the log is left out, with a warning naming it
    assert reported.returncode == 0 and f"event log {log} line 3" in reported.stderr, reported.stderr
    resumed = fastslow(*args, "--out", str(out))
    assert resumed.returncode == 0, resumed.stderr
    assert f"resume: event log {log} set aside as" in " ".join(resumed.stdout.split()), resumed.stdout
    kept = list((out / "events" / "failed").glob(f"{FIRST_13.episode_id}.corrupt-*.jsonl"))
    assert len(kept) == 1 and kept[0].read_text() == "".join(lines)
    assert isinstance(read_events(log)[-1], EpisodeEnd)
    assert json.loads((out / "metrics.json").read_text())["mean_score"] == 100


def test_a_full_disk_is_one_line_and_the_logs_stay(tmp_path: Path) -> None:
    """metrics.json cannot be written (its temporary file lands on /dev/full, which answers every write
    with ENOSPC): one line, exit 2, the event logs kept; once there is room the same command finishes
    without replaying anything."""
    out = tmp_path / "d"
    out.mkdir()
    (out / "metrics.json.tmp").symlink_to("/dev/full")
    proc = fastslow("eval", "--config", "oracle", *SHORT, "--out", str(out))
    one_error_line(proc, "metrics.json", "No space left on device")
    log = out / "events" / f"{FIRST_13.episode_id}.jsonl"
    assert isinstance(read_events(log)[-1], EpisodeEnd)
    kept = log.read_bytes()
    (out / "metrics.json.tmp").unlink(missing_ok=True)
    again = fastslow("eval", "--config", "oracle", *SHORT, "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert log.read_bytes() == kept and json.loads((out / "metrics.json").read_text())["mean_score"] == 100


@pytest.mark.parametrize("cut", ["page", "writes"])
def test_a_broken_memory_store_is_counted_and_told_once(tmp_path: Path, cut: str, named_store: Path) -> None:
    """A store that fails (corrupted pages) turns writes into fallbacks: counted in metrics.json,
    printed once on the console with SQLite's own reason, warned about in the report."""
    store = tmp_path / "broken.sqlite"
    config_args = ["-o", "env.step_limit=25", "-o", f"amm.path={store}"]
    # the seed: a copy of the store a real swift-amm run wrote (SQLite's backup: a consistent copy)
    with closing(sqlite3.connect(named_store)) as seeded, closing(sqlite3.connect(store)) as copy:
        seeded.backup(copy)
    with sqlite3.connect(store) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        if cut == "writes":  # SQLite itself refuses every insert, as a full disk would
            db.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON memories BEGIN SELECT RAISE(ABORT, 'no room'); END"
            )
    if cut == "page":
        data = bytearray(store.read_bytes())
        page = 4096
        for offset in range(2 * page, len(data), page):  # every page after the schema's is garbage
            data[offset : offset + page] = os.urandom(page)
        store.write_bytes(bytes(data))
    out = tmp_path / "d"
    args = ["eval", "--config", "swift-amm", "--set", "test", "--tasks", "3,13", "--limit-per-task", "1"]
    proc = fastslow(*args, *config_args, "--out", str(out))
    assert proc.returncode in (0, 2), proc.stderr
    if proc.returncode == 2:  # the store cannot even be counted at start: one line naming it
        one_error_line(proc, "memory store", str(store))
        return
    console = " ".join(proc.stdout.split())
    assert console.count("warning: memory store:") == 1, proc.stdout
    if cut == "writes":
        assert "write failed: no room" in console
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["mechanisms"]["memory"]["store_errors"] > 0
    report = fastslow("report", str(out))
    assert report.returncode == 0, report.stderr
    assert "the AMM store failed" in (out / "report" / "report.md").read_text()
