"""Parsing Sage's grounding reply into actions (paper §3, SwiftSage's stage-2 grounding).

Models rarely follow a format exactly: the numbered list comes wrapped in prose or a code fence, numbered
"1." / "1)" / "Step 1:" / "-", with or without an expected observation after "->", as plain text or as
SwiftSage-style ``FUNC(args)`` calls, sometimes as a JSON list. The parser accepts all of these and returns
an empty list (a parse failure, which the caller retries once) when nothing action-like is found.

Each reader also states the reply it reads as a ``models.shape.ListShape`` (``numbered_shape``,
``authors_shape``, and ``plan_shape`` for the planning reply the grounding prompt carries), from the
same pieces the reader uses, so a constrained call (``controller.sage.constrain``) asks the model for
exactly what the reader reads, and the two cannot drift apart.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fastslow.core.authors import AuthorsProfile
from fastslow.core.semantics import PromptFacts, WorldSemantics
from fastslow.models import CHARS_PER_TOKEN
from fastslow.models.shape import ListShape

_FENCE = re.compile(r"```[a-zA-Z]*\n?(.*?)```", re.DOTALL)
_ITEM = re.compile(
    r"^\s*(?:[-*•]\s*)?(?:\(?\d{1,2}[.):]\)?|\(?\d{1,2}\s*-|step\s*\d{1,2}\s*[:.)-]|action\s*\d{1,2}\s*[:.)-])\s*(.*)$",
    re.IGNORECASE,
)
_BULLET = re.compile(r"^\s*[-*•]\s+(.*)$")
_ACTION_LABEL = re.compile(r"^\s*(?:next\s+)?action\s*[:=]\s*(.*)$", re.IGNORECASE)
_EXPECT_LABEL = re.compile(r"^\s*(?:[-*•]\s*)?expected(?:\s+observation)?\s*[:=]\s*(.*)$", re.IGNORECASE)
_SEPARATORS = re.compile(
    r"\s*(?:-->|->|=>|→|\|\s*expected(?:\s+observation)?\s*:|\(expected(?:\s+observation)?\s*:|"
    r"\s--\s|;\s*expected(?:\s+observation)?\s*:|\|)\s*",
    re.IGNORECASE,
)
_FUNC = re.compile(r"^([A-Za-z_][A-Za-z_ ]*?)\s*\((.*)\)\s*$")
_WRAP = re.compile(r"^[`\"'*\[]+|[`\"'*\]]+$")
# Lines that are commentary, not actions, even when numbered.
_PROSE = re.compile(
    r"^(?:here|these|this|the following|i will|i'll|let's|note|sure|okay|ok)\b", re.IGNORECASE
)


@dataclass(frozen=True)
class ParsedAction:
    action: str
    """Action text as the model wrote it, converted from FUNC(args) form and unquoted."""
    expected: str = ""
    """The observation the model expects (empty if it gave none)."""


def func_to_text(text: str, joiners: Sequence[tuple[str, str]]) -> str:
    """``MOVE(apple, table)`` -> ``move apple to table`` (``joiners``: the world's
    ``PromptFacts.func_joiners``); plain text is returned unchanged."""
    match = _FUNC.match(text.strip())
    if not match:
        return text
    name = match.group(1).strip().lower().replace("_", " ")
    args = [a.strip().strip("'\"") for a in match.group(2).split(",") if a.strip()]
    if not args:
        return name
    if len(args) >= 2:
        joiner = dict(joiners).get(name.split()[0], "")
        middle = f" {joiner} " if joiner else " "
        return f"{name} {args[0]}{middle}{' '.join(args[1:])}"
    return f"{name} {args[0]}"


def _clean(action: str, facts: PromptFacts) -> str:
    previous = None
    while previous != action:  # unwrap `"x".` and **x** in any nesting order
        previous = action
        action = _WRAP.sub("", action.strip().rstrip(" .;,")).strip()
    action = func_to_text(action, facts.func_joiners)
    return " ".join(action.rstrip(" .;,").split())


def _split_expected(body: str) -> tuple[str, str]:
    parts = _SEPARATORS.split(body, maxsplit=1)
    if len(parts) == 2:
        return parts[0], parts[1].rstrip(")").strip()
    return body, ""


def _from_json(text: str, facts: PromptFacts) -> list[ParsedAction] | None:
    start, end = text.find("["), text.rfind("]")
    if start < 0 or end <= start:
        return None
    try:
        data = json.loads(text[start : end + 1])
    except ValueError:
        return None
    if not isinstance(data, list):
        return None
    out: list[ParsedAction] = []
    for item in data:
        if isinstance(item, str):
            out.append(ParsedAction(_clean(item, facts)))
        elif isinstance(item, dict) and isinstance(item.get("action"), str):
            expected = item.get("expected") or item.get("expected_observation") or ""
            out.append(ParsedAction(_clean(item["action"], facts), str(expected)))
    return [a for a in out if a.action] or None


def _looks_like_action(text: str) -> bool:
    """Short imperative text, not a sentence of commentary."""
    words = text.split()
    return 0 < len(words) <= 14 and not _PROSE.match(text) and not text.endswith(":")


def parse_actions(text: str, semantics: WorldSemantics) -> list[ParsedAction]:
    """Actions in a grounding reply, in order; [] when none can be found. The world's
    ``prompt_facts`` say how its SwiftSage-style calls read and which first words make an action."""
    facts = semantics.prompt_facts
    if not text or not text.strip():
        return []
    fenced = _FENCE.findall(text)
    body = "\n".join(fenced) if fenced else text
    as_json = _from_json(body, facts)
    if as_json is not None:
        return as_json
    numbered: list[ParsedAction] = []
    bulleted: list[ParsedAction] = []
    labelled: list[ParsedAction] = []
    for line in body.splitlines():
        if not line.strip():
            continue
        expect = _EXPECT_LABEL.match(line)
        if expect:
            # "Expected observation: ..." on its own line belongs to the action just read.
            for found in (numbered, labelled, bulleted):
                if found and not found[-1].expected:
                    found[-1] = ParsedAction(found[-1].action, expect.group(1).strip())
                    break
            continue
        for pattern, found in ((_ITEM, numbered), (_ACTION_LABEL, labelled), (_BULLET, bulleted)):
            match = pattern.match(line)
            if match:
                inner = _ACTION_LABEL.match(match.group(1))
                action, expected = _split_expected(inner.group(1) if inner else match.group(1))
                action = _clean(action, facts)
                if _looks_like_action(action):
                    found.append(ParsedAction(action, expected.strip()))
                break
    for found in (numbered, labelled, bulleted):
        if found:
            return found
    # Last resort: a one-line reply that is itself an action ("open door to kitchen").
    lines = [ln for ln in body.splitlines() if ln.strip()]
    if len(lines) == 1:
        action, expected = _split_expected(lines[0])
        action = _clean(action, facts)
        if _looks_like_action(action) and action.split()[0].lower() in facts.first_words:
            return [ParsedAction(action, expected.strip())]
    return []


class PlanFormatError(ValueError):
    """A grounding reply the authors' reader fails on (a "repeat" line before any action): their Sage
    round ends as a planning error, and so does ours."""


def parse_authors(text: str, semantics: WorldSemantics, max_lines: int = 5) -> list[ParsedAction]:
    """Actions of a grounding reply read as the paper's authors read it (no retry follows).

    Only the first ``max_lines`` lines count. A line mentioning "repeat" appends the last two parsed
    actions five times (the last three when the last one is a wait), and ends the reading if it also says
    "until"; Faithful: the expected observations repeated are always the last three, so after such a line
    actions and observations no longer pair up by position, as in their two buffers. Any other line needs
    a ":", a "(" and a ")": the action is the text between the first ":" and the last ")", converted
    from FUNC form (``from_func``; a line it cannot convert is skipped), and the expected observation is
    what follows the last "-->" ("None" without one, their placeholder). Raises ``PlanFormatError`` on a
    "repeat" line before any action (their reader fails there). The FUNC grammar and the wait are the
    world's (``semantics.authors``, ``semantics.idle_actions``)."""
    profile = semantics.authors
    if profile is None:
        raise PlanFormatError(f"the authors' reader does not exist for {semantics.name}")
    idle = semantics.idle_actions[:1]
    actions: list[str] = []
    expected: list[str] = []
    for line in text.split("\n")[:max_lines]:
        if "repeat" in line.lower():
            if not actions:
                raise PlanFormatError(f"a repeat line before any action: {line.strip()!r}")
            chunk = actions[-3:] if idle and idle[0] in actions[-1].lower() else actions[-2:]
            seen = expected[-3:]
            actions += chunk * 5
            expected += seen * 5
            if "until" in line.lower():
                break
            continue
        if ":" not in line or "(" not in line or ")" not in line:
            continue
        body = line[line.index(":") + 1 : line.rindex(")") + 1].strip()
        guess = line.split(AUTHORS_ARROW)[-1].strip() if AUTHORS_ARROW in line else "None"
        action = profile.from_func(body)
        if action:
            actions.append(action)
            expected.append(guess)
    return [ParsedAction(a, expected[i] if i < len(expected) else "") for i, a in enumerate(actions)]


