"""``evaluate`` with the modules on: the SRM and AMM counters land in metrics.json (``mechanisms``), and
the AMM warm-up plays into DIR/warmup, stays out of the metrics, resumes, and is the only writer of a
frozen store. The fast-pathway config swift-amm-srm (imitation Swift, rules Critic) needs no LLM."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fastslow.config import load_config
from fastslow.env.episodes import Episode
from fastslow.errors import UsageError
from fastslow.eval.evaluate import evaluate, run_warmup
from fastslow.eval.report import MECHANISM_BARS, load_run, mechanism_values
from fastslow.events import MemoryWrite, read_events


def test_mechanism_counters_and_warmup_excluded_from_metrics(tmp_path: Path) -> None:
    store = tmp_path / "memory.sqlite"
    config = load_config("swift-amm-srm", ["env.step_limit=12", f"amm.path={store}", "amm.mode=frozen"])
    out = tmp_path / "run"
    metrics = evaluate(
        config, [Episode(13, 0)], out, warmup=True, warmup_episodes=[Episode(17, 0), Episode(13, 1)]
    )
    warm_logs = sorted(p.name for p in (out / "warmup" / "events").glob("*.jsonl"))
    assert warm_logs == sorted(f"{e.episode_id}.jsonl" for e in (Episode(17, 0), Episode(13, 1)))
    main_id = Episode(13, 0).episode_id
    assert sorted(p.name for p in (out / "events").glob("*.jsonl")) == [f"{main_id}.jsonl"]
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["episodes"] == metrics["episodes"] == 1
    assert [r["episode_id"] for r in saved["episode_results"]] == [main_id]
    srm, memory = saved["mechanisms"]["srm"], saved["mechanisms"]["memory"]
    steps = saved["episode_results"][0]["steps"]
    # Gate-1 saw every executed action (and any it dropped).
    assert srm["episodes"] == 1 and sum(srm["gate_outcomes"].values()) >= steps >= 1
    assert memory["episodes"] == 1 and "triggers_per_episode" in memory
    # the report's mechanism-activity figure plots these very counters
    bars = dict(zip([label for label, _ in MECHANISM_BARS], mechanism_values(load_run(out)), strict=True))
    assert bars["Gate-1 drops"] == srm["gate_drops_per_episode"]
    assert bars["T1 triggers"] == memory["triggers_per_episode"]["T1"]
    # frozen: the warm-up episodes wrote what they found worth keeping, the evaluation episode nothing.
    main = list(read_events(out / "events" / f"{main_id}.jsonl"))
    assert not [e for e in main if isinstance(e, MemoryWrite)]
    warm = [e for p in (out / "warmup" / "events").glob("*.jsonl") for e in read_events(p)]
    assert [e for e in warm if isinstance(e, MemoryWrite)]
    assert next(e for e in warm if e.event == "episode_start").config["controller"]["warmup"] is True
    # resumable: a rerun skips the finished warm-up episodes
    assert run_warmup(config, out, [Episode(17, 0), Episode(13, 1)]) == []


def test_warmup_played_by_another_config_writes_the_runs_store(tmp_path: Path) -> None:
    """``--warmup-config swift-amm``: the fast pathway plays the warm-up of an LLM config (amm) into the
    amm config's own store - no Sage model is loaded for it."""
    store = tmp_path / "amm.sqlite"
    config = load_config("amm", [f"amm.path={store}", "amm.write.small_reward=2"])
    player = load_config("swift-amm", ["env.step_limit=12", f"amm.path={tmp_path / 'other.sqlite'}"])
    progress: list[tuple[int, int]] = []
    done = run_warmup(
        config,
        tmp_path / "run",
        [Episode(17, 0)],
        agent=player,
        on_episode=lambda o, d, t: progress.append((d, t)),
    )
    assert progress == [(1, 1)]
    assert [o.episode for o in done] == [Episode(17, 0)]
    events = list(read_events(tmp_path / "run" / "warmup" / "events" / f"{Episode(17, 0).episode_id}.jsonl"))
    start = next(e for e in events if e.event == "episode_start")
    assert start.config_name == "swift-amm"
    assert start.config["amm"] == config.amm.model_dump(mode="json")
    assert start.config["controller"]["sage_enabled"] is False and start.config["env"]["step_limit"] == 12
    writes = [e for e in events if isinstance(e, MemoryWrite)]
    assert writes and store.exists() and not (tmp_path / "other.sqlite").exists()
    played = json.loads((tmp_path / "run" / "warmup" / "run.json").read_text())
    assert played["played_by"] == "swift-amm"


def test_warmup_needs_amm(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"amm\.enabled"):
        run_warmup(load_config("swift-srm"), tmp_path / "o", [Episode(13, 0)])


@pytest.mark.slow
def test_cli_eval_warmup_plays_the_warmup_set(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["eval", "--config", "swift-amm", "--set", "test", "--tasks", "13", "--limit-per-task", "1"]
    args += [
        "-o",
        "env.step_limit=2",
        "-o",
        f"amm.path={tmp_path / 'm.sqlite'}",
        "--warmup",
        "--out",
        str(out),
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "fastslow.cli", *args], capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stderr
    # the warm-up message names the store it fills (not the folder of the warm-up logs)
    assert f"warm-up: filling the memory store {tmp_path / 'm.sqlite'}" in " ".join(proc.stdout.split())
    assert len(list((out / "warmup" / "events").glob("*.jsonl"))) == 60
    assert json.loads((out / "metrics.json").read_text())["episodes"] == 1
