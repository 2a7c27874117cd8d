"""The one action resolver: every candidate of a timestep goes through ``Resolver.resolve`` (paper §3's
action grounding, and §3.2's Gate-1 when SRM is on).

A timestep produces candidates in order - the answer to an ambiguous request, the buffer's head, Swift's
ranked candidates, Sage's plan on escalation, the fallback - and the first one that resolves runs. For
each, ``resolve``:

1. grounds the text onto the valid-action set with the arbitration profile's ``Grounding``
   (``Arbiter.grounding``): SwiftSage's (exact, then normalized and rewritten forms, then rapidfuzz
   similarity at ``controller.ground_cutoff``), or one the profile brings;
2. hands the candidate - the text *as its source proposed it*, with the grounding beside it - to the
   ``before_action`` hooks in order (SRM's Gate-1 judges the proposed text with its own repairs; Swift's
   safety policy refuses an answer that would complete a forbidden focus); a hook may accept, replace or
   refuse it.

In a world's ambiguity prompt (ScienceWorld's "Ambiguous request": ``WorldSemantics.ambiguity_options``)
the valid actions are the option numbers; a number is then resolved as the action it completes
(``Candidate.answers``: answering ``0`` to an ambiguous focus is a focus on the object listed as 0), so no
module can be bypassed by a bare digit.

The index of the valid set is built once per state (``IndexedView``), so resolving many candidates costs one
pass over the valid actions, not one per candidate.
"""

from __future__ import annotations

from functools import cached_property
from typing import Protocol

from fastslow.controller.grounding import Grounder
from fastslow.core.hooks import Candidate, StepView
from fastslow.core.semantics import WorldSemantics
from fastslow.core.step import StepResult
from fastslow.core.trajectory import Trajectory
from fastslow.vocab import StepSource

FALLBACK_ACTION = "look around"
"""Executed when no candidate resolves and nothing else may run: a harmless observation (in an ambiguous
state it is not an option number, so ScienceWorld cancels the request instead of completing it)."""


class ActionCheck(Protocol):
    """A ``before_action`` hook: returns the candidate to go on with (``action`` None = refused), and
    hears of every refusal (``on_refused``), its own and the other hooks'."""

    def before_action(self, candidate: Candidate, view: StepView) -> Candidate: ...

    def on_refused(self, candidate: Candidate, view: StepView) -> None: ...


class IndexedView:
    """The state a candidate is resolved in (``core.hooks.StepView``) with its valid-action index and
    ambiguity options, built once and shared by every resolve."""

    def __init__(self, result: StepResult, traj: Trajectory) -> None:
        self.result = result
        self.traj = traj
        self.grounder = _grounder(result.valid_actions, traj.semantics)
        self.options = traj.semantics.ambiguity_options(result.observation)
        """An ambiguity prompt's options as actions, by the number that selects them ({} otherwise)."""

    @property
    def ambiguous(self) -> bool:
        return bool(self.options)

    @cached_property
    def valid_set(self) -> frozenset[str]:
        return frozenset(self.result.valid_actions)


_GROUNDERS: dict[int, tuple[tuple[str, ...], Grounder]] = {}
"""The last grounders by valid-set identity: a state's tuple is built once by the adapter and reused."""


def _grounder(valid: tuple[str, ...], semantics: WorldSemantics) -> Grounder:
    hit = _GROUNDERS.get(id(valid))
    if hit is not None and hit[0] is valid and hit[1].semantics is semantics:
        return hit[1]
    grounder = Grounder(valid, semantics)
    if len(_GROUNDERS) > 8:  # a handful of live states at most (one per agent in this process)
        _GROUNDERS.clear()
    _GROUNDERS[id(valid)] = (valid, grounder)
    return grounder


class Grounding(Protocol):
    """How candidate text is mapped onto the state's valid actions (one per arbitration profile, chosen
    when the episode's arbiter is made): the valid action ``text`` means in ``view``, or None."""

    def __call__(self, text: str, view: IndexedView, cutoff: float) -> str | None: ...


def fuzzy_grounding(text: str, view: IndexedView, cutoff: float) -> str | None:
    """SwiftSage's grounding: exact, normalized and rewritten forms, then rapidfuzz at ``cutoff``."""
    hit = view.grounder.ground(text, cutoff)
    return hit.action if hit else None


GROUNDINGS: dict[str, Grounding] = {"fuzzy": fuzzy_grounding}
"""The groundings by name (``Arbiter.grounding``: a name here, or a profile's own ``Grounding``)."""


class Resolver:
    """Grounding profile + the ``before_action`` hooks, behind one ``resolve`` call."""

    def __init__(
        self,
        cutoff: float,
        checks: list[ActionCheck],
        *,
        fallback_when_unresolved: bool,
        grounding: str | Grounding = "fuzzy",
    ) -> None:
        self.cutoff = cutoff
        self.checks = checks
        self.grounding: Grounding = GROUNDINGS[grounding] if isinstance(grounding, str) else grounding
        """The profile's grounding (``GROUNDINGS``: fuzzy, SwiftSage's; or a profile's own)."""
        self.fallback_when_unresolved = fallback_when_unresolved
        """True (SRM on): never send a text no check admitted; False: SwiftSage sends Swift's top text
        as written and lets ScienceWorld answer "No known action"."""

    def view(self, result: StepResult, traj: Trajectory) -> IndexedView:
        return IndexedView(result, traj)

    def ground(self, text: str, view: IndexedView) -> str | None:
        """The grounding alone (no hooks): the valid action ``text`` means, or None."""
        return self.grounding(text, view, self.cutoff)

    def candidate(self, text: str, source: StepSource, view: IndexedView) -> Candidate:
        """``text`` grounded and through the ``before_action`` hooks (``action`` None: it cannot run)."""
        candidate = Candidate(text, source, self.ground(text, view), view.options.get(text.strip()))
        for check in self.checks:
            if candidate.refused_by is not None:
                break
            candidate = check.before_action(candidate, view)
        if candidate.refused_by is not None:
            for check in self.checks:
                check.on_refused(candidate, view)
        return candidate

    def resolve(self, text: str, source: StepSource, view: IndexedView) -> str | None:
        """The action ``text`` becomes when executed now, or None when it cannot or may not run."""
        return self.candidate(text, source, view).action

    def first(self, texts: list[str], source: StepSource, view: IndexedView) -> str | None:
        """The first of ``texts`` (rank order) that resolves."""
        hit = self.pick(texts, source, view)
        return hit[1] if hit is not None else None

    def pick(self, texts: list[str], source: StepSource, view: IndexedView) -> tuple[int, str] | None:
        """The index in ``texts`` of the first that resolves (rank order), and the action it becomes."""
        for i, text in enumerate(texts):
            action = self.resolve(text, source, view)
            if action is not None:
                return i, action
        return None

    def unresolved(self, top: str | None, view: IndexedView) -> str:
        """What runs when no candidate resolved and Sage did not act."""
        if not self.fallback_when_unresolved:
            return top or FALLBACK_ACTION
        if view.ambiguous:
            return FALLBACK_ACTION  # cancels the request; an option number would complete a refused action
        # Never send a refused action: a harmless look keeps the episode going.
        valid = view.result.valid_actions
        return FALLBACK_ACTION if FALLBACK_ACTION in valid or not valid else valid[0]
