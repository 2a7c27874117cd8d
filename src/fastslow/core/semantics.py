"""What a world's text means to the agent: the one interface every module asks (the seam
between the worlds and the agent).

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
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from fastslow.core.authors import AuthorsProfile


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


@dataclass(frozen=True)
class PromptFacts:
    """What the LLM prompts (Sage's, the Critic's) say about the world: the words are the world's, the
    prompts' shape is the agent's (``prompts/*.j2``)."""

    agent: str
    """What the agent does, for the system message ("does science experiments in ScienceWorld, a text
    world")."""
    critic_world: str
    """The world as the Critic is told it ("ScienceWorld, a text-based science simulator")."""
    action_forms: tuple[str, ...]
    """The world's action forms, a few per line (OBJ an object, LOC a place)."""
    places_word: str
    """What LOC stands for in ``action_forms`` ("a room"; "a direction")."""
    rules: tuple[str, ...]
    """Lines of rules the model must know (the commitment's consequence, object naming)."""
    example_actions: tuple[tuple[str, str], ...]
    """Two (action, expected observation) pairs for a reply format reminder."""
    navigation_forms: tuple[str, ...]
    """The first words of the world's navigation actions, as the authors' Critic counts and names them
    (``("go to", "teleport to", "open door to")``)."""
    first_words: frozenset[str]
    """First words of the world's actions and of common paraphrases: an unnumbered one-line Sage reply
    is read as an action only when it starts with one (``controller.parsing``)."""
    func_joiners: tuple[tuple[str, str], ...]
    """(name, word): a SwiftSage-style ``NAME(A, B)`` call is read as "name A word B" ("move A to B")."""


Committed = TypeVar("Committed")
"""A world's record of an object its commitment landed on (``CommitmentRules``)."""


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

    def answer_boxes(
        self, task_description: str, history: Sequence[tuple[str, str, int]]
    ) -> AnswerBoxes | None:
        """A measure-and-sort task's two answer boxes and the one the readings of ``history`` ((action,
        observation, reward) turns, oldest first) prove; None when the task has no such boxes (Swift's
        answer-box features, ``swift.answer_box``: hand-written task logic)."""
        ...


@dataclass(frozen=True)
class AnswerBoxes:
    """The answer boxes of a measure-and-sort task ("if the melting point is above 50 degrees celsius,
    <act on> the blue box; if below, the orange box") and what the readings so far prove."""

    above: str
    """The box for a measurement above the threshold ("blue box")."""
    below: str
    proven: str | None
    """The box the readings prove (``above`` or ``below``), None while they prove nothing yet."""


class CommitmentRules(Protocol[Committed]):
    """What a world says about its irreversible commitment (``WorldSemantics.commitment_verb``:
    ScienceWorld's focus, where a wrong target ends the task at -100), for Swift's safety policy (paper
    §3, Swift; ``swift.policy``): which object a commitment lands on, whether a new one repeats an
    earlier one, and which targets a task's own words rule out. A world without a commitment offers none
    (``WorldSemantics.commitment`` is None) and the policy's focus rule stays silent.

    ``Committed`` is the world's record of an object a commitment landed on (ScienceWorld:
    ``FocusObject``); the policy keeps them and hands them back, it never reads them."""

    def landed(self, target: str, observation: str, look: str, inventory: str) -> Committed | None:
        """The object a commitment on ``target`` sent in the state of ``look`` and ``inventory`` landed
        on, as ``observation`` (its reply) confirms it; None when the world did not confirm it."""
        ...

    def same(self, now: Committed, earlier: Committed) -> bool:
        """Whether two landed objects are the same object (a record is kept once)."""
        ...

    def repeats(self, target: str, look: str, inventory: str, landed: Sequence[Committed]) -> bool:
        """Whether a commitment on ``target`` in this state would land on an object of ``landed``."""
        ...

    def contents_mismatch(self, target: str, look: str, inventory: str, task_description: str) -> bool:
        """Whether ``target`` names a container's contents that the task does not name (ScienceWorld:
        "substance in metal pot" holding water in a task about lead)."""
        ...

    def destinations(self, task_description: str) -> frozenset[str]:
        """The places the task says to move its object into: never the object itself."""
        ...

    def names_part_of_phrase(self, target: str, task_description: str) -> bool:
        """Whether ``target`` is a fragment of a thing the task names that leaves out its noun
        ("orange" for "the orange paint")."""
        ...

    def asks_which(self, observation: str) -> bool:
        """Whether ``observation`` is the world's question which of several objects an action meant (a
        bare option number then completes the action)."""
        ...

    # -- what SRM's general focus rules ask (Gate-1, the stagnation detector, the Critics: paper §3.2) --
    @property
    def non_targets(self) -> frozenset[str]:
        """Names that are never a commitment's target besides the places (ScienceWorld: the agent and
        the inventory)."""
        ...

    def target(self, action: str) -> str | None:
        """The target of a commitment action (``<commitment_verb> <target>``), as written; None for any
        other action."""
        ...

    def head(self, target: str) -> str:
        """The object a target names, in comparison form, without container or location qualifiers
        ("water in metal pot" -> "water")."""
        ...

    def confirmed(self, observation: str) -> str | None:
        """The object the world says a commitment landed on ("You focus on the water." -> "water"), None
        when ``observation`` confirms none."""
        ...

    def stated_count(self, task_description: str) -> int | None:
        """The number of things a task description says to commit to (ScienceWorld's "... on the 4 life
        stages of the turtle" -> 4), None when it states none."""
        ...

    def instructed_count(self, task_description: str) -> int:
        """How many commitments a task description instructs, a run of conditional alternatives counted
        as one choice; 0 when it instructs none."""
        ...

    def authors_budget(self, task_id: int) -> int:
        """The paper authors' number of commitments of a task (their loop's per-task count; Gate-1's
        ``focus_budget: authors``), 1 for a task they do not list."""
        ...

    def repeated(self, target: str, look: str, inventory: str, landed: Sequence[Committed]) -> str | None:
        """The name (as a message writes it) of the object of ``landed`` a commitment on ``target`` would
        land on again in this state, None when it repeats none (``repeats`` is whether one exists)."""
        ...

    def unnamed_contents(self, target: str, look: str, inventory: str, task_description: str) -> str | None:
        """The contents a commitment on a container's contents would land on, when the task does not
        name them ("water" for "substance in metal pot" in a task about lead); None otherwise
        (``contents_mismatch`` is whether there are such contents)."""
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

    def content_words(self, text: str) -> set[str]:
        """Words of a text (a task description, an action) that can name an object: the world's
        function words and instruction boilerplate left out. The rules Critic ranks its candidates by
        those they share with the task description."""
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

    # -- what the LLM components ask (Sage's grounding and prompts, the Critic, the authors' profile) --
    @property
    def authors(self) -> AuthorsProfile | None:
        """The paper authors' rules for this world (``fastslow.core.authors``: their loop, FUNC grammar,
        prompts' content and demos); None where the authors' profile does not exist (TextWorldExpress)."""
        ...

    @property
    def prompt_facts(self) -> PromptFacts:
        """What the LLM prompts say about the world (``PromptFacts``)."""
        ...

    @property
    def rooms(self) -> tuple[str, ...]:
        """The places the world always has, known before any look (ScienceWorld's ten rooms); ()
        where places are only learnt by looking."""
        ...

    @property
    def idle_actions(self) -> tuple[str, ...]:
        """Actions that only let time pass ("wait", "wait1"), most common first; () for none."""
        ...

    @property
    def action_word(self) -> str:
        """One word of an action's text as a regular expression in the ``models.constraint.Regex``
        subset: constrained decoding writes actions as such words, one space apart."""
        ...

    def paraphrases(self, action: str) -> tuple[str, ...]:
        """Texts a model's action (cleaned: lower case, no quotes or trailing punctuation) may mean in
        the world's wording, tried after the text itself by Sage's grounding (SwiftSage's synonyms:
        "examine X" -> "look at X"); () for none."""
        ...

    def walked(self, action: str, observation: str) -> tuple[str, str] | None:
        """A step written as the walk its gold paths take, where the world also moves by shortcut
        (ScienceWorld: "teleport to X" / "You teleport to ..." as "go to X" / "You go to ...", the form
        SwiftSage's T5 was trained on); None when the step is no shortcut or the world has none."""
        ...

    def ambiguity_options(self, observation: str) -> dict[str, str]:
        """``{"0": <the action option 0 completes>, ...}`` when an observation is the world's ambiguity
        prompt; {} otherwise and in a world without one."""
        ...

    # -- what Swift, its safety policy and its training data ask (paper §3, Swift) ---------------------
    @property
    def commitment(self) -> CommitmentRules[Any] | None:
        """The rules of the world's irreversible commitment (``CommitmentRules``); None where the world
        has no commitment verb."""
        ...

    @property
    def restart_actions(self) -> frozenset[str]:
        """Actions that restart the task, erasing its progress and changing nothing in the world
        (ScienceWorld's "reset task"): Swift's safety policy never takes one; empty for none."""
        ...

    @property
    def invalid_reply(self) -> str | None:
        """The world's one reply, exactly, to an action its parser does not know (ScienceWorld's "No
        known action matches that input.": the authors' T3 rule compares with it); None where the world
        has several."""
        ...

    @property
    def observe_only(self) -> frozenset[str]:
        """Actions that change nothing and only print what every state already carries (its look, its
        inventory): no step an expert needs (DAgger's gold pointer leaves them out)."""
        ...

    def gold_spellings(self, action: str) -> list[str]:
        """Other spellings of a gold-path action that the world's valid-action list may use instead
        (ScienceWorld's gold paths write "examine X" for "look at X"); [] for none."""
        ...

    def simplify_gold(self, actions: Sequence[str]) -> list[str]:
        """A gold path rewritten for the world's simplified settings (ScienceWorld's "easy": doors
        start open, rooms are reached by teleport); the path as it is where the world has none. The
        rewrite is a guess to be checked by replaying it (``swift.data``)."""
        ...
