from pathlib import Path

import pytest

from fastslow.errors import CorruptLogError
from fastslow.events import EndState, EnvStep, EpisodeEnd, JsonlWriter, ModelCall, read_events


def _step(i: int) -> EnvStep:
    return EnvStep(
        step=i,
        action="look around",
        source="oracle",
        observation="obs",
        score=i,
        reward=1,
        moves=i,
        end=EndState.RUNNING,
        n_valid=10,
        duration_ms=1.0,
    )


def test_roundtrip_keeps_types(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    with JsonlWriter(path) as w:
        w.emit(_step(1))
        w.emit(ModelCall(step=1, role="sage_plan", backend="scripted", model="m", prompt_tokens=3))
        w.emit(EpisodeEnd(end=EndState.SUCCESS, final_score=100, steps=1, moves=1, wall_s=0.1))
    events = read_events(path)
    assert [type(e) for e in events] == [EnvStep, ModelCall, EpisodeEnd]
    assert events[0] == _step(1).model_copy(update={"t": events[0].t})
    assert isinstance(events[2], EpisodeEnd) and events[2].end is EndState.SUCCESS


def test_truncated_last_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    with JsonlWriter(path) as w:
        w.emit(_step(1))
    with open(path, "a") as fh:
        fh.write(_step(2).model_dump_json()[:40])  # killed mid-write
    assert [e.step for e in read_events(path) if isinstance(e, EnvStep)] == [1]


def test_corrupt_middle_line_raises(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text('{"event": "env_step", "bogus": 1}\n' + _step(1).model_dump_json() + "\n")
    with pytest.raises(CorruptLogError, match=rf"event log {path} line 1 is not a valid event"):
        read_events(path)
