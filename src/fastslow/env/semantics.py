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

**Judgements** (issue #16) the fast pathway's policy and Gate-1 share: what a focus lands on
(``focus_contents_mismatch``), the life-stages order (``life_stage_violation``) and the thermometer
tasks' box (``measurement_violation``, reading substance states; its one data file, the substance
knowledge ``env/data/substances.json``, is read here with the standard library too), and the matter
tasks' subject and goal state (``matter_task``, ``subject_names``).

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
counts it (an unexecuted step, as its invalid_loop always did); AMM's avoidance records are for
``invalid`` actions only (an ambiguity or a refusal says nothing about the action elsewhere). A
refusal such as "You cannot do that." (not a text ScienceWorld 1.2.3 emits) is a failure to
escalation and stagnation alike, and no avoidance record.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cache, lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

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
TELEPORT = "teleport to"
NAVIGATION_VERBS = frozenset({TELEPORT, "go to"})
"""Verbs that only change the agent's room."""
_PARTICLES = frozenset({"up", "down", "at", "in", "to", "on", "around"})
"""Second words that belong to the verb: "pick up", "look at", "look in", "go to", "focus on", ..."""
ARGUMENT_JOINERS: tuple[str, ...] = (" into ", " in ", " to ", " on ", " from ")
"""Words that join the two objects of an action ("move A to B"), in the order ``arguments`` tries them."""


# -- stopwords -------------------------------------------------------------------------------------------
def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOPWORDS = _wordset("a an the of to in on into from and with is it that")
"""Function words that name no object. Swift's hashed features drop exactly these: the packaged weights
were trained with this set, so changing it changes every feature of every action."""
RECORD_STOPWORDS = STOPWORDS | _wordset(
    """are as at be by for has have here its or their then there these this was were which you your
    called room see also contains containing nothing"""
)
"""AMM record search: words in nearly every ScienceWorld text, matching on them only costs search time."""
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
_QUOTES = re.compile(r"[`\"“”‘’*]")
_TRAILING = re.compile(r"[\s.;:!,]+$")
_EDGE_APOSTROPHES = re.compile(r"^'+|'+$")


@lru_cache(maxsize=1 << 16)
def normalize(action: str) -> str:
    """Canonical form: lower case, no punctuation or articles, single spaces."""
    text = _PUNCT.sub(" ", action.lower())
    return " ".join(w for w in _SPACES.split(text) if w and w not in _ARTICLES)


@lru_cache(maxsize=1 << 16)
def clean(action: str) -> str:
    """Lower-case, unquoted, single-spaced action text (no trailing punctuation); every word kept."""
    text = _QUOTES.sub("", action).strip().lower()
    text = _TRAILING.sub("", text)
    text = _EDGE_APOSTROPHES.sub("", text)
    return " ".join(text.split())


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


# -- feedback --------------------------------------------------------------------------------------------
NO_MATCH = "No known action matches that input."
"""ScienceWorld's reply to an action its parser does not know."""
AMBIGUOUS = "Ambiguous request"
"""Start of ScienceWorld's question when an action matched several objects."""
CANCELLED = "Unknown action."
"""Start of ScienceWorld's reply when an ambiguity prompt was answered with anything but an option number."""
DEFAULT_FAILURE_MARKERS: tuple[str, ...] = ("can't", "not", "doesn't")
"""SwiftSage's failure-message words; ``env.failure_markers`` in the run configuration defaults to these."""


class Feedback(StrEnum):
    """What one observation says about the action that produced it (module docstring: the rules)."""

    OK = "ok"
    INVALID = "invalid"
    AMBIGUOUS = "ambiguous"
    CANCELLED = "cancelled"
    FAILURE = "failure"
    NO_EFFECT = "no_effect"


