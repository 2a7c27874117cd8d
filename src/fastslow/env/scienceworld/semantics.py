"""ScienceWorld's semantics, defined once: what its actions and observations mean to every component.

SwiftSage's arbitration and grounding (paper §3), AMM's salience gate and records (§3.1) and SRM's
Gate-1, stagnation detector and Critic (§3.2) all read ScienceWorld text. They read it here, so one
observation means the same thing to all of them. Stdlib only (no JVM adapter, py4j or scienceworld):
everything is a pure function of strings, cheap to import and testable without the simulator.

**Actions.** ``normalize`` is the canonical form Gate-1, the focus rules, the Critic and ``verb_of``
compare in (lower case, no punctuation, no articles). ``clean`` is the lighter form SwiftSage's grounding
matches in (quotes, case, spaces and trailing punctuation only): it keeps every word because "a" can be
part of a name ("unknown substance a") and the baseline's exact/fuzzy grounding was measured with it.
Both are cached: the controller builds a grounder over the ~1-3k valid actions at every step.

**Focus objects** the safety policy and Gate-1 share: what a focus lands on (``focus_object``,
``landed_object``), whether it repeats an earlier one (``focus_repeats``) and whether a container's
contents are what the task names (``focus_contents_mismatch``). Nothing here knows a task by its name or
family: the task families, their parsers and judgements are the hand-written task logic's
(``fastslow.env.scienceworld.procedures.tasks``).

**Feedback.** ``classify_feedback`` puts every observation in one ``Feedback`` class, first match wins:

1. ``invalid``: ScienceWorld's parser knows no such action ("No known action matches that input.").
2. ``ambiguous``: the input matched several objects; ScienceWorld lists numbered options and waits
   for a number ("Ambiguous request: ..."; ``ambiguous_options`` parses them).
3. ``cancelled``: the reply to an ambiguity prompt was not one of its numbers; ScienceWorld drops the
   prompt and the reply ("Unknown action.  Type 'help' ...").
4. ``failure``: a refusal, found by the failure markers (whole words, case-insensitive; "cannot" is
   read as "can not"). ``DEFAULT_FAILURE_MARKERS`` are SwiftSage's ("can't", "not", "doesn't"); the run
   configuration's ``env.failure_markers`` replaces them. Real refusals: "The table is not openable.",
   "It's not clear how to read that.", "You can't pick up a gas directly.". A marker wins over rule 5:
   "Mixing the contents of the bowl does not appear to produce anything new." is a failure.
5. ``no_effect``: the action was understood and allowed but there was nothing to do ("The fridge is
   already open.", "That container is empty, so there are no items to mix."). ScienceWorld 1.2.3 has no
   "Nothing happens" message (none in scienceworld.jar); this class is what it says instead.
6. ``ok``: anything else, including "You focus on the orange." when that focus failed the task: the
   text says what happened, the score (``FAILURE_SCORE``) says whether it ended the task.

Each consumer counts a fixed subset of these classes (the sets below). "Ambiguous request" is not a
SwiftSage failure message (the controller answers it at the next step), but the stagnation detector
counts it (an unexecuted step, for its invalid_loop); AMM's avoidance records are for ``invalid``
actions only (an ambiguity or a refusal says nothing about the action elsewhere). A refusal such as
"You cannot do that." (not a text ScienceWorld 1.2.3 emits) is a failure to escalation and
stagnation alike, and no avoidance record.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from fastslow.core.semantics import (
    AVOIDANCE_FEEDBACK as AVOIDANCE_FEEDBACK,
)
from fastslow.core.semantics import FUNCTION_WORDS, Alternative, Feedback
from fastslow.core.semantics import (
    STAGNATION_FAILURES as STAGNATION_FAILURES,
)
from fastslow.core.semantics import (
    SWIFTSAGE_FAILURES as SWIFTSAGE_FAILURES,
)
from fastslow.core.text import clean as clean

# -- scores --------------------------------------------------------------------------------------------
SUCCESS_SCORE = 100
"""ScienceWorld's score of a completed task."""
FAILURE_SCORE = -100
"""ScienceWorld's score once the task has failed (e.g. a focus on the wrong object); the episode ends."""

