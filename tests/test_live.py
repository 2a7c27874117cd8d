"""The live view of ``fastslow run`` and the warnings of the ``eval`` progress bar (eval/live.py)."""

from __future__ import annotations

import io
import re
from collections import Counter
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.console import Console

from fastslow.config import load_config
from fastslow.env.episodes import Episode
from fastslow.eval.live import INDENT, SOURCE_WIDTH, StepPrinter, _progress_bar, play_one
from fastslow.eval.runner import EpisodeOutcome
from fastslow.events import (
    CriticCall,
    CriticEffect,
    EndState,
    EnvStep,
    Event,
    GateDecision,
    GateOutcome,
    StagnationReport,
    read_events,
)

# A dev episode of melt where, within 20 steps of swift-srm, the stagnation detector reports and the
# rules Critic is called (step 11), Gate-1 drops an action (step 12) and the Critic's effect is judged
# (step 16) - found by playing swift-srm on two dev variations of every task for 25 steps with the
# packaged Swift of 2026-12-05 (the test asserts all four, so a new Swift that stops exercising them
# fails here).
EPISODE = Episode(22, 15)
STEPS = 20
STEP_LINE = re.compile(r"^ {0,3}(\d+) ")
NOTE_LABELS = ("gate drop", "gate repair", "stagnation", "critic", "why", "escalate", "sage", "memory")


def _console(width: int) -> Console:
    return Console(width=width, record=True, file=io.StringIO(), color_system=None)


def _blocks(text: str) -> dict[int, list[str]]:
    """Lines of the step table grouped under the step line they follow (0: before the first step)."""
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("step source"))
    end = next(i for i, line in enumerate(lines) if i > header and line.startswith("─"))
    blocks: dict[int, list[str]] = {0: []}
    current = 0
    for line in lines[header + 1 : end]:
        match = STEP_LINE.match(line)
        if match:
            current = int(match.group(1))
            blocks[current] = [line]
        else:
            # anything else in the table is a one-line mechanism note (a wrapped line would land here)
            assert line.startswith(INDENT) and line[len(INDENT) :].startswith(NOTE_LABELS), line
            blocks[current].append(line)
    return blocks


def _check_table(text: str, events: list[Event], width: int) -> None:
    lines = text.splitlines()
    assert lines, "nothing printed"
    too_long = [line for line in lines if cell_len(line) > width]
    assert not too_long, too_long
    blocks = _blocks(text)
    steps = [e for e in events if isinstance(e, EnvStep)]
    assert sorted(k for k in blocks if k) == [e.step for e in steps]
    for step in steps:
        assert blocks[step.step][0].split()[1:3] == [step.source, step.action.split()[0]]
    # each mechanism event is a note in the block of its own step, as often as the log has it
    expected: Counter[tuple[int, str]] = Counter()
    for e in events:
        if isinstance(e, GateDecision) and e.outcome is GateOutcome.DROP:
            expected[e.step, f"gate drop {e.source} '{e.original}': {e.reason}"[: width - 10]] += 1
        elif isinstance(e, StagnationReport):
            expected[e.step, f"stagnation {e.pattern}"] += 1
        elif isinstance(e, CriticCall):
            expected[e.step, f"critic {e.kind} on {e.pattern}, {e.budget_left} left"] += 1
        elif isinstance(e, CriticEffect):
            expected[e.step, f"critic call of step {e.call_step} "] += 1
    for (at, note), count in expected.items():
        found = [line for line in blocks[at] if line.startswith(INDENT + note)]
        assert len(found) == count, (at, note, blocks[at])
    notes = Counter(line.split()[0] for block in blocks.values() for line in block if line.startswith(INDENT))
    assert notes["stagnation"] == sum(isinstance(e, StagnationReport) for e in events)
    assert notes["critic"] == sum(isinstance(e, CriticCall | CriticEffect) for e in events)
    drops = sum(isinstance(e, GateDecision) and e.outcome is GateOutcome.DROP for e in events)
    assert sum(line.startswith(INDENT + "gate drop") for block in blocks.values() for line in block) == drops


def test_live_view_fits_80_columns_and_shows_mechanisms_on_their_step(tmp_path: Path) -> None:
    config = load_config("swift-srm", [f"env.step_limit={STEPS}"])
    console = _console(80)
    outcome = play_one(config, EPISODE, tmp_path / "run", console)
    events = read_events(tmp_path / "run" / "events" / f"{EPISODE.episode_id}.jsonl")
    assert outcome.steps == STEPS
    # the episode must exercise what this test is about, or it proves nothing
    assert any(isinstance(e, GateDecision) and e.outcome is GateOutcome.DROP for e in events)
    assert any(isinstance(e, StagnationReport) for e in events)
    assert any(isinstance(e, CriticCall) for e in events)
    assert any(isinstance(e, CriticEffect) for e in events)
    narrow = console.export_text()
    _check_table(narrow, events, 80)
    # the same real events on a wider terminal: still one line each, the extra room goes to the text
    wide = _console(120)
    printer = StepPrinter(wide)
    for event in events:
        printer.emit(event)
    wide_text = wide.export_text()
    _check_table(wide_text, events, 120)
    longest = [
        max(len(line) for line in t.splitlines() if STEP_LINE.match(line)) for t in (narrow, wide_text)
    ]
    assert longest[1] > longest[0]