SWIFTSAGE_FAILURES = frozenset({Feedback.INVALID, Feedback.FAILURE})
"""SwiftSage's failure messages: escalation's failure streak, the buffer's failure limit, Sage's list."""
STAGNATION_FAILURES = frozenset({Feedback.INVALID, Feedback.AMBIGUOUS, Feedback.FAILURE})
"""Steps SRM's invalid_loop counts: input ScienceWorld did not execute, or refused."""
AVOIDANCE_FEEDBACK = frozenset({Feedback.INVALID})
"""Feedback AMM stores as an invalid-action avoidance record (and leaves out of a record's context)."""

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


LIFE_STAGE_TASKS = frozenset({"identify-life-stages-1", "identify-life-stages-2"})
"""Tasks that ask for foci on an organism's life stages, from earliest to latest."""

LIFE_STAGES: dict[str, int] = {
    "egg": 0,
    "seed": 0,
    "baby": 1,
    "hatchling": 1,
    "tadpole": 1,
    "larva": 1,
    "caterpillar": 1,
    "seedling": 1,
    "juvenile": 2,
    "pupa": 2,
    "chrysalis": 2,
    "cocoon": 2,
    "adult": 3,
    "reproducing": 4,
}
"""Rank of each stage word ScienceWorld's organisms use, earliest first. Every organism's own sequence
is increasing in it: turtle egg 0, hatchling 1, juvenile 2, adult 3; wolf baby 1, juvenile 2, adult 3;
toad egg 0, tadpole 1, adult 3; moth egg 0, larva 1, pupa 2, adult 3; a plant's seed 0, seedling 1,
adult 3, reproducing 4 ("apple tree in the seedling stage")."""

_N_STAGES = re.compile(r"the (\d+) life stages")
_LIFE_OF = re.compile(r"life stages of (?:the |a |an )?([a-z][a-z -]*?)(?:,| starting|\.|$)")


def life_stage(target: str, look: str = "") -> int | None:
    """The stage rank (``LIFE_STAGES``) a focus target names: "egg turtle in outside" -> 0, "apple tree in
    the adult stage in self watering flower pot 6" -> 3; a target naming a pot but no stage takes the
    stage of what the pot holds in ``look`` ("apple tree in self watering flower pot 6", the pot
    "containing a apple tree in the seedling stage" -> 1). None when no stage is named."""
    ranks = [LIFE_STAGES[w] for w in normalize(target).split() if w in LIFE_STAGES]
    if not ranks and look:
        head = focus_head(target)
        for item in container_items(target, look) or []:
            if item.startswith(head):
                ranks = [LIFE_STAGES[w] for w in item.split() if w in LIFE_STAGES]
    return max(ranks) if ranks else None


def life_stage_violation(
    target: str, valid_actions: Sequence[str], focused: Sequence[str], task_description: str, look: str = ""
) -> str | None:
    """Why focusing on ``target`` now breaks a life-stages task's order, else None.

    The judgement training cannot imitate for unseen organisms: a focus must name a stage, come after
    every stage focused on so far (``focused``: targets of the confirmed foci), be the task's organism
    ("life stages of the common toad": it shares a word with it, or is a plant's generic "plant"), and
    no valid focus on the same organism may name a stage between the two (that one comes first). A
    plant's stages are always all four, so its next one is the only one allowed; an animal's adult stage
    is its last, so it is allowed as the task's last focus ("the 4 life stages") and only then."""
    rank = life_stage(target, look)
    if rank is None:
        return "it names no life stage"
    match = _LIFE_OF.search(" ".join(task_description.lower().split()))
    subject = match.group(1).split() if match else []
    organism = set(subject) - {"plant"}
    plant = "plant" in subject
    if plant:
        # A plant's four stages are always there (seed, seedling, adult, reproducing): none is skipped.
        # Its foci name pots whose plants grow, so the stages done are counted, not read again.
        last = PLANT_STAGES[min(len(focused), len(PLANT_STAGES)) - 1] if focused else -1
    else:
        last = max((r for r in (life_stage(t) for t in focused) if r is not None), default=-1)
    if rank <= last:
        return "an equal or later stage has been focused on already"

    def same_organism(text: str) -> bool:
        words = set(normalize(text).split())
        return not organism or bool(words & organism) or normalize(text).startswith("plant ")

    if not same_organism(target):
        return f"it is not a {' '.join(sorted(organism))}"
    if plant:
        following = min((r for r in PLANT_STAGES if r > last), default=None)
        if rank != following:
            return "a plant goes seed, seedling, adult, reproducing"
    else:
        # An animal's last stage is its adult one, and the task says how many stages it has: the adult
        # comes last, and only last (a frog's egg hatches into a tadpole later: the adult is no shortcut).
        count = _N_STAGES.search(task_description.lower())
        if count is not None:
            final = len(focused) + 1 == int(count.group(1))
            if final != (rank == LIFE_STAGES["adult"]):
                return "the adult is the last stage" if final else "the adult stage comes last"
    prefix = FOCUS + " "
    for action in valid_actions:
        if not action.startswith(prefix):
            continue
        other = action[len(prefix) :]
        between = life_stage(other, look)
        if between is not None and last < between < rank and same_organism(other):
            return f"'{other}' is an earlier stage"
    return None


