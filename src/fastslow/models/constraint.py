"""Constrained decoding: what a model's answer must look like, in a form every backend speaks.

A ``Constraint`` passed to ``ChatModel.complete`` restricts the answer while it is generated:

- ``Choice(options)``: the answer is exactly one of ``options``;
- ``Regex(pattern)``: the answer matches ``pattern`` as a whole (``re.fullmatch``), in the subset below;
- ``Grammar(gbnf)``: the answer is a sentence of a llama.cpp GBNF grammar whose start rule is ``root``.

``to_gbnf`` turns any of them into GBNF, which the embedded backend (llama.cpp) and llama.cpp's server run;
the openai backend sends vLLM's and OpenAI's own forms (``openai_backend.constraint_request``).

The regular-expression subset is the one that converts to GBNF exactly, so a ``Regex`` means the same on
every backend: literal characters and escaped metacharacters; ``\\n \\t \\r \\f \\v \\xHH \\uHHHH
\\UHHHHHHHH``; the classes ``[...]``, ``[^...]`` (ranges, and ``\\d \\w \\s`` inside), ``.`` (any character
but a newline), ``\\d \\D \\w \\W \\s \\S`` (ASCII: ``\\w`` is ``[a-zA-Z0-9_]``); groups ``(...)`` and
``(?:...)``; alternation ``|``; the quantifiers ``? * + {m} {m,} {,n} {m,n}``; ``^`` at the very start and
``$`` at the very end (ignored: the whole answer matches anyway). Anything else (lazy or possessive
quantifiers, lookaround, backreferences, named groups, inline flags, ``\\b``, anchors inside the pattern)
is a ``ConstraintError`` naming it, when the ``Regex`` is built.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar, Literal

from fastslow.errors import UsageError

ConstraintKind = Literal["choice", "regex", "grammar"]
"""What a ``ModelCall`` event records of a constrained call (``ModelCall.constraint``)."""


class ConstraintError(UsageError, ValueError):
    """A constraint that cannot be used: an unsupported regular-expression construct, a grammar without a
    ``root`` rule or that llama.cpp cannot parse, a form the configured server does not have. A usage
    error (one line, exit code 2 at the CLI), never a ``ModelError`` to fall back on: it would fail the
    same way on every call. A ``ValueError`` too, so a config validator can raise it."""


@dataclass(frozen=True)
class Choice:
    """The answer is exactly one of ``options`` (a list is accepted and stored as a tuple)."""

    options: tuple[str, ...]
    kind: ClassVar[ConstraintKind] = "choice"

    def __post_init__(self) -> None:
        options = tuple(self.options)
        if not options:
            raise ConstraintError("a Choice needs at least one option")
        if not all(isinstance(o, str) for o in options):
            raise ConstraintError(f"a Choice's options must be strings, got {options!r}")
        object.__setattr__(self, "options", options)


@dataclass(frozen=True)
class Regex:
    """The whole answer matches ``pattern`` (the subset of the module docstring; checked when built)."""

    pattern: str
    kind: ClassVar[ConstraintKind] = "regex"

    def __post_init__(self) -> None:
        try:
            re.compile(self.pattern)
        except re.error as exc:
            raise ConstraintError(f"not a regular expression: {self.pattern!r} ({exc})") from exc
        _RegexToGbnf(self.pattern).convert()  # raises ConstraintError on an unsupported construct

    @property
    def body(self) -> str:
        """The pattern without a leading ``^`` and a trailing ``$`` (servers that match the whole answer
        anyway, like vLLM's, are sent this)."""
        start, end = _anchor_span(self.pattern)
        return self.pattern[start:end]


@dataclass(frozen=True)
class Grammar:
    """The answer is a sentence of ``gbnf``, a llama.cpp GBNF grammar with a ``root`` rule. Its syntax is
    checked by llama.cpp's own parser before it is used (``local_backend.check_gbnf``)."""

    gbnf: str
    kind: ClassVar[ConstraintKind] = "grammar"

    def __post_init__(self) -> None:
        if not re.search(r"^\s*root\s*::=", self.gbnf, re.MULTILINE):
            raise ConstraintError(f"a GBNF grammar needs a root rule (root ::= ...): {_short(self.gbnf)}")


Constraint = Choice | Regex | Grammar


def to_gbnf(constraint: Constraint) -> str:
    """``constraint`` as a llama.cpp GBNF grammar with start rule ``root``: a ``Choice`` is an alternation
    of string literals, a ``Regex`` is converted (module docstring), a ``Grammar`` is returned as given."""
    if isinstance(constraint, Choice):
        return "root ::= " + " | ".join(gbnf_literal(o) for o in constraint.options)
    if isinstance(constraint, Regex):
        return "root ::= " + _RegexToGbnf(constraint.pattern).convert()
    return constraint.gbnf


def violation(constraint: Constraint, text: str) -> str | None:
    """Why ``text`` does not satisfy ``constraint`` (one line), or None when it does. A ``Grammar`` is not
    checked here (only llama.cpp can): None."""
    if isinstance(constraint, Choice):
        if text in constraint.options:
            return None
        return f"answered {_short(text)}, not {describe(constraint)}"
    if isinstance(constraint, Regex):
        if re.fullmatch(constraint.pattern, text):
            return None
        return f"answered {_short(text)}, which does not match {describe(constraint)}"
    return None


def describe(constraint: Constraint) -> str:
    """``constraint`` in a few words, for one-line messages."""
    if isinstance(constraint, Choice):
        return "one of " + _short(list(constraint.options))
    if isinstance(constraint, Regex):
        return "the pattern " + _short(constraint.pattern)
    return "the grammar " + _short(constraint.gbnf)


SHORT_CHARS = 120
"""How much of a text, pattern or grammar a one-line message quotes."""


def _short(value: object) -> str:
    text = repr(value)  # repr keeps it on one line
    return text if len(text) <= SHORT_CHARS else text[: SHORT_CHARS - 3] + "..."


# --- GBNF text -------------------------------------------------------------------------------------------

_LITERAL_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_CLASS_SAFE = set(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _.,;:!?'\"/@#%&*+=<>|~`(){}$"
)
"""ASCII characters written as themselves inside a GBNF class; the others (``\\ ] [ - ^`` and controls)
are written as hex escapes, which llama.cpp's parser reads everywhere."""


def _hex_escape(ch: str) -> str:
    cp = ord(ch)
    if cp < 0x100:
        return f"\\x{cp:02X}"
    return f"\\u{cp:04X}" if cp < 0x10000 else f"\\U{cp:08X}"


def gbnf_literal(text: str) -> str:
    """``text`` as a GBNF string literal: quotes, backslashes and control characters escaped; other
    printable characters (non-ASCII included) as themselves, UTF-8 in the grammar."""
    out = []
    for ch in text:
        if ch in _LITERAL_ESCAPES:
            out.append(_LITERAL_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(_hex_escape(ch))
    return '"' + "".join(out) + '"'


def _class_char(ch: str) -> str:
    if ch in _CLASS_SAFE or (ord(ch) >= 0x80 and ch.isprintable()):
        return ch
    return _hex_escape(ch)


# --- regular expressions to GBNF -------------------------------------------------------------------------

_DIGIT = "0-9"
_WORD = "a-zA-Z0-9_"
_SPACE = " \\x09\\x0A\\x0D\\x0C\\x0B"
_SHORTHANDS = {"d": _DIGIT, "w": _WORD, "s": _SPACE}
"""``\\d \\w \\s`` as the inside of a GBNF class (ASCII, as Python's ``re.ASCII``)."""
_CONTROL_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}
_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}
_QUANTIFIER = re.compile(r"\{(\d*)(?:(,)(\d*))?\}")
_UNSUPPORTED_ESCAPES = {
    "b": "the word boundary \\b",
    "B": "the non-boundary \\B",
    "A": "the anchor \\A",
    "Z": "the anchor \\Z",
    "z": "the anchor \\z",
    "G": "the anchor \\G",
}


