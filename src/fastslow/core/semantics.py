"""What a world's text means to the agent: the one interface every module asks (issue 50, the seam).

SwiftSage's arbitration and grounding (paper §3), AMM's salience gate and records (§3.1) and SRM's
stagnation detector and Critic (§3.2) read the world's actions and observations. They read them through
a ``WorldSemantics``: the episode's ``Trajectory.semantics``, or the one a component was built with
(``World.semantics``, composed in ``fastslow.build``). Each world implements it in its own package
(ScienceWorld: ``fastslow.env.scienceworld.semantics.SEMANTICS``; TextWorldExpress:
``fastslow.env.textworldexpress.semantics.SEMANTICS``), so a module never names a world's verbs, rooms
or messages.

The questions are the ones both worlds answer: how to compare two actions (``normalize``), an action's
verb and objects, which verbs move the agent, what a look says about where the agent is, what an
observation says about the action that produced it (``Feedback``), the scores of success and failure,
and whether an action is the world's irreversible commitment (ScienceWorld's focus; TextWorldExpress
has none). What only makes sense in one world (ScienceWorld's ambiguity prompts, its focus rules, its
thermometer readings) stays in that world's package and is asked there, by that world's own logic.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, runtime_checkable


class Feedback(StrEnum):
    """What one observation says about the action that produced it. A world classifies its texts into
    these (its ``classify_feedback`` documents the rules); a world without ambiguity prompts never
    answers ``ambiguous`` or ``cancelled``."""

    OK = "ok"
    INVALID = "invalid"
    """The world's parser knows no such action."""
    AMBIGUOUS = "ambiguous"
    """The action matched several objects; the world waits for an option number."""
    CANCELLED = "cancelled"
    """An ambiguity prompt answered with anything but an option number."""
    FAILURE = "failure"
    """Understood and refused."""
    NO_EFFECT = "no_effect"
    """Understood and allowed, with nothing to do."""


SWIFTSAGE_FAILURES = frozenset({Feedback.INVALID, Feedback.FAILURE})
"""SwiftSage's failure messages: escalation's failure streak, the buffer's failure limit, Sage's list."""
STAGNATION_FAILURES = frozenset({Feedback.INVALID, Feedback.AMBIGUOUS, Feedback.FAILURE})
"""Steps SRM's invalid_loop counts: input the world did not execute, or refused."""
AVOIDANCE_FEEDBACK = frozenset({Feedback.INVALID})
"""Feedback AMM stores as an invalid-action avoidance record (and leaves out of a record's context)."""
FUNCTION_WORDS = frozenset(
    ["a", "an", "the", "of", "to", "in", "on", "into", "from", "and", "with", "is", "it", "that"]
)
"""English function words that name no object, in any world. Swift's hashed features drop exactly
these: the packaged weights were trained with this set, so changing it changes every feature."""


@dataclass(frozen=True)
class Alternative:
    """One of a task's conditional alternatives: "If the melting point of tin is above 150.0 degrees
    celsius, <act on> the orange box." -> condition "the melting point of tin is above 150.0 degrees
    celsius", target "orange box", number 150.0."""

    condition: str
    target: str
    number: float | None


class WorldEvidence(Protocol):
    """What a world's texts say that bears on a task's conditional choice, for the evidence and
    object-state features of Swift (``swift.features``: the weights of what is read here are fitted,
    the reading is written). A world whose tasks have no such choices offers none
    (``WorldSemantics.evidence`` is None) and those features stay 0."""

    @property
    def states_of_matter(self) -> tuple[str, ...]:
        """Words naming a substance's state in an action ("liquid" of "use thermometer on liquid tin")."""
        ...

    def alternatives(self, task_description: str) -> tuple[Alternative, ...]:
        """The task's "If <condition>, <do something with> the <target>." alternatives, in order."""
        ...

    def reading(self, observation: str) -> float | None:
        """The number an instrument shows in an observation (a thermometer's temperature), if any."""
        ...

    def device_states(self, text: str) -> frozenset[str]:
        """The states of the devices a text describes ("on", "off")."""
        ...

    def described_contents(self, text: str) -> Mapping[str, tuple[str, ...]]:
        """Objects a text describes beyond their name, by name: the words describing each."""
        ...