PLANT_STAGES = (0, 1, 3, 4)
"""The stage ranks of ScienceWorld's plants, in order (identify-life-stages-2's gold paths)."""


# -- substances: their states, and what train gold paths showed of them ------------------------------
# ScienceWorld names a substance plainly in its room-temperature state and puts a state word before the
# name otherwise: "tin" is solid, "liquid tin" melted; "mercury" is liquid, "solid mercury" frozen (water
# alone has names of its own: ice, water, steam). A melting-point reading on "chocolate" proves nothing
# until one knows what plain chocolate is. ``fastslow data substances`` (``swift.knowledge``) replays
# train gold paths of the matter and thermometer tasks, which heat or cool substances through their
# changes, and writes ``env/data/substances.json``: each substance's state words seen, the plain state
# they leave and the melting-point bounds its readings proved. Only train variations are read; a
# substance no train path changed stays unknown, and the judgement waits for the episode's own readings.

STATE_PREFIXES = {"solid": "solid", "liquid": "liquid", "gaseous": "gas"}
"""ScienceWorld names a substance out of its room-temperature state with one of these words first."""
WATER_STATES = {"ice": "solid", "water": "liquid", "steam": "gas"}
"""Water is the one substance whose states have names of their own."""
SUBSTANCES_FILE = "substances.json"
"""The shipped knowledge, next to the task table in ``fastslow/env/data``."""
_NAMED = re.compile(r"\b(solid|liquid|gaseous) ([a-z][a-z ]*?)(?=[,.;:()\n]| in | on | which |$)")


def named_states(text: str) -> dict[str, set[str]]:
    """Substance -> the states ``text`` names it in with a state word ("a metal pot (containing liquid
    chocolate)" -> chocolate: liquid). The per-variation unknown substances ("solid unknown substance
    C") are left out: their letters name different substances in different variations."""
    out: dict[str, set[str]] = {}
    for prefix, name in _NAMED.findall(text.lower()):
        name = name.strip()
        if name and not name.startswith("unknown substance"):
            out.setdefault(name, set()).add(STATE_PREFIXES[prefix])
    return out


def plain_state(prefixed: set[str]) -> str | None:
    """The room-temperature state of a substance seen written with the ``prefixed`` state words: solid
    when only liquid or gas were written (it melted or boiled), liquid when solid was written but not
    liquid (it froze); None otherwise: nothing written, or solid and liquid both (ScienceWorld writes
    "solid chocolate" in a freezer although plain chocolate is solid too)."""
    if "solid" not in prefixed and prefixed & {"liquid", "gas"}:
        return "solid"
    if "solid" in prefixed and "liquid" not in prefixed:
        return "liquid"
    return None


