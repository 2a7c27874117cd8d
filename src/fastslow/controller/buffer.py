"""The FIFO action buffer between the planners and the environment (paper §3, SwiftSage's action buffer).

Sage (and, with SRM, the Critic) push short action lists; the controller executes one per timestep while
the buffer holds any. A buffered action that is no longer valid in the current state is re-grounded or
skipped, and a plan that keeps failing is thrown away so Swift and Sage get the next say.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fastslow.controller.grounding import Grounder
from fastslow.core.hooks import BufferActions
from fastslow.vocab import StepSource

MAX_DEFERRALS = 3
"""Most items one ``pop_admitted`` call may move back (the authors' loop: 3 reorders per step)."""


@dataclass(frozen=True)
class Buffered:
    action: str
    source: StepSource
    """Who planned it: sage or critic."""
    expected: str = ""
    """The observation the planner expected (shown in the log, not enforced)."""
    reason: str = ""
    """Why it was planned (becomes ``Decision.reason`` when it runs)."""


@dataclass(frozen=True)
class PopResult:
    """What draining the buffer for one timestep produced."""

    item: Buffered | None
    """The action to execute (already made valid), or None if the buffer ran dry."""
    skipped: tuple[Buffered, ...]
    """Actions dropped on the way because no valid action matched them."""
    deferred: tuple[Buffered, ...] = ()
    """Actions moved further back (``defer``) instead of dropped."""


class ActionBuffer:
    def __init__(self, size: int = 5) -> None:
        self.size = size
        self._items: deque[Buffered] = deque()
        self.failures = 0
        """Consecutive failure observations caused by buffered actions."""

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    @property
    def items(self) -> tuple[Buffered, ...]:
        return tuple(self._items)

    def push(self, items: Sequence[Buffered]) -> tuple[Buffered, ...]:
        """Append up to the free capacity; returns what did not fit (dropped)."""
        room = max(self.size - len(self._items), 0)
        self._items.extend(items[:room])
        self.failures = 0
        return tuple(items[room:])

    def pop_valid(self, grounder: Grounder, cutoff: float) -> PopResult:
        """The next buffered action that is (or grounds to) a valid action now, skipping the rest."""

        def ground(item: Buffered) -> str | None:
            hit = grounder.ground(item.action, cutoff)
            return hit.action if hit else None

        return self.pop_admitted(ground)

    def pop_admitted(
        self,
        admit: Callable[[Buffered], str | None],
        limit: int = 0,
        defer: Callable[[Buffered], bool] | None = None,
        relocates: Callable[[str], bool] | None = None,
    ) -> PopResult:
        """The next buffered action ``admit`` turns into an executable one (grounding, then SRM Gate-1
        when it is on); the items it refuses are popped and reported as skipped. ``limit`` > 0: at most
        that many items are tried (the rest stays for the caller to keep or clear). ``defer``: a refused
        item it approves is moved right after the next relocation still in the buffer (``relocates``: the
        authors' profile's, ScienceWorld's teleport), instead of dropped (at most ``MAX_DEFERRALS`` times
        per call; with none left, or no ``relocates``, it is dropped)."""
        skipped: list[Buffered] = []
        deferred: list[Buffered] = []
        tried = 0
        while self._items and (limit <= 0 or tried < limit):
            tried += 1
            item = self._items.popleft()
            action = admit(item)
            if action is not None:
                found = Buffered(action, item.source, item.expected, item.reason)
                return PopResult(found, tuple(skipped), tuple(deferred))
            if relocates is not None and defer is not None and len(deferred) < MAX_DEFERRALS and defer(item):
                move = next((i for i, b in enumerate(self._items) if relocates(b.action)), None)
                if move is not None:
                    self._items.insert(move + 1, item)
                    deferred.append(item)
                    continue
            skipped.append(item)
        return PopResult(None, tuple(skipped), tuple(deferred))

    def record_outcome(self, failed: bool, limit: int) -> tuple[Buffered, ...]:
        """Count a buffered outcome; clears (and returns) the rest after ``limit`` failures in a row."""
        self.failures = self.failures + 1 if failed else 0
        if limit > 0 and self.failures >= limit and self._items:
            return self.clear()
        return ()

    def clear(self) -> tuple[Buffered, ...]:
        dropped = tuple(self._items)
        self._items.clear()
        self.failures = 0
        return dropped


@dataclass(frozen=True)
class Handed:
    """What the hooks handed the buffer at one step, as buffer items (``handed``)."""

    items: tuple[Buffered, ...]
    source: StepSource
    """The first batch's source: the push is logged under it."""
    replace: bool
    """A hook asked its actions to replace what the buffer holds (``BufferActions.replace``)."""


def handed(batches: Sequence[BufferActions], step: int) -> Handed | None:
    """The actions the ``after_step`` / ``on_buffer_empty`` hooks returned at ``step`` as buffer items,
    in hook order, each labelled ``<source> @<step> i/n``; None when no hook handed any."""
    given = [batch for batch in batches if batch.actions]
    if not given:
        return None
    total = sum(len(batch.actions) for batch in given)
    items: list[Buffered] = []
    for batch in given:
        items += [
            Buffered(a, batch.source, "", f"{batch.source} @{step} {len(items) + i}/{total}")
            for i, a in enumerate(batch.actions, 1)
        ]
    return Handed(tuple(items), given[0].source, any(batch.replace for batch in given))
