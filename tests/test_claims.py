"""The one claim path: what a command wrote is recorded with its sha256 (``fastslow.manifest``), and only
that is ever deleted or overwritten; a directory is refused when it holds files no fastslow command
wrote, when it is (inside) the run the command reads, or when another command's work claimed it.

Issue 49 point 4: ``--restart`` deleted a user's ``report/report.md`` and ``report/main.csv`` because
of their names. The real command line runs each case (oracle episodes: seconds each)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fastslow.cli import main
from fastslow.errors import RunDirError, UsageError
from fastslow.eval.rundir import CLAIM_FILE, check_directory, claim_directory, foreign_files, write_json
from fastslow.manifest import MANIFEST_FILE, Manifest, owned, record_writing, record_written

ORACLE = ["eval", "--config", "oracle", "--set", "test", "--tasks", "7", "--limit-per-task", "1"]


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


def test_restart_keeps_the_users_report_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Point 4 as reported: the user's report/report.md and report/main.csv, put there before the run,
    survive ``--restart`` byte for byte, though they carry the report's names."""
    r1 = tmp_path / "r1"
    (r1 / "report").mkdir(parents=True)
    (r1 / "report" / "report.md").write_text("mine\n")
    (r1 / "report" / "main.csv").write_text("my,table\n")
    assert cli(*ORACLE, "--out", str(r1), capsys=capsys)[0] == 0
    assert cli(*ORACLE, "--restart", "--out", str(r1), capsys=capsys)[0] == 0
    assert (r1 / "report" / "report.md").read_text() == "mine\n"
    assert (r1 / "report" / "main.csv").read_text() == "my,table\n"
    # and `fastslow report` into that folder still refuses to write over them
    one_line(cli("report", str(r1), capsys=capsys), "which no fastslow report wrote")
    assert (r1 / "report" / "report.md").read_text() == "mine\n"


def test_restart_deletes_the_runs_own_report_but_not_an_edited_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A report fastslow wrote into DIR/report goes with ``--restart``; a report file the user edited
    since is theirs and stays; rewriting the report over an edited file is refused (one line)."""
    d = tmp_path / "d"
    assert cli(*ORACLE, "--out", str(d), capsys=capsys)[0] == 0
    assert cli("report", str(d), capsys=capsys)[0] == 0
    report = d / "report"
    written = {p.name for p in Manifest(report).owned_files()}
    assert {"report.md", "report.html", "main.csv"} <= written
    (report / "main.csv").write_text("edited by me\n")
    one_line(cli("report", str(d), capsys=capsys), "main.csv", "which no fastslow report wrote")
    assert (report / "main.csv").read_text() == "edited by me\n"
    assert cli(*ORACLE, "--restart", "--out", str(d), capsys=capsys)[0] == 0
    left = sorted(p.name for p in report.iterdir() if p.name not in (MANIFEST_FILE, ".fastslow.lock"))
    assert left == ["main.csv"] and (report / "main.csv").read_text() == "edited by me\n"


def test_restart_keeps_a_log_the_user_replaced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An event log of the run that the user overwrote with their own bytes is not the run's any more:
    ``--restart`` sets it aside as unreadable instead of deleting it (events/failed/ keeps it)."""
    d = tmp_path / "d"
    assert cli(*ORACLE, "--out", str(d), capsys=capsys)[0] == 0
    (log,) = (d / "events").glob("*.jsonl")
    assert owned(log)
    log.write_text("my notes, not a log\n")
    assert not owned(log)
    assert cli(*ORACLE, "--restart", "--out", str(d), capsys=capsys)[0] == 0
    kept = [
        p.read_text() for p in (d / "events").rglob("*.jsonl") if p.read_text() == "my notes, not a log\n"
    ]
    assert kept == ["my notes, not a log\n"]


def test_manifest_records_and_judges(tmp_path: Path) -> None:
    """Only files recorded inside a claimed (locked) directory are owned; a recorded file that changes
    is not; a file recorded as being written is owned whatever it holds; a user's file under a
    recorded name that was removed is not; outside a claimed directory nothing is recorded."""
    loose = tmp_path / "loose" / "a.txt"
    loose.parent.mkdir()
    loose.write_text("x")
    record_written(loose)
    assert not owned(loose) and not (loose.parent / MANIFEST_FILE).exists()
    d = tmp_path / "d"
    d.mkdir()
    (d / ".fastslow.lock").touch()
    (d / "sub").mkdir()
    a, b, c = d / "a.json", d / "sub" / "b.jsonl", d / "c.txt"
    write_json(a, {"k": 1})
    record_writing(b)
    b.write_text("growing\n")
    c.write_text("a user's\n")
    record_writing(c)  # an existing file nobody recorded is not claimed by "writing"
    assert owned(a) and owned(b) and not owned(c)
    b.write_text("grown\n")
    assert owned(b)
    record_written(b)
    b.write_text("changed by hand\n")
    assert not owned(b)
    assert sorted(foreign_files(d)) == ["c.txt", "sub/b.jsonl"]