def substances_path() -> Path:
    return Path(str(resources.files("fastslow.env").joinpath("data", SUBSTANCES_FILE)))


@cache
def _knowledge() -> dict[str, dict[str, object]]:
    path = substances_path()
    if not path.exists():
        return {}
    substances: dict[str, dict[str, object]] = json.loads(path.read_text(encoding="utf-8"))["substances"]
    return substances


def known_plain_states() -> dict[str, str]:
    """Substance -> its room-temperature state, from the shipped file (empty if it is missing)."""
    return {name: str(entry["plain"]) for name, entry in _knowledge().items() if entry.get("plain")}


def known_melting_bounds(substance: str) -> tuple[float, float]:
    """(above, at most) bounds on a substance's melting point that train readings proved (solid at t:
    above t; liquid or gas at t: at most t); (-inf, inf) when none did."""
    entry = _knowledge().get(substance, {})
    low, high = entry.get("melts_above"), entry.get("melts_at_most")
    return (
        float(low) if isinstance(low, int | float) else -math.inf,
        float(high) if isinstance(high, int | float) else math.inf,
    )


# -- thermometer judgement: a measured value against the task's threshold ------------------------------

MEASUREMENT_TASKS = frozenset(
    {"measure-melting-point-known-substance", "measure-melting-point-unknown-substance", "use-thermometer"}
)
"""Tasks that end with a choice between two boxes by a measured temperature against a threshold."""


@dataclass(frozen=True)
class Measurement:
    """What a measurement task asks: the quantity of ``subject`` against ``threshold`` (degrees
    celsius), then a focus on (or, ``place``, putting the subject into) the ``above`` or ``below`` box."""

    quantity: Literal["melting point", "temperature"]
    subject: str
    threshold: float
    above: str
    below: str
    place: bool
    boxes_in: str | None = None
    """The room the task says the boxes are in ("The boxes are located around the kitchen.")."""


_MEASURE = re.compile(
    r"if the (?:melting point of (?P<melt>.+?)|(?P<temp>.+?) temperature) is above (?P<t>-?\d+(?:\.\d+)?) "
    r"degrees celsius, (?P<verb>focus on|place it in) the (?P<above>[a-z ]+?)\. "
    r"if the .+? is below -?\d+(?:\.\d+)? degrees celsius, (?:focus on|place it in) the (?P<below>[a-z ]+?)\."
)
_BOXES_IN = re.compile(r"the boxes are located around the ([a-z ]+?)\.")
_ROOM_CALLED = re.compile(r"called the ([^.]+)\.")
READING = re.compile(r"the thermometer measures a temperature of (-?\d+(?:\.\d+)?) degrees celsius")
_CALLED = re.compile(r"^a substance called (.+?)\.?$")


def measurement_task(task_description: str) -> Measurement | None:
    """The measurement a task description asks for, or None ("If the melting point of tin is above 50.0
    degrees celsius, focus on the red box. If ... below ..., focus on the green box.")."""
    text = " ".join(task_description.lower().split())
    match = _MEASURE.search(text)
    if match is None:
        return None
    melt = match.group("melt")
    return Measurement(
        quantity="melting point" if melt else "temperature",
        subject=(melt or match.group("temp")).strip(),
        threshold=float(match.group("t")),
        above=normalize(match.group("above")),
        below=normalize(match.group("below")),
        place=match.group("verb") == "place it in",
        boxes_in=boxes.group(1) if (boxes := _BOXES_IN.search(text)) else None,
    )


def _subject_core(subject: str) -> list[str]:
    words = normalize(subject).split()
    return words[1:] if words and words[0] in STATE_PREFIXES else words


def subject_words(subject: str) -> set[str]:
    """The words that name a measured subject in actions: its name without a state word and without an
    unknown substance's letter, which ScienceWorld's valid actions drop ("use thermometer on unknown
    substance" for unknown substance B)."""
    return {w for w in _subject_core(subject) if len(w) > 1}


