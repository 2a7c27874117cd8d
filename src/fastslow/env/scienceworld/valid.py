"""The authors' valid-action filter and action rewrites (paper §3 Swift / SwiftSage v1 eval_utils).

The paper's agent does not act on ScienceWorld's raw list of valid action-object combinations. Its
evaluation code (a SwiftSage v1 fork, ``eval_utils.py`` and ``eval_agent_fast_slow.py``) first
filters that list, and before executing an action it rewrites the action towards a valid one. Both
change what Swift can choose and what Sage's plans ground to, so reproducing the paper's numbers
needs them exactly, quirks included. This module reimplements that behaviour from a reading of the
authors' code; every quirk kept on purpose is marked "Faithful:" where it happens.

**Filter** (``filter_valid``): ScienceWorld's valid actions, plus "open door to <room>" for every
room of ``AUTHORS_ROOMS`` and "wait"/"wait1"; minus "focus on" the agent, the air or a room; minus
every "focus on X" (and, separately, "examine X") whose words share none with the task description
(a few tasks are exempt from each rule); minus every action that mentions a door without opening it.

**Rewrites** (``rewrite``): an ordered list of string repairs (``rewrite``'s docstring), each tried
only if the previous ones did not give a valid action.

**Small pieces** the authors' episode loop reads: ``authors_failed`` (their failure test),
``FOCUS_COUNT`` and ``focus_limit`` (when the focus actions are done), ``focus_targets`` (the
objects the task description asks to focus on), ``clean_unknown_substance``, ``is_action_text`` (their
action grammar, which decides whether a guessed observation can stand in for an action),
``current_room`` and ``deterministic_fallback`` (the action taken when nothing else is left).

Stdlib only and pure functions of strings, like ``fastslow.env.scienceworld.semantics``, whose constants this
module uses where they are the same thing (ScienceWorld's no-match message, SwiftSage's failure words).
"""

from __future__ import annotations

import re
import string
from collections.abc import Collection, Sequence
from functools import lru_cache

from fastslow.env.scienceworld.semantics import DEFAULT_FAILURE_MARKERS, FOCUS, NO_MATCH, TELEPORT

# -- constants -------------------------------------------------------------------------------------------
AUTHORS_ROOMS: tuple[str, ...] = (
    "hallway",
    "greenhouse",
    "green house",
    "kitchen",
    "bathroom",
    "outside",
    "workshop",
    "art studio",
    "foundry",
    "bedroom",
    "living room",
)
"""The authors' room list, in their order (it decides which room ``current_room`` reports first and
the order of the added door actions): ScienceWorld's ten rooms (``semantics.ROOMS``) plus "green
house", a spelling models write that ScienceWorld does not know. The filter still adds "open door to
green house" and removes "focus on green house", as theirs does."""

FOCUS_COUNT: dict[int, int] = {
    0: 1, 1: 1, 2: 1, 3: 1, 4: 2, 5: 1, 6: 1, 7: 1, 8: 1, 9: 1,
    10: 1, 11: 1, 12: 4, 13: 4, 14: 1, 15: 1, 16: 1, 17: 1, 18: 2, 19: 1,
    20: 3, 21: 3, 22: 1, 23: 1, 24: 1, 25: 1, 26: 2, 27: 1, 28: 1, 29: 2,
}  # fmt: skip
"""The authors' number of rewarded focus actions per task (ids 0-29, ``fastslow.env.tasks``); read it,
do not change it. ``focus_limit`` combines it with the task description."""

FOCUS_FILTER_EXEMPT = frozenset({5, 6, 7, 8, 17, 18, 19, 20})
"""Tasks whose "focus on" actions the word-overlap rule leaves alone: find-animal/living/non-living/
plant and the lifespan tasks name their target by category ("an animal", "the longest-lived"), so it
shares no word with the description; task 20 (measure-melting-point-known-substance) is on their list
too."""
EXAMINE_FILTER_EXEMPT = frozenset({14, 15, 16})
"""Tasks whose "examine" actions the word-overlap rule leaves alone: the three inclined-plane tasks."""

WAIT_ACTIONS: tuple[str, ...] = ("wait", "wait1")
"""Added to every valid list (ScienceWorld usually lists them already)."""