# -- the shapes the readers read (constrained calls) ----------------------------------------------------

AUTHORS_ARROW = "-->"
"""What separates an action from its expected observation in the authors' grounding reply."""
AUTHORS_LABEL = "Action {n}: "
"""How the authors' grounding prompt numbers the reply's lines ("Action 1: FUNC(arguments) --> ...")."""
EXPECTED_CHARS = 80
"""Longest expected observation a constrained line carries (the reader has no limit; a bound keeps five
lines inside a small reply cap)."""
PLAN_ANSWERS = 5
"""Answers a planning reply has: one per question of either profile's planning prompt."""
NUMBERED_LABEL = "{n}. "
"""How SwiftSage's grounding prompt numbers the reply's lines (an ``_ITEM`` number)."""
NUMBERED_ARROW = "->"
"""What separates an action from its expected observation in SwiftSage's grounding reply (one of
``_SEPARATORS``)."""


def authors_shape(lines: int, profile: AuthorsProfile) -> ListShape:
    """The grounding reply ``parse_authors`` reads, ``lines`` (its ``max_lines``) lines at most:
    ``Action n: FUNC(arguments) --> expected observation``. The call is a FUNC call ``from_func`` reads
    (``func_call_pattern``); the observation holds no parenthesis (the reader cuts the call at the
    line's last ``)``) and no line break. Not excluded: an observation that says "repeat", which the
    reader takes for one of its repeat lines."""
    return ListShape(
        item=profile.func_call_pattern(),
        most=lines,
        label=AUTHORS_LABEL,
        after=f" {AUTHORS_ARROW} [^()\\n]{{1,{EXPECTED_CHARS}}}",
    )