def names_subject(name: str, subject: str) -> bool:
    """Whether an object name (a head, without qualifiers) is the measured subject under any of its
    names: "liquid tin" and "tin" are tin, "tin cup" is not; "unknown substance" is unknown substance B;
    "ice" and "steam" are water."""
    words = normalize(name).split()
    core = subject_words(subject)
    if core == {"water"}:
        return len(words) == 1 and words[0] in WATER_STATES
    if words and words[0] in STATE_PREFIXES:
        words = words[1:]
    return bool(core) and {w for w in words if len(w) > 1} == core


def substance_state(name: str, subject: str) -> str | None:
    """The state a name gives the subject ("liquid tin" -> liquid, "ice" -> solid for water), "bare"
    for the subject's plain name (its room-temperature state, known only from its other names), None
    when the name is not the subject's ("tin cup")."""
    head = focus_head(name)
    if not names_subject(head, subject):
        return None
    first = head.split()[0]
    if subject_words(subject) == {"water"}:
        return WATER_STATES[first]
    return STATE_PREFIXES.get(first, "bare")


def thermometer_readings(measure: Measurement, steps: Sequence[tuple[str, str]]) -> list[tuple[float, str]]:
    """(temperature, state) of each thermometer reading of the subject among executed (action,
    observation) steps. A reading names its target; a container's contents ("substance in metal
    pot") take the name the last ``examine`` of that target gave ("a substance called liquid tin")."""
    called: dict[str, str] = {}
    readings: list[tuple[float, str]] = []
    for action, observation in steps:
        act = clean(action)
        if act.startswith("examine "):
            found = _CALLED.match(observation.strip().lower())
            if found:
                called[act[len("examine ") :]] = found.group(1)
            continue
        reading = READING.search(observation)
        if reading is None or not act.startswith("use thermometer") or " on " not in act:
            continue
        target = act.split(" on ", 1)[1]
        name = called.get(target, "") if target.startswith("substance in ") else target
        state = substance_state(name, measure.subject) if name else None
        if state is not None:
            readings.append((float(reading.group(1)), state))
    return readings


def measured_choice(measure: Measurement, readings: Sequence[tuple[float, str]]) -> str | None:
    """The box the readings decide, or None while they do not.

    A temperature task reads its last reading against the threshold. A melting point is bounded by the
    readings: solid at t means it lies above t, liquid or gas at t that it lies at or below t. The plain
    name is the state its other names are not ("tin" is solid once "liquid tin" was seen; "mercury"
    liquid once "solid mercury" was), or before that what train gold paths showed of it
    (``known_plain_states``: lead is solid); the bounds train readings proved of the
    substance join the episode's (``known_melting_bounds``). Above the threshold when the lower bound
    is at least the threshold, below when the upper bound is at most it."""
    if not readings:
        return None
    if measure.quantity == "temperature":
        value = readings[-1][0]
        if value == measure.threshold:
            return None
        return measure.above if value > measure.threshold else measure.below
    states = {state for _, state in readings}
    bare = "solid" if "liquid" in states else "liquid" if "solid" in states else None
    core = " ".join(_subject_core(measure.subject))
    if bare is None:  # the episode showed no other name: what train gold paths showed (substances.json)
        bare = known_plain_states().get(core)
    low, high = known_melting_bounds(core)  # what train readings proved of it, if anything
    for value, named in readings:
        state = bare if named == "bare" else named
        if state == "solid":
            low = max(low, value)
        elif state in ("liquid", "gas"):
            high = min(high, value)
    if low >= measure.threshold:
        return measure.above
    if high <= measure.threshold:
        return measure.below
    return None