_OPEN_DOOR = "open door to "
_ADDED: tuple[str, ...] = (*(_OPEN_DOOR + room for room in AUTHORS_ROOMS), *WAIT_ACTIONS)
"""What the filter adds after ScienceWorld's own actions, in this fixed order."""
_NEVER_FOCUS = frozenset(f"{FOCUS} {name}" for name in ("agent", "air", *AUTHORS_ROOMS))
"""Focus actions the filter always removes: on the agent, the air or a room."""
_EXAMINE = "examine"
_SUBSTANCE_IN_INVENTORY = "substance in inventory"
_FOCUS_ON_INVENTORY_SUBSTANCE = f"{FOCUS} {_SUBSTANCE_IN_INVENTORY}"
_DESCRIPTION_PREFIX = "Task Description:"
"""ScienceWorld's heading of a task description; the authors cut it off before reading the words."""
_NO_PUNCTUATION = str.maketrans("", "", string.punctuation)


# -- filter ----------------------------------------------------------------------------------------------
@lru_cache(maxsize=256)
def _description_words(task_description: str) -> frozenset[str]:
    """The description's words as the authors compare them: every ASCII punctuation character deleted
    (so "green-blue" becomes "greenblue" and "a(n)" becomes "an"), lower case, split on whitespace.
    Function words count: a "focus on X in Y" shares "in" with most descriptions and is kept."""
    text = task_description.removeprefix(_DESCRIPTION_PREFIX)
    return frozenset(text.translate(_NO_PUNCTUATION).lower().split())


def _shares_no_word(action: str, verb: str, words: frozenset[str]) -> bool:
    # Faithful: the verb is deleted wherever it occurs in the action, not only as its prefix, and the
    # action's words are compared as written (ScienceWorld's actions are lower case already).
    return not words.intersection(action.replace(verb, "").split())


def _kept(action: str, task_id: int, words: frozenset[str]) -> bool:
    if action in _NEVER_FOCUS:
        return False
    for verb, exempt in ((FOCUS, FOCUS_FILTER_EXEMPT), (_EXAMINE, EXAMINE_FILTER_EXEMPT)):
        if action.startswith(verb) and task_id not in exempt and _shares_no_word(action, verb, words):
            return False
    # The authors also loop over the "mix" actions to drop those on no container, but their test asks
    # whether any of a list of non-empty strings is true, which always holds: it removes nothing, so
    # nothing stands for it here.
    # Doors are opened (or walked through by teleport); closing, looking at, focusing on or moving
    # through a door is noise to them. Faithful: a substring test, so any action naming a door goes.
    return not ("door" in action and "open" not in action)


def filter_valid(actions: Sequence[str], task_id: int, task_description: str) -> tuple[str, ...]:
    """The authors' valid actions of a state: ``actions`` (ScienceWorld's) filtered, plus theirs.

    Order is deterministic: the kept actions of ``actions`` in their order, then the added ones that
    were not there already ("open door to <room>" in ``AUTHORS_ROOMS`` order, "wait", "wait1"), no
    duplicates. (The authors keep a set; only membership mattered to them.) ``task_id`` is 0-29
    (``fastslow.env.tasks``); ``task_description`` may keep ScienceWorld's "Task Description:" heading.
    """
    words = _description_words(task_description)
    seen: set[str] = set()
    kept: list[str] = []
    for action in (*actions, *_ADDED):
        if action in seen:
            continue
        seen.add(action)
        if _kept(action, task_id, words):
            kept.append(action)
    return tuple(kept)


# -- rewrites --------------------------------------------------------------------------------------------
def _as_set(valid: Collection[str]) -> Collection[str]:
    return valid if isinstance(valid, (set, frozenset, dict)) else frozenset(valid)


def _picked_container_form(action: str, look: str) -> str:
    """The authors' attempt to turn "pick up <substance>" into "pick up <its container>".

    Faithful, two bugs: the "called " test reads the seven characters that end one character before
    the object's name (so "a substance called water" never matches; a name preceded by "called " and
    one more character does), and the container is sliced from just before the last "(" before the
    name to just after the last ")" before it, which for ScienceWorld's text is rarely a container
    name. Python's slice rules (negative starts, empty slices) are part of the behaviour."""
    target = " ".join(action.split()[2:])
    at = look.find(target)
    if at < 0:
        return action
    if look[at - 8 : at - 1] != "called ":
        return action
    start = look.rfind("(", 0, at) - 1
    end = look.rfind(")", 0, at) + 1
    return action.replace(target, look[start:end])


