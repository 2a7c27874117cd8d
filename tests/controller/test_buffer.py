"""The FIFO action buffer on its own: order, capacity, skipping, clearing."""

from __future__ import annotations

from fastslow.controller.buffer import ActionBuffer, Buffered
from fastslow.controller.grounding import Grounder
from fastslow.env.scienceworld.world import SEMANTICS

VALID = Grounder(("look around", "teleport to kitchen", "open freezer"), SEMANTICS)


def _items(*actions: str) -> list[Buffered]:
    return [Buffered(a, "sage") for a in actions]


def test_fifo_order_and_capacity() -> None:
    buffer = ActionBuffer(size=5)
    dropped = buffer.push(_items("look around", "teleport to kitchen", "open freezer", "a", "b", "c", "d"))
    assert [b.action for b in dropped] == ["c", "d"] and len(buffer) == 5
    first = buffer.pop_valid(VALID, 80)
    second = buffer.pop_valid(VALID, 80)
    assert first.item is not None and first.item.action == "look around"
    assert second.item is not None and second.item.action == "teleport to kitchen"


def test_invalid_actions_are_skipped_and_near_misses_regrounded() -> None:
    buffer = ActionBuffer()
    buffer.push(_items("fly to the moon", "Open the freezer."))
    popped = buffer.pop_valid(VALID, 80)
    assert popped.item is not None and popped.item.action == "open freezer"
    assert [b.action for b in popped.skipped] == ["fly to the moon"] and not buffer
    empty = ActionBuffer()
    empty.push(_items("fly to the moon"))
    assert empty.pop_valid(VALID, 80).item is None and not empty


def test_cleared_after_consecutive_failures_only() -> None:
    buffer = ActionBuffer()
    buffer.push(_items("a", "b", "c", "d"))
    assert buffer.record_outcome(True, limit=2) == ()
    assert buffer.record_outcome(False, limit=2) == ()  # a success resets the count
    assert buffer.record_outcome(True, limit=2) == ()
    dropped = buffer.record_outcome(True, limit=2)
    assert [b.action for b in dropped] == ["a", "b", "c", "d"] and not buffer


def test_limit_zero_never_clears() -> None:
    buffer = ActionBuffer()
    buffer.push(_items("a"))
    for _ in range(5):
        assert buffer.record_outcome(True, limit=0) == ()
    assert len(buffer) == 1