def measured_object(measure: Measurement, head: str) -> bool:
    """Whether a focus head (``focus_head``) is one of the things a measurement task focuses on: the
    thermometer, the subject (any of its names; a container's "substance", whose contents
    ``focus_contents_mismatch`` checks) or one of the two boxes. "orange" is none of them when the task
    measures orange juice and names an orange box."""
    return head in ("thermometer", "substance", measure.above, measure.below) or names_subject(
        head, measure.subject
    )


def subject_focus(
    measure: Measurement, valid_actions: Sequence[str], look: str, inventory: str
) -> str | None:
    """The shortest valid focus on the measured subject, by its name ("focus on tin") or as a
    container's contents the look or inventory shows are it ("focus on substance in cup" holding the
    water); None when the subject is not in reach."""
    picks = []
    for action in valid_actions:
        target = focus_target(action)
        if target is not None and names_subject(
            resolve_focus_target(target, look, inventory), measure.subject
        ):
            picks.append(action)
    return min(picks, key=len, default=None)


def room_called(look: str) -> str:
    """The room a look text is in ("This room is called the kitchen." -> "kitchen"; '' if none)."""
    match = _ROOM_CALLED.search(look)
    return match.group(1).strip().lower() if match else ""


def measurement_violation(
    measure: Measurement, head: str, steps: Sequence[tuple[str, str]], foci: int, *, placing: bool = False
) -> str | None:
    """Why focusing on ``head`` (a focus head; ``placing``: a box the subject is put into) now breaks a
    measurement task, else None: only the thermometer, the subject and the boxes are focused on
    (``measured_object``), and no box where the task puts the subject into one ("place it in the red
    box"); a box comes after the thermometer and the subject (``foci``: confirmed so far) and must be
    the one the readings decide (``measured_choice``)."""
    if not placing and not measured_object(measure, head):
        return f"the task focuses on the thermometer, the {measure.subject} and a box, not '{head}'"
    box = head
    if box not in (measure.above, measure.below):
        return None
    if measure.place and not placing:
        return f"the task puts the {measure.subject} into a box; it focuses on none"
    if foci < 2:
        return "the thermometer and the subject are focused on first"
    choice = measured_choice(measure, thermometer_readings(measure, steps))
    if choice is None:
        return f"no reading decides the {measure.quantity} of {measure.subject} against {measure.threshold:g}"
    if choice != box:
        return f"the readings put the {measure.quantity} on the {choice}'s side"
    return None


# -- matter tasks: a substance's change of state -----------------------------------------------------

MATTER_TASKS = frozenset({"boil", "melt", "freeze", "change-the-state-of-matter-of"})
"""Tasks that focus on a substance and then change its state of matter."""
_MATTER = re.compile(
    r"your task is to (boil|melt|freeze|change the state of matter of) (?:the |a |an )?([a-z][a-z ]*?)\."
)
_GOALS: dict[str, Literal["solid", "liquid", "gas", "any"]] = {
    "boil": "gas",
    "melt": "liquid",
    "freeze": "solid",
    "change the state of matter of": "any",
}
_OBJECT_SPLIT = re.compile(r"[\n\t,:;()]|\. ")
_OBJECT_PREFIXES = ("containing ", "a substance called ", "substance called ", "a ", "an ", "the ", "some ")


@dataclass(frozen=True)
class MatterChange:
    """What a matter task asks: focus on ``subject``, then bring it into the ``goal`` state ("any":
    any change; boil accepts combustion too)."""

    subject: str
    goal: Literal["solid", "liquid", "gas", "any"]


def matter_task(task_description: str) -> MatterChange | None:
    """The change a matter task asks for ("Your task is to boil lead." -> lead, gas), or None."""
    match = _MATTER.search(" ".join(task_description.lower().split()))
    if match is None:
        return None
    return MatterChange(subject=match.group(2).strip(), goal=_GOALS[match.group(1)])


def object_names(text: str) -> list[str]:
    """The names of the objects a look, inventory or observation lists, nested ones included, in
    canonical form ("a metal pot (containing a substance called liquid lead)" -> "metal pot",
    "liquid lead"); descriptions after a name ("which is turned on") stay out."""
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
    return names


