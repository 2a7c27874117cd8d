"""SwiftSage's synonyms for Sage's grounding on ScienceWorld (``WorldSemantics.paraphrases``; the
grounder itself is ``fastslow.controller.grounding``)."""

from __future__ import annotations

import re

# Rewrites that make common paraphrases match ScienceWorld's wording (why: the valid set says
# "look at", "teleport to", "into"; models often write "examine", "go to", "in").
_SYNONYMS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^examine\b"), "look at"),
    (re.compile(r"^inspect\b"), "look at"),
    (re.compile(r"^take\b"), "pick up"),
    (re.compile(r"^grab\b"), "pick up"),
    (re.compile(r"^turn on\b"), "activate"),
    (re.compile(r"^turn off\b"), "deactivate"),
    (re.compile(r"^drop\b"), "put down"),
    (re.compile(r"\bthe\b\s*"), ""),
)


def paraphrases(action: str) -> tuple[str, ...]:
    """A cleaned action rewritten with the synonyms (always one text, maybe equal to ``action``), and
    with "go to X" also as "teleport to X"."""
    rewritten = action
    for pattern, repl in _SYNONYMS:
        rewritten = pattern.sub(repl, rewritten)
    out = [" ".join(rewritten.split())]
    if action.startswith("go to "):
        out.append("teleport to " + action[len("go to ") :])
    return tuple(out)