def test_claim_directory_refusals(tmp_path: Path) -> None:
    """``claim_directory``: the parent run, a folder inside it or above it, a file, another kind's or
    another key's claim, and a user's file are refused before anything is written; the same key
    resumes; a nested claimed directory is judged by its own manifest."""
    parent = tmp_path / "runs" / "parent"
    parent.mkdir(parents=True)
    key = {"run_id": "abc", "mechanism": "gate-drop", "seed": 0}
    for out, what in (
        (parent, "is the run"),
        (parent / "attr", "is inside the run"),
        (tmp_path / "runs", "holds the run"),
    ):
        with pytest.raises(RunDirError, match=what):
            check_directory(out, "attribute", key, parents=(parent,))
    assert not (parent / "attr").exists()
    out = tmp_path / "attr"
    with claim_directory(out, "attribute", key, parents=(parent,)):
        write_json(out / "attribution.json", {"points": []})
        nested = out / "forks" / "p1"
        nested.mkdir(parents=True)
        (nested / ".fastslow.lock").touch()
        write_json(nested / "metrics.json", {"n": 1})
    assert json.loads((out / CLAIM_FILE).read_text())["key"] == key
    with claim_directory(out, "attribute", key, parents=(parent,)):  # same key: resume
        pass
    with pytest.raises(RunDirError, match=r"other settings \(seed: 0 -> 1\)"):
        check_directory(out, "attribute", {**key, "seed": 1})
    with pytest.raises(RunDirError, match=re.escape("holds a `attribute` directory, not `data gold`")):
        check_directory(out, "data gold", key)
    (out / "forks" / "p1" / "metrics.json").write_text('{"forged": true}\n')
    with pytest.raises(
        RunDirError, match=re.escape("forks/p1/metrics.json, which no fastslow attribute wrote")
    ):
        check_directory(out, "attribute", key)
    user = tmp_path / "user"
    user.mkdir()
    (user / "attribution.json").write_text('{"my": 1}\n')
    with pytest.raises(RunDirError, match=re.escape("attribution.json, which no fastslow attribute wrote")):
        check_directory(user, "attribute", key)
    assert (user / "attribution.json").read_text() == '{"my": 1}\n'
    (tmp_path / "file").write_text("x")
    with pytest.raises(Exception, match="not a directory"):
        check_directory(tmp_path / "file", "attribute", key)


def test_fork_never_writes_into_its_parent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``fork --out PARENT/sub`` (a new, empty folder inside the parent run) is refused, nothing made."""
    d = tmp_path / "d"
    assert cli(*ORACLE, "--out", str(d), capsys=capsys)[0] == 0
    (log,) = (d / "events").glob("*.jsonl")
    before = sorted(str(p) for p in d.rglob("*"))
    one_line(
        cli("fork", str(d), log.stem, "--at", "2", "--out", str(d / "fork"), capsys=capsys),
        "is inside the run",
    )
    assert sorted(str(p) for p in d.rglob("*")) == before


def test_data_commands_claim_their_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``data gold`` writes only into an empty directory or its own dataset of the same settings, and
    records what it wrote; ``data dagger`` never writes into the gold dataset it reads."""
    user = tmp_path / "user"
    user.mkdir()
    (user / "manifest.json").write_text('{"mine": 1}\n')
    one_line(
        cli("data", "gold", "--out", str(user), "--tasks", "7", "--per-task", "1", capsys=capsys),
        "manifest.json, which no fastslow data gold wrote",
    )
    assert [p.name for p in user.iterdir()] == ["manifest.json"]
    gold = tmp_path / "gold"
    args = ("data", "gold", "--out", str(gold), "--tasks", "7", "--per-task", "1", "--workers", "1")
    assert cli(*args, capsys=capsys)[0] == 0
    assert not foreign_files(gold) and {p.name for p in Manifest(gold).owned_files()} >= {"manifest.json"}
    assert cli(*args, capsys=capsys)[0] == 0  # the same settings resume (nothing left to replay)
    one_line(
        cli("data", "gold", "--out", str(gold), "--tasks", "7", "--per-task", "2", capsys=capsys),
        "other settings (per_task: 1 -> 2)",
    )
    one_line(
        cli("data", "dagger", "--gold", str(gold), "--out", str(gold / "dagger"), capsys=capsys),
        "is inside the run",
    )


def test_evaluate_inside_a_held_claim_plays_as_the_claim_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``fastslow eval --warmup`` claims DIR (``evaluate.claim``), plays the warm-up, then calls
    ``evaluate`` without a warm-up: inside the held claim the run is its run.json's, so a config
    measured only with a warm-up (``warmup: required``) is not refused there after the warm-up."""
    import fastslow.eval.evaluate as evaluate_module
    from fastslow.config import load_config

    monkeypatch.setattr(evaluate_module, "check_models", lambda config: None)  # no model server here
    cfg = load_config("paper-full", [])
    out = tmp_path / "run"
    with evaluate_module.claim(cfg, [], out, warmup=True) as record:
        assert record.warmup is not None
        metrics = evaluate_module.evaluate(cfg, [], out)
    assert metrics["episodes"] == 0
    # outside a claim the same call is refused, before anything is written
    fresh = tmp_path / "fresh"
    with pytest.raises(UsageError, match="add --warmup"):
        evaluate_module.evaluate(cfg, [], fresh)
    assert not fresh.exists()