def subject_names(text: str, subject: str) -> list[str]:
    """The names ``text`` gives the subject under any of its states ("liquid lead", "lead"; for water
    "ice", "water", "steam"), in order."""
    return [name for name in object_names(text) if names_subject(name, subject)]


def object_line(look: str, name: str) -> str:
    """The look's line of the top-level object called ``name`` (its contents are on that line:
    "a blast furnace, which is turned on. ... In the blast furnace is: a metal pot (...)"), '' if none."""
    for line in look.lower().splitlines():
        text = line.strip()
        for prefix in ("a ", "an ", "the "):
            text = text.removeprefix(prefix)
        if text.startswith(name) and (len(text) == len(name) or not text[len(name)].isalnum()):
            return text
    return ""


# -- paint tasks: colours mixed from others -----------------------------------------------------------
# "Your task is to use chemistry to create green paint." (a secondary colour, mixed from two primaries)
# or "... green-blue paint. When you are part-way done, focus on the intermediate (secondary color)
# paint" (a tertiary: the secondary of its name, mixed first and focused on, then its primary added).
# Which primaries make which secondary is what train gold paths pour before each focus: ``fastslow
# data paints`` writes ``env/data/paints.json``; a secondary no train path mixed is the one pair of
# primaries no known secondary uses (train shows green and orange; violet is then red and blue).

PAINT_TASKS = frozenset({"chemistry-mix-paint-secondary-color", "chemistry-mix-paint-tertiary-color"})
PAINTS_FILE = "paints.json"
_PAINT = re.compile(r"your task is to use chemistry to create ([a-z]+(?:-[a-z]+)?) paint\.")


@dataclass(frozen=True)
class PaintTask:
    """The colours a paint task focuses on, in order: the secondary, then the tertiary if it asks one."""

    colours: tuple[str, ...]


def paint_task(task_description: str) -> PaintTask | None:
    """The colours a paint task makes ("green-blue" -> green, then green-blue), or None."""
    match = _PAINT.search(" ".join(task_description.lower().split()))
    if match is None:
        return None
    target = match.group(1)
    parts = target.split("-")
    if len(parts) == 1:
        return PaintTask((target,))
    secondaries = set(_paints().get("secondaries", {}))
    secondary = next((p for p in parts if p in secondaries), None) or next(
        (p for p in parts if p not in _paints().get("primaries", [])), parts[-1]
    )
    return PaintTask((secondary, target))


def paints_path() -> Path:
    return Path(str(resources.files("fastslow.env").joinpath("data", PAINTS_FILE)))


@cache
def _paints() -> dict[str, Any]:
    path = paints_path()
    if not path.exists():
        return {}
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def paint_recipe(colour: str) -> tuple[str, ...]:
    """The colours mixed into ``colour``: a tertiary's two parts ("green-blue" -> green, blue), a
    secondary's two primaries as train gold paths mixed them, or by elimination the one primary pair
    no known secondary uses; () when nothing tells (a primary, or an unknown colour)."""
    if "-" in colour:
        return tuple(colour.split("-"))
    secondaries: dict[str, list[str]] = _paints().get("secondaries", {})
    primaries: list[str] = _paints().get("primaries", [])
    if colour in secondaries:
        return tuple(secondaries[colour])
    if colour in primaries:
        return ()
    used = {frozenset(pair) for pair in secondaries.values()}
    free = [
        (a, b) for i, a in enumerate(primaries) for b in primaries[i + 1 :] if frozenset((a, b)) not in used
    ]
    return free[0] if len(free) == 1 else ()


