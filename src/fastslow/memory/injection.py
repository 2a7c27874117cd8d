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
(``neutralize``): terminal escape sequences, control, format (bidi overrides, zero-width), surrogate and
other default-ignorable characters (Hangul fillers, variation selectors) removed and the rest
NFKC-normalized (``plain_text``), so no invisible character can hide what follows; then it is collapsed
to one line, stripped of anything that looks like the block's delimiters (``<<<``/``>>>``, also spaced
``< < <``, the BEGIN/END marker words in any case, spacing and punctuation, chat special-token brackets
``<|``/``|>``, the header line's ``|`` field separator) and cut to its own length (``FIELD_CHARS``).
"Looks like" is decided on the text's confusable skeleton (``fold``: look-alike letters from other
scripts, small capitals and accented forms read as the Latin letter they resemble, in the manner of
Unicode TR39), so a Cyrillic ``Е`` in ``END`` hides nothing; the block's structure check counts its
markers on that skeleton too. A record therefore renders as exactly the lines the template makes, and
no line of the block starts with text a record chose (a fake ``SYSTEM:`` header, a fake "Reply
exactly:" format).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Sequence
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

# The confusable skeleton (``fold``). Each group lists the characters that read as its key and that
# NFKD (then dropping combining marks) does not already fold: from Unicode's confusables.txt (UTS #39),
# the entries whose prototype is one Latin letter or an angle bracket, plus the small capitals, a few
# Cyrillic and Greek letters shaped like them (в, т, м, н, κ, τ), and the |-shaped characters. As in
# TR39, I, l and 1 share a skeleton ("i") and so do O and 0 ("o"). Escaped: the source shows no
# look-alike. Only the marker and delimiter checks read the skeleton; the text keeps its letters.
_LOOKALIKE_GROUPS: dict[str, str] = {
    "<": "\u02c2\u1438\u16b2\u2039\u276e\u27e8\u3008\U0001d236",
    ">": "\u02c3\u1433\u203a\u276f\u27e9\u3009\U00016f3f\U0001d237",
    "a": "\u0251\u0391\u03b1\u0410\u0430\u13aa\u15c5\u1d00\u237a\ua4ee\U000102a0\U00016f40",
    "b": (
        "\u0184\u0299\u0392\u0412\u042c\u0432\u13cf\u13f4\u1472\u15af\u15f7\ua4d0\ua7b4"
        "\U00010282\U000102a1\U00010301"
    ),
    "c": (
        "\u0421\u0441\u13df\u1d04\u2ca4\u2ca5\ua4da\uabaf\U000102a2\U00010302\U00010415"
        "\U0001043d\U0001051c\U000118e9\U000118f2\U0001f74c"
    ),
    "d": "\u0501\u13a0\u13e7\u146f\u15de\u15ea\u1d05\ua4d2\ua4d3",
    "e": (
        "\u0395\u03b5\u03f5\u0415\u0435\u04bd\u13ac\u1d07\u212e\u22ff\u2d39\ua4f0\uab32"
        "\U00010286\U000118a6\U000118ae"
    ),
    "f": (
        "\u03dc\u0584\u15b4\u1e9d\ua4dd\ua730\ua798\ua799\uab35\U00010287\U000102a5\U00010525"
        "\U000118a2\U000118c2\U0001d213"
    ),
    "g": "\u018d\u0261\u0262\u050c\u050d\u0581\u13c0\u13f3\u1d83\ua4d6",
    "h": "\u029c\u0397\u041d\u043d\u04bb\u0570\u13bb\u13c2\u157c\u2c8e\ua4e7\U000102cf",
    "i": (
        "\u0131\u0196\u0269\u026a\u0399\u03b9\u0406\u0456\u04c0\u04cf\u06f1\u13a5\u16c1\u2373"
        "\u23fd\u2c92\u2d4f\ua4f2\ua647\uab75\U0001028a\U00010309\U00010320\U000118c3"
        "\U00016f28"
    ),
    "j": "\u037f\u03f3\u0408\u0458\u13ab\u148d\u1d0a\ua4d9\ua7b2",
    "k": "\u039a\u03ba\u041a\u043a\u13e6\u16d5\u1d0b\u2c94\ua4d7\U00010518",
    "l": "\u029f\u13de\u14aa\u2cd0\ua4e1\U0001041b\U00010526\U000118a3\U000118b2\U00016f16\U0001d22a",
    "m": "\u039c\u03fa\u041c\u043c\u13b7\u15f0\u16d6\u1d0d\u2c98\ua4df\U000102b0\U00010311",
    "n": "\u0274\u039d\u03b7\u043f\u0578\u057c\u2c9a\ua4e0\U00010513",
    "o": (
        "\u039f\u03bf\u03c3\u041e\u043e\u0555\u0585\u06f5\u0966\u09e6\u0a66\u0ae6\u0b20\u0b66"
        "\u0be6\u0c02\u0c66\u0c82\u0ce6\u0d02\u0d20\u0d66\u0d82\u0e50\u0ed0\u101d\u1040\u10ff"
        "\u12d0\u1d0f\u1d11\u2c9e\u2c9f\u2d54\u3007\ua4f3\uab3d\U00010292\U000102ab\U00010404"
        "\U0001042c\U000104c2\U000104ea\U00010516\U000114d0\U000118b5\U000118c8\U000118d7"
        "\U000118e0"
    ),
    "p": "\u03a1\u03c1\u0420\u0440\u13e2\u146d\u1d18\u2374\u2ca2\u2ca3\ua4d1\U00010295",
    "q": "\u051b\u0563\u0566\u2d55\ua7af",
    "r": (
        "\u01a6\u0280\u0433\u13a1\u13d2\u1587\u1d26\u2c85\ua4e3\uab47\uab48\uab81\U000104b4"
        "\U00016f35\U0001d216"
    ),
    "s": (
        "\u01bd\u0405\u0455\u054f\u13d5\u13da\ua4e2\ua731\uabaa\U00010296\U00010420\U00010448"
        "\U000118c1\U00016f3a"
    ),
    "t": (
        "\u03a4\u03c4\u0422\u0442\u13a2\u1d1b\u22a4\u27d9\u2ca6\ua4d4\U00010297\U000102b1"
        "\U00010315\U000118bc\U00016f0a\U0001f768"
    ),
    "u": (
        "\u028b\u03c5\u054d\u057d\u1200\u144c\u1d1c\u222a\u22c3\ua4f4\ua79f\uab4e\uab52"
        "\U000104ce\U000104f6\U000118b8\U000118d8\U00016f42"
    ),
    "v": (
        "\u03bd\u0474\u0475\u06f7\u13d9\u142f\u1d20\u2228\u22c1\u2d38\ua4e6\ua6df\uaba9"
        "\U0001051d\U00011706\U000118a0\U000118c0\U00016f08\U0001d20d"
    ),
    "w": (
        "\u026f\u03c9\u0461\u051c\u051d\u0561\u13b3\u13d4\u1d21\ua4ea\uab83\U0001170a"
        "\U0001170e\U0001170f\U000118e6\U000118ef"
    ),
    "x": (
        "\u00d7\u03a7\u03c7\u0425\u0445\u1541\u157d\u166d\u166e\u16b7\u2573\u292b\u292c\u2a2f"
        "\u2cac\u2d5d\ua4eb\ua7b3\U00010290\U000102b4\U00010317\U00010322\U00010527\U000118ec"
    ),
    "y": (
        "\u0263\u028f\u03a5\u03b3\u0423\u0443\u04ae\u04af\u10e7\u13a9\u13bd\u1d8c\u1eff\u2ca8"
        "\ua4ec\uab5a\U000102b2\U000118a4\U000118dc\U00016f43"
    ),
    "z": "\u0396\u13c3\u1d22\ua4dc\uab93\U000102f5\U000118a9\U000118c4\U000118e5",
    "|": "\u01c0\u2223\u23b8\u23b9\u23d0\u2502\u2503\u2758\ufe31\ufe33\uffe8",
}
_LOOKALIKE = {c: key for key, chars in _LOOKALIKE_GROUPS.items() for c in chars}
# A doubled angle bracket reads as two.
_LOOKALIKE.update(dict.fromkeys("\u00ab\u226a\u300a\u27ea", "<<"))
_LOOKALIKE.update(dict.fromkeys("\u00bb\u226b\u300b\u27eb", ">>"))
_ASCII_SKELETON = str.maketrans({"l": "i", "1": "i", "0": "o"})
# Default_Ignorable_Code_Point (Unicode DerivedCoreProperties): invisible wherever they stand. Most are
# format (Cf) characters, removed with them; these are the letters and marks among them (Hangul fillers
# U+115F, U+1160, U+3164, U+FFA0, the combining grapheme joiner, Mongolian and other variation
# selectors, the Khmer inherent vowels) and the unassigned code points reserved as ignorable.
_IGNORABLE = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2065\u3164\ufe00-\ufe0f\uffa0\ufff0-\ufff8"
    "\U000e0000-\U000e0fff]"
)
# A run of two or more angle brackets, spaces between them or not ("<<<", "< < <"; a doubled character
# folds to two), read as a delimiter like the block's own; a single "<" or ">" (the "->" of recent lines)
# stays. Matched on the skeleton, where every look-alike is "<" or ">".
_OPEN_RUN = re.compile(r"<(?:\s*<)+")
_CLOSE_RUN = re.compile(r">(?:\s*>)+")
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
    # Letters of a marker word with up to 16 non-alphanumerics (spaces, punctuation, "_") between any two;
    # an "i" may also be a |-shaped character (its skeleton is "|", which the pipe checks need).
    return r"[\W_]{0,16}".join("[i|]" if c == "i" else c for c in word)


