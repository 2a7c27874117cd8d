import json
from pathlib import Path
from typing import get_args

import pytest
from pydantic import ValidationError

from fastslow import vocab
from fastslow.errors import CorruptLogError
from fastslow.events import (
    CriticCall,
    CriticEffect,
    EndState,
    EnvStep,
    EpisodeEnd,
    EpisodeStart,
    Escalation,
    Event,
    JsonlWriter,
    MemoryFallback,
    ModelCall,
    StagnationReport,
    parse_event,
    read_events,
)


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


def _start() -> EpisodeStart:
    """The header of a log named ``13-0001.jsonl`` (a log begins with its episode's header)."""
    return EpisodeStart(
        episode_id="13-0001",
        task_id=13,
        task_name="t",
        variation=1,
        split="test",
        config_name="c",
        config={},
        versions={},
    )


def test_roundtrip_keeps_types(tmp_path: Path) -> None:
    path = tmp_path / "13-0001.jsonl"
    with JsonlWriter(path) as w:
        w.emit(_start())
        w.emit(_step(1))
        w.emit(ModelCall(step=1, role="sage_plan", backend="scripted", model="m", prompt_tokens=3))
        w.emit(EpisodeEnd(end=EndState.SUCCESS, final_score=100, steps=1, moves=1, wall_s=0.1))
    events = read_events(path)
    assert [type(e) for e in events] == [EpisodeStart, EnvStep, ModelCall, EpisodeEnd]
    assert events[1] == _step(1).model_copy(update={"t": events[1].t})
    assert isinstance(events[3], EpisodeEnd) and events[3].end is EndState.SUCCESS


def test_truncated_last_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "13-0001.jsonl"
    with JsonlWriter(path) as w:
        w.emit(_start())
        w.emit(_step(1))
    with open(path, "a") as fh:
        fh.write(_step(2).model_dump_json()[:40])  # killed mid-write
    assert [e.step for e in read_events(path) if isinstance(e, EnvStep)] == [1]


def test_corrupt_middle_line_raises(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text('{"event": "env_step", "bogus": 1}\n' + _step(1).model_dump_json() + "\n")
    with pytest.raises(CorruptLogError, match=rf"event log {path} line 1 is not a valid event"):
        read_events(path)


# -- fixed vocabularies ------------------------------------------------------------------------------


def _escalation_line(rule: str) -> str:
    return Escalation(step=3, rule="no_progress").model_dump_json().replace('"no_progress"', f'"{rule}"')


def test_value_outside_a_vocabulary_is_a_corrupt_log_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "13-0001.jsonl"
    head = _start().model_dump_json() + "\n" + _step(1).model_dump_json() + "\n"
    path.write_text(head + _escalation_line("gut_feeling") + "\n" + "\n")
    with pytest.raises(CorruptLogError, match=rf"event log {path} line 3 is not a valid event"):
        read_events(path)
    # the same line with a known rule parses
    path.write_text(head + _escalation_line("invalid_action") + "\n")
    assert [e.rule for e in read_events(path) if isinstance(e, Escalation)] == ["invalid_action"]


@pytest.mark.parametrize(
    "event",
    [
        Escalation(step=1, rule="no_progress", blocked="cooldown"),
        StagnationReport(step=1, pattern="verb_loop", patterns=["verb_loop", "navigation_loop"]),
        CriticCall(step=1, kind="rules", pattern="verb_loop", budget_left=2),
        CriticEffect(
            step=6,
            call_step=1,
            effective=False,
            score_before=0,
            score_after=0,
            reason="no_progress_in_window",
        ),
        MemoryFallback(step=2, trigger="T2", target="cache", reason="store_error: locked"),
        ModelCall(step=1, role="sage_ground", backend="scripted", model="m"),
    ],
    ids=lambda e: e.event,
)
def test_each_vocabulary_refuses_an_unknown_value(event: Event) -> None:
    field = {
        "escalation": "blocked",
        "stagnation_report": "pattern",
        "critic_call": "kind",
        "critic_effect": "reason",
        "memory_fallback": "target",
        "model_call": "role",
    }[event.event]
    data = event.model_dump(mode="json")
    assert parse_event(event.model_dump_json()) == event
    with pytest.raises(ValidationError, match=field):
        parse_event(json.dumps({**data, field: "something_else"}))


def test_vocabularies_match_the_modules_that_emit_them() -> None:
    """Until controller/reflection/memory take their names from ``fastslow.vocab``, their own constants
    must say the same (tests may import every layer; events.py may not)."""
    from fastslow.controller.arbiter import Block, Rule
    from fastslow.memory.injection import Audience
    from fastslow.reflection.stagnation import PATTERNS

    assert tuple(r.value for r in Rule) == vocab.ESCALATION_RULES
    assert tuple(b.value for b in Block) == vocab.ESCALATION_BLOCKS
    assert PATTERNS == vocab.STAGNATION_PATTERNS  # same order: the main pattern's priority
    assert get_args(Audience) == vocab.MEMORY_TARGETS
    # the enum members the controller passes are accepted as their values
    assert Escalation(step=1, rule=Rule.NO_PROGRESS, blocked=Block.COOLDOWN).blocked == "cooldown"


def test_model_roles_cover_every_caller() -> None:
    """Every ``role=`` a ``call_model`` caller in the package passes is in the vocabulary."""
    import re

    import fastslow

    root = Path(fastslow.__file__).parent
    found = set()
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        found |= set(re.findall(r'role="(sage_\w+|critic|bench\w*)"', text))
        found |= set(re.findall(r'run\(\s*"(bench_\w+)"', text))
    assert found and found <= set(vocab.MODEL_ROLES)
    assert {"sage_plan", "sage_ground", "critic"} <= found


def test_memory_tags_match_the_records() -> None:
    from fastslow.memory.records import Tag

    assert get_args(Tag) == vocab.MEMORY_TAGS