# -- places ----------------------------------------------------------------------------------------------
ROOMS: tuple[str, ...] = (
    "kitchen",
    "bathroom",
    "workshop",
    "art studio",
    "greenhouse",
    "outside",
    "bedroom",
    "living room",
    "foundry",
    "hallway",
)
"""The ten locations of ScienceWorld's house and surroundings (``teleport to`` targets under "easy")."""
NON_OBJECTS = frozenset({"inventory", "agent"})
"""Names ScienceWorld's parser accepts as objects that no task is about (``focus on agent`` is valid)."""

# -- verbs -----------------------------------------------------------------------------------------------
FOCUS = "focus on"
"""The irreversible action: focusing on the wrong object ends the task at ``FAILURE_SCORE``."""
_FOCUS_PREFIX = FOCUS + " "
TELEPORT = "teleport to"
PICK_UP = "pick up"
"""The verb that takes an object into the inventory."""
NAVIGATION_VERBS = frozenset({TELEPORT, "go to"})
"""Verbs that only change the agent's room."""
RESET_TASK = "reset task"
"""ScienceWorld's meta action, in nearly every state's valid list: it erases the goal progress and the
focus ("You reset the goal progress and focus.", the score falls back) and changes nothing in the
world. No gold path takes it."""
OBSERVE_ONLY = frozenset({"look around", "inventory"})
"""Actions that change nothing and only print what every state already carries (its look and its
inventory): a gold path's ``look around`` is no step an expert needs to ask for."""
_PARTICLES = frozenset({"up", "down", "at", "in", "to", "on", "around"})
"""Second words that belong to the verb: "pick up", "look at", "look in", "go to", "focus on", ..."""
ARGUMENT_JOINERS: tuple[str, ...] = (" into ", " in ", " to ", " on ", " from ")
"""Words that join the two objects of an action ("move A to B"), in the order ``arguments`` tries them."""
ACTION_WORD = "[a-zA-Z0-9]{1,30}"
"""One word of an action's or an object's text as a regular expression (the ``models.constraint.Regex``
subset): letters and digits."""
ACTION_WORDS = f"{ACTION_WORD}(?: {ACTION_WORD}){{0,19}}"
"""An action's or an object's text as a regular expression: up to 20 words (``ACTION_WORD``), one space
apart. ScienceWorld writes every valid action so (the
longest have 18 words), and no punctuation of a reply's layout (``.``, ``,``, ``(``, ``->``) is in it."""


# -- stopwords -------------------------------------------------------------------------------------------
def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOPWORDS = FUNCTION_WORDS
"""Function words that name no object (``core.semantics.FUNCTION_WORDS``)."""
DESCRIPTION_STOPWORDS = (STOPWORDS - {"into"}) | _wordset(
    """your task at for or then first next when after before this these those its be are will which what
    if than some any all each you can has have focus thing things object objects located around found
    might near location complete completed done part way take actions cause change make until"""
)
"""Words of a task description that name no object (Gate-1's focus rule; "into" stays a content word
there, as in the set the rule was checked with against train gold focus actions, ``reflection.focus``)."""

# -- action text -----------------------------------------------------------------------------------------
_ARTICLES = frozenset({"a", "an", "the"})
# Punctuation a model adds around an action; hyphens stay ("green-blue paint"), so do digits.
_PUNCT = re.compile(r"[\"'`.,;:!?()\[\]{}*]")
_SPACES = re.compile(r"\s+")


@lru_cache(maxsize=1 << 16)
def normalize(action: str) -> str:
    """Canonical form: lower case, no punctuation or articles, single spaces."""
    text = _PUNCT.sub(" ", action.lower())
    return " ".join(w for w in _SPACES.split(text) if w and w not in _ARTICLES)


def verb_of_normalized(norm: str) -> str:
    """``verb_of`` for a string already in canonical form (Gate-1 indexes ~1-3k of them per step)."""
    words = norm.split(" ", 2)
    if len(words) >= 2 and words[1] in _PARTICLES:
        return f"{words[0]} {words[1]}"
    return words[0]


@lru_cache(maxsize=1 << 16)
def verb_of(action: str) -> str:
    """The command word(s) of an action: "pick up", "look at", "teleport to", "focus on", "move", ...

    For ScienceWorld's own action strings the verb is a prefix of the action (checked on the 28,960
    distinct valid and gold actions of variation 0 of the 30 tasks), so ``action[len(verb):]`` is the rest.
    """
    return verb_of_normalized(normalize(action))