@runtime_checkable
class WorldSemantics(Protocol):
    """A world's answers to what its text means (module docstring). Implementations are stateless and
    hashable (a module-level instance per world), so components may cache per (semantics, text)."""

    @property
    def name(self) -> str:
        """The world's ``EnvConfig.world`` value."""
        ...

    @property
    def success_score(self) -> int:
        """``StepResult.score`` of a completed task (100 in both worlds)."""
        ...

    @property
    def failure_score(self) -> int:
        """``StepResult.score`` once the task has failed (-100): the episode ends."""
        ...

    @property
    def default_failure_markers(self) -> tuple[str, ...]:
        """The refusal words ``env.failure_markers`` defaults to (ScienceWorld: SwiftSage's)."""
        ...

    @property
    def navigation_verbs(self) -> frozenset[str]:
        """Verbs (``verb_of``'s form) that move the agent to another place."""
        ...

    @property
    def argument_joiners(self) -> tuple[str, ...]:
        """The words (with their spaces) that join an action's two objects, in the order tried."""
        ...

    @property
    def evidence(self) -> WorldEvidence | None:
        """The world's readers of evidence for conditional choices (``WorldEvidence``), None if its
        tasks have none."""
        ...

    @property
    def commitment_verb(self) -> str | None:
        """The verb of the world's irreversible commitment (a wrong one fails the task), None if the
        world has none."""
        ...

    def normalize(self, action: str) -> str:
        """Comparison form of an action: lower case, no punctuation or articles, single spaces."""
        ...

    def verb_of(self, action: str) -> str:
        """The command word(s) of an action, in comparison form, a prefix of the world's own action
        strings ("pick up", "teleport to", "take", "move")."""
        ...

    def arguments(self, action: str) -> list[str]:
        """The object phrases of an action, as written: "put A in B" -> [A, B]; [] for none."""
        ...

    def go_to(self, place: str) -> tuple[str, ...]:
        """The actions that move the agent to a named place in one step (ScienceWorld's "teleport to
        kitchen"); () where places are reached by directions."""
        ...

    def rewrite(self, norm: str) -> str:
        """A normalized action with the world's paraphrase repairs applied (verbs, commands,
        prepositions, object spellings a model uses and the world does not: Gate-1's ``alias`` rule);
        ``norm`` itself when none applies."""
        ...

    def reroute(self, norm: str) -> str | None:
        """The navigation action the world offers in place of a normalized one (ScienceWorld: the
        teleport for a "go to"; Gate-1's ``teleport`` rule), None if none."""
        ...

    def strip_qualifiers(self, norm: str) -> str:
        """A normalized action without its objects' container or location qualifiers ("pick up water
        in metal pot" -> "pick up water"; Gate-1's ``qualifier`` rule)."""
        ...

    @property
    def critic_verbs(self) -> Mapping[str, int]:
        """The verbs (``verb_of``'s form) whose actions a rules Critic proposes to get unstuck, with
        their rank (0 most useful first); a verb not listed is never proposed (irreversible,
        destructive or navigation, which ``exploration_moves`` proposes)."""
        ...

    def exploration_moves(self, look: str, valid_actions: Sequence[str], visited: Iterable[str]) -> list[str]:
        """The valid actions that lead from here towards a place not visited yet (ScienceWorld: a
        teleport to an unvisited room; TextWorldExpress: a move or door towards an exit not seen)."""
        ...

    def location(self, look: str) -> str:
        """The room a look (or an observation holding one) says the agent is in; '' if none."""
        ...

    def places(self, valid_actions: Sequence[str], visited: Iterable[str] = ()) -> set[str]:
        """Names of places (rooms, directions) known from the valid actions and the visited rooms: an
        action about one of them is navigation, not an object's manipulation."""
        ...

    def classify_feedback(self, observation: str, markers: Iterable[str] | None = None) -> Feedback:
        """The ``Feedback`` class of an observation; ``markers`` (the run's ``env.failure_markers``;
        None: ``default_failure_markers``) decide what counts as a refusal where the world reads
        refusals by words."""
        ...
