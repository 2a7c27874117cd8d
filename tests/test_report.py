"""The HTML report renders its tables and a trajectory in real headless Chromium."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from fastslow.cli import main
from fastslow.config import load_config
from fastslow.env.episodes import with_seeds
from fastslow.env.scienceworld.episodes import select_episodes
from fastslow.eval.evaluate import evaluate
from fastslow.eval.records import METRICS_FORMAT
from fastslow.eval.report import load_run, write_report
from fastslow.manifest import Manifest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run")
    evaluate(load_config("oracle"), select_episodes("test", tasks="7,17", limit_per_task=1), out)
    return out


def test_report_files(run_dir: Path, tmp_path: Path) -> None:
    html_path = write_report([run_dir], tmp_path)
    names = {p.name for p in tmp_path.iterdir()}
    assert {"report.md", "main.csv", "per_task.csv", "groups.csv", "per_task.png", "groups.png"} <= names
    assert "mechanisms.png" in names and "seeds.csv" not in names
    # every file the report wrote is recorded as its own (what `--restart` of the run may delete)
    assert {p.name for p in Manifest(tmp_path).owned_files()} == names - {
        ".fastslow-written.jsonl",
        ".fastslow.lock",
    }
    md = (tmp_path / "report.md").read_text()
    assert "| oracle | 2 | 100.00 | - | 100.00 | - | 100.00% |" in md  # one episode per task: no interval
    assert "lifespan-longest-lived" in (tmp_path / "per_task.csv").read_text()
    per_task = list(csv.reader((tmp_path / "per_task.csv").open()))
    assert per_task[0][-3:] == ["oracle score", "oracle strict", "oracle n"] and per_task[1][-1] == "1"
    runs = list(csv.reader((tmp_path / "runs.csv").open()))
    assert runs[1][0] == "oracle" and runs[1][3:6] == ["-", "-", "none"]  # no store, no ranking, no warm-up
    assert html_path.read_text().count("<table") >= 6


def test_report_seeds_table(run_dir: Path, tmp_path: Path) -> None:
    seeded = tmp_path / "seeded"
    episodes = with_seeds(select_episodes("test", tasks="7", limit_per_task=1), [0, 1])
    evaluate(load_config("oracle"), episodes, seeded)
    write_report([run_dir, seeded], tmp_path / "report")
    written = {p.name for p in (tmp_path / "report").iterdir()} - {
        ".fastslow-written.jsonl",
        ".fastslow.lock",
    }
    assert {p.name for p in Manifest(tmp_path / "report").owned_files()} == written
    rows = list(csv.reader((tmp_path / "report" / "seeds.csv").open()))
    assert rows[1:] == [
        ["oracle (seeded)", "2", "100.00 ± 0.00", "100.00 ± 0.00", "100.00% ± 0.00%", "0: 100.00, 1: 100.00"]
    ]


def test_eval_writes_a_versioned_record_the_report_reads(run_dir: Path) -> None:
    saved = json.loads((run_dir / "metrics.json").read_text())
    assert saved["format_version"] == METRICS_FORMAT and next(iter(saved)) == "format_version"
    run = load_run(run_dir)
    assert run.name == "oracle" and run.metrics.episodes == 2 and run.metrics.to_json() == saved
    assert set(run.metrics.per_task) == {"7", "17"} and run.metrics.per_task["17"].mean_score == 100


def test_a_format_2_metrics_file_is_recomputed_from_the_logs(run_dir: Path, tmp_path: Path) -> None:
    """Runs made before the paper's score convention (metrics format 2: strict score only) are reported
    in both conventions: their event logs are the source of truth."""
    old = tmp_path / "old"
    shutil.copytree(run_dir, old)
    data = json.loads((old / "metrics.json").read_text())
    data["format_version"] = 2
    del data["mean_score_strict"]
    (old / "metrics.json").write_text(json.dumps(data))
    run = load_run(old)
    assert run.metrics.format_version == METRICS_FORMAT
    assert run.metrics.to_json() == json.loads((run_dir / "metrics.json").read_text())
    write_report([old], tmp_path / "report")
    assert "score (strict)" in (tmp_path / "report" / "report.md").read_text()


def test_report_cli_rejects_unfinished_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["report", str(tmp_path)])
    assert exc.value.code == 2
    assert "not a finished run" in capsys.readouterr().err


@pytest.mark.skipif(CHROMIUM is None, reason="Debian package chromium is not installed (.ci/run installs it)")
def test_report_renders_in_headless_chromium(run_dir: Path, tmp_path: Path) -> None:
    html_path = write_report([run_dir], tmp_path)
    episode = sorted(p.stem for p in (run_dir / "events").glob("*.jsonl"))[0]
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory() as profile:
        dom = subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={profile}",
                "--dump-dom",
                html_path.as_uri() + f"#/run/0/episode/{episode}",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout
    # The results tables are static HTML; the trajectory rows exist only if the viewer's script ran
    # (the page opens on the episode the URL names, as a link into the viewer would).
    # runs, main, tasks, groups, success, step shares by source, the paper's counters, mechanisms, usage
    assert dom.count('<table class="results">') == 9
    assert "find-non-living-thing" in dom or "lifespan-longest-lived" in dom
    assert dom.count('<tr class="step s-oracle"') >= 4
    assert 'class="src src-oracle"' in dom
    # the timeline's legend names every source of the Swift branch and the buffer, procedures included
    assert all(f'<span class="src src-{s}">▌{s} </span>' in dom for s in ("swift", "procedure", "fallback"))


def test_view_cli_rejects_unfinished_dir_and_a_busy_port(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fastslow view` on a directory that is not a finished run, or on a port in use: one line, exit 2."""
    import socket

    with pytest.raises(SystemExit) as exc:
        main(["view", str(tmp_path)])
    assert exc.value.code == 2
    assert "not a finished run" in capsys.readouterr().err
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(SystemExit) as exc:
            main(["view", str(run_dir), "--port", str(port)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"--port {port}" in err and len(err.strip().splitlines()) == 1


# -- logs that cannot be read whole, and reports that fail ---------------------------------------------


def _embedded(html: str) -> dict[str, Any]:
    """The trajectory viewer's data a static report page carries."""
    start = html.index('<script id="fastslow-data" type="application/json">')
    body = html[html.index(">", start) + 1 : html.index("</script>", start)]
    return json.loads(body)["embedded"]


def _damaged_copy(run_dir: Path, tmp_path: Path, damage: str) -> tuple[Path, Path]:
    """A copy of the finished run with the log of its second episode damaged: a bad middle line
    (``corrupt``), cut to half its size (``cut``), or its last line (episode_end) removed (``no_end``)."""
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    log = sorted((run / "events").glob("*.jsonl"))[1]
    data = log.read_bytes()
    lines = data.splitlines(keepends=True)
    if damage == "corrupt":
        lines[2] = b'{"event": "env_step", "step": "garbage"}\n'
        log.write_bytes(b"".join(lines))
    elif damage == "cut":
        log.write_bytes(data[: len(data) // 2])
    elif damage == "cut_after_brace":
        # cut right after an inner object's closing brace: the torn line still ends in "}"
        at = next(
            i
            for i in range(len(data) // 2, len(data))
            if data[i : i + 1] == b"}" and data[i + 1 : i + 2] != b"\n"
        )
        log.write_bytes(data[: at + 1])
    else:
        log.write_bytes(b"".join(lines[:-1]))
    return run, log


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        ("corrupt", "line 3 is not a valid event"),
        ("cut", "has no episode_end (it ends mid-line"),
        ("cut_after_brace", "has no episode_end (it ends mid-line"),
        ("no_end", "has no episode_end;"),
    ],
)
def test_a_log_that_cannot_be_read_whole_is_a_warning_and_left_out_of_every_output(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str, said: str
) -> None:
    """metrics.json counts both episodes; the report warns (console, report.md, report.html) and its
    tables, figures and trajectory viewer all count only the episode whose log is whole."""
    run, log = _damaged_copy(run_dir, tmp_path, damage)
    assert json.loads((run / "metrics.json").read_text())["episodes"] == 2
    out = tmp_path / "report"
    main(["report", str(run), "--out", str(out)])
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning: ")]
    left_out = [w for w in warnings if str(log) in w]
    assert len(left_out) == 1 and said in left_out[0] and "left out of every table" in left_out[0]
    assert any("metrics.json counts 2 episodes" in w and "count the 1" in w for w in warnings)
    md = (out / "report.md").read_text()
    assert "## Warnings" in md and f"event log {log} " in md
    main_rows = list(csv.reader((out / "main.csv").open()))
    assert main_rows[1][1] == "1"
    tasks = [row[0] for row in list(csv.reader((out / "per_task.csv").open()))[1:]]
    kept = sorted((run / "events").glob("*.jsonl"))[0].stem
    assert tasks == [str(int(kept.split("-")[0]))]
    html = (out / "report.html").read_text()
    embedded = _embedded(html)
    assert [e["id"] for e in embedded["episodes"]["0"]] == [kept]
    assert list(embedded["details"]) == [f"0/{kept}"]
    assert embedded["runs"][0]["episodes"] == 1 and str(log) in html


def test_a_whole_run_reports_no_log_warning(run_dir: Path, tmp_path: Path) -> None:
    warned: list[str] = []
    write_report([run_dir], tmp_path / "report", on_warning=warned.append)
    assert warned == []
    assert "## Warnings" not in (tmp_path / "report" / "report.md").read_text()


def test_a_failed_report_leaves_out_as_it_was(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An error while the report is written (here: drawing the figures) changes nothing in --out: an
    earlier report stays byte for byte, a new --out is not created, no temporary folder is left; a
    folder where a report file goes refuses with one line before anything is moved."""
    import fastslow.eval.report as report_module

    out = tmp_path / "report"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    write_report([run_dir], out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def broken(runs: object) -> dict[str, bytes]:
        raise RuntimeError("matplotlib failed")

    monkeypatch.setattr(report_module, "figures", broken)
    with pytest.raises(RuntimeError, match="matplotlib failed"):
        write_report([run_dir], out)
    with pytest.raises(RuntimeError):
        write_report([run_dir], tmp_path / "new")
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert not (tmp_path / "new").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]

    (out / "report.html").unlink()
    (out / "report.html").mkdir()
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    with pytest.raises(SystemExit) as exc:
        main(["report", str(run_dir), "--out", str(out)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "report.html is a folder" in err
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report"]


def test_a_log_at_odds_with_metrics_json_is_a_warning_and_the_logs_are_counted(
    run_dir: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    log = sorted((run / "events").glob("*.jsonl"))[0]
    *head, last = log.read_text().splitlines(keepends=True)
    end = json.loads(last)
    end["final_score"] = 50
    log.write_text("".join([*head, json.dumps(end) + "\n"]))
    warned: list[str] = []
    write_report([run], tmp_path / "report", on_warning=warned.append)
    assert any(str(log) in w and "metrics.json success/100" in w for w in warned), warned
    main_rows = list(csv.reader((tmp_path / "report" / "main.csv").open()))
    assert main_rows[1][1] == "2" and main_rows[1][4] == "75.00"  # strict: (50 + 100) / 2


def test_an_older_metrics_file_beside_a_corrupt_log_is_recomputed_from_the_readable_logs(
    run_dir: Path, tmp_path: Path
) -> None:
    run, log = _damaged_copy(run_dir, tmp_path, "corrupt")
    data = json.loads((run / "metrics.json").read_text())
    data["format_version"] = 2
    (run / "metrics.json").write_text(json.dumps(data))
    warned: list[str] = []
    write_report([run], tmp_path / "report", on_warning=warned.append)
    assert [w for w in warned if str(log) in w and "line 3 is not a valid event" in w]
    assert list(csv.reader((tmp_path / "report" / "main.csv").open()))[1][1] == "1"