def arguments(action: str) -> list[str]:
    """The object phrases of an action: 'move A to B' -> [A, B], 'open door' -> [door], 'wait' -> []."""
    verb = verb_of(action)
    rest = action[len(verb) :].strip()
    if not rest:
        return []
    for joiner in ARGUMENT_JOINERS:
        if joiner in rest:
            first, second = rest.split(joiner, 1)
            return [first.strip(), second.strip()]
    return [rest]


def verb_target(action: str, verb: str) -> str | None:
    """The text after ``verb`` and one space, as written (not stripped, unlike ``focus_target``): ("pick up
    red apple", "pick up") -> "red apple"; None when ``action`` does not start with ``verb + " "``."""
    prefix = verb + " "
    return action[len(prefix) :] if action.startswith(prefix) else None


def verb_rest(action: str, verb: str) -> str:
    """``action`` without its first ``len(verb) + 1`` characters, unchecked: the text after ``verb + " "``
    for an action known to start with it (``verb_target`` checks and gives None otherwise)."""
    return action[len(verb) + 1 :]


def is_focus(action: str) -> bool:
    """Whether ``action`` starts with "focus on " (its space included; ``action.startswith(FOCUS)`` is the
    looser test that also takes a bare "focus on")."""
    return action.startswith(_FOCUS_PREFIX)


def focus_on(target: str) -> str:
    """The action that focuses on ``target``, which is taken as given: "focus on <target>"."""
    return f"{FOCUS} {target}"


def teleport_to(room: str) -> str:
    """The action that teleports to ``room``, taken as given: "teleport to <room>"."""
    return f"{TELEPORT} {room}"


# -- feedback --------------------------------------------------------------------------------------------
NO_MATCH = "No known action matches that input."
"""ScienceWorld's reply to an action its parser does not know."""
AMBIGUOUS = "Ambiguous request"
"""Start of ScienceWorld's question when an action matched several objects."""
CANCELLED = "Unknown action."
"""Start of ScienceWorld's reply when an ambiguity prompt was answered with anything but an option number."""
DEFAULT_FAILURE_MARKERS: tuple[str, ...] = ("can't", "not", "doesn't")
"""SwiftSage's failure-message words; ``env.failure_markers`` in the run configuration defaults to these."""
_NO_EFFECT = re.compile(r"\balready\b|\bnothing to\b|\bno items to\b", re.IGNORECASE)
_CANNOT = re.compile(r"\bcannot\b")


@lru_cache(maxsize=64)
def _marker_pattern(markers: tuple[str, ...]) -> re.Pattern[str] | None:
    if any(not m.strip() for m in markers):
        # A blank marker would match between any two spaces and make every observation a failure.
        raise ValueError(f"a failure marker must be a word, not blank: {markers!r}")
    if not markers:
        return None
    words = "|".join(re.escape(m.strip().lower()) for m in markers)
    return re.compile(rf"(?<![\w'])(?:{words})(?![\w'])")


@lru_cache(maxsize=1 << 14)
def _classify(observation: str, markers: tuple[str, ...]) -> Feedback:
    if NO_MATCH in observation:
        return Feedback.INVALID
    head = observation.lstrip()
    if head.startswith(AMBIGUOUS):
        return Feedback.AMBIGUOUS
    if head.startswith(CANCELLED):
        return Feedback.CANCELLED
    pattern = _marker_pattern(markers)
    if pattern is not None and pattern.search(_CANNOT.sub("can not", observation.lower())):
        return Feedback.FAILURE
    if _NO_EFFECT.search(observation):
        return Feedback.NO_EFFECT
    return Feedback.OK


def classify_feedback(observation: str, markers: Iterable[str] = DEFAULT_FAILURE_MARKERS) -> Feedback:
    """The ``Feedback`` class of ``observation``; ``markers`` decide what counts as a refusal.

    Raises ``ValueError`` for a blank marker (the configuration refuses them before this)."""
    return _classify(observation, tuple(markers))


_OPTION = re.compile(r"^\s*(\d+):\s*(.+?)\s*$")
# ScienceWorld's location of an option's object: "(in bowl, in counter, in kitchen)"; other parentheses stay.
_LOCATION = re.compile(r"\s*\((?:in|on) [^()]*\)")