_MOVED_OBJECT = re.compile(r"move (.*?) to")


def rewrite(action: str, valid: Collection[str], look: str, inventory: str) -> str:
    """The authors' repair of ``action`` in a state with valid actions ``valid``; returned stripped.

    The first rule that applies wins:

    1. anything starting with "wait" -> "wait" (Faithful: "wait1" too, although it is valid);
    2. a valid action -> itself;
    3. "green house" -> "greenhouse", "adult" -> "adult adult", "baby" -> "baby baby" (ScienceWorld
       names grown animals "adult adult frog"), if that is valid;
    4. "go to X" -> "teleport to X" if valid, else "open door to X" if valid;
    5. "pick up X": the container form (``_picked_container_form``) if valid; Faithful: if removing
       "substance in " from it gives a valid action, the form *with* "substance in " is returned;
       otherwise the later rules continue from the container form;
    6. "focus on X" with X in the inventory text -> "focus on substance in inventory" if valid;
    7. "move X to Y" with X in the inventory text -> X replaced by "substance in inventory" if valid
       (Faithful: any action starting with "move" and containing "to" anywhere is tried, and one whose
       "move ... to" pattern does not match is returned as it is, skipping rules 8-10);
    8. the text before the last " in " if valid ("open cupboard in kitchen" -> "open cupboard");
    9. an action containing " unknown substance ": the text before the last " in ", without the
       substance's capital letter (``clean_unknown_substance``), if valid; otherwise rule 10 goes on
       from that text;
    10. every "in <room>" deleted (``AUTHORS_ROOMS``), whatever the result.
    """
    valid = _as_set(valid)
    if action.startswith("wait"):
        return "wait"
    if action in valid:
        return action.strip()
    spelled = action.replace("green house", "greenhouse").replace("adult", "adult adult")
    spelled = spelled.replace("baby", "baby baby")
    if spelled in valid:
        return spelled.strip()
    if action.startswith("go to"):
        for verb in (TELEPORT, "open door to"):
            moved = action.replace("go to", verb)
            if moved in valid:
                return moved.strip()
    if action.startswith("pick up"):
        action = _picked_container_form(action, look)
        if action in valid or action.replace("substance in ", "") in valid:
            return action.strip()
    # Faithful: a substring test against the whole inventory text ("focus on" with no object matches
    # any inventory).
    focused = action.replace(FOCUS, "").strip()
    if action.startswith(FOCUS) and focused in inventory and _FOCUS_ON_INVENTORY_SUBSTANCE in valid:
        return _FOCUS_ON_INVENTORY_SUBSTANCE
    if action.startswith("move") and "to" in action:
        match = _MOVED_OBJECT.search(action)
        if match is None:
            return action.strip()
        moved_object = match.group(1)
        # Faithful: every occurrence of the object is replaced, the destination's included.
        candidate = action.replace(moved_object, _SUBSTANCE_IN_INVENTORY)
        if moved_object in inventory and candidate in valid:
            return candidate.strip()
    head = action.rsplit(" in ", 1)[0]
    if head in valid:
        return head.strip()
    if " unknown substance " in action:
        action = clean_unknown_substance(head)
        if action in valid:
            return action.strip()
    for room in AUTHORS_ROOMS:
        action = action.replace("in " + room, "")
    return action.strip()


def clean_unknown_substance(text: str) -> str:
    """``text`` without the capital letter that names an unknown substance ("unknown substance U" ->
    "unknown substance"), which ScienceWorld's valid actions leave out; unchanged if it names no unknown
    substance. Faithful: every space followed by a capital letter A-Z is deleted, wherever it is."""
    if "unknown substance" not in text:
        return text
    for letter in string.ascii_uppercase:
        text = text.replace(" " + letter, "")
    return text


# -- the episode loop's other pieces ---------------------------------------------------------------------
_BARE_ACTIONS = frozenset({"0", "1", "look around", "wait", "wait1"})
_ACTION_SHAPE = re.compile(
    r"^(?:(?:focus on|look at|read|pick up|open|close|activate|deactivate|go to|teleport to|examine|mix"
    r"|drop) .+|(?:connect .+ to|move .+ to|use .+ on|pour .+ into|pour .+ in|dunk .+ into) .+)"
)


