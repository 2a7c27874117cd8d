"""metrics.json is a versioned ``RunMetrics``: the same JSON as the counters compute (plus
``format_version``), read back validated, and an old or foreign file is refused with one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fastslow.cli import main
from fastslow.errors import UsageError
from fastslow.eval.metrics import (
    compute_metrics,
    controller_usage,
    memory_usage,
    paper_counters,
    run_metrics,
    srm_usage,
)
from fastslow.eval.records import METRICS_FORMAT, RunMetrics, read_run_metrics
from fastslow.events import (
    CriticCall,
    CriticEffect,
    EndState,
    EnvStep,
    EpisodeEnd,
    EpisodeStart,
    Event,
    GateDecision,
    GateOutcome,
    JsonlWriter,
    MemoryFallback,
    MemoryInjection,
    MemoryRetrieval,
    MemoryWrite,
    ModelCall,
    SageCall,
    StagnationReport,
    iter_events,
)


def _episode(task: int, variation: int, final: int, seed: int | None = None) -> list[Event]:
    """A small but complete log: every counter family sees something."""
    end = EndState.SUCCESS if final == 100 else EndState.FAILURE if final < 0 else EndState.STEP_LIMIT
    episode_id = f"{task:02d}-{variation:04d}" + (f"-s{seed}" if seed is not None else "")
    steps: list[Event] = [
        EnvStep(
            step=i,
            action="look around",
            source="swift" if i % 2 else "sage",
            observation="obs",
            score=final if i == 3 else 10,
            reward=0,
            moves=i,
            end=end if i == 3 else EndState.RUNNING,
            n_valid=100,
            duration_ms=1.0,
        )
        for i in (1, 2, 3)
    ]
    return [
        EpisodeStart(
            episode_id=episode_id,
            task_id=task,
            task_name="t",
            variation=variation,
            split="test",
            config_name="c",
            config={},
            versions={},
            seed=seed,
        ),
        steps[0],
        GateDecision(
            step=1, source="swift", outcome=GateOutcome.DROP, original="x", action="", reason="empty"
        ),
        GateDecision(
            step=1, source="sage", outcome=GateOutcome.REPAIR, original="y", action="z", rule="alias"
        ),
        MemoryWrite(step=1, record_id="r", tag="near-miss", subtag="progress"),
        MemoryRetrieval(step=1, trigger="T1", rung="success", n=1, ids=["r"]),
        MemoryInjection(step=1, trigger="T1", target="swift", n=1, chars=80),
        MemoryFallback(step=1, trigger="T4", target="sage", reason="no_records"),
        steps[1],
        SageCall(step=2, rule="no_progress", model_calls=2, parsed=["a"], actions=["a"]),
        ModelCall(
            step=2, role="sage_plan", backend="scripted", model="m", prompt_tokens=30, completion_tokens=5
        ),
        ModelCall(step=2, role="critic", backend="scripted", model="m", error="ModelCallError: down"),
        StagnationReport(step=2, pattern="verb_loop", patterns=["verb_loop"]),
        CriticCall(step=2, kind="rules", pattern="verb_loop", actions=["a"], budget_left=2),
        steps[2],
        CriticEffect(
            step=3, call_step=2, effective=False, score_before=10, score_after=10, reason="episode_end"
        ),
        EpisodeEnd(end=end, final_score=final, steps=3, moves=3, wall_s=0.5),
    ]


def _write(events_dir: Path, episodes: list[list[Event]]) -> list[str]:
    ids = []
    for events in episodes:
        start = events[0]
        assert isinstance(start, EpisodeStart)
        with JsonlWriter(events_dir / f"{start.episode_id}.jsonl") as writer:
            for event in events:
                writer.emit(event)
        ids.append(start.episode_id)
    return ids


def _unversioned(events_dir: Path, ids: list[str]) -> str:
    """metrics.json as fastslow wrote it before it was a typed record: the counters' dicts, combined."""
    from fastslow.eval.metrics import summarize_log

    paths = [events_dir / f"{i}.jsonl" for i in ids]
    summaries = [s for p in paths if (s := summarize_log(p)) is not None]
    metrics = compute_metrics(summaries)
    metrics["usage"] = controller_usage(iter_events(p) for p in paths) | {
        "wall_s_per_episode": metrics["wall_s_per_episode"]
    }
    metrics["mechanisms"] = {
        "memory": memory_usage(iter_events(p) for p in paths),
        "srm": srm_usage(iter_events(p) for p in paths),
        "paper": paper_counters(iter_events(p) for p in paths),
    }
    return json.dumps(metrics, indent=2)


