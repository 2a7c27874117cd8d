"""AMM bounded injection (paper §3.1): delimited block, dedup, type filter, fixed compression, fallbacks."""

from __future__ import annotations

from dataclasses import replace

import jinja2
import pytest

from fastslow.memory.injection import BEGIN, END, format_memory_block, measure
from fastslow.memory.records import MemoryRecord, Tag


def rec(action: str, tag: Tag = "near-miss", observation: str = "", **kw: object) -> MemoryRecord:
    base = MemoryRecord(
        task_id=0,
        task_name="boil",
        task_family="1",
        episode_id="0-1",
        step=4,
        room="kitchen",
        inventory="a thermometer, a metal pot containing water",
        recent=("go to kitchen -> You move to the kitchen.", "pick up metal pot -> You move the metal pot."),
        action=action,
        observation=observation or f"You {action} and something in the kitchen changes as expected.",
        score_before=8,
        score_after=25,
        tag=tag,
        subtag="progress",
    )
    return replace(base, **kw)


RECORDS = [
    rec("activate stove", "success", subtag="milestone"),
    rec("move metal pot to stove"),
    rec("move metal pot to stove"),  # duplicate of the previous one
    rec("xyzzy", "avoidance", observation="No known action matches that input.", subtag="invalid-action"),
    rec("focus on water", "success", subtag="focus"),
]


def test_block_is_delimited_and_says_hints_not_authority() -> None:
    block = format_memory_block(RECORDS, 5000, "sage")
    assert block.ok and block.text is not None and block.level == 0
    assert block.text.startswith(BEGIN) and block.text.endswith(END)
    assert "hints, not authority" in block.text and "earlier: go to kitchen" in block.text
    assert block.chars == len(block.text) == block.size


def test_dedup_and_type_filter_per_audience() -> None:
    sage = format_memory_block(RECORDS, 5000, "sage")
    assert [r.action for r in sage.records] == ["activate stove", "focus on water", "move metal pot to stove"]
    assert sage.dropped == {"duplicate": 1, "type": 1, "budget": 0}
    assert sage.text is not None and "xyzzy" not in sage.text
    critic = format_memory_block(RECORDS, 5000, "critic")
    assert (
        critic.records[-1].tag == "avoidance" and critic.text is not None and "do not propose" in critic.text
    )


def test_compression_follows_fixed_order_within_budget() -> None:
    full = format_memory_block(RECORDS, 10_000, "swift")
    assert full.level == 0 and len(full.records) == 3
    seen = []
    for budget in (full.chars - 1, 800, 600, 400):
        block = format_memory_block(RECORDS, budget, "swift")
        assert block.ok and block.text is not None and block.chars <= budget
        seen.append((block.level, len(block.records)))
        if block.level >= 1:
            assert "earlier:" not in block.text  # recent context is the first thing to go
        if block.level >= 2:
            assert "inventory:" not in block.text
        if block.level >= 3:
            assert "room:" not in block.text
    # levels only go up as the budget shrinks; records are dropped (lowest rank first) only at the end
    assert seen == [(1, 3), (2, 3), (3, 3), (3, 1)]
    assert format_memory_block(RECORDS, 400, "swift").records[0].action == "activate stove"


def test_token_budget() -> None:
    block = format_memory_block(RECORDS, 150, "sage", unit="tokens")
    assert block.ok and block.text is not None and measure(block.text, "tokens") <= 150 < len(block.text)


@pytest.mark.parametrize(
    ("records", "budget", "template", "reason"),
    [
        ([], 1000, None, "no_records"),
        ([RECORDS[3]], 1000, None, "no_records"),  # avoidance only: nothing Swift may see
        (RECORDS, 80, None, "over_budget"),
        (
            RECORDS,
            1000,
            jinja2.Template("{{ records[0].nope.x }}", undefined=jinja2.StrictUndefined),
            "format_error",
        ),
        (RECORDS, 1000, jinja2.Template("memories: {{ records | length }}"), "structure_check"),
    ],
)
def test_each_failure_falls_back(
    records: list[MemoryRecord], budget: int, template: jinja2.Template | None, reason: str
) -> None:
    block = format_memory_block(records, budget, "swift", template=template)
    assert block.text is None and not block.ok and block.fallback is not None
    assert block.fallback.split(":")[0] == reason