def is_action_text(text: str) -> bool:
    """Whether ``text`` has the shape of an action in the authors' action grammar (their
    ``formalize_action`` succeeds on it).

    Their loop uses it on Sage's guessed observation of a buffered action: a guess that is itself an
    action ("open door to kitchen") is tried as an alias. ``text`` is lower-cased first, as they do;
    then it is one of "0", "1", "look around", "wait", "wait1" (ends stripped), or starts with a verb
    of the grammar and its object(s) ("pick up X", "move X to Y", "pour X into Y", ...). Objects are
    not checked against the state, and an object runs to the end of the first line."""
    lowered = text.lower()
    return lowered.strip() in _BARE_ACTIONS or _ACTION_SHAPE.match(lowered) is not None


def authors_failed(observation: str) -> bool:
    """The authors' failure test of an observation: what enters their failed-action list (two of
    them send the step to Sage, and Sage's prompt lists them) and what ends a buffered action's trial.

    ScienceWorld's no-match message, compared whole, or any of SwiftSage's failure words
    (``semantics.DEFAULT_FAILURE_MARKERS``) as a case-sensitive substring. Faithful: substrings, so
    "nothing", "another" and "note" count as failures, and so does every look that lists an empty
    container ("a jug (containing nothing)"); "Not" and "cannot" do not. ``semantics.classify_feedback``
    is the whole-word test the rest of the project uses."""
    return observation == NO_MATCH or any(marker in observation for marker in DEFAULT_FAILURE_MARKERS)


def focus_limit(task_id: int, task_description: str) -> int:
    """How many rewarded focus actions make the focus part of a task done, as the authors count it.

    The larger of ``FOCUS_COUNT[task_id]`` and the number of times "focus" occurs in the description;
    their loop stops accepting focus actions once that many focus actions earned a reward. Faithful:
    the occurrences are counted as substrings, alternatives included ("if ..., focus on the blue box.
    If ..., focus on the orange box." counts two), so some tasks can never reach their limit."""
    return max(FOCUS_COUNT[task_id], task_description.count("focus"))


_FOCUS_PHRASE = re.compile(r"focus on\s+(\b\w+\b(?:\s+\b\w+\b)*)")


def focus_targets(task_description: str) -> list[str]:
    """The objects the task description asks to focus on, as the authors extract them.

    Each "focus on" followed by a run of words up to the next punctuation, with every "the " replaced
    by a space and the ends stripped: "focus on the life stages of the lemon plant, ..." -> "life stages
    of  lemon plant" (Faithful: the inner double space stays, and "the " inside a word such as
    "bathe " is replaced too). The authors let Swift focus before Sage has only on a target of this
    list (``clean_unknown_substance`` applied to both sides, substring test)."""
    return [m.group(1).replace("the ", " ").strip() for m in _FOCUS_PHRASE.finditer(task_description)]


def current_room(look: str) -> str | None:
    """The room a "look around" text is in: the first room of ``AUTHORS_ROOMS`` that the first
    sentence calls "the <room>" ("This room is called the kitchen." -> "kitchen"); None if none.
    (``fastslow.core.trajectory.room_of`` is the project's own reading of the same sentence.)"""
    first_sentence = look.split(".")[0]
    for room in AUTHORS_ROOMS:
        if "called the " + room in first_sentence:
            return room
    return None


_MOVE_PREFIXES: tuple[str, ...] = ("go to ", TELEPORT + " ", _OPEN_DOOR)


def deterministic_fallback(valid: Collection[str], current_room: str | None) -> str | None:
    """The authors' last-resort action when their gate dropped an action and nothing replaced it.

    "look around" if valid, else "inventory", else the move to somewhere other than ``current_room``
    ("go to X", "teleport to X", "open door to X", compared in lower case) that sorts first by
    destination and then by action, else the alphabetically first valid action; None if ``valid`` is
    empty. Faithful: any destination counts, not only rooms ("go to door to hallway")."""
    if not valid:
        return None
    for preferred in ("look around", "inventory"):
        if preferred in valid:
            return preferred
    here = (current_room or "").lower()
    moves: list[tuple[str, str]] = []
    for action in valid:
        lower = action.lower()
        for prefix in _MOVE_PREFIXES:
            if lower.startswith(prefix):
                destination = lower.removeprefix(prefix).strip()
                if destination and destination != here:
                    moves.append((destination, action))
                break
    if moves:
        return min(moves)[1]
    return min(valid)
