"""Grounding free-text actions to a state's valid-action set (paper §3, SwiftSage's action grounding).

Sage writes actions in its own words; only exact valid-action strings reach the environment. An action
is first cleaned (case, quotes, trailing punctuation: ``fastslow.core.text.clean``, which keeps every
word) and rewritten with the world's synonyms (``WorldSemantics.paraphrases``), then matched exactly,
then by rapidfuzz similarity with a score cutoff, so a near miss ("pick up the thermometer") maps to the
valid string and nonsense is dropped instead of wasting an env step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rapidfuzz import fuzz, process, utils

from fastslow.core.semantics import WorldSemantics
from fastslow.core.text import clean


@dataclass(frozen=True)
class Grounded:
    action: str
    """The valid action chosen."""
    score: float
    """rapidfuzz similarity 0-100 (100 for an exact or normalized match)."""
    exact: bool
    """True when the text matched a valid action exactly after normalization."""


class Grounder:
    """Maps text to the closest valid action; one instance per valid-action set (cheap to build)."""

    def __init__(self, valid_actions: Sequence[str], semantics: WorldSemantics) -> None:
        self.valid = tuple(valid_actions)
        self.semantics = semantics
        self._valid_set = frozenset(self.valid)
        self._norm: dict[str, str] | None = None

    @property
    def _by_norm(self) -> dict[str, str]:
        # Built on the first text that is not a valid action as written: most timesteps never need it.
        if self._norm is None:
            self._norm = {}
            for action in self.valid:
                self._norm.setdefault(clean(action), action)
        return self._norm

    def _variants(self, action: str) -> list[str]:
        base = clean(action)
        return [base, *self.semantics.paraphrases(base)]

    def ground(self, action: str, cutoff: float) -> Grounded | None:
        """The valid action ``action`` means, or None when nothing scores at least ``cutoff``."""
        if not action.strip() or not self.valid:
            return None
        if action in self._valid_set:
            return Grounded(action, 100.0, True)
        variants = self._variants(action)
        for variant in variants:
            if variant in self._by_norm:
                return Grounded(self._by_norm[variant], 100.0, True)
        best: Grounded | None = None
        for variant in variants:
            # token_sort_ratio tolerates word order ("put down X" vs "X put down") but, unlike WRatio,
            # does not give a short valid action a high score just for being contained in a long text.
            match = process.extractOne(
                variant,
                self.valid,
                scorer=fuzz.token_sort_ratio,
                processor=utils.default_process,
                score_cutoff=cutoff,
            )
            if match is not None and (best is None or match[1] > best.score):
                best = Grounded(match[0], float(match[1]), False)
        return best