def test_gate_repair_and_long_texts_stay_on_one_line() -> None:
    """A repair note names both actions; a long action or observation is clipped, never wrapped."""
    console = _console(80)
    printer = StepPrinter(console)
    printer.emit(
        GateDecision(
            step=3,
            source="sage",
            outcome=GateOutcome.REPAIR,
            original="go to kitchen",
            action="teleport to kitchen",
            rule="teleport",
        )
    )
    printer.emit(
        GateDecision(step=3, source="swift", outcome=GateOutcome.ACCEPT, original="look", action="look")
    )
    long_action = "move [bold]" + "very " * 20 + "long thing[/bold] to the blue box"
    printer.emit(
        EnvStep(
            step=4,
            action=long_action,
            source="sage",
            reason="plan " * 40,
            observation="You see " + "a lot of things " * 30,
            score=10,
            reward=-100,
            moves=4,
            end=EndState.RUNNING,
            n_valid=10,
            duration_ms=1.0,
        )
    )
    lines = console.export_text().splitlines()
    assert lines[0] == INDENT + "gate repair sage 'go to kitchen' -> 'teleport to kitchen' (teleport)"
    assert len(lines) == 3  # the accepted action adds no note; one step line and its reason
    assert lines[1].startswith(f"   4 {'sage':<{SOURCE_WIDTH}} move [bold]very") and "-100" in lines[1]
    assert "[bold]" in lines[1]  # action text is shown as written, not read as rich markup
    assert lines[2].startswith(INDENT + "why plan")
    assert all(cell_len(line) == 80 for line in lines[1:])


def test_a_procedure_step_shows_its_source_and_rule() -> None:
    """Steps of hand-written task logic read ``procedure`` in full (and ``fallback``), with the rule
    that decided as the step's note; a step of Swift's own ranking has no note."""
    console = _console(80)
    printer = StepPrinter(console)
    for step, source, reason in [
        (1, "procedure", "procedure:paint"),
        (2, "swift", "swift top"),
        (3, "fallback", "swift top; no candidate resolved: fallback look around"),
    ]:
        printer.emit(
            EnvStep(
                step=step,
                action="look around",
                source=source,
                reason=reason,
                observation="This room is called the art studio.",
                score=0,
                reward=0,
                moves=step,
                end=EndState.RUNNING,
                n_valid=10,
                duration_ms=1.0,
            )
        )
    lines = console.export_text().splitlines()
    assert [line.split()[:3] for line in lines if STEP_LINE.match(line)] == [
        ["1", "procedure", "look"],
        ["2", "swift", "look"],
        ["3", "fallback", "look"],
    ]
    assert lines[1] == INDENT + "why procedure:paint" and lines[2].startswith("   2 swift")
    assert lines[4].startswith(INDENT + "why swift top; no candidate resolved")
    assert all(cell_len(line) <= 80 for line in lines)


def _outcome(variation: int, *warnings: str) -> EpisodeOutcome:
    return EpisodeOutcome(Episode(13, variation), EndState.STEP_LIMIT, 20, 30, 1.5, warnings=warnings)


DISK_FULL = "memory store: write failed: database or disk is full"
HTTP_500 = "model server http://127.0.0.1:8000/v1: HTTP 500 Internal Server Error"


@pytest.mark.parametrize("total", [5, None])  # eval knows its total, the warm-up learns it
def test_each_warning_is_printed_once(total: int | None) -> None:
    console = Console(width=200, record=True, file=io.StringIO(), color_system="standard")
    with _progress_bar(console, "swift-amm", total) as on_episode:
        on_episode(_outcome(0, DISK_FULL), 1, 5)
        on_episode(_outcome(1, DISK_FULL, HTTP_500), 2, 5)
        on_episode(None, 3, 5)  # an episode already done in an earlier run
        on_episode(_outcome(2), 4, 5)
        on_episode(_outcome(3, HTTP_500, DISK_FULL), 5, 5)
    styled = console.export_text(styles=True, clear=False)
    assert f"\x1b[33mwarning: {DISK_FULL}" in styled  # yellow
    text = console.export_text()
    assert text.count(f"warning: {DISK_FULL}") == 1
    assert text.count(f"warning: {HTTP_500}") == 1
    assert text.count("warning: ") == 2
    # printed as they arrive, above the bar (the bar is the last thing on the console)
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines[0] == f"warning: {DISK_FULL}" and lines[1] == f"warning: {HTTP_500}"
    assert "5/5" in lines[-1]
