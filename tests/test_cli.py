"""The command line as a user meets it: real subprocesses, real ScienceWorld, exit codes and messages."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from fastslow.events import EpisodeStart, read_events

FASTSLOW = [sys.executable, "-m", "fastslow.cli"]


def fastslow(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*FASTSLOW, *args], capture_output=True, text=True, timeout=600, cwd=cwd)


def test_episode_counts() -> None:
    assert fastslow("episodes", "--set", "test", "--count").stdout.strip() == "271"
    assert fastslow("episodes", "--set", "warmup", "--count").stdout.strip() == "60"
    lines = fastslow("episodes", "--set", "test", "--tasks", "13").stdout.split("\n")
    assert lines[0].split()[0] == "13" and len([x for x in lines if x]) == 4


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--task", "30", "--variation", "0"], "unknown task id 30"),
        (["run", "--task", "7", "--variation", "5000"], "variation 5000 is outside task 7"),
        (["run", "--task", "7", "--variation", "0", "-o", "env.step_limt=3"], "unknown key 'env.step_limt'"),
        (["run", "--task", "7", "--variation", "0", "-o", "env.step_limit=lots"], "env.step_limit"),
        (["run", "--task", "7", "--variation", "0", "--config", "nosuch"], "unknown config 'nosuch'"),
        (["eval", "--set", "test", "--tasks", "99", "--out", "{tmp}/o"], "unknown task id 99"),
        (["eval", "--set", "bogus", "--out", "{tmp}/o"], "unknown episode set"),
        (["eval", "--set", "test", "--tasks", "7", "--out", "/etc/hostname/sub"], "--out /etc/hostname/sub"),
        (["episodes", "--set", "test", "--tasks", "x"], "bad task selection"),
        (["eval", "--tasks", "7", "--seeds", "1,1", "--out", "{tmp}/o"], "repeated seed"),
        (
            [
                "eval",
                "-c",
                "swift-only",
                "-o",
                "swift.backend=t5",
                "-o",
                "swift.model_path={tmp}/no",
                "--out",
                "{tmp}/o",
            ],
            "T5 Swift checkpoint directory not found",
        ),
        (["eval", "--tasks", "7", "--seeds", "a", "--out", "{tmp}/o"], "bad seed selection"),
        (["eval", "--config", "amm", "--warmup-config", "swift-amm", "--out", "{tmp}/o"], "add --warmup"),
        (["run", "--task", "7"], "Missing option '--variation'"),
        (["run", "--task", "7", "--variation", "abc"], "Invalid value for '--variation'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    proc = fastslow(*args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip()
    assert message in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "o").exists()
    assert not (tmp_path / "runs").exists()


def test_eval_oracle_scores_100(tmp_path: Path) -> None:
    out = tmp_path / "oracle"
    proc = fastslow(
        "eval",
        "--config",
        "oracle",
        "--set",
        "test",
        "--tasks",
        "5,7,13",
        "--limit-per-task",
        "1",
        "--out",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["episodes"] == 3 and metrics["mean_score"] == 100 and metrics["success_rate"] == 1
    assert set(metrics["per_task"]) == {"5", "7", "13"}
    assert metrics["per_group"]["short"]["mean_score"] == 100
    assert json.loads(proc.stdout.strip().splitlines()[-1])["mean_score"] == 100
    run = json.loads((out / "run.json").read_text())
    names = sorted(p.stem for p in (out / "events").glob("*.jsonl"))
    assert len(run["episodes"]) == 3 and names == sorted(r["episode_id"] for r in metrics["episode_results"])
    assert run["code"]["scienceworld"] == "1.2.3" and run["format"] == 2 and run["config_name"] == "oracle"
    assert "agent:" in (out / "config.yaml").read_text()


def test_run_shows_live_view_and_writes_log(tmp_path: Path) -> None:
    proc = fastslow(
        "run", "--config", "oracle", "--task", "7", "--variation", "0", "--out", str(tmp_path / "r")
    )
    assert proc.returncode == 0, proc.stderr
    assert "oracle" in proc.stdout and "success" in proc.stdout and "score 100" in proc.stdout
    assert len(list((tmp_path / "r" / "events").glob("*.jsonl"))) == 1


def test_unreachable_model_server_fails_before_any_episode(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    out = tmp_path / "o"
    proc = fastslow(
        "eval", "--config", "baseline", "--set", "test", "--tasks", "7", "--limit-per-task", "1",
        "-o", "sage.model.kind=openai", "-o", "sage.model.model=qwen",
        "-o", f"sage.model.base_url=http://127.0.0.1:{port}/v1", "--out", str(out),
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip()
    assert f"127.0.0.1:{port}/v1 is not answering" in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_eval_seeds_play_each_episode_once_per_seed(tmp_path: Path) -> None:
    out = tmp_path / "seeded"
    args = ["eval", "--config", "oracle", "--set", "test", "--tasks", "7", "--limit-per-task", "1"]
    proc = fastslow(*args, "--seeds", "3-4", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    ids = sorted(p.stem for p in (out / "events").glob("*.jsonl"))
    assert len(ids) == 2 and {i.rsplit("-", 1)[1] for i in ids} == {"s3", "s4"}
    assert metrics["episodes"] == 2 and metrics["per_task"]["7"]["episodes"] == 2
    seeds = metrics["seeds"]
    assert seeds["seeds"] == [3, 4] and seeds["per_seed"]["3"] == {
        "episodes": 1,
        "mean_score": 100.0,
        "mean_score_strict": 100.0,
        "success_rate": 1.0,
    }
    assert seeds["mean_score"] == {"mean": 100.0, "std": 0.0}
    for path in (out / "events").glob("*.jsonl"):
        start = next(e for e in read_events(path) if isinstance(e, EpisodeStart))
        assert start.seed is not None and path.stem.endswith(f"-s{start.seed}")
        # the seed reaches the models that sample
        assert start.config["sage"]["model"]["seed"] == start.seed == start.config["critic"]["model"]["seed"]