def open_closed(look: str, valid: Sequence[str]) -> str | None:
    """A valid "open X" for a container the look shows closed (not a door to another room), else None."""
    for action in valid:
        if not action.startswith("open ") or action.startswith("open door"):
            continue
        name = action[len("open ") :]
        line = object_line(look, name) or look.lower()
        last = name.split()[-1]
        if f"{last} door is closed" in line or f"{name} is closed" in line:
            return action
    return None


# -- power components: a circuit that lights a bulb --------------------------------------------------
# "Your task is to turn on the red light bulb [by powering it using a (non)renewable power source].
# First, focus on ..." (the device can be an electric motor too).
# Which power sources are renewable, and where train gold paths build the circuit with each (a solar
# panel works outside), is what ``fastslow data circuits`` reads off train gold paths into
# ``env/data/circuits.json``.

POWER_TASKS = frozenset({"power-component", "power-component-renewable-vs-nonrenewable-energy"})
CIRCUITS_FILE = "circuits.json"
_POWER = re.compile(
    r"your task is to turn on the ([a-z ]+?)"
    r"(?: by powering it using a (renewable|nonrenewable) power source)?\. first, focus on"
)


@dataclass(frozen=True)
class PowerTask:
    """The device to power (a light bulb, an electric motor) and the kind of power source the task asks
    for (None: any)."""

    device: str
    kind: Literal["renewable", "nonrenewable"] | None


def power_task(task_description: str) -> PowerTask | None:
    match = _POWER.search(" ".join(task_description.lower().split()))
    if match is None:
        return None
    kind = match.group(2)
    return PowerTask(match.group(1), "renewable" if kind == "renewable" else "nonrenewable" if kind else None)


def circuits_path() -> Path:
    return Path(str(resources.files("fastslow.env").joinpath("data", CIRCUITS_FILE)))


@cache
def known_sources() -> dict[str, dict[str, Any]]:
    """Power source -> {"renewable": bool | None, "room": where train gold paths wired it, "activate":
    whether they switched it on}; empty when the shipped file is missing."""
    path = circuits_path()
    if not path.exists():
        return {}
    sources: dict[str, dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["sources"]
    return sources


# -- growing a plant from seed -----------------------------------------------------------------------

GROW_TASKS = frozenset({"grow-plant"})
_GROW = re.compile(
    r"your task is to grow (?:a |an )?([a-z ]+?) plant from seed\. seeds can be found in the ([a-z ]+?)\."
)


@dataclass(frozen=True)
class GrowTask:
    """The plant a grow task asks for and the room its seeds are in."""

    plant: str
    seeds_in: str


def grow_task(task_description: str) -> GrowTask | None:
    """ "Your task is to grow a apple plant from seed. Seeds can be found in the kitchen." -> apple,
    kitchen; None for another task."""
    match = _GROW.search(" ".join(task_description.lower().split()))
    return GrowTask(match.group(1).strip(), match.group(2).strip()) if match else None


# -- inclined planes: which of two planes a block slides down slower ---------------------------------

INCLINE_TASKS = frozenset(
    {
        "inclined-plane-determine-angle",
        "inclined-plane-friction-named-surfaces",
        "inclined-plane-friction-unnamed-surfaces",
    }
)
_INCLINE = re.compile(
    r"which of the two inclined planes \((?P<a>[^,()]+), (?P<b>[^()]+)\) has the "
    r"(?P<which>shallowest angle|steepest angle|most friction|least friction)"
)


@dataclass(frozen=True)
class InclineTask:
    """The two planes (as the task names them) and whether the slower one is asked for."""

    planes: tuple[str, str]
    slower: bool


def incline_task(task_description: str) -> InclineTask | None:
    """The planes an inclined-plane task compares and what it asks ("(C, B) has the shallowest
    angle" -> c, b; the slower), or None."""
    match = _INCLINE.search(" ".join(task_description.lower().split()))
    if match is None:
        return None
    slower = match.group("which") in ("shallowest angle", "most friction")
    return InclineTask((normalize(match.group("a")), normalize(match.group("b"))), slower)


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