def ambiguous_options(observation: str) -> list[str]:
    """The options of an "Ambiguous request", in number order (answering ``i`` executes option ``i``);
    [] for any other observation. An option keeps ScienceWorld's locations: "focus on orange (in
    inventory, in agent, in kitchen)" (``strip_locations`` gives the action text)."""
    if not observation.lstrip().startswith(AMBIGUOUS):
        return []
    options: dict[int, str] = {}
    for line in observation.splitlines()[1:]:
        match = _OPTION.match(line)
        if match:
            options.setdefault(int(match.group(1)), match.group(2))
    return [options[i] for i in sorted(options)]


def strip_locations(option: str) -> str:
    """An ambiguity option without its "(in ...)" locations, wherever they stand: the action as typed
    ("move orange (in bowl, in counter, in kitchen) to table (in kitchen)" -> "move orange to table")."""
    return " ".join(_LOCATION.sub("", option).split())


# -- focus -----------------------------------------------------------------------------------------------
_QUALIFIERS = (" in ", " on ", " to ", " containing ")
_CONFIRMED = re.compile(r"^\s*You focus on (?:the )?(.+?)\.?\s*$", re.DOTALL)
# "<container> (containing <contents>)" in a look or inventory line; the name cannot cross the ".", ":"
# or "," that separate the objects of a line ("a table. On the table is: a glass cup (containing ...)").
_CONTAINS = re.compile(r"([^\n\t(),.:]+?) \(containing ([^()]*)\)")
_IN_ON = re.compile(r" (?:in|on) ")
GENERIC_TARGETS = frozenset({"substance"})
"""Focus heads that name a container's contents, not an object: "focus on substance in metal pot"."""


def focus_target(action: str) -> str | None:
    """X of a ``focus on X`` action, as written (None for any other action)."""
    prefix = FOCUS + " "
    return action[len(prefix) :].strip() if action.startswith(prefix) else None


def focus_head(target: str) -> str:
    """The object named by a focus target, in canonical form, without container/location qualifiers:
    "water in metal pot" -> "water", "thermometer in inventory" -> "thermometer"."""
    head = normalize(target)
    for marker in _QUALIFIERS:
        head = head.split(marker, 1)[0]
    return head


def focus_confirmed(observation: str) -> str | None:
    """The object ScienceWorld says was focused on ("You focus on the water." -> "water"), else None."""
    match = _CONFIRMED.match(observation)
    return match.group(1) if match else None


def resolve_focus_target(target: str, look: str, inventory: str = "") -> str:
    """What a focus target denotes in the current state, in canonical form.

    Usually the head (``focus_head``). A generic head with a container ("substance in metal pot") is
    resolved to the container's single content as the look or inventory lists it ("a metal pot
    (containing a substance called water)" -> "water"): ScienceWorld then confirms "You focus on the
    water." A container that is not listed, holds nothing or several things, or nests parentheses
    leaves the head unresolved ("substance")."""
    head = focus_head(target)
    if head not in GENERIC_TARGETS:
        return head
    items = container_items(target, f"{look}\n{inventory}")
    if items is None or len(items) != 1 or items[0] == "nothing":
        return head
    return items[0].removeprefix("substance called ")


def container_items(target: str, text: str) -> list[str] | None:
    """What the container a target names holds ("apple tree in self watering flower pot 6" -> the items
    of "a self watering flower pot 6 (containing a apple tree in the seedling stage, soil)" in ``text``,
    a look or inventory, normalized); None when the target names no container or ``text`` lists none."""
    head = focus_head(target)
    rest = normalize(target)[len(head) :]
    container = ""
    for marker in (" in ", " on "):
        if rest.startswith(marker):
            container = rest[len(marker) :].split(" in ", 1)[0].split(" on ", 1)[0]
    if not container:
        return None
    for match in _CONTAINS.finditer(text):
        if normalize(match.group(1)) == container:
            return [normalize(i) for i in match.group(2).split(",") if i.strip()]
    return None


