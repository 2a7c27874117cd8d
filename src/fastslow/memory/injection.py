"""AMM bounded prompt augmentation (paper §3.1): a delimited memory block within a budget, or nothing.

Retrieved records are deduplicated, filtered by operational type for the audience (Swift and Sage see
success and near-miss memories only - negative evidence stays out of the generative pathways; the
Critic also sees avoidance memories; the authors' T4 profile gives Sage avoidance memories after failure
messages), then compressed in a fixed order until the block fits:

1. drop the recent-context lines, 2. drop inventories and cut observations to 80 characters,
3. drop task and room and cut observations to 40 characters, 4. drop the last records one by one.

Any failure - nothing to inject, a rendering error, a block that fails the structure check or cannot
fit the budget - returns a fallback reason instead of text, and the caller keeps the baseline prompt.

Record text comes from the environment and from a store other processes write, so it is data, never
structure: before formatting, every field that enters a prompt goes through one sanitiser
(``neutralize``): terminal escape sequences, control, format (bidi overrides, zero-width) and surrogate
characters removed and the rest NFKC-normalized (``plain_text``), so no invisible or look-alike
character can hide what follows; then it is collapsed to one line, stripped of anything that looks like
the block's delimiters (``<<<``/``>>>`` and look-alikes, the BEGIN/END marker words in any case,
spacing and punctuation, chat special-token brackets ``<|``/``|>``, the header line's ``|`` field
separator) and cut to its own length (``FIELD_CHARS``). A record therefore renders as exactly the
lines the template makes, and no line of the block starts with text a record chose (a fake ``SYSTEM:``
header, a fake "Reply exactly:" format).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import jinja2

from fastslow.memory.config import BudgetUnit
from fastslow.memory.records import MemoryRecord, Tag, one_line
from fastslow.memory.retrieval import dedup_key
from fastslow.templates import prompt_template

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

FIELD_CHARS: dict[str, int] = {
    "task": 60,
    "room": 40,
    "inventory": 100,
    "recent": 120,
    "action": 120,
    "subtag": 24,
}
"""Longest text each record field may put into a block (characters), whatever the budget: one field
cannot crowd out the others. ScienceWorld's task names, rooms and actions are far shorter; the
observation's length is ``InjectionConfig.observation_chars`` (then the compression levels)."""
RECENT_LINES = 5
"""At most this many recent-context lines per record (records keep ``amm.write.recent_turns``, 3)."""

# Angle brackets and their look-alikes. A run of two or more (or one doubled character) reads as a
# delimiter like the block's own "<<<" / ">>>"; a single "<" or ">" (the "->" of recent lines) stays.
_OPEN, _OPEN2 = "<\uff1c\u2039\u27e8\u3008\ufe64\u2329", "\u00ab\u226a\u300a\u27ea"
_CLOSE, _CLOSE2 = ">\uff1e\u203a\u27e9\u3009\ufe65\u232a", "\u00bb\u226b\u300b\u27eb"
_OPEN_RUN = re.compile(f"(?:[{_OPEN}]{{2,}}|[{_OPEN2}])[{_OPEN}{_OPEN2}]*")
_CLOSE_RUN = re.compile(f"(?:[{_CLOSE}]{{2,}}|[{_CLOSE2}])[{_CLOSE}{_CLOSE2}]*")
# Chat-template special tokens (<|im_start|>, <|eot_id|>): a tokenizer that parses specials in prompt
# text would turn them into real turn boundaries.
_SPECIAL = re.compile(r"<\s*\||\|\s*>")
# Terminal escape sequences, removed whole (removing only ESC would leave "[31m" behind): CSI (ESC [ or
# the C1 CSI), OSC up to its terminator, and the two-character ESC sequences.
_ESCAPE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?|\x9b[0-?]*[ -/]*[@-~]?|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[ -~]?"
)
# Control (Cc), format (Cf: bidi embeddings and overrides U+202A-U+202E and U+2066-U+2069, the marks
# U+200E/U+200F, zero-width U+200B-U+200D, U+2060, U+FEFF, soft hyphen, tag characters) and lone
# surrogates (Cs): none shows as text, all can hide or reorder what a reader sees.
_INVISIBLE = frozenset({"Cc", "Cf", "Cs"})


def _spaced(word: str) -> str:
    # Letters of a marker word with up to 16 non-alphanumerics (spaces, punctuation, "_") between any two.
    return r"[\W_]{0,16}".join(word)


_GAP = r"[\W_]{0,16}"
_MARKER = re.compile(
    f"(?:{_spaced('begin')}|{_spaced('end')}){_GAP}{_spaced('retrieved')}{_GAP}"
    f"{_spaced('memor')}{_GAP}(?:{_spaced('ies')}|y)",
    re.IGNORECASE,
)
"""The block's BEGIN/END marker words in any case, spacing and punctuation (``END_RETRIEVED_MEMORIES``,
``end retrieved-memories``, ``E.N.D RETRIEVED MEMORIES``), matched on ``plain_text`` (fullwidth letters
folded, zero-width characters gone)."""