@pytest.mark.parametrize(
    "episodes",
    [
        [_episode(7, 1, 100), _episode(7, 2, -100), _episode(0, 1, 30)],
        [_episode(7, 1, 100, seed=0), _episode(7, 1, 50, seed=1), _episode(13, 1, -100, seed=0)],
        [],
    ],
    ids=["plain", "seeded", "empty"],
)
def test_record_is_the_same_json_plus_its_version(tmp_path: Path, episodes: list[list[Event]]) -> None:
    ids = _write(tmp_path, episodes)
    record = run_metrics(tmp_path, ids)
    data = record.to_json()
    assert next(iter(data)) == "format_version" and data.pop("format_version") == METRICS_FORMAT
    # same field names, values and order, byte for byte once the version is taken out
    assert json.dumps(data, indent=2) == _unversioned(tmp_path, ids)
    assert ("seeds" in data) == any(e[0].seed is not None for e in episodes if isinstance(e[0], EpisodeStart))
    # and it reads back as the same record
    assert RunMetrics.model_validate_json(json.dumps(record.to_json())) == record


def test_typed_access(tmp_path: Path) -> None:
    ids = _write(tmp_path, [_episode(7, 1, 100), _episode(7, 2, -100)])
    m = run_metrics(tmp_path, ids)
    assert m.per_task["7"].failures == 1 and m.per_task["7"].mean_score_strict == 50.0
    # the paper's convention: the failed episode keeps the 10 it reached before its -100
    assert m.per_task["7"].mean_score == 55.0 and m.episode_results[1].best_score == 10
    assert m.end_states == {EndState.FAILURE: 1, EndState.SUCCESS: 1}
    assert m.mechanisms.memory.writes_by_tag_per_episode.near_miss == 1.0
    assert m.mechanisms.memory.triggers_per_episode.T1 == 1.0
    assert m.mechanisms.srm.gate_outcomes[GateOutcome.DROP] == 2 and m.mechanisms.srm.critic_calls == 2
    assert m.usage.model_call_errors_by_role == {"critic": 2} and m.episode_results[1].end is EndState.FAILURE
    assert m.ci95.mean_score is not None and m.seeds is None


def _run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    (run / "events").mkdir(parents=True)
    ids = _write(run / "events", [_episode(7, 1, 100), _episode(17, 1, 100)])
    (run / "metrics.json").write_text(json.dumps(run_metrics(run / "events", ids).to_json(), indent=2))
    return run


def test_read_back(tmp_path: Path) -> None:
    run = _run_dir(tmp_path)
    assert read_run_metrics(run) == RunMetrics.model_validate_json((run / "metrics.json").read_text())


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda d: d.pop("format_version"),
            r"written by an older fastslow \(unversioned\): no format_version",
        ),
        (
            lambda d: d.update(format_version=99),
            f"has metrics format 99; this fastslow reads format {METRICS_FORMAT}",
        ),
        (lambda d: d["per_task"]["7"].pop("failures"), r"per_task\.7\.failures: Field required"),
        (lambda d: d.update(mean_score="high"), "mean_score: Input should be a valid number"),
        (lambda d: d.update(surprise=1), "surprise: Extra inputs are not permitted"),
    ],
    ids=["unversioned", "newer", "missing-field", "wrong-type", "extra-field"],
)
def test_old_or_broken_metrics_are_one_usage_error(tmp_path: Path, edit: object, message: str) -> None:
    run = _run_dir(tmp_path)
    data = json.loads((run / "metrics.json").read_text())
    assert callable(edit)
    edit(data)
    (run / "metrics.json").write_text(json.dumps(data))
    with pytest.raises(UsageError, match=message):
        read_run_metrics(run)


def test_foreign_files_are_one_usage_error(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.json").write_text(json.dumps({"accuracy": 0.9}))
    with pytest.raises(UsageError, match="written by something other than fastslow"):
        read_run_metrics(run)
    (run / "metrics.json").write_text("[1, 2]")
    with pytest.raises(UsageError, match="not a fastslow metrics file"):
        read_run_metrics(run)
    (run / "metrics.json").write_text("{not json")
    with pytest.raises(UsageError, match="cannot be read as JSON"):
        read_run_metrics(run)


def test_report_cli_refuses_an_old_metrics_file_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run_dir(tmp_path)
    data = json.loads((run / "metrics.json").read_text())
    del data["format_version"]
    (run / "metrics.json").write_text(json.dumps(data))
    with pytest.raises(SystemExit) as exc:
        main(["report", str(run), "--out", str(tmp_path / "report")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no format_version" in err
    assert not (tmp_path / "report").exists()