def focus_contents_mismatch(target: str, look: str, inventory: str, task_description: str) -> str | None:
    """The contents a focus on a container's contents would land on, when the task does not name them.

    "focus on substance in metal pot" focuses on whatever the pot holds (``resolve_focus_target``); in
    "Your task is to boil lead" a pot holding water makes that a focus on the water, which fails the task
    (-100). Returns the contents' name ("water") when none of its words occurs in the task description;
    None when the target names an object itself, the contents are unknown, or the task names them. Gate-1
    and Swift's safety policy both refuse such a focus."""
    if focus_head(target) not in GENERIC_TARGETS:
        return None
    resolved = resolve_focus_target(target, look, inventory)
    if resolved in GENERIC_TARGETS:
        return None
    named = set(_DESCRIPTION_WORD.findall(task_description.lower())) - DESCRIPTION_STOPWORDS
    found = set(_DESCRIPTION_WORD.findall(resolved)) - DESCRIPTION_STOPWORDS
    return None if found & named else resolved


@dataclass(frozen=True)
class FocusObject:
    """The object a focus lands on, as one state describes it (``focus_object``, ``landed_object``).

    A name stays while an object's contents change: "paint in bowl" is the orange paint before a mix and
    the yellow-orange paint after it, and a bowl holding orange paint is not the bowl holding the
    yellow-orange paint as far as a focus goes. So an object is its resolved name plus what it holds."""

    head: str
    """``focus_head`` of the target as written ("paint in bowl" -> "paint")."""
    name: str | None
    """The object's own name in the state ("yellow-orange paint"); None when the look and inventory do
    not pin it down (several candidates, or none listed)."""
    contents: tuple[str, ...] | None = None
    """What it holds when the state lists it as a container (sorted, normalized; () for "nothing");
    None: not a listed container, or its listings disagree."""

    def same(self, earlier: FocusObject) -> bool:
        """Whether focusing on this object again focuses on ``earlier``: same name and, both known,
        same contents. A name the state does not pin down is compared as written (its head against
        the earlier target's head and name), which is all a text can say."""
        if self.name is None:
            return self.head in (earlier.head, earlier.name)
        if self.name != earlier.name:
            return False
        return self.contents is None or earlier.contents is None or self.contents == earlier.contents


def _split_contents(text: str) -> tuple[str, ...]:
    """Contents as a listing or a referent writes them ("red paint, yellow paint", "red paint and
    yellow paint", "nothing"), normalized and sorted; "substance called" dropped."""
    items = []
    for part in re.split(r",| and ", text):
        item = normalize(part).removeprefix("substance called ")
        if item and item != "nothing":
            items.append(item)
    return tuple(sorted(items))


