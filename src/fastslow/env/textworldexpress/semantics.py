"""TextWorldExpress's semantics: what its actions and observations mean, for any module that asks.

The TWX counterpart of ``fastslow.env.scienceworld.semantics`` (ScienceWorld's), the start of the
``WorldSemantics`` seam: verbs, the objects of an action, normalising an action, the location and exits of
a look, the items of an inventory, feedback classes. Stdlib only, pure functions of strings (no JVM). The
strings were read from real TWX 1.1.0 observations of all eight games (train and dev seeds, gold and
random play) and from the server's message table; the tests check them on live observations.

**Actions.** TWX accepts exactly the strings of its valid-action list, case included ("examine TV
stand"; "open the fridge" or "OPEN FRIDGE" are unknown). ``normalize`` is the comparison form (lower
case, no punctuation or articles, single spaces); ``to_valid`` maps a model's text back to the valid
action it names. Every valid action is ``<verb> [<object> [in <object>]]``: "take 13 pears", "put clean
blue socks in chest of drawers", "cook red potato in oven", "open door to east", "move north"; Simon
says' gestures ("jump up and down", "meow like a cat") are verbs with no object.

**Feedback.** ``classify_feedback`` puts an observation in one ``Feedback`` class, first match wins:

1. ``invalid``: TWX's parser knows no such action ("Unknown action: I'm not sure what you mean.",
   "That is not a command that I recognize.").
2. ``failure``: a refusal ("You can't move there, the door is closed.", "Your inventory currently has 2
   items, and is full.  You can't pick up another item.", "You are unable to prepare the meal right
   now.") or Simon says' "Incorrect!" (which also fails the task).
3. ``no_effect``: understood, nothing to do ("That is already open.", "That is already closed.").
4. ``ok``: anything else. As in ScienceWorld the text of a step that failed the task can read as
   success ("You put the 6 papayas in the box.", "You eat the flour.  It is delicious."): the score and
   ``EndState`` say whether it ended the task, not the text.

TWX has no ambiguity prompt (actions are exact strings), so ``Feedback.ambiguous`` and ``cancelled``
never occur; the refusals are read by the rules above, not by words, so ``env.failure_markers`` does not
apply.

``SEMANTICS`` answers ``fastslow.core.semantics.WorldSemantics`` with these functions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from fastslow.core.semantics import FUNCTION_WORDS, CommitmentRules, Feedback, PromptFacts, WorldEvidence

if TYPE_CHECKING:
    from fastslow.core.authors import AuthorsProfile

# -- scores --------------------------------------------------------------------------------------------
SUCCESS_SCORE = 100
"""``StepResult.score`` of a won episode (TWX's ``tasksuccess``)."""
FAILURE_SCORE = -100
"""``StepResult.score`` once TWX's ``taskfailure`` is set: ScienceWorld's failure score, so the metrics'
two conventions read both worlds alike (``benchmark.yaml``'s ``scoring``)."""

# -- verbs -----------------------------------------------------------------------------------------------
MOVE = "move"
"""The navigation verb: "move north|south|east|west" (no teleport in TWX)."""
DIRECTIONS = ("north", "south", "east", "west")
TAKE = "take"
"""The verb that takes an object into the inventory."""
PUT = "put"
OBSERVE_ONLY = frozenset({"look around", "inventory", "task"})
"""Actions that change nothing and print what the state already carries (mapreader's "task" repeats
the task description)."""
GESTURES = frozenset(
    {
        "clap your hands",
        "do a dance",
        "hop on your left foot",
        "hop on your right foot",
        "hop to the left",
        "jump up and down",
        "meow like a cat",
        "quack like a duck",
        "sit down",
        "touch your ears",
        "touch your nose",
        "turn around in a circle",
        "wave hello",
        "wiggle your fingers",
        "wiggle your toes",
    }
)
"""Simon says' object-less commands (the whole list of TWX 1.1.0's Simon says game): each whole action
is its verb ("touch your ears" is one, "touch pea" is the verb "touch" and the object "pea")."""
JOINER = " in "
"""The one word that joins an action's two objects ("put A in B", "cook A in B")."""

# -- feedback --------------------------------------------------------------------------------------------
UNKNOWN_ACTION = "Unknown action: I'm not sure what you mean."
"""TWX's reply to an action that is not in its valid list."""
NOT_A_COMMAND = "That is not a command that I recognize."
INCORRECT = "Incorrect!"
"""Simon says' reply to a wrong command (the task fails with it)."""
_INVALID = (UNKNOWN_ACTION, NOT_A_COMMAND)
_REFUSAL = re.compile(r"\bcan't\b|\bunable to\b|\bis full\b")
_NO_EFFECT = re.compile(r"^That is already (?:open|closed)\.")


@lru_cache(maxsize=1 << 14)
def classify_feedback(observation: str) -> Feedback:
    """The ``Feedback`` class of a TWX observation."""
    text = observation.strip()
    if text.startswith(_INVALID):
        return Feedback.INVALID
    if text == INCORRECT or _REFUSAL.search(text):
        return Feedback.FAILURE
    if _NO_EFFECT.match(text):
        return Feedback.NO_EFFECT
    return Feedback.OK


# -- action text -----------------------------------------------------------------------------------------
_ARTICLES = frozenset({"a", "an", "the"})
_PUNCT = re.compile(r"[\"'`.,;:!?()\[\]{}*“”‘’]")


@lru_cache(maxsize=1 << 16)
def normalize(action: str) -> str:
    """Comparison form: lower case, no punctuation or articles, single spaces ("Open the Fridge." ->
    "open fridge"). Not sendable as such: TWX wants the valid action's own case (``to_valid``)."""
    text = _PUNCT.sub(" ", action.lower())
    return " ".join(w for w in text.split() if w not in _ARTICLES)


def to_valid(action: str, valid_actions: tuple[str, ...] | list[str]) -> str | None:
    """The valid action ``action`` names in comparison form (``normalize``), None if none does."""
    if action in valid_actions:
        return action
    want = normalize(action)
    return next((v for v in valid_actions if normalize(v) == want), None)


@lru_cache(maxsize=1 << 16)
def verb_of(action: str) -> str:
    """The command word(s) of an action, in comparison form: "take", "put", "move", "look around", a
    whole gesture ("jump up and down"); the verb is a prefix of ``normalize(action)``."""
    norm = normalize(action)
    if norm in _NORMALIZED_WHOLE:
        return norm
    return norm.split(" ", 1)[0]


_NORMALIZED_WHOLE = frozenset(normalize(a) for a in (*GESTURES, *OBSERVE_ONLY))


def arguments(action: str) -> list[str]:
    """The object phrases of an action, as written: "put A in B" -> [A, B], "open door to east" ->
    ["door to east"], "take 13 pears" -> ["13 pears"]; [] for a move (``direction``), a gesture or an
    observe-only action."""
    text = " ".join(action.split())
    verb = verb_of(text)
    if verb == MOVE or verb in _NORMALIZED_WHOLE:
        return []
    rest = text.split(" ", 1)[1] if " " in text else ""
    if not rest:
        return []
    if verb in (PUT, "cook") and JOINER in rest:
        first, second = rest.split(JOINER, 1)
        return [first.strip(), second.strip()]
    return [rest]


def direction(action: str) -> str | None:
    """The direction of a move ("move north" -> "north"), None for any other action."""
    words = normalize(action).split()
    if len(words) == 2 and words[0] == MOVE and words[1] in DIRECTIONS:
        return words[1]
    return None


# -- paraphrases (Gate-1's alias rule) ---------------------------------------------------------------------
COMMAND_ALIASES: dict[str, str] = {
    "look": "look around",
    "l": "look around",
    "i": "inventory",
    "inv": "inventory",
    "check inventory": "inventory",
    **{d: f"{MOVE} {d}" for d in DIRECTIONS},
    **{d[0]: f"{MOVE} {d}" for d in DIRECTIONS},
}
"""Whole-action paraphrases: a bare direction is a move ("north", "n" -> "move north")."""
VERB_ALIASES: tuple[tuple[str, str], ...] = (
    ("pick up", TAKE),
    ("get", TAKE),
    ("grab", TAKE),
    ("go to", MOVE),
    ("go", MOVE),
    ("walk", MOVE),
    ("look at", "examine"),
    ("inspect", "examine"),
    ("place", PUT),
    ("insert", PUT),
)
"""Verb paraphrases -> TWX's verb, at the start of an action only (an object is never rewritten)."""
_JOINER_ALIASES = (" into ", " inside ", " on ", " onto ")


def rewrite(norm: str) -> str:
    """A normalized action with TWX's paraphrases repaired: "pick up coin" -> "take coin", "go north"
    -> "move north", "put apple into fridge" -> "put apple in fridge"; ``norm`` when none applies."""
    if norm in COMMAND_ALIASES:
        return COMMAND_ALIASES[norm]
    text = norm
    for old, new in VERB_ALIASES:
        if text == old or text.startswith(old + " "):
            text = new + text[len(old) :]
            break
    if text.startswith(PUT + " ") and JOINER not in text:
        for joiner in _JOINER_ALIASES:
            if joiner in text:
                text = text.replace(joiner, JOINER, 1)
                break
    return text


# -- observations ----------------------------------------------------------------------------------------
_LOCATION = re.compile(r"You are in the ([^.]+)\.")
_EXIT = re.compile(r"To the (North|South|East|West) you see (?:a |an |the )?([^.]+)\.")
_CAPACITY = re.compile(r"maximum capacity is (\d+) items")
_ITEM_PREFIXES = ("a ", "an ", "some ")


def location(text: str) -> str:
    """The room a look (or a move's observation) is in: "You are in the kitchen. ..." -> "kitchen";
    '' when the text names none (Simon says has no rooms)."""
    match = _LOCATION.search(text)
    return match.group(1).strip() if match else ""


def exits(look: str) -> dict[str, str]:
    """What a look sees in each direction: {"north": "closed plain door", "west": "corridor"}."""
    return {d.lower(): what.strip() for d, what in _EXIT.findall(look)}


def inventory_items(inventory: str) -> list[str]:
    """The items of an inventory text, as actions name them ("a clean blue socks" -> "clean blue
    socks", "13 pears", "some salt" -> "salt"); [] when it is empty."""
    items = []
    for line in inventory.splitlines()[1:]:
        item = line.strip()
        if not item or item.startswith("Your inventory is currently empty"):
            continue
        for prefix in _ITEM_PREFIXES:
            if item.startswith(prefix):
                item = item[len(prefix) :]
                break
        items.append(item)
    return items


def inventory_capacity(inventory: str) -> int | None:
    """The inventory's item limit ("Inventory (maximum capacity is 5 items):" -> 5), None if unlimited."""
    match = _CAPACITY.search(inventory)
    return int(match.group(1)) if match else None


CRITIC_VERBS: dict[str, int] = {
    TAKE: 0,
    "read": 0,
    "open": 1,
    "examine": 2,
    PUT: 3,
    "cook": 3,
    "slice": 3,
    "chop": 3,
    "dice": 3,
}
"""The rules Critic's verbs in TWX, most useful first: take and read what the task names, open
containers, examine, then the recipe's steps. Left out: eat (it destroys the food, and a distractor
fails cookingworld), close, touch and smell (Simon says' commands: a wrong one fails the game), the
gestures, and moves (``exploration_moves``)."""


def exploration_moves(look: str, valid_actions: Sequence[str], visited: Iterable[str]) -> list[str]:
    """The moves towards an exit whose room the agent has not visited, and the doors to open towards
    one: "move west" when the look says "To the West you see the pantry" and the pantry is unvisited;
    "open door to north" when it sees a closed door there (what is behind it is not known)."""
    seen = set(visited)
    out = []
    for way, what in exits(look).items():
        door = "door" in what.split()
        if door and f"open door to {way}" in valid_actions:
            out.append(f"open door to {way}")
        elif (door or what not in seen) and f"{MOVE} {way}" in valid_actions:
            out.append(f"{MOVE} {way}")  # through an open door, the room behind it is not known
    return out


PROMPT_FACTS = PromptFacts(
    agent="plays text games in TextWorldExpress, a text world of rooms, objects and small tasks",
    critic_world="TextWorldExpress, a text game of rooms, objects and small tasks",
    action_forms=(
        "look around | inventory | task | examine OBJ | read OBJ",
        "move LOC | open door to LOC | open OBJ | close OBJ",
        "take OBJ | put OBJ in OBJ | eat OBJ | cook OBJ in OBJ | slice OBJ | chop OBJ | dice OBJ",
        'prepare meal | a gesture the task names (Simon says: "touch your nose", "wave hello", ...)',
    ),
    places_word="a direction: north, south, east or west",
    rules=(
        "Use actions and object names exactly as the observations write them.",
        "Some actions fail the task (eating an object the task does not ask for, a wrong Simon says).",
    ),
    example_actions=(
        ("open door to north", "You open the door, revealing the kitchen."),
        ("move north", "You are in the kitchen."),
    ),
    navigation_forms=("move", "open door to"),
    first_words=frozenset(
        {
            *["look", "inventory", "task", "examine", "read", "move", "go", "walk", "open", "close"],
            *["take", "pick", "get", "put", "place", "drop", "eat", "cook", "slice", "chop", "dice"],
            *["prepare", "smell", "touch"],
            *(gesture.split()[0] for gesture in GESTURES),
        }
    ),
    func_joiners=(("put", "in"), ("cook", "in")),
)
"""What Sage's and the Critic's prompts say about TextWorldExpress (its action forms are the verbs of
the eight games' gold paths, ``data/gold-train.json``)."""
ACTION_WORD = "[a-zA-Z0-9-]{1,30}"
"""One word of a TWX action: letters, digits and hyphens ("take clean teal T-shirt")."""


_DESCRIPTION_WORD = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_INSTRUCTION_WORDS = """your task at for or then first next when after before this these those its be are
will which what if than some any all each you can has have focus thing things object objects located around
found might near location complete completed done part way take actions cause change make until"""
DESCRIPTION_STOPWORDS = (FUNCTION_WORDS - {"into"}) | frozenset(_INSTRUCTION_WORDS.split())
"""Words of a task description that name no object (English instruction words: "Your task is to take
the coin that is located in the alley"). The rules Critic has ranked its TextWorldExpress candidates
with exactly this set since it first ran there (ScienceWorld's list, docs/worlds.md's measurements), so
it is kept as it is."""


def content_words(text: str) -> set[str]:
    """Words of ``text`` that can name an object: not ``DESCRIPTION_STOPWORDS``, two letters or more."""
    found = _DESCRIPTION_WORD.findall(text.lower())
    return {w for w in found if w not in DESCRIPTION_STOPWORDS and len(w) > 1}


class TextWorldExpressSemantics:
    """TextWorldExpress's answers to ``fastslow.core.semantics.WorldSemantics`` (module docstring)."""

    name = "textworldexpress"
    success_score = SUCCESS_SCORE
    failure_score = FAILURE_SCORE
    default_failure_markers: tuple[str, ...] = ()
    navigation_verbs = frozenset({MOVE})
    argument_joiners: tuple[str, ...] = (JOINER,)
    evidence: WorldEvidence | None = None
    """No conditional choices read from the text (arithmetic's and sorting's are the agent's to solve)."""
    commitment_verb: str | None = None
    """No irreversible commitment: a wrong action fails a task (Simon says, eating a distractor) by
    its own rules, not by a verb."""

    @staticmethod
    def normalize(action: str) -> str:
        return normalize(action)

    @staticmethod
    def verb_of(action: str) -> str:
        return verb_of(action)

    @staticmethod
    def arguments(action: str) -> list[str]:
        return arguments(action)

    @staticmethod
    def content_words(text: str) -> set[str]:
        return content_words(text)

    critic_verbs: Mapping[str, int] = CRITIC_VERBS

    @staticmethod
    def exploration_moves(look: str, valid_actions: Sequence[str], visited: Iterable[str]) -> list[str]:
        return exploration_moves(look, valid_actions, visited)

    @staticmethod
    def rewrite(norm: str) -> str:
        return rewrite(norm)

    @staticmethod
    def reroute(norm: str) -> str | None:
        """None: no action stands in for another's navigation."""
        return None

    @staticmethod
    def strip_qualifiers(norm: str) -> str:
        """``norm``: TWX names objects without container or location qualifiers."""
        return norm

    @staticmethod
    def go_to(place: str) -> tuple[str, ...]:
        """(): rooms are reached by directions ("move north"), never by name."""
        return ()

    @staticmethod
    def location(look: str) -> str:
        return location(look)

    @staticmethod
    def places(valid_actions: Sequence[str], visited: Iterable[str] = ()) -> set[str]:
        """The directions the valid actions move in, and the visited rooms."""
        return set(visited) | {way for way in map(direction, valid_actions) if way is not None}

    @staticmethod
    def classify_feedback(observation: str, markers: Iterable[str] | None = None) -> Feedback:
        """Rules, not words: ``markers`` is ignored (module docstring)."""
        return classify_feedback(observation)

    commitment: CommitmentRules[Any] | None = None
    """No commitment verb, so no commitment rules: Swift's focus rule stays silent."""
    restart_actions: frozenset[str] = frozenset()
    """No action restarts a game."""
    invalid_reply: str | None = None
    """Two replies (``UNKNOWN_ACTION``, ``NOT_A_COMMAND``), so no one exact text."""
    observe_only = OBSERVE_ONLY

    @staticmethod
    def gold_spellings(action: str) -> list[str]:
        """[]: TWX's gold paths are written in its valid list's own spelling."""
        return []

    @staticmethod
    def simplify_gold(actions: Sequence[str]) -> list[str]:
        """The path as it is: TWX's benchmark has no simplified settings to rewrite for."""
        return list(actions)

    authors: AuthorsProfile | None = None
    """The paper authors' profile is ScienceWorld's (``fastslow.core.authors``)."""
    prompt_facts = PROMPT_FACTS
    rooms: tuple[str, ...] = ()
    """Each game draws its own rooms: they are learnt by looking."""
    idle_actions: tuple[str, ...] = ()
    action_word = ACTION_WORD

    @staticmethod
    def paraphrases(action: str) -> tuple[str, ...]:
        """The alias table's repair of the action (``rewrite``: "pick up key" -> "take key")."""
        return (rewrite(normalize(action)),)

    @staticmethod
    def walked(action: str, observation: str) -> tuple[str, str] | None:
        """None: TextWorldExpress only walks."""
        return None

    @staticmethod
    def ambiguity_options(observation: str) -> dict[str, str]:
        """{}: TWX has no ambiguity prompt."""
        return {}


SEMANTICS = TextWorldExpressSemantics()
"""TextWorldExpress's ``WorldSemantics`` (``World.semantics``; ``Trajectory.semantics`` of its episodes)."""
