"""The paper's authors' action grammar: ScienceWorld actions spelled ``FUNC(args)`` (paper configurations).

The authors (a SwiftSage v1 fork) write actions in demos, histories and grounding replies as FUNC(args).
Two tables: ScienceWorld text -> FUNC (their order matters: "open door to" before "open", "pour .. into"
before "pour .. in", "drop .. in" before "drop"), and FUNC -> text (a few synonyms more). Patterns are
anchored at the start only and their groups are greedy, as theirs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from fastslow.env.scienceworld.semantics import ACTION_WORDS, FOCUS

TEXT_TO_FUNC: tuple[tuple[str, str, int], ...] = (
    ("0", "CHOOSE(0)", 0),
    ("1", "CHOOSE(1)", 0),
    ("look around", "SEE()", 0),
    ("wait", "WAIT()", 0),
    ("wait1", "WAIT()", 0),
    (r"^focus on (.+)", "FOCUS({})", 1),
    (r"^look at (.+)", "LOOK({})", 1),
    (r"^read (.+)", "READ({})", 1),
    (r"^pick up (.+)", "PICK({})", 1),
    (r"^open door to (.+)", "OPEN_DOOR({})", 1),
    (r"^close door to (.+)", "CLOSE_DOOR({})", 1),
    (r"^open (.+)", "OPEN({})", 1),
    (r"^close (.+)", "CLOSE({})", 1),
    (r"^activate (.+)", "ACTIVATE({})", 1),
    (r"^deactivate (.+)", "DEACTIVATE({})", 1),
    (r"^go to (.+)", "GO({})", 1),
    (r"^teleport to (.+)", "TELEPORT({})", 1),
    (r"^examine (.+)", "EXAMINE({})", 1),
    (r"^connect (.+) to (.+)", "CONNECT({}, {})", 2),
    (r"^move (.+) to (.+)", "MOVE({}, {})", 2),
    (r"^use (.+) on (.+)", "USE({}, {})", 2),
    (r"^pour (.+) into (.+)", "POUR({}, {})", 2),
    (r"^pour (.+) in (.+)", "POUR({}, {})", 2),
    (r"^dunk (.+) into (.+)", "DUNK({}, {})", 2),
    (r"^mix (.+)", "MIX({})", 1),
    (r"^drop (.+) in (.+)", "DROP({}, {})", 2),
    (r"^drop (.+)", "DROP({})", 1),
)
FUNC_TO_TEXT: tuple[tuple[str, str, int], ...] = (
    ("CHOOSE(0)", "0", 0),
    ("CHOOSE(1)", "1", 0),
    ("SEE()", "look around", 0),
    ("WAIT()", "wait", 0),
    (r"^FOCUS\((.+)\)", FOCUS + " {}", 1),
    (r"^WAIT\((.+)\)", "wait {}", 1),
    (r"^LOOK\((.+)\)", "look at {}", 1),
    (r"^READ\((.+)\)", "read {}", 1),
    (r"^PICK\((.+)\)", "pick up {}", 1),
    (r"^PICKUP\((.+)\)", "pick up {}", 1),
    (r"^PICK_UP\((.+)\)", "pick up {}", 1),
    (r"^OPEN_DOOR\((.+)\)", "open door to {}", 1),
    (r"^CLOSE_DOOR\((.+)\)", "close door to {}", 1),
    (r"^OPEN\((.+)\)", "open {}", 1),
    (r"^CLOSE\((.+)\)", "close {}", 1),
    (r"^ACTIVATE\((.+)\)", "activate {}", 1),
    (r"^DEACTIVATE\((.+)\)", "deactivate {}", 1),
    (r"^TURN_ON\((.+)\)", "activate {}", 1),
    (r"^TURN_OFF\((.+)\)", "deactivate {}", 1),
    (r"^GO\((.+)\)", "go to {}", 1),
    (r"^TELEPORT\((.+)\)", "teleport to {}", 1),
    (r"^EXAMINE\((.+)\)", "examine {}", 1),
    (r"^OBSERVE\((.+)\)", "examine {}", 1),
    (r"^CONNECT\((.+), (.+)\)", "connect {} to {}", 2),
    (r"^MOVE\((.+), (.+)\)", "move {} to {}", 2),
    (r"^PLACE\((.+), (.+)\)", "move {} to {}", 2),
    (r"^USE\((.+), (.+)\)", "use {} on {}", 2),
    (r"^POUR\((.+), (.+)\)", "pour {} into {}", 2),
    (r"^DUNK\((.+), (.+)\)", "dunk {} into {}", 2),
    (r"^MIX\((.+)\)", "mix {}", 1),
    (r"^DROP\((.+), (.+)\)", "drop {} in {}", 2),
    (r"^DROP\((.+)\)", "drop {}", 1),
)


def _convert(text: str, table: tuple[tuple[str, str, int], ...]) -> str | None:
    for pattern, form, arity in table:
        if arity == 0:
            if text.strip() == pattern:
                return form
            continue
        match = re.search(pattern, text)
        if match:
            return form.format(*match.groups()[:arity])
    return None


def to_func(action: str) -> str | None:
    """ScienceWorld text -> the authors' FUNC(args) form (``move a to b`` -> ``MOVE(a, b)``); None for an
    action outside their grammar ("inventory", "look in X", "put down X", "use X" ...)."""
    return _convert(action, TEXT_TO_FUNC)


def from_func(text: str) -> str | None:
    """The authors' FUNC(args) form -> ScienceWorld text (``TELEPORT(kitchen)`` -> ``teleport to
    kitchen``); None when no function of their grammar matches (plain text too: ``open door``)."""
    return _convert(text, FUNC_TO_TEXT)


def func_call_pattern() -> str:
    """A regular expression (the ``models.constraint.Regex`` subset) of the FUNC calls ``from_func``
    reads: each function of ``FUNC_TO_TEXT`` with its number of arguments, each an object name
    (``semantics.ACTION_WORDS``: no comma and no parenthesis, so the call's own ``(``, ``, `` and ``)``
    stay unambiguous), the argument-less ones as written (``SEE()``, ``CHOOSE(0)``). Every match
    converts (``from_func`` is not None)."""
    forms: list[str] = []
    for pattern, _form, arity in FUNC_TO_TEXT:
        if arity == 0:
            forms.append(re.escape(pattern))
            continue
        name = pattern[1 : pattern.index("\\(")]
        args = ", ".join([f"(?:{ACTION_WORDS})"] * arity)
        forms.append(f"{name}\\({args}\\)")
    return "|".join(dict.fromkeys(forms))


def func_forms(actions: Iterable[str]) -> dict[str, str]:
    """``{action: its FUNC form}`` for the actions whose FUNC form ``from_func`` reads back as the action
    itself (``pour a in b`` becomes ``POUR(a, b)``, which reads back as ``pour a into b``, and is left
    out; so is every action outside the grammar)."""
    out: dict[str, str] = {}
    for action in actions:
        func = to_func(action)
        if func is not None and from_func(func) == action:
            out[action] = func
    return out
