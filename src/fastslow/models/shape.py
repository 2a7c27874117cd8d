"""Reply shapes: a reply made of a few fixed lines and then a numbered list, as a constraint.

Sage's and the Critic's replies are read by line-oriented parsers (``controller.parsing``,
``reflection.critic.llm.parse_critic_reply``). A ``ListShape`` states, next to such a parser, the reply
it reads: header lines, then between ``least`` and ``most`` item lines, item ``n`` written
``label(n) + item + after``. The same shape gives

- ``pattern()``: the reply as a regular expression (``re.fullmatch``; tests compare it with the parser),
- ``constraint()``: a ``Grammar`` the model's answer is generated in.

An item is either the shape's own ``item`` pattern (``format``: any item the parser reads) or one of
given strings (``valid``: e.g. the valid actions of the state); a choice among thousands of strings is
written as a word trie (``choice_rules``), which llama.cpp's grammar sampler runs about as fast as an
unconstrained answer (its alternatives share their prefixes instead of being tried one by one).

The constraint is a ``Grammar``, not a ``Regex``: a ``Grammar`` answer is not checked again when it comes
back (``models.constraint.violation``), so an answer that ``max_tokens`` cuts short mid-line reaches the
parser, which reads its complete lines, as it reads an unconstrained answer, instead of failing the call.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from fastslow.models.constraint import ConstraintError, Grammar, Regex, gbnf_literal, to_gbnf

ConstrainMode = Literal["none", "format", "valid"]
"""How a role's model calls are constrained (``controller.sage.constrain``, ``critic.constrain``).
none: unconstrained, exactly the calls without the switch. format: each reply in the shape its parser
reads. valid: the same shape, with every action line one of the state's valid actions as the parser
reads it."""

ITEM_RULE = "item"
"""The GBNF rule an item line's content is: the shape's pattern, or the choice among given strings."""
_SPLIT = re.compile(r"[^ (,]*[ (,]|[^ (,]+")
"""A string's trie keys: pieces that end after a space, an opening parenthesis or a comma."""


def regex_expression(pattern: str) -> str:
    """``pattern`` (the ``Regex`` subset) as a GBNF expression, to be used inside a rule."""
    gbnf = to_gbnf(Regex(pattern))
    head = "root ::= "
    if not gbnf.startswith(head):  # to_gbnf writes a Regex as one root rule
        raise AssertionError(f"unexpected GBNF for a regex: {gbnf[:40]!r}")
    return gbnf[len(head) :]


def choice_rules(name: str, options: Sequence[str]) -> list[str]:
    """GBNF rules, the first named ``name``, that match exactly one of ``options`` (empty strings and
    duplicates ignored; at least one non-empty option). The options are factored into a trie of their
    pieces (``_SPLIT``), one rule per inner node (``name-1``, ``name-2``, ...)."""
    keys = sorted({tuple(_SPLIT.findall(o)) for o in options if o})
    if not keys:
        raise ConstraintError("choice_rules needs at least one non-empty option")
    bodies: list[str] = [""]

    def node(group: list[tuple[str, ...]]) -> str:
        alternatives: list[str] = []
        if group and not group[0]:  # an option ends here (sorted: the empty rest comes first)
            alternatives.append('""')
            group = group[1:]
        start = 0
        while start < len(group):
            head = group[start][0]
            end = start
            while end < len(group) and group[end][0] == head:
                end += 1
            rests = [key[1:] for key in group[start:end]]
            while all(rests) and len({rest[0] for rest in rests}) == 1:  # one way on: one literal
                head += rests[0][0]
                rests = [rest[1:] for rest in rests]
            if rests == [()]:
                alternatives.append(gbnf_literal(head))
            else:
                index = len(bodies)
                bodies.append("")  # reserve the rule's number before its children take theirs
                bodies[index] = node(rests)
                alternatives.append(f"{gbnf_literal(head)} {name}-{index}")
            start = end
        return " | ".join(alternatives)

    bodies[0] = node(keys)
    return [f"{name} ::= {bodies[0]}", *(f"{name}-{i} ::= {body}" for i, body in enumerate(bodies) if i)]


@dataclass(frozen=True)
class ListShape:
    """A reply of ``header`` lines, then ``least`` to ``most`` item lines, separated by newlines.

    Item ``n`` (from 1) is ``label.format(n=n)`` (a literal), the item (the ``item`` pattern, or one of
    the options given to ``pattern`` / ``constraint``), then text matching ``after``. ``header`` and
    ``after`` are patterns of the ``Regex`` subset (``models.constraint``)."""

    item: str
    """Pattern of one item: what the parser reads as one action (or one answer)."""
    most: int
    """Most item lines (the parser's limit, or the prompt's)."""
    label: str = "{n}. "
    """Literal text before item ``n``."""
    after: str = ""
    """Pattern of the rest of an item's line (e.g. an expected observation); empty: nothing."""
    header: tuple[str, ...] = ()
    """Patterns of the whole lines before the items, in order."""
    least: int = 1
    """Fewest item lines."""

    def __post_init__(self) -> None:
        if not 0 <= self.least <= self.most or self.most < 1:
            raise ConstraintError(
                f"a ListShape needs 0 <= least <= most and most >= 1 (got {self.least}, {self.most})"
            )

    def pattern(self, options: Sequence[str] | None = None) -> str:
        """The whole reply as a regular expression (``re.fullmatch``)."""
        item = self.item if options is None else "|".join(re.escape(o) for o in options if o)
        rest = f"(?:{self.after})" if self.after else ""
        header = [f"(?:{h})" for h in self.header]
        items = ""
        for n in range(self.most, 0, -1):
            newline = "\\n" if n > 1 or header else ""
            line = f"{newline}{re.escape(self.label.format(n=n))}(?:{item}){rest}{items}"
            items = line if n <= self.least else f"(?:{line})?"
        return "\\n".join(header) + items

    def constraint(self, options: Sequence[str] | None = None) -> Grammar:
        """The reply as a GBNF grammar: items of the ``item`` pattern (None), or each one of ``options``
        (at least one non-empty string)."""
        if options is None:
            rules = [f"{ITEM_RULE} ::= {regex_expression(self.item)}"]
        else:
            rules = choice_rules(ITEM_RULE, options)
        rest: list[str] = []
        if self.after:
            rules.append(f"after ::= {regex_expression(self.after)}")
            rest = ["after"]
        header = [f"({regex_expression(h)})" for h in self.header]
        items = ""
        for n in range(self.most, 0, -1):
            newline = ['"\\n"'] if n > 1 or header else []
            line = " ".join(
                [
                    *newline,
                    gbnf_literal(self.label.format(n=n)),
                    ITEM_RULE,
                    *rest,
                    *([items] if items else []),
                ]
            )
            items = line if n <= self.least else f"({line})?"
        root = " ".join([' "\\n" '.join(header), items] if header else [items])
        return Grammar("\n".join([f"root ::= {root}", *rules]))