@dataclass(frozen=True)
class InjectionResult:
    """A block ready to insert (``text``) or the reason the baseline prompt must be used (``fallback``)."""

    text: str | None
    records: tuple[MemoryRecord, ...] = ()
    """Records that made it into the block, in block order, as the block shows them (``sanitize``)."""
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


def _cut(text: str, limit: int) -> str:
    text = one_line(text)
    return text if len(text) <= limit else text[: max(limit - 3, 0)].rstrip() + "..."


def plain_text(text: str) -> str:
    """``text`` with terminal escape sequences and invisible characters (control, format and surrogate
    characters: NUL, BEL, ESC, U+202E, U+200B, U+FEFF, ...) removed, whitespace controls (newline, tab)
    kept as spaces, then NFKC-normalized (fullwidth ``ＥＮＤ`` reads ``END``, ligatures are split)."""
    text = _ESCAPE.sub("", text)
    text = "".join(
        " " if c.isspace() else c for c in text if c.isspace() or unicodedata.category(c) not in _INVISIBLE
    )
    return unicodedata.normalize("NFKC", text)


def neutralize(text: str, limit: int) -> str:
    """Record text made safe to put inside the block: visible characters only (``plain_text``), one line,
    no delimiter look-alikes, ``limit`` chars. This is the one sanitiser every record field goes through
    before any prompt (``sanitize``).

    Delimiters are replaced before the cut, so the result is never longer than ``limit``.
    """
    text = one_line(plain_text(text))
    text = _MARKER.sub("[marker removed]", text)
    text = _SPECIAL.sub(lambda m: "(" if "<" in m.group() else ")", text)
    text = _OPEN_RUN.sub("(", text)
    text = _CLOSE_RUN.sub(")", text)
    # " | " separates the fields of a record's header line: a pipe in a room name would forge a field.
    text = text.replace("|", "/")
    return _cut(text, limit)


def sanitize(record: MemoryRecord, observation_chars: int) -> MemoryRecord:
    """The record as a prompt may show it: every text field neutralized and cut (see ``FIELD_CHARS``).

    These copies are also what ``InjectionResult.records`` hands on (Swift builds its own input from
    the records' action and observation), so no caller can put the raw text into a prompt by accident.
    """
    return replace(
        record,
        task_name=neutralize(record.task_name, FIELD_CHARS["task"]),
        room=neutralize(record.room, FIELD_CHARS["room"]),
        inventory=neutralize(record.inventory, FIELD_CHARS["inventory"]),
        recent=tuple(neutralize(line, FIELD_CHARS["recent"]) for line in record.recent[-RECENT_LINES:]),
        action=neutralize(record.action, FIELD_CHARS["action"]),
        observation=neutralize(record.observation, observation_chars),
        subtag=neutralize(record.subtag, FIELD_CHARS["subtag"]),
    )


def _view(record: MemoryRecord, level: int, observation_chars: int) -> dict[str, Any]:
    """Template fields of a ``sanitize``d record at one compression level."""
    recent, inventory, place, obs_limit = _LEVELS[level]
    return {
        "tag": record.tag,
        "subtag": record.subtag,
        "task": record.task_name if place else "",
        "room": record.room if place else "",
        "score_before": int(record.score_before),
        "score_after": int(record.score_after),
        "inventory": record.inventory if inventory else "",
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
    return (template or prompt_template(TEMPLATE)).render(records=views, audience=audience).strip()


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
    *,
    tags: Sequence[Tag] | None = None,
    ordered: bool = False,
) -> InjectionResult:
    """The memory block for ``audience`` within ``budget``, or a fallback reason.

    The block's records are ``sanitize``d copies (same ids). ``template`` replaces the packaged
    ``memory_block.j2`` (prompt experiments; tests of the fallbacks). ``tags`` replaces the audience's
    record types (the authors' T4 gives Sage avoidance memories after failure messages); ``ordered``
    keeps the caller's order (a ranking of its own) instead of success, near-miss, avoidance.
    """
    unique: list[MemoryRecord] = []
    keys: set[tuple[str, str]] = set()
    for record in records:
        if dedup_key(record) not in keys:
            keys.add(dedup_key(record))
            unique.append(record)
    allowed = AUDIENCE_TAGS[audience] if tags is None else tuple(tags)
    kept = [sanitize(r, observation_chars) for r in unique if r.tag in allowed]
    if not ordered:
        kept.sort(key=lambda r: _TAG_ORDER[r.tag])
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
