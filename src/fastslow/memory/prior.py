"""AMM's action prior (paper §3.1, AMM on the fast pathway; docs/amm.md): what earlier episodes of the run
were rewarded and punished for, added to Swift's ranking of this episode's valid actions.

T1 shows Swift memories only when Swift has failed, and Swift's imitation weights know only the objects of
its training data. Where knowledge recurs across episodes but is not in the training data (the objects
and places only an evaluation fold has: TextWorldExpress's folds draw separate object pools), an earlier
episode of the same run that was rewarded for an action knows what Swift cannot. The prior turns that into
a ranking term, on every proposal:

- **What it knows.** The records of the current task written by *other* episodes of the run (the warm-up
  included; in a stream run only those at an earlier stream position are in the store the episode
  reads), read once when the episode's first proposal is made. An action (in the world's comparison form,
  ``WorldSemantics.normalize``) is *endorsed* by a record of a positive score change (success, near-miss)
  and *disputed* by one of a negative score change (avoidance: score loss, task failure); invalid-action
  records (no score change) do not count. Its vote is the number of episodes that endorsed it minus the
  number that disputed it. An action that lost score earlier in this very episode counts one more
  dispute; one without votes whose *rival* is endorsed (same verb and first object, another rest: "put
  cup in sink" when "put cup in trash can" was rewarded; ``WorldSemantics.verb_of``, ``arguments``)
  counts as disputed.
- **What it does.** A valid action with a positive vote gains ``bonus`` on Swift's score, unless this
  episode already executed it (a rewarded step done once is done); one Swift did not rank among its top
  candidates joins them at the lowest candidate's score plus ``bonus`` (its own score is at most that).
  A candidate with a negative vote loses ``penalty``. The proposal's order is then by the new scores (a
  stable sort: Swift's order among ties); its confidence stays Swift's.
- **What it is not.** Nothing world- or task-specific: the vote reads only records' actions, tasks and
  score changes, and the world's own comparison form. Its two weights are fitted on dev streams only
  (``data/prior.json``, with the runs that chose them: ``fitted``).

The prior is informational like the rest of AMM: it re-ranks Swift's proposal, which the controller then
arbitrates as usual. It is ``amm.retrieval.prior`` (off by default: the paper configurations' AMM is
unchanged); the fast-pathway configurations with AMM switch it on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from typing import Any

from fastslow.core.proposal import Proposal, RankedAction
from fastslow.core.semantics import WorldSemantics
from fastslow.memory.records import MemoryRecord

PRIOR_FILE = "prior.json"
"""The fitted weights and their provenance, in ``fastslow/memory/data/``."""


@dataclass(frozen=True)
class PriorWeights:
    """The prior's two weights (score units of Swift's ranking)."""

    bonus: float
    """Added to the score of a valid action earlier episodes were rewarded for."""
    penalty: float
    """Taken from the score of a candidate earlier episodes lost score with."""


@lru_cache(maxsize=1)
def fitted_file() -> dict[str, Any]:
    """The packaged ``data/prior.json``: ``bonus``, ``penalty`` and their ``provenance``."""
    ref = resources.files("fastslow.memory") / "data" / PRIOR_FILE
    with ref.open("r", encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    return data


def fitted(bonus: float | None = None, penalty: float | None = None) -> PriorWeights:
    """The weights to play: the given ones, the fitted one (``data/prior.json``) for each left None."""
    data = fitted_file()
    return PriorWeights(
        float(data["bonus"]) if bonus is None else bonus,
        float(data["penalty"]) if penalty is None else penalty,
    )


@dataclass
class ActionPrior:
    """The votes of other episodes' records of one task on actions in comparison form."""

    semantics: WorldSemantics
    endorsed: dict[str, set[str]] = field(default_factory=dict)
    """Action (comparison form) -> the episodes rewarded for it."""
    disputed: dict[str, set[str]] = field(default_factory=dict)
    """Action (comparison form) -> the episodes that lost score with it."""
    evidence: dict[str, list[str]] = field(default_factory=dict)
    """Action (comparison form) -> the ids of the records that voted on it (the ``memory_prior``
    event's provenance), in the store's order."""
    _rivals: dict[tuple[str, str], set[str]] | None = None

    @classmethod
    def from_records(
        cls, records: Iterable[MemoryRecord], task_name: str, own_episode: str, semantics: WorldSemantics
    ) -> ActionPrior:
        """The prior of ``task_name`` from ``records`` not written by ``own_episode``."""
        prior = cls(semantics)
        for r in records:
            if r.task_name != task_name or r.episode_id == own_episode or r.reward == 0:
                continue
            if r.reward > 0 and r.tag != "avoidance":
                votes = prior.endorsed
            elif r.reward < 0:
                votes = prior.disputed
            else:
                continue
            norm = semantics.normalize(r.action)
            votes.setdefault(norm, set()).add(r.episode_id)
            prior.evidence.setdefault(norm, []).append(r.id)
        return prior

    def __bool__(self) -> bool:
        return bool(self.endorsed or self.disputed)

    def vote(self, action: str) -> int:
        """Episodes rewarded for ``action`` minus episodes that lost score with it."""
        norm = self.semantics.normalize(action)
        return len(self.endorsed.get(norm, ())) - len(self.disputed.get(norm, ()))

    def _key(self, action: str) -> tuple[str, str] | None:
        args = self.semantics.arguments(action)
        if len(args) < 2:
            return None
        return self.semantics.verb_of(action), self.semantics.normalize(args[0])

    def rival(self, action: str) -> bool:
        """An endorsed action has the same verb and first object as ``action`` but differs in the rest
        ("put cup in sink" when "put cup in trash can" was rewarded)."""
        return bool(self.rivals(action))

    def rivals(self, action: str) -> list[str]:
        """The endorsed actions (comparison form, sorted) that make ``action`` a rival (``rival``)."""
        key = self._key(action)
        if key is None:
            return []
        if self._rivals is None:
            self._rivals = {}
            for norm, eps in self.endorsed.items():
                k = self._key(norm)
                if k is not None and len(eps) > len(self.disputed.get(norm, ())):
                    self._rivals.setdefault(k, set()).add(norm)
        others = self._rivals.get(key, set())
        return [] if self.semantics.normalize(action) in others else sorted(others)

    def endorsers(self, action: str) -> list[str]:
        """The episodes rewarded for ``action``, sorted."""
        return sorted(self.endorsed.get(self.semantics.normalize(action), set()))

    def disputers(self, action: str) -> list[str]:
        """The episodes that lost score with ``action``, sorted."""
        return sorted(self.disputed.get(self.semantics.normalize(action), set()))

    def records(self, action: str) -> list[str]:
        """The ids of the records that voted on ``action``."""
        return list(self.evidence.get(self.semantics.normalize(action), ()))

    def sources(self, action: str) -> list[str]:
        """The episodes whose records voted on ``action`` (endorsing first), sorted."""
        norm = self.semantics.normalize(action)
        return sorted(self.endorsed.get(norm, set())) + sorted(self.disputed.get(norm, set()))

    def revise(
        self,
        proposal: Proposal,
        valid_actions: Sequence[str],
        executed: Iterable[tuple[str, int]],
        weights: PriorWeights,
    ) -> Proposal:
        """``proposal`` re-ranked by the votes (module docstring, "What it does"); ``executed``: this
        episode's steps so far (action, reward): their actions gain no bonus, and one that lost score
        here counts as one more dispute."""
        done: set[str] = set()
        lost: set[str] = set()
        for action, reward in executed:
            norm = self.semantics.normalize(action)
            done.add(norm)
            if reward < 0:
                lost.add(norm)
        if not self and not lost:
            return proposal
        ranked = {c.action for c in proposal.candidates}
        floor = min((c.score for c in proposal.candidates), default=0.0)

        def gain(action: str) -> float:
            norm = self.semantics.normalize(action)
            v = self.vote(action) - (norm in lost)
            if v == 0 and self.rival(action):
                v = -1
            if v > 0 and norm not in done:
                return weights.bonus
            return -weights.penalty if v < 0 else 0.0

        revised = [replace(c, score=c.score + gain(c.action)) for c in proposal.candidates]
        if weights.bonus > 0:
            for action in valid_actions:
                if action not in ranked and gain(action) > 0:
                    ranked.add(action)
                    revised.append(RankedAction(action, floor + weights.bonus))
        revised.sort(key=lambda c: -c.score)
        return Proposal(tuple(revised), proposal.confidence)
