"""ScienceWorld's paraphrase repairs for SRM's Gate-1 (paper §3.2): what a model writes -> what it lists.

Models write "Pick up the thermometer." where ScienceWorld lists "pick up thermometer". Gate-1 compares
both sides in one canonical form (``normalize`` in ``fastslow.env.scienceworld.semantics``) and asks
the world's semantics for its repairs: these tables map paraphrased verbs, commands, prepositions and object
spellings to the ones ScienceWorld's parser knows (``rewrite``), drop container/location qualifiers
(``strip_qualifiers``), and offer the teleport for a "go to" (``reroute``). Everything here is a pure
function of strings so the gate's repairs are deterministic and testable without an environment.
"""

from __future__ import annotations

from fastslow.env.scienceworld.semantics import FOCUS, TELEPORT, is_focus, verb_of_normalized

# Verb paraphrases -> ScienceWorld's verb. Applied to the start of an action only: an object name
# must never be rewritten by a verb rule.
VERB_ALIASES: tuple[tuple[str, str], ...] = (
    ("take", "pick up"),
    ("get", "pick up"),
    ("grab", "pick up"),
    ("pickup", "pick up"),
    ("examine", "look at"),
    ("inspect", "look at"),
    ("check", "look at"),
    ("turn on", "activate"),
    ("switch on", "activate"),
    ("turn off", "deactivate"),
    ("switch off", "deactivate"),
    ("drop", "put down"),
    ("goto", "go to"),
    ("walk to", "go to"),
    ("move to", "go to"),
    ("focus", FOCUS),
)

# Whole-action aliases for ScienceWorld's argument-less commands.
COMMAND_ALIASES: dict[str, str] = {
    "look": "look around",
    "l": "look around",
    "i": "inventory",
    "inv": "inventory",
    "check inventory": "inventory",
    "look at inventory": "inventory",
    "wait 1": "wait1",
    "wait one": "wait1",
    "wait 10": "wait",
}

# Preposition paraphrases inside two-object actions, keyed by the action's verb.
PREPOSITION_ALIASES: dict[str, tuple[tuple[str, str], ...]] = {
    "move": ((" into ", " to "), (" in ", " to "), (" onto ", " to "), (" on ", " to ")),
    "put": ((" into ", " to "), (" in ", " to "), (" onto ", " to "), (" on ", " to ")),
    "place": ((" into ", " to "), (" in ", " to "), (" onto ", " to "), (" on ", " to ")),
    "pour": ((" in ", " into "), (" to ", " into "), (" onto ", " into ")),
    "dunk": ((" in ", " into "), (" to ", " into ")),
}

# Object spellings ScienceWorld does not use.
OBJECT_ALIASES: tuple[tuple[str, str], ...] = (
    ("green house", "greenhouse"),
    ("work shop", "workshop"),
)


def _replace_prefix(text: str, old: str, new: str) -> str | None:
    if text == old or text.startswith(old + " "):
        return new + text[len(old) :]
    return None


def apply_aliases(norm: str) -> str:
    """Rewrite a normalized action with the known verb, command, preposition and object aliases."""
    if norm in COMMAND_ALIASES:
        return COMMAND_ALIASES[norm]
    text = norm
    for old, new in VERB_ALIASES:
        # ``focus on x`` must not become ``focus on on x``; "move to" is a verb alias only without an object.
        if old == "focus" and is_focus(text):
            break
        replaced = _replace_prefix(text, old, new)
        if replaced is not None:
            text = replaced
            break
    # "put x in y" / "place x on y" are moves; "put down x" is its own command.
    if text.startswith(("put ", "place ")) and not text.startswith("put down "):
        text = "move " + text.split(" ", 1)[1]
    verb = text.split(" ", 1)[0]
    for old, new in PREPOSITION_ALIASES.get(verb, ()):
        if old in text and new not in text:
            text = text.replace(old, new, 1)
            break
    padded = f" {text} "
    for old, new in OBJECT_ALIASES:
        padded = padded.replace(f" {old} ", f" {new} ")
    return padded.strip()


def reroute(norm: str) -> str | None:
    """The teleport for a "go to <room>": under "easy", ScienceWorld offers "teleport to <room>" and
    doors are open, so going there directly is the same move without walking through the rooms
    between. None for any other action."""
    return TELEPORT + " " + norm[len("go to ") :] if norm.startswith("go to ") else None


def strip_qualifiers(norm: str) -> str:
    """Drop container/location qualifiers: ``focus on water in metal pot`` -> ``focus on water``.

    Two-object actions keep their own connective ("move x in cup to sink" -> "move x to sink"): only
    the " in ..." / " on ..." tails of each object are removed.
    """
    verb = verb_of_normalized(norm)
    rest = norm[len(verb) :].strip()
    for joiner in (" to ", " into ", " on "):
        if verb in {"move", "pour", "dunk", "connect", "use"} and joiner in rest:
            left, right = rest.rsplit(joiner, 1)
            return f"{verb} {_tail_free(left)}{joiner}{_tail_free(right)}".strip()
    return f"{verb} {_tail_free(rest)}".strip()


def _tail_free(obj: str) -> str:
    for marker in (" in ", " on "):
        if marker in obj:
            obj = obj.split(marker, 1)[0]
    return obj
