"""Nothing of a user's is lost: a directory of someone else's files survives every ``eval`` / ``run`` /
``report`` flag combination (each refused with one line and exit 2 before anything is created, written
or deleted); ``--restart`` of a real run deletes only the files that run wrote; a store that is not
fastslow's is never written into; ``fastslow run`` never overwrites an episode log; options are checked
before anything is written.

The refusals come before any JVM starts, so most cases run the real command line in-process
(``fastslow.cli.main``); the real runs are one short episode each (swift-only, 3 steps, a dev variation).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from fastslow.cli import main
from fastslow.config import load_config
from fastslow.env.scienceworld.episodes import select_episodes
from fastslow.eval.rundir import claim_run, run_files, run_lock
from fastslow.events import EpisodeEnd, read_events
from fastslow.manifest import BOOKKEEPING, record_removed, record_written
from fastslow.memory.records import MemoryRecord
from fastslow.memory.stores import MemoryStoreError
from fastslow.memory.stores.sqlite import SqliteStore

DEV_3 = select_episodes("dev", "3", None, 1)[0]
"""The cheapest episode that reproduces: the first dev variation of task 3."""
SHORT = ["--set", "dev", "--tasks", "3", "--limit-per-task", "1", "-o", "env.step_limit=3"]
RUN_3 = ["--task", "3", "--variation", str(DEV_3.variation), "-o", "env.step_limit=3"]

USER_FILES = {
    "events/notes.jsonl": b"precious\n",
    "metrics.json": b'{"mine": 1}\n',
    "report/notes.txt": b"my own report\n",
    "config.yaml": b"mine: true\n",
    "run.json": b'{"mine": 1}\n',
    "README.txt": b"my experiment\n",
}


def foreign_sqlite(path: Path) -> None:
    """Someone else's SQLite database: one ``users`` table with a row."""
    with sqlite3.connect(path) as db:
        db.execute("create table users(x int)")
        db.execute("insert into users values (1)")
    sqlite3.connect(path).close()


def user_dir(root: Path) -> Path:
    """A directory of a user's files under the names a run writes (and a foreign memory.sqlite)."""
    for name, data in USER_FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    foreign_sqlite(root / "memory.sqlite")
    return root