def numbered_shape(items: int, semantics: WorldSemantics) -> ListShape:
    """The grounding reply ``parse_actions`` reads as a numbered list, ``items`` lines at most (the
    prompt's limit): ``n. action -> expected observation``. The action is words of an action
    (the world's ``action_word``), 14 at most (``_looks_like_action``); the observation holds none of
    ``[ ] ` `` and no line break (a JSON list or a code fence would be read instead). Not excluded: an
    action that starts like commentary ("here", "note", ...), whose line the reader skips."""
    return ListShape(
        item=f"{semantics.action_word}(?: {semantics.action_word}){{0,13}}",
        most=min(items, 99),  # _ITEM reads numbers of one or two digits
        label=NUMBERED_LABEL,
        after=f" {NUMBERED_ARROW} [^\\n\\[\\]`]{{1,{EXPECTED_CHARS}}}",
    )


def numbered_readable(actions: Iterable[str], semantics: WorldSemantics) -> list[str]:
    """The ``actions`` that ``parse_actions`` reads back as themselves from a line of
    ``numbered_shape`` (the choices of a ``valid`` constraint)."""
    first = NUMBERED_LABEL.format(n=1)
    return [
        a
        for a in actions
        if [p.action for p in parse_actions(f"{first}{a} {NUMBERED_ARROW} x", semantics)] == [a]
    ]


PLAN_LABELS = {"swiftsage": "{n}. ", "authors": "Answer {n}: "}
"""How each Sage prompt profile (``controller.sage.prompt``) numbers the planning reply's answers: as the
prompt numbers its questions (the authors' grounding prompt turns "Answer" into "Advice")."""


def plan_shape(label: str, max_tokens: int) -> ListShape:
    """The planning reply: ``PLAN_ANSWERS`` lines, one answer each, numbered with ``label`` (a prompt
    profile's name in ``PLAN_LABELS``, or the label itself, ``{n}`` the number), each at most its share of
    ``max_tokens`` (estimated at ``models.CHARS_PER_TOKEN``). Nothing parses this reply: the grounding
    prompt carries it."""
    label = PLAN_LABELS.get(label, label)
    share = max(int(max_tokens * CHARS_PER_TOKEN / PLAN_ANSWERS) - len(label), 1)
    return ListShape(item=f"[^\\n]{{1,{share}}}", most=PLAN_ANSWERS, least=PLAN_ANSWERS, label=label)
