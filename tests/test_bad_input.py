"""Bad input is one line, exit 2, nothing written (issue 49, points 6 and 7): user text is never read as
console markup; a foreign ``memories`` table is refused without a byte of its file changing; a Ray
address with no cluster behind it is refused in bounded time; ``attribute --seed`` out of range, a
duplicate YAML key, ``--workers`` past its bound and an empty ``--out`` are refused up front; ``--seeds``
on a configuration whose models do not sample says so.

Every case drives the real command line in a subprocess (real ScienceWorld for the runs that play,
real SQLite files, a real Ray start for the cluster checks)."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fastslow.env.scienceworld.episodes import select_episodes

FASTSLOW = [sys.executable, "-m", "fastslow.cli"]
DEV_3 = select_episodes("dev", "3", None, 1)[0]
"""The cheapest episode that plays: the first dev variation of task 3 (3 steps)."""
SHORT = ["--set", "dev", "--tasks", "3", "--limit-per-task", "1", "-o", "env.step_limit=3"]


def fastslow(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*FASTSLOW, *args], capture_output=True, text=True, timeout=600, cwd=cwd)


def one_error_line(proc: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """The command failed with exit 2 and one stderr line holding every fragment."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-500:], proc.stderr[-2000:])
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def files_under(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` (folders as None) with its bytes."""
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in root.rglob("*")}


# -- 6. user text is never console markup --------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["config", "show", "-c", "br[/b]"], "unknown config 'br[/b]'"),
        (["eval", "-c", "br[/b]", "--out", "{tmp}/o"], "unknown config 'br[/b]'"),
        (["eval", "--tasks", "0[/b]", "--out", "{tmp}/o"], "bad task selection '0[/b]'"),
        (["episodes", "--tasks", "[/b]"], "bad task selection '[/b]'"),
        (["eval", "-o", "env.x[/b]=1", "--out", "{tmp}/o"], "unknown key 'env.x[/b]'"),
        (["eval", "-o", "env.step_limit=[/b]", "--out", "{tmp}/o"], "env.step_limit"),
        (["eval", "--executor", "bogus", "--out", "{tmp}/o/br[/b]"], "unknown executor"),
        (["eval", "--tasks", "7", "--out", "/etc/hostname/br[/b]"], "--out /etc/hostname/br[/b]"),
    ],
)
def test_user_text_in_an_error_is_one_line_not_a_markup_traceback(
    args: list[str], fragment: str, tmp_path: Path
) -> None:
    proc = fastslow(*(a.replace("{tmp}", str(tmp_path)) for a in args))
    one_error_line(proc, fragment)
    assert not (tmp_path / "o").exists()


@pytest.mark.slow  # ~50 s: two short runs (eval with two seeds, run) and a report
def test_user_text_in_a_run_prints_as_it_is(tmp_path: Path) -> None:
    """A config named ``br[/b]`` played into ``--out D/br[/b]`` (progress bar, "metrics written to",
    the report's table and path, ``run``'s live view and log path): exit 0, no traceback. Played with
    ``--seeds`` on a configuration with no sampling model, which says so in one warning line."""
    config = tmp_path / "marked.yaml"
    config.write_text("extends: oracle\nname: 'br[/b] [bold]x'\n", encoding="utf-8")
    out = tmp_path / "D" / "br[/b]"
    proc = fastslow("eval", "-c", str(config), *SHORT, "--seeds", "0-1", "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "MarkupError" not in proc.stderr
    # (rich folds a line past 80 columns, the path too: compared without whitespace)
    assert f"metricswrittento{out / 'metrics.json'}" in "".join(proc.stdout.split())
    assert json.loads((out / "metrics.json").read_text())["episodes"] == 2
    assert "br[/b] [bold]x" in proc.stdout  # the progress bar's label, as written
    # 7g: the seeds reach no model that samples: one warning line says what their spread measures
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning: --seeds")]
    assert len(warnings) == 1 and "no model that samples" in warnings[0], proc.stderr
    assert "ScienceWorld's own nondeterminism" in warnings[0]

    report = fastslow("report", str(out), "--out", str(tmp_path / "R" / "r[/b]"))
    assert report.returncode == 0, report.stderr[-3000:]
    assert "br[/b] [bold]x" in report.stdout and "Traceback" not in report.stderr

    run_out = tmp_path / "E" / "br[/b]"
    run = ["run", "-c", str(config), "--task", "3", "--variation", str(DEV_3.variation)]
    played = fastslow(*run, "-o", "env.step_limit=3", "--out", str(run_out))
    assert played.returncode == 0, played.stderr[-3000:]
    log = run_out / "events" / f"{DEV_3.episode_id}.jsonl"
    assert log.is_file() and f"eventlog:{log}" in "".join(played.stdout.split())


# -- 7a. a foreign memories table ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        (["create table memories(note text)"], "its memories table has no rid column"),
        (
            [  # fastslow's memories columns, but someone else's slice_terms
                "create table memories(rid integer primary key, id text, task text, tag text, "
                "created real, data text)",
                "create table slice_terms(word text)",
            ],
            "its slice_terms table has no token column",
        ),
    ],
    ids=["own-memories-table", "own-slice-terms"],
)
def test_a_foreign_memories_table_is_refused_and_its_file_left_as_it_was(
    schema: list[str], why: str, tmp_path: Path
) -> None:
    """Before, the store's name check passed, the writable open switched the file to WAL, and only then
    did a CREATE INDEX fail: refused, but the file changed. Now the columns are checked (read-only)
    before journal_mode is touched: not a byte of the file changes, no -wal/-shm appears."""
    from fastslow.memory.stores import MemoryStoreError
    from fastslow.memory.stores.sqlite import SqliteStore, check_store_file

    other = tmp_path / "theirs.db"
    with sqlite3.connect(other) as db:
        for statement in schema:
            db.execute(statement)
        db.execute("insert into memories default values")
    db.close()
    kept = other.read_bytes()
    out = tmp_path / "fresh"
    proc = fastslow("eval", "--config", "swift-amm", *SHORT, "-o", f"amm.path={other}", "--out", str(out))
    one_error_line(proc, str(other), "not a fastslow memory store", why)
    one_error_line(fastslow("memory", "stats", str(other)), "not a fastslow memory store")
    with pytest.raises(MemoryStoreError, match=why):
        check_store_file(other)
    with pytest.raises(MemoryStoreError, match=why):
        SqliteStore(other)
    assert other.read_bytes() == kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["theirs.db"]  # no -wal, -shm, no --out


# -- 7b. a Ray address with no cluster behind it --------------------------------------------------------


def _running_ray() -> bool:
    """Whether some Ray instance runs on this machine (``--ray-address auto`` would join it)."""
    from ray._private.services import find_gcs_addresses

    return bool(find_gcs_addresses())


@pytest.mark.slow  # ~40 s: starts a local Ray instance to check the probe joins a live one
def test_a_ray_address_without_a_cluster_is_one_line_in_bounded_time(tmp_path: Path) -> None:
    """Before: ``auto`` with no cluster was a 113-line traceback after the run files were written, and
    ``127.0.0.1:1`` hung for minutes. Now both are one line, before anything is written; a port that
    accepts but is not Ray is refused after the probe's bound; a live instance passes."""
    pytest.importorskip("ray")
    from fastslow.errors import UsageError
    from fastslow.eval.ray_cluster import check_ray_cluster

    out = tmp_path / "o"
    ray_eval = ["eval", "--config", "oracle", *SHORT, "--executor", "ray", "--out", str(out)]
    started = time.monotonic()
    one_error_line(fastslow(*ray_eval, "--ray-address", "127.0.0.1:1"), "no Ray cluster answers there")
    assert time.monotonic() - started < 30
    one_error_line(fastslow(*ray_eval, "--ray-address", "nonsense"), "give auto or HOST:PORT")
    if not _running_ray():  # someone else's instance on this machine would be joined, rightly
        one_error_line(fastslow(*ray_eval, "--ray-address", "auto"), "no running Ray cluster found")
    assert not out.exists()

    with socket.socket() as silent:  # accepts connections, never answers: not a Ray GCS
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        started = time.monotonic()
        with pytest.raises(UsageError, match="no Ray cluster answered within 5 s"):
            check_ray_cluster(f"127.0.0.1:{silent.getsockname()[1]}", probe_s=5)
        assert time.monotonic() - started < 20

    # A live instance (token authentication off: the probe is another driver of this machine).
    helper = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, ray; ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False); "
            "print(ray.get_runtime_context().gcs_address, flush=True); sys.stdin.read(); ray.shutdown()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "RAY_AUTH_MODE": "disabled"},
    )
    try:
        assert helper.stdout is not None
        address = helper.stdout.readline().strip()
        assert address, "the helper's Ray instance did not start"
        check_ray_cluster(address)
    finally:
        assert helper.stdin is not None
        helper.stdin.close()
        try:
            helper.wait(timeout=60)
        except subprocess.TimeoutExpired:
            helper.kill()


# -- 7c, 7e, 7f: numbers and paths refused up front -----------------------------------------------------


def test_attribute_refuses_a_seed_out_of_range_before_anything(tmp_path: Path) -> None:
    """Before, ``--seed -1`` played every fork, then the bootstrap's numpy generator raised."""
    out = tmp_path / "attr"
    for seed in ("-1", str(2**32)):
        proc = fastslow(
            "attribute", str(tmp_path), "--mechanism", "gate-drop", "--seed", seed, "--out", str(out)
        )
        one_error_line(proc, "--seed must be 0 to 4294967295", seed)
    assert not out.exists()


def test_workers_are_bounded(tmp_path: Path) -> None:
    out = tmp_path / "o"
    for workers in ("65", "100000", "0"):
        proc = fastslow("eval", "--config", "oracle", *SHORT, "--workers", workers, "--out", str(out))
        one_error_line(proc, "--workers must be 1 to 64", workers)
    assert not out.exists()
    help_words = [w for w in fastslow("eval", "--help").stdout.split() if w != "\u2502"]  # box borders
    assert "1 to 64" in " ".join(help_words)


OUT_COMMANDS = {
    "eval": ["eval", "--tasks", "7"],
    "run": ["run", "--task", "7", "--variation", "0"],
    "fork": ["fork", "{tmp}", "7-0", "--at", "2"],
    "attribute": ["attribute", "{tmp}", "--mechanism", "gate-drop"],
    "report": ["report", "{tmp}"],
    "data tasks": ["data", "tasks"],
    "data gold": ["data", "gold"],
    "data dagger": ["data", "dagger", "--gold", "{tmp}"],
    "data sage-demos": ["data", "sage-demos"],
    "data substances": ["data", "substances"],
    "data paints": ["data", "paints"],
    "data circuits": ["data", "circuits"],
    "data focus-budgets": ["data", "focus-budgets"],
    "train swift": ["train", "swift", "--data", "{tmp}"],
    "train swift-rerank": ["train", "swift-rerank", "--data", "{tmp}", "--weights", "{tmp}/w"],
    "train swift-memory": ["train", "swift-memory", "--data", "{tmp}", "--store", "{tmp}/s"],
    "train swift-t5": ["train", "swift-t5", "--data", "{tmp}", "--base", "{tmp}"],
}
"""Every command with an ``--out``, with its other required arguments."""


@pytest.mark.parametrize("name", list(OUT_COMMANDS))
def test_an_empty_out_is_refused(name: str, tmp_path: Path) -> None:
    """``--out ""`` is ``Path("")``, which is ``.``: it wrote into the current folder."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    args = [a.replace("{tmp}", str(tmp_path)) for a in OUT_COMMANDS[name]]
    one_error_line(fastslow(*args, "--out", "", cwd=cwd), "Invalid value for '--out'", "empty path")
    assert list(cwd.iterdir()) == []


# -- 7d. duplicate YAML keys -----------------------------------------------------------------------------


def test_a_duplicate_yaml_key_is_refused_naming_it_and_its_lines(tmp_path: Path) -> None:
    top = tmp_path / "top.yaml"
    top.write_text("extends: oracle\nenv:\n  step_limit: 5\nenv:\n  step_limit: 7\n", encoding="utf-8")
    nested = tmp_path / "nested.yaml"
    nested.write_text(
        "extends: oracle\nenv:\n  step_limit: 5\n  seed: 1\n  step_limit: 7\n", encoding="utf-8"
    )
    child = tmp_path / "child.yaml"
    child.write_text("extends: nested.yaml\nname: child\n", encoding="utf-8")
    one_error_line(fastslow("config", "show", "-c", str(top)), f"config {top}", "key 'env'", "lines 2 and 4")
    nested_error = ("key 'env.step_limit' is given twice", "lines 3 and 5")
    one_error_line(fastslow("config", "show", "-c", str(nested)), f"config {nested}", *nested_error)
    # a parent's duplicate, reached through the child's extends, names the parent
    one_error_line(fastslow("config", "show", "-c", str(child)), "config nested.yaml", *nested_error)
    override = fastslow("config", "show", "-o", "env={step_limit: 3, step_limit: 4}")
    one_error_line(override, "override env={step_limit: 3, step_limit: 4}", "key 'step_limit'", "line 1")
    out = tmp_path / "o"
    one_error_line(fastslow("eval", "-c", str(nested), "--out", str(out)), *nested_error)
    assert not out.exists()
    # merging an anchored mapping (<<) and then setting one of its keys is not a duplicate
    merged = tmp_path / "merged.yaml"
    merged.write_text(
        "extends: oracle\nenv: &e\n  step_limit: 5\nagent:\n  <<: {kind: oracle}\n  kind: oracle\n",
        encoding="utf-8",
    )
    assert fastslow("config", "show", "-c", str(merged)).returncode == 0