def tree(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` (folders as None) with its bytes: nothing may appear, change or go."""
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in root.rglob("*")}


def cli(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``fastslow ARGS`` in this process: (exit code, stderr)."""
    capsys.readouterr()
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, capsys.readouterr().err


def one_line(result: tuple[int, str], *fragments: str) -> str:
    code, err = result
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, (code, err)
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def fastslow(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fastslow.cli", *args], capture_output=True, text=True, timeout=600
    )


COMMANDS = {
    "eval": ["eval", "--config", "swift-only", *SHORT],
    "eval --restart": ["eval", "--config", "swift-only", *SHORT, "--restart"],
    "eval --extend": ["eval", "--config", "swift-only", *SHORT, "--extend"],
    "eval --warmup": ["eval", "--config", "swift-amm", *SHORT, "--warmup"],
    "eval --warmup --restart": ["eval", "--config", "swift-amm", *SHORT, "--warmup", "--restart"],
    "eval amm --restart": ["eval", "--config", "swift-amm", *SHORT, "--restart"],
    "eval --executor bogus": ["eval", "--config", "swift-only", *SHORT, "--executor", "bogus"],
    "eval --ray-address": ["eval", "--config", "swift-only", *SHORT, "--ray-address", "auto"],
    "eval --restart --extend": ["eval", "--config", "swift-only", *SHORT, "--restart", "--extend"],
    "run": ["run", "--config", "swift-only", *RUN_3],
    "run amm": ["run", "--config", "swift-amm", *RUN_3],
    "report": ["report"],
    "report --out DIR": ["report"],
    "report --out DIR/report": ["report"],
}
"""Each command, given the user's directory as ``--out`` (eval, run) or as the run to report."""


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_directory_of_user_files_survives_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """The directory holds no fastslow run: every command is refused with one line that suggests no
    deleting flag, and every user file (events/notes.jsonl, metrics.json, a foreign memory.sqlite,
    report/notes.txt, config.yaml, a run.json that is not fastslow's) is byte-identical afterwards;
    nothing is added (no lock file, no events/ folder)."""
    u = user_dir(tmp_path / "u")
    before = tree(u)
    args = COMMANDS[name]
    if name == "report":
        args = [*args, str(u)]
    elif name == "report --out DIR":
        args = [*args, str(u), "--out", str(u)]
    elif name == "report --out DIR/report":
        args = [*args, str(u), "--out", str(u / "report")]
    else:
        args = [*args, "--out", str(u)]
    line = one_line(cli(*args, capsys=capsys))
    if name != "eval --restart --extend":  # (that one says the two flags contradict each other)
        assert "--restart" not in line and "discard" not in line, line
    assert tree(u) == before


def test_eval_refuses_user_files_without_suggesting_a_deleting_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's case: events/notes.jsonl, metrics.json and a foreign memory.sqlite (no run.json)."""
    u = tmp_path / "u"
    (u / "events").mkdir(parents=True)
    (u / "events" / "notes.jsonl").write_text("precious\n")
    (u / "metrics.json").write_text('{"mine":1}\n')
    foreign_sqlite(u / "memory.sqlite")
    before = tree(u)
    for extra in ([], ["--restart"]):
        line = one_line(
            cli("eval", "--config", "swift-only", *SHORT, "--out", str(u), *extra, capsys=capsys),
            "events/notes.jsonl",
            "metrics.json",
            "no fastslow run record",
            "choose another --out",
        )
        assert "--restart" not in line
        assert tree(u) == before


def test_options_are_checked_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "fresh"
    one_line(
        cli(
            "eval", "--config", "swift-only", *SHORT, "--executor", "bogus", "--out", str(out), capsys=capsys
        ),
        "unknown executor 'bogus'",
    )
    one_line(
        cli(
            "eval",
            "--config",
            "swift-only",
            *SHORT,
            "--ray-address",
            "auto",
            "--out",
            str(out),
            capsys=capsys,
        ),
        "--ray-address",
        "--executor ray",
    )
    one_line(
        cli(
            "eval",
            "--config",
            "swift-only",
            *SHORT,
            "--warmup-config",
            "swift-amm",
            "--out",
            str(out),
            capsys=capsys,
        ),
        "--warmup",
    )
    assert not out.exists()


# -- a store that is not fastslow's is never written into ------------------------------------------------


def test_a_foreign_sqlite_file_is_never_made_a_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``-o amm.path=`` naming someone else's SQLite file, or a foreign ``memory.sqlite`` where the run's
    own store would go: refused with one line before anything is written; the file keeps every byte
    (no tables added, no WAL switch) - as ``fastslow memory stats`` refuses it."""
    other = tmp_path / "other.db"
    foreign_sqlite(other)
    kept = other.read_bytes()
    out = tmp_path / "fresh"
    for command in (
        ["eval", "--config", "swift-amm", *SHORT, "-o", f"amm.path={other}", "--out", str(out)],
        ["run", "--config", "swift-amm", *RUN_3, "-o", f"amm.path={other}", "--out", str(out)],
    ):
        one_line(cli(*command, capsys=capsys), str(other), "not a fastslow memory store")
        assert not out.exists()
    stats = cli("memory", "stats", str(other), capsys=capsys)
    assert one_line(stats, "not a fastslow memory store") == one_line(
        cli(
            "eval",
            "--config",
            "swift-amm",
            *SHORT,
            "-o",
            f"amm.path={other}",
            "--out",
            str(out),
            capsys=capsys,
        )
    ).replace("memory store: ", "", 1)
    assert other.read_bytes() == kept and sorted(p.name for p in tmp_path.iterdir()) == ["other.db"]
    # the per-run place of the store, DIR/memory.sqlite, holding someone else's database
    d = tmp_path / "d"
    d.mkdir()
    foreign_sqlite(d / "memory.sqlite")
    before = tree(d)
    one_line(
        cli("eval", "--config", "swift-amm", *SHORT, "--out", str(d), capsys=capsys),
        "memory.sqlite",
        "not a fastslow memory store",
    )
    assert tree(d) == before
    # the store class itself refuses a writable open (the check every opener goes through)
    with pytest.raises(MemoryStoreError, match="not a fastslow memory store"):
        SqliteStore(other)
    assert other.read_bytes() == kept


def test_a_populated_store_no_run_wrote_is_not_adopted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A fastslow store with records placed where the run's own store goes: the run would write into it
    and a later --restart would delete it, so it is refused (naming it with amm.path keeps it the user's)."""
    d = tmp_path / "d"
    d.mkdir()
    store = SqliteStore(d / "memory.sqlite")
    store.add(MemoryRecord(3, "t", "1", "e", 1, "r", "i", (), "act", "o", 0, 1, "success", "s"))
    store.close()
    before = tree(d)
    one_line(
        cli("eval", "--config", "swift-amm", *SHORT, "--out", str(d), capsys=capsys),
        "memory.sqlite with 1 records",
        "amm.path=",
    )
    # (a read of a WAL-mode store leaves its -wal/-shm index files, as `fastslow memory stats` does)
    assert {k: v for k, v in tree(d).items() if not k.endswith(("-wal", "-shm"))} == before


def test_restart_deletes_only_what_run_json_lists(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``run_files``: what the run's commands recorded writing (fastslow.manifest: its logs, their kept
    attempts, metrics.json, config.yaml), run.json and the per-run store, each still as written, and
    nothing else: not a file of the same names written by hand, not a user's file in events/, not the
    log of an episode outside the selection, not a recorded file a user changed since, not a path a
    tampered run.json points outside DIR, not a memory.sqlite that is no longer a fastslow store (then
    the restart is refused before deleting)."""
    d = tmp_path / "d"
    config = load_config("swift-amm", ["env.step_limit=3"])
    with run_lock(d):
        record = claim_run(d, config, [DEV_3.episode_id])
    own = [
        f"events/{DEV_3.episode_id}.jsonl",
        f"events/failed/{DEV_3.episode_id}.attempt1.jsonl",
        f"events/failed/{DEV_3.episode_id}.corrupt-abc123.jsonl",
        "metrics.json",
    ]
    mine = ["events/notes.jsonl", "events/3-9999.jsonl", "events/failed/mine.jsonl", "notes.txt"]
    for name in own + mine:
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_text("{}\n")
    record_written(*(d / name for name in own))
    listed = {str(p.relative_to(d)) for p in run_files(d, record)}
    wal = {"memory.sqlite-wal", "memory.sqlite-shm"}  # there while a reader has the store open
    assert listed - wal == {*own, "config.yaml", "run.json", "memory.sqlite"}
    # a recorded file changed since is the user's now; one written by hand under a run's name never was
    (d / "metrics.json").write_text('{"edited": "by me"}\n')
    (d / "events" / f"{DEV_3.episode_id}.jsonl").unlink()
    (d / "events" / f"{DEV_3.episode_id}.jsonl").write_text("mine\n")
    record_removed(d / "events" / f"{DEV_3.episode_id}.jsonl")
    listed = {str(p.relative_to(d)) for p in run_files(d, record)}
    assert "metrics.json" not in listed and f"events/{DEV_3.episode_id}.jsonl" not in listed
    outside = tmp_path / "outside.jsonl"
    outside.write_text("precious\n")
    tampered = record.model_copy(update={"episodes": ["../../outside", "../outside", DEV_3.episode_id]})
    assert outside not in run_files(d, tampered) and not any(".." in str(p) for p in run_files(d, tampered))
    # the per-run store replaced by someone else's database: not the run's, and not one to write into
    (d / "memory.sqlite").unlink()
    foreign_sqlite(d / "memory.sqlite")
    assert "memory.sqlite" not in {p.name for p in run_files(d, record)}
    before = tree(d)
    one_line(
        cli("eval", "--config", "swift-amm", *SHORT, "--restart", "--out", str(d), capsys=capsys),
        "not a fastslow memory store",
    )
    assert tree(d) == before


# -- real runs ----------------------------------------------------------------------------------------


def test_restart_of_a_real_run_keeps_the_users_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real run, a report of it, a user's files placed beside its logs; ``--restart`` with another
    config deletes the run's logs, metrics, report and own store and nothing of the user's. A report of
    that run written into a directory of user files changes none of them. (The runs are subprocesses;
    the reports, which only read the run, run in this process.)"""
    d = tmp_path / "d"
    first = fastslow("eval", "--config", "swift-amm", *SHORT, "--out", str(d))
    assert first.returncode == 0, first.stderr
    assert cli("report", str(d), capsys=capsys)[0] == 0
    mine = {
        "events/notes.jsonl": b"precious\n",
        "events/failed/mine.txt": b"kept aside by me\n",
        "report/notes.txt": b"my notes on the report\n",
        "README.txt": b"my experiment\n",
    }
    for name, data in mine.items():
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_bytes(data)
    assert (d / "memory.sqlite").is_file()
    old_log = (d / "events" / f"{DEV_3.episode_id}.jsonl").read_bytes()
    # a report of the run into a directory of someone else's files touches none of them
    u = user_dir(tmp_path / "u")
    user_before = {k: v for k, v in tree(u).items()}
    cli("report", str(d), "--out", str(u), capsys=capsys)
    after = tree(u)
    assert {k: after.get(k) for k in user_before} == user_before
    # a user's file under a report file's name, in a folder no fastslow report wrote: refused, kept
    c = tmp_path / "c"
    c.mkdir()
    (c / "main.csv").write_bytes(b"my table\n")
    code, err = cli("report", str(d), "--out", str(c), capsys=capsys)
    assert code == 2 and "holds main.csv, which no fastslow report wrote" in err
    assert tree(c) == {"main.csv": b"my table\n"}
    assert cli("report", str(d), "--out", str(u), capsys=capsys)[0] == 0  # over its own earlier report

    restarted = fastslow("eval", "--config", "swift-srm", *SHORT, "--restart", "--out", str(d))
    assert restarted.returncode == 0, restarted.stderr
    for name, data in mine.items():
        assert (d / name).read_bytes() == data, name
    assert not list(d.glob("memory.sqlite*"))  # the run's own store (swift-srm has none)
    # (the folder's own bookkeeping, the lock and the record of what was written and removed, stays)
    assert sorted(p.name for p in (d / "report").iterdir() if p.name not in BOOKKEEPING) == ["notes.txt"]
    assert json.loads((d / "run.json").read_text())["config_name"] == "swift-srm"
    log = d / "events" / f"{DEV_3.episode_id}.jsonl"
    assert log.read_bytes() != old_log and isinstance(read_events(log)[-1], EpisodeEnd)
    assert sorted(p.name for p in (d / "events").iterdir()) == sorted(["notes.jsonl", "failed", log.name])


def test_run_never_overwrites_an_episode_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``fastslow run --out D`` twice on one episode (another config, or the same): the second is refused
    with one line and the first log keeps every byte."""
    d = tmp_path / "d"
    first = fastslow("run", "--config", "swift-only", *RUN_3, "--out", str(d))
    assert first.returncode == 0, first.stderr
    log = d / "events" / f"{DEV_3.episode_id}.jsonl"
    kept = log.read_bytes()
    assert isinstance(read_events(log)[-1], EpisodeEnd)
    for config in ("swift-srm", "swift-only"):
        one_line(
            cli("run", "--config", config, *RUN_3, "--out", str(d), capsys=capsys),
            f"already holds a log of episode {DEV_3.episode_id}",
        )
    assert log.read_bytes() == kept
    # an eval into a `fastslow run` directory: refused, no deleting flag suggested, even with --restart
    for extra in ([], ["--restart"]):
        line = one_line(
            cli("eval", "--config", "swift-only", *SHORT, "--out", str(d), *extra, capsys=capsys),
            "no fastslow run record",
        )
        assert "--restart" not in line
    assert log.read_bytes() == kept
