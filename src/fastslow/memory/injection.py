"""AMM bounded prompt augmentation (paper §3.1): a delimited memory block within a budget, or nothing.

Retrieved records are deduplicated, filtered by operational type for the audience (Swift and Sage see
success and near-miss memories only - negative evidence stays out of the generative pathways; the
Critic also sees avoidance memories), then compressed in a fixed order until the block fits:

1. drop the recent-context lines, 2. drop inventories and cut observations to 80 characters,
3. drop task and room and cut observations to 40 characters, 4. drop the last records one by one.

Any failure - nothing to inject, a rendering error, a block that fails the structure check or cannot
fit the budget - returns a fallback reason instead of text, and the caller keeps the baseline prompt.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal

import jinja2

from fastslow.memory.config import BudgetUnit
from fastslow.memory.records import MemoryRecord, Tag
from fastslow.memory.retrieval import dedup_key

Audience = Literal["swift", "sage", "critic"]
TEMPLATE = "memory_block.j2"
BEGIN = "<<< BEGIN RETRIEVED MEMORIES"
END = "<<< END RETRIEVED MEMORIES >>>"

AUDIENCE_TAGS: dict[Audience, tuple[Tag, ...]] = {
    "swift": ("success", "near-miss"),
    "sage": ("success", "near-miss"),
    "critic": ("success", "near-miss", "avoidance"),
}
_TAG_ORDER: dict[str, int] = {"success": 0, "near-miss": 1, "avoidance": 2}
# (keep recent context, keep inventory, keep task and room, observation chars or None = configured)
_LEVELS: tuple[tuple[bool, bool, bool, int | None], ...] = (
    (True, True, True, None),
    (False, True, True, None),
    (False, False, True, 80),
    (False, False, False, 40),
)
_TOKEN = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True)
class InjectionResult:
    """A block ready to insert (``text``) or the reason the baseline prompt must be used (``fallback``)."""

    text: str | None
    records: tuple[MemoryRecord, ...] = ()
    """Records that made it into the block, in block order."""
    fallback: str | None = None
    level: int = 0
    """Compression level used (0 = nothing dropped)."""
    size: int = 0
    """Size of the block in the budget's unit."""
    dropped: dict[str, int] = field(default_factory=dict)
    """How many records dedup / type filter / budget removed."""

    @property
    def ok(self) -> bool:
        return self.text is not None

    @property
    def chars(self) -> int:
        return len(self.text) if self.text else 0


def measure(text: str, unit: BudgetUnit) -> int:
    """Block size: characters, or approximate tokens (words and punctuation marks)."""
    return len(text) if unit == "chars" else len(_TOKEN.findall(text))


@cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("fastslow", "prompts"),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
    )
    return env.get_template(TEMPLATE)


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: max(limit - 3, 0)].rstrip() + "..."


def _view(record: MemoryRecord, level: int, observation_chars: int) -> dict[str, Any]:
    recent, inventory, place, obs_limit = _LEVELS[level]
    return {
        "tag": record.tag,
        "subtag": record.subtag,
        "task": record.task_name if place else "",
        "room": record.room if place else "",
        "score_before": record.score_before,
        "score_after": record.score_after,
        "inventory": _cut(record.inventory, 100) if inventory else "",
        "recent": list(record.recent) if recent else [],
        "action": record.action,
        "observation": _cut(record.observation, obs_limit or observation_chars),
    }


def render(
    records: Sequence[MemoryRecord],
    audience: Audience,
    level: int,
    observation_chars: int,
    template: jinja2.Template | None = None,
) -> str:
    views = [_view(r, level, observation_chars) for r in records]
    return (template or _template()).render(records=views, audience=audience).strip()


def structure_ok(text: str, records: Sequence[MemoryRecord]) -> bool:
    """The block is delimited once at each end and carries every record's action."""
    return (
        text.startswith(BEGIN)
        and text.endswith(END)
        and text.count(BEGIN) == 1
        and text.count(END) == 1
        and all(f"action: {r.action}" in text for r in records)
    )


def format_memory_block(
    records: Sequence[MemoryRecord],
    budget: int,
    audience: Audience,
    unit: BudgetUnit = "chars",
    observation_chars: int = 160,
    template: jinja2.Template | None = None,
) -> InjectionResult:
    """The memory block for ``audience`` within ``budget``, or a fallback reason.

    ``template`` replaces the packaged ``memory_block.j2`` (prompt experiments; tests of the fallbacks).
    """
    unique: list[MemoryRecord] = []
    keys: set[tuple[str, str]] = set()
    for record in records:
        if dedup_key(record) not in keys:
            keys.add(dedup_key(record))
            unique.append(record)
    allowed = AUDIENCE_TAGS[audience]
    kept = sorted((r for r in unique if r.tag in allowed), key=lambda r: _TAG_ORDER[r.tag])
    dropped = {"duplicate": len(records) - len(unique), "type": len(unique) - len(kept), "budget": 0}
    if not kept:
        return InjectionResult(None, fallback="no_records", dropped=dropped)
    try:
        level = 0
        text = render(kept, audience, level, observation_chars, template)
        while measure(text, unit) > budget and level < len(_LEVELS) - 1:
            level += 1
            text = render(kept, audience, level, observation_chars, template)
        while measure(text, unit) > budget and len(kept) > 1:
            kept.pop()
            dropped["budget"] += 1
            text = render(kept, audience, level, observation_chars, template)
    except jinja2.TemplateError as exc:
        return InjectionResult(None, fallback=f"format_error: {exc}", dropped=dropped)
    size = measure(text, unit)
    if size > budget:
        return InjectionResult(None, fallback=f"over_budget: {size} > {budget} {unit}", dropped=dropped)
    if not structure_ok(text, kept):
        return InjectionResult(None, fallback="structure_check", dropped=dropped)
    return InjectionResult(text, tuple(kept), level=level, size=size, dropped=dropped)