@lru_cache(maxsize=64)
def container_listings(text: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Every "<name> (containing <contents>)" of a look or inventory: (normalized name, contents as
    ``_split_contents`` reads them), in order ("a bowl (containing red paint, yellow paint)" ->
    ("bowl", ("red paint", "yellow paint")))."""
    return tuple((normalize(m.group(1)), _split_contents(m.group(2))) for m in _CONTAINS.finditer(text))


@lru_cache(maxsize=64)
def described_contents(text: str) -> dict[str, tuple[str, ...]]:
    """The words that describe the contents of the containers a look or inventory lists, keyed by every
    "<name> in <container>" an action may call them (normalized), the name being the item or any
    of its endings: "a self watering flower pot 9 (containing a apricot tree in the seedling stage, soil)"
    -> {"apricot tree in self watering flower pot 9": ("seedling",), "tree in self watering flower pot 9":
    ("apricot", "seedling"), ...}; "dead apricot tree" -> "apricot tree in ...": ("dead",). What an item
    carries ("On the apricot tree you see: a flower.") is cut off; an item that says nothing beyond its
    name has no entry. Swift's object-state keys read it (``swift.features``): the stage of a plant is in
    the look, never in the valid action that focuses on it. The dict is cached: read it, never change it."""
    out: dict[str, tuple[str, ...]] = {}
    for container, items in container_listings(text):
        for item in items:
            words = item.split(" on ", 1)[0].split()
            base = " ".join(words).split(" in ", 1)[0].split()
            for i in range(len(base)):
                named = base[i:]
                extra = tuple(w for w in words if w not in named and w not in _STATE_FILLER)
                if extra:
                    out.setdefault(f"{' '.join(named)} in {container}", extra)
    return out


_STATE_FILLER = frozenset({"in", "stage"})
"""Words of a described item that say nothing about its state ("in the seedling stage")."""


def _names_container(referent: str, name: str, contents: tuple[str, ...]) -> bool:
    """Whether ScienceWorld's ``referent`` (normalized, no location) names the listed container: its
    name or last word ("wood cup", "cup"), or "<noun> containing <its contents joined by 'and'>"."""
    noun, found, held = referent.partition(" containing ")
    if noun and noun not in (name, name.split()[-1]):
        return False
    return not found or _split_contents(held) == contents


def _listed_container(referent: str, text: str) -> tuple[str, tuple[str, ...]] | None:
    """The one container listing of ``text`` a referent names, a trailing "in <place>" / "on <place>"
    tried without as well ("cup containing red paint in art studio"); None when none or several
    distinct listings match."""
    forms = [referent]
    for marker in (" in ", " on "):
        cut = referent.rfind(marker)
        while cut > 0:
            forms.append(referent[:cut])
            cut = referent.rfind(marker, 0, cut)
    listings = container_listings(text)
    for form in forms:
        hits = {(name, held) for name, held in listings if _names_container(form, name, held)}
        if hits:
            return hits.pop() if len(hits) == 1 else None
    return None


def _denotes(item: str, named: str) -> bool:
    """Whether a listed content may be what a target's object part names: itself, an item ending in it
    ("yellow-orange paint" for "paint"), or it in a described state ("apple tree in the seedling
    stage" for "apple tree")."""
    return item == named or item.endswith((" " + named, "-" + named)) or item.startswith(named + " in ")


def focus_object(target: str, look: str, inventory: str = "") -> FocusObject:
    """The object ``focus on <target>`` denotes in the state of ``look`` and ``inventory``.

    - "<object> in|on <container>" with the container listed: the one item of its contents the object
      part names ("paint in cup containing violet-red paint" -> "violet-red paint"; "apple tree in self
      watering flower pot 6" -> "apple tree in seedling stage"), or its single content for a generic
      "substance" ("substance in metal pot" -> "water");
    - "<noun> containing <contents> [in <place>]": the listed container with those contents, and them;
    - a plain name: itself when the state lists an object of that name, with its contents if it is a
      container whose listings agree;
    - anything else (nothing listed matches, or several things do): name None (``FocusObject.same``
      then compares the text)."""
    text = f"{look}\n{inventory}"
    norm = normalize(target)
    head = focus_head(norm)
    if norm.startswith(head + " containing "):
        found = _listed_container(norm, text)
        return FocusObject(head, found[0], found[1]) if found else FocusObject(head, None)
    for cut in (m.start() for m in _IN_ON.finditer(norm, len(head))):
        holder = _listed_container(norm[cut + 4 :], text)
        if holder is None:
            continue
        named = norm[:cut]
        if head in GENERIC_TARGETS and named == head:
            items = list(holder[1])
        else:
            items = [item for item in holder[1] if _denotes(item, named)]
        if len(items) == 1:
            return FocusObject(head, items[0])
    if head not in object_names(text):
        return FocusObject(head, None)
    held = {contents for name, contents in container_listings(text) if name == head}
    return FocusObject(head, head, held.pop() if len(held) == 1 else None)


def landed_object(target: str, observation: str, look: str = "", inventory: str = "") -> FocusObject | None:
    """The object a sent ``focus on <target>`` landed on, None when ScienceWorld did not confirm it.

    Its name is what ``focus_object`` read in the state the focus was sent in (``look``, ``inventory``)
    when that agrees with ScienceWorld's confirmation ("You focus on the apple tree." for "apple tree in
    seedling stage"), else the confirmation's ("You focus on the violet paint." -> "violet paint");
    its contents are that state's (unknown without it)."""
    confirmed = focus_confirmed(observation)
    if confirmed is None:
        return None
    name = normalize(confirmed).removeprefix("substance called ")
    then = focus_object(target, look, inventory)
    if then.name is not None and (then.name == name or then.name.startswith(name + " in ")):
        return then
    return FocusObject(then.head, name)


def focus_repeats(
    target: str, look: str, inventory: str, landed: Sequence[FocusObject]
) -> FocusObject | None:
    """The earlier focus (``landed``: ``landed_object`` of each confirmed one) that ``focus on
    <target>`` would repeat in the current state, else None: never focus twice on the same object."""
    now = focus_object(target, look, inventory)
    return next((earlier for earlier in landed if now.same(earlier)), None)


_DESCRIPTION_WORD = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


_ROOM_CALLED = re.compile(r"called the ([^.]+)\.")


def room_called(look: str) -> str:
    """The room a look text is in ("This room is called the kitchen." -> "kitchen"; '' if none)."""
    match = _ROOM_CALLED.search(look)
    return match.group(1).strip().lower() if match else ""


_FOCUS_PHRASE = re.compile(r"focus on (?:the |a |an )?([^.,]+)")
_STATED_FOCI = re.compile(r"focus on the (\d+) life stages")


def stated_focus_count(task_description: str) -> int | None:
    """The number of things a task description says to focus on ("focus on the 4 life stages of the
    turtle" -> 4), None when it states none."""
    match = _STATED_FOCI.search(task_description.lower())
    return int(match.group(1)) if match else None


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def instructed_focus_count(task_description: str) -> int:
    """How many focus actions a task description instructs, read from its sentences: each sentence that
    says "focus on" is one, except that a run of conditional alternatives ("If it is above 50 degrees,
    focus on the blue box. If it is below, focus on the orange box.") is one choice. "First, focus on the
    thermometer. Next, focus on the chocolate. If ..., focus on the blue box. If ..., focus on the orange
    box." -> 3. 0 when no sentence says "focus on".

    Matches the number of distinct focus actions of every gold path in the 517 train episodes checked
    (docs/srm.md, "The focus budget without the task logic"), except identify-life-stages-2, whose
    "focus on the life stages of the apple plant" names no number (1 here, 4 in its gold paths)."""
    text = task_description.lower().replace("task description:", "").strip()
    count, after_condition = 0, False
    for sentence in _SENTENCE_END.split(text):
        if "focus on" not in sentence:
            after_condition = False
            continue
        condition = sentence.startswith("if ")
        if not (condition and after_condition):
            count += 1
        after_condition = condition
    return count


def content_words(text: str) -> set[str]:
    """Words of ``text`` that can name an object (stopwords and boilerplate removed)."""
    found = _DESCRIPTION_WORD.findall(text.lower())
    return {w for w in found if w not in DESCRIPTION_STOPWORDS and len(w) > 1}


def focus_words(task_description: str) -> set[str]:
    """Words that may name a focus target: the "focus on ..." phrases ("focus on the blue box"), the
    first sentence, which names the task's subject ("Your task is to melt lead."; its "focus on the
    substance" means the lead), and "substance", ScienceWorld's name for matter poured into a container
    ("substance in ceramic cup" for the tin of a melting-point task)."""
    text = task_description.lower().replace("task description:", "").strip()
    phrases = _FOCUS_PHRASE.findall(text)
    first_sentence = text.split(". ", 1)[0]
    return content_words(" ".join([*phrases, first_sentence])) | {"substance"}


_DESTINATION = re.compile(
    r"\b(?:move|place|put) (?:it|them) (?:to|in|into) the ([a-z0-9 -]+?)(?: in the [a-z ]+)?[.,]"
)


@lru_cache(maxsize=256)
def task_destinations(task_description: str) -> frozenset[str]:
    """The containers a task says to put its object into ("move it to the red box in the kitchen",
    "place it in the green box"): where the focused thing goes, never the thing, unless a "focus on"
    phrase names it too ("if the trait is dominant, focus on the red box")."""
    text = task_description.lower()
    named = {normalize(p) for p in _FOCUS_PHRASE.findall(text)}
    return frozenset({normalize(d) for d in _DESTINATION.findall(text)} - named)


_PHRASE_HEAD_END = re.compile(r" (?:with|of|in|on|which|that|you) |\(")


def names_part_of_focus_phrase(target: str, task_description: str) -> bool:
    """Whether ``target`` is a fragment of a thing the task says to focus on that leaves out its noun:
    "orange" (the fruit) for "focus on the orange paint", "red" for "the red light bulb". The phrase is
    read up to its first relation or parenthesis ("inclined plane" of "the inclined plane with the most
    friction"), without one-letter labels ("unknown substance" of "unknown substance B" is the same
    thing, as ScienceWorld's valid list writes it)."""
    words = set(normalize(target).split())
    return any(words < set(head) and head[-1] not in words for head in _focus_heads(task_description))


@lru_cache(maxsize=256)
def _focus_heads(task_description: str) -> tuple[tuple[str, ...], ...]:
    """The word lists of a task's focus phrases up to their first relation, of two words or more."""
    heads = []
    for phrase in _FOCUS_PHRASE.findall(task_description.lower()):
        head = tuple(
            w for w in normalize(_PHRASE_HEAD_END.split(phrase, maxsplit=1)[0]).split() if len(w) > 1
        )
        if len(head) >= 2:
            heads.append(head)
    return tuple(heads)


_OBJECT_SPLIT = re.compile(r"[\n\t,:;()]|\. ")
_OBJECT_PREFIXES = ("containing ", "a substance called ", "substance called ", "a ", "an ", "the ", "some ")


def object_names(text: str) -> list[str]:
    """The names of the objects a look, inventory or observation lists, nested ones included, in
    canonical form ("a metal pot (containing a substance called liquid lead)" -> "metal pot",
    "liquid lead"); descriptions after a name ("which is turned on") stay out."""
    return list(_object_names(text))


@lru_cache(maxsize=1024)
def _object_names(text: str) -> tuple[str, ...]:
    """``object_names``, cached: Swift's safety policy asks it of the same look for every focus
    candidate of every decision."""
    names = []
    for part in _OBJECT_SPLIT.split(text.lower()):
        part = part.strip().rstrip(".")
        changed = True
        while changed:
            changed = False
            for prefix in _OBJECT_PREFIXES:
                if part.startswith(prefix):
                    part, changed = part[len(prefix) :], True
        head = normalize(part.split(" which ", 1)[0])
        if head:
            names.append(head)
    return tuple(names)


def teleport_targets(valid_actions: Sequence[str]) -> set[str]:
    """Rooms the valid actions can teleport to (under "easy": every room)."""
    prefix = TELEPORT + " "
    return {a[len(prefix) :] for a in valid_actions if a.startswith(prefix)}


def known_rooms(valid_actions: Sequence[str], visited: Iterable[str] = ()) -> set[str]:
    """Room names the agent can know of now: teleport targets and rooms visited."""
    return teleport_targets(valid_actions) | set(visited)


def places(valid_actions: Sequence[str], visited: Iterable[str] = ()) -> set[str]:
    """Names that are never a focus target: known rooms, the agent and the inventory."""
    return known_rooms(valid_actions, visited) | NON_OBJECTS


_IF_SENTENCE = re.compile(r"^if (.+?), ([a-z ]+?) the ([a-z0-9 -]+?)\.?$")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@lru_cache(maxsize=256)
def conditional_alternatives(task_description: str) -> tuple[Alternative, ...]:
    """The description's "If <condition>, <do something with> the <target>." sentences, in order
    (ScienceWorld's judgement tasks: measure-and-sort, conductivity, Mendelian genetics); () for a
    task without any."""
    text = task_description.lower().replace("task description:", "").strip()
    out = []
    for sentence in _SENTENCE_END.split(text):
        match = _IF_SENTENCE.match(sentence.strip())
        if match:
            number = _NUMBER.search(match.group(1))
            out.append(Alternative(match.group(1), match.group(3), float(number.group()) if number else None))
    return tuple(out)


_READING = re.compile(r"measures a temperature of (-?\d+(?:\.\d+)?) degrees")
STATES_OF_MATTER = ("solid", "liquid", "gas")
"""ScienceWorld's prefixes of a substance's state ("liquid lead")."""


def thermometer_reading(observation: str) -> float | None:
    """The temperature a thermometer observation reports ("the thermometer measures a temperature of
    56 degrees celsius" -> 56.0), None for any other observation."""
    match = _READING.search(observation)
    return float(match.group(1)) if match else None


_DEVICE_STATE = re.compile(r", which is (?:turned )?([a-z]+)")


def device_states(text: str) -> frozenset[str]:
    """The states a room description gives its devices ("a red light bulb, which is on", "a switch,
    which is off" -> {"on", "off"})."""
    return frozenset(_DEVICE_STATE.findall(text.lower()))


# -- the world seam ----------------------------------------------------------------------------------
_ROOM = re.compile(r"This room is called the ([^.]+)\.")


def room_of(look: str) -> str:
    """The room named in a ``look around`` text ('' if none)."""
    match = _ROOM.search(look)
    return match.group(1).strip() if match else ""