def _anchor_span(pattern: str) -> tuple[int, int]:
    """Start and end of ``pattern`` without a leading ``^`` and an unescaped trailing ``$``."""
    start = 1 if pattern.startswith("^") else 0
    end = len(pattern)
    if end > start and pattern.endswith("$"):
        backslashes = len(pattern[start : end - 1]) - len(pattern[start : end - 1].rstrip("\\"))
        if backslashes % 2 == 0:
            end -= 1
    return start, end


class _RegexToGbnf:
    """A recursive-descent reader of the supported subset that writes the GBNF expression as it goes."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        start, self.end = _anchor_span(pattern)
        self.i = start

    def unsupported(self, what: str) -> ConstraintError:
        return ConstraintError(
            f"regular expression {_short(self.pattern)}: {what} at position {self.i} is not supported in "
            "constraints (supported: literals, [...], ., \\d \\w \\s, groups, |, ? * + {m,n}; "
            "docs/models.md)"
        )

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.pattern[j] if j < self.end else ""

    def convert(self) -> str:
        expr = self.alternation()
        if self.i < self.end:  # only an unmatched ")" stops alternation() early; re.compile refuses it
            raise self.unsupported(f"{self.peek()!r}")
        return expr

    def alternation(self) -> str:
        """Branches joined by `` | ``: a caller wraps them in parentheses where they must be one term."""
        branches = [self.sequence()]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.sequence())
        return " | ".join(branches)

    def sequence(self) -> str:
        items: list[tuple[str, str | None]] = []  # (GBNF term, the literal character it is, if one)
        while self.i < self.end and self.peek() not in "|)":
            term, char = self.atom()
            quantifier = self.quantifier()
            items.append((term + quantifier, None) if quantifier else (term, char))
        out: list[str] = []
        run: list[str] = []  # consecutive literal characters, written as one string literal
        for term, char in items:
            if char is not None:
                run.append(char)
                continue
            if run:
                out.append(gbnf_literal("".join(run)))
                run = []
            out.append(term)
        if run:
            out.append(gbnf_literal("".join(run)))
        return " ".join(out) if out else '""'

    def atom(self) -> tuple[str, str | None]:
        c = self.peek()
        if c == "(":
            if self.pattern.startswith("(?:", self.i):
                self.i += 3
            elif self.peek(1) == "?":
                raise self.unsupported(f"the group construct {self.pattern[self.i : self.i + 3]!r}")
            else:
                self.i += 1
            inner = self.alternation()
            if self.peek() != ")":
                raise self.unsupported("an unclosed group")
            self.i += 1
            return "(" + inner + ")", None
        if c == "[":
            return self.char_class(), None
        if c == ".":
            self.i += 1
            return "[^\\x0A]", None
        if c in "^$":
            raise self.unsupported(f"the anchor {c!r} inside the pattern (only ^ first and $ last)")
        if c in "*+?" or (
            c == "{" and _QUANTIFIER.match(self.pattern, self.i, self.end) and self.peek(1) != "}"
        ):
            raise self.unsupported(f"a quantifier {c!r} with nothing to repeat")
        if c == "\\":
            return self.escape()
        self.i += 1
        return gbnf_literal(c), c

    def escape(self) -> tuple[str, str | None]:
        e = self.peek(1)
        if e in _SHORTHANDS:
            self.i += 2
            return "[" + _SHORTHANDS[e] + "]", None
        if e.lower() in _SHORTHANDS:
            self.i += 2
            return "[^" + _SHORTHANDS[e.lower()] + "]", None
        char = self.escaped_char(in_class=False)
        return gbnf_literal(char), char

    def escaped_char(self, *, in_class: bool) -> str:
        """The character a ``\\`` escape at ``self.i`` stands for (not a shorthand class); moves past it."""
        e = self.peek(1)
        if e in _HEX_DIGITS:
            digits = self.pattern[self.i + 2 : self.i + 2 + _HEX_DIGITS[e]]
            self.i += 2 + len(digits)
            return chr(int(digits, 16))
        if e in _CONTROL_ESCAPES:
            self.i += 2
            return _CONTROL_ESCAPES[e]
        if in_class and e == "b":  # inside a class \b is the backspace character
            self.i += 2
            return "\b"
        if e in _UNSUPPORTED_ESCAPES:
            raise self.unsupported(_UNSUPPORTED_ESCAPES[e])
        if e.isdigit():
            raise self.unsupported(f"the backreference or octal escape \\{e}")
        if e.isascii() and e.isalpha():
            raise self.unsupported(f"the escape \\{e}")
        self.i += 2
        return e

    def char_class(self) -> str:
        self.i += 1  # "["
        negate = self.peek() == "^"
        if negate:
            self.i += 1
        parts: list[str] = []
        first = True
        while True:
            c = self.peek()
            if c == "":
                raise self.unsupported("an unclosed class")
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            if c == "\\" and self.peek(1) in _SHORTHANDS:
                parts.append(_SHORTHANDS[self.peek(1)])
                self.i += 2
                continue
            if c == "\\" and self.peek(1).lower() in _SHORTHANDS:
                raise self.unsupported(f"the negated class \\{self.peek(1)} inside [...]")
            low = self.class_char()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.i += 1
                high = self.class_char()
                parts.append(_class_char(low) + "-" + _class_char(high))
            else:
                parts.append(_class_char(low))
        return "[" + ("^" if negate else "") + "".join(parts) + "]"

    def class_char(self) -> str:
        if self.peek() == "\\":
            return self.escaped_char(in_class=True)
        c = self.peek()
        self.i += 1
        return c

    def quantifier(self) -> str:
        c = self.peek()
        if c in ("?", "*", "+"):
            self.i += 1
            out = c
        elif c == "{" and self.peek(1) != "}" and (m := _QUANTIFIER.match(self.pattern, self.i, self.end)):
            self.i = m.end()
            low = int(m.group(1) or 0)
            out = f"{{{low},{m.group(3) or ''}}}" if m.group(2) else f"{{{low}}}"
        else:
            return ""
        if self.peek() in ("?", "+"):
            raise self.unsupported(f"the {'lazy' if self.peek() == '?' else 'possessive'} quantifier")
        return out