_GAP = r"[\W_]{0,16}"
_MARKER = re.compile(
    f"(?:{_spaced('begin')}|{_spaced('end')}){_GAP}{_spaced('retrieved')}{_GAP}"
    f"{_spaced('memor')}{_GAP}(?:{_spaced('ies')}|y)",
    re.IGNORECASE,
)
"""The block's BEGIN/END marker words in any case, spacing and punctuation (``END_RETRIEVED_MEMORIES``,
``end retrieved-memories``, ``E.N.D RETRIEVED MEMORIES``), matched on the skeleton (``fold``) of
``plain_text`` (fullwidth letters folded, zero-width characters gone, look-alike letters read as Latin)."""


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
    characters: NUL, BEL, ESC, U+202E, U+200B, U+FEFF, ...; the other default-ignorable code points:
    Hangul fillers such as U+3164, variation selectors) removed, whitespace controls (newline, tab) kept
    as spaces, then NFKC-normalized (fullwidth ``ＥＮＤ`` reads ``END``, ligatures are split)."""
    text = _IGNORABLE.sub("", _ESCAPE.sub("", text))
    text = "".join(
        " " if c.isspace() else c for c in text if c.isspace() or unicodedata.category(c) not in _INVISIBLE
    )
    return unicodedata.normalize("NFKC", text)


_MARKS = frozenset({"Mn", "Me"})
_LATIN_VARIANT = re.compile(r"LATIN (?:CAPITAL|SMALL) LETTER ([A-Z]) WITH ")


@functools.lru_cache(maxsize=8192)
def _skeleton(c: str) -> str:
    """The skeleton of one character (``fold``); "" for one that shows nothing."""
    if c.isascii():
        return " " if c.isspace() else c.lower().translate(_ASCII_SKELETON)
    if c.isspace() or c == "\u2800":  # a blank braille pattern shows as a space
        return " "
    out = []
    for part in unicodedata.normalize("NFKD", c):
        if unicodedata.category(part) in _MARKS or _IGNORABLE.match(part):
            continue
        if part in _LOOKALIKE:
            out.append(_LOOKALIKE[part])
            continue
        # A Latin letter with a stroke, bar or hook (Đ, Ł, Ø, Ƀ) has no decomposition; it reads as its letter.
        variant = _LATIN_VARIANT.match(unicodedata.name(part, ""))
        out.append(variant.group(1) if variant else part)
    return "".join(out).casefold().translate(_ASCII_SKELETON)


def fold(text: str) -> tuple[str, list[int]]:
    """The confusable skeleton of ``text`` and, for each of its characters, the index in ``text`` of the
    character it comes from. The skeleton is lower case; a character's look-alikes share one (Cyrillic
    ``Е``, Greek ``Ε``, small capital ``ᴇ``, ``É`` and ``e`` all read ``e``; I, l, 1 read ``i``; O, 0 read
    ``o``; a doubled angle bracket ``«`` reads ``<<``; every whitespace character reads " "); combining
    marks and default-ignorable characters vanish. An equivalent of Unicode TR39's skeleton for what
    the marker and delimiter checks look for, not a general one."""
    chars: list[str] = []
    origin: list[int] = []
    for i, c in enumerate(text):
        skeleton = _skeleton(c)
        chars.append(skeleton)
        origin.extend([i] * len(skeleton))
    return "".join(chars), origin


def _defang(text: str, pattern: re.Pattern[str], replace_with: Callable[[str], str]) -> str:
    """``text`` with each stretch whose skeleton ``pattern`` matches replaced by ``replace_with`` of the
    matched skeleton."""
    skeleton, origin = fold(text)
    parts: list[str] = []
    done = 0
    for match in pattern.finditer(skeleton):
        if match.end() == match.start():
            continue
        start, end = origin[match.start()], origin[match.end() - 1] + 1
        parts += [text[done:start], replace_with(match.group())]
        done = end
    return "".join(parts) + text[done:] if parts else text


def neutralize(text: str, limit: int) -> str:
    """Record text made safe to put inside the block: visible characters only (``plain_text``), one line,
    no delimiter look-alikes (judged on the skeleton, ``fold``), ``limit`` chars. This is the one
    sanitiser every record field goes through before any prompt (``sanitize``).

    Delimiters are replaced before the cut, so the result is never longer than ``limit``.
    """
    text = one_line(plain_text(text))
    text = _defang(text, _MARKER, lambda _: "[marker removed]")
    text = _defang(text, _SPECIAL, lambda m: "(" if "<" in m else ")")
    text = _defang(text, _OPEN_RUN, lambda _: "(")
    text = _defang(text, _CLOSE_RUN, lambda _: ")")
    # " | " separates the fields of a record's header line: a pipe (or a look-alike) in a room name
    # would forge a field.
    text = "".join("/" if _skeleton(c) == "|" else c for c in text)
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
    """The block is delimited once at each end, has no other marker even in look-alike letters (its
    skeleton, ``fold``, holds exactly the two) and carries every record's action."""
    return (
        text.startswith(BEGIN)
        and text.endswith(END)
        and text.count(BEGIN) == 1
        and text.count(END) == 1
        and len(_MARKER.findall(fold(text)[0])) == 2
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
