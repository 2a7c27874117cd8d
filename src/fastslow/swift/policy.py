"""Swift's own safety policy: what keeps an imitation policy out of trouble when it acts alone.

SwiftSage's Swift never acts without Sage watching it; a Swift-only agent needs a few rules of its
own. Each was measured on train/dev variations (docs/swift.md, "Swift-only agent and its safety
policy" and "Measurements"):

- **No-effect rule**: an action whose last execution changed nothing (no reward, same look and
  inventory) is not repeated until the state changes. Waiting is exempt (time passes: the world's
  ``idle_actions``). An action a
  later check refused (SRM's Gate-1 drop, reported through the controller's hooks: ``refused``) is
  not proposed again in that state either (the task logic hears of it too: ``procedures.logic``).
- **Loop penalty**: every execution of an action in the last ``window`` steps lowers its score by
  ``repeat_penalty``, so the agent does not oscillate between two states.
- **No reset**: the world's ``restart_actions`` (ScienceWorld's ``reset task``) are never chosen: it
  erases the goal progress and the focus and does nothing in the world. Without the rule the imitation
  ranker took it in 34 of 259 dev episodes, once the loop penalty had pushed everything else down.
- **Focus rule**: ``focus on X`` ends the episode with -100 when X is wrong, so Swift may focus only
  on an object whose words all appear in the task description or among the objects gold paths of
  this task focused on in training (only the former in tasks whose gold target is always named),
  never on a room, never on the container the task says to put its object into ("move it to the red
  box": ``env.semantics.task_destinations``), never on a fragment of the thing the task names that
  leaves out its noun ("orange" for "the orange paint": ``names_part_of_focus_phrase``), never twice
  on the same object (the same referent with the same contents: ``env.semantics.focus_repeats``, as
  Gate-1), never by answering an ambiguity prompt, and never on a container's contents the task does
  not name ("substance in metal pot" holding water when the task boils lead;
  ``env.semantics.focus_contents_mismatch``, which Gate-1 applies too). The focus is the world's
  commitment (``WorldSemantics.commitment_verb``) and these rules its ``commitment``
  (``CommitmentRules``; ScienceWorld's, in its package, over the ``env.scienceworld.semantics``
  functions named above): a world without one (TextWorldExpress) has no focus rule.

The policy asks the world only through its ``semantics`` (default: the default world's).

The policy reads no task by its name or family (its learnt focus words are keyed by the task, read
from training): the hand-written task logic (procedures, judgements and
their vetoes) is a component of its own, ``fastslow.procedures``, with its own hook and switch
(``procedures.enabled``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fastslow.core.semantics import WorldSemantics
from fastslow.core.step import StepResult
from fastslow.env.world import get_world
from fastslow.swift.features import FloatArray, words

NAMED_ONLY = "<named-only>"
"""Marker in a task's focus words: its gold focus target is always named in the task description."""
ANCHORED = "<anchored>"
"""Marker in a task's focus words: every gold focus target shares a word with the task description
("egg turtle" for "the 4 life stages of the turtle"), so a target that shares none is refused."""


def default_semantics() -> WorldSemantics:
    """The default world's semantics (``EnvConfig.world``'s default, ScienceWorld): what a policy built
    without a world plays (the tests' and ``bench swift``'s)."""
    return get_world().semantics


@dataclass
class SafetyPolicy:
    """Re-scores a Swift proposal; one instance per episode (``reset`` clears it)."""

    focus_words: dict[str, set[str]] = field(default_factory=dict)
    repeat_penalty: float = 6.0
    window: int = 10
    focus_rule: bool = True
    semantics: WorldSemantics = field(default_factory=default_semantics)
    """The world's words (``fastslow.core.semantics``): its idle and restart actions, its commitment verb
    and ``commitment`` rules (ScienceWorld's focus; None in a world without one: no focus rule)."""
    _blocked: dict[str, tuple[str, str]] = field(default_factory=dict)
    _recent: deque[str] = field(default_factory=lambda: deque(maxlen=50))
    _focused: set[str] = field(default_factory=set)
    """The targets of every focus sent, as written."""
    _landed: list[Any] = field(default_factory=list)
    """The objects the confirmed foci landed on, with what they held then (never focused on again)."""
    _missed: set[str] = field(default_factory=set)
    """Focus targets sent that ScienceWorld did not confirm (ambiguous, unknown): not sent again."""
    _refused: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Actions a later check (SRM's Gate-1) refused, with the look and inventory of the state it
    refused them in: not proposed again until the state changes (``refused``)."""

    def reset(self) -> None:
        self._blocked.clear()
        self._recent.clear()
        self._focused.clear()
        self._landed.clear()
        self._missed.clear()
        self._refused.clear()

    def refused(self, action: str, current: StepResult) -> None:
        """A later check (SRM's Gate-1) refused ``action`` in the state ``current``: the ranking does not
        propose it again until the look or the inventory changes, as with an action that changed
        nothing (the refusal would be the same)."""
        self._refused[action] = (current.look, current.inventory)

    def _held(self, action: str, fingerprint: tuple[str, str]) -> bool:
        """Not to be proposed in the state ``fingerprint``: it changed nothing there, or was refused."""
        return self._blocked.get(action) == fingerprint or self._refused.get(action) == fingerprint

    def focus_allowed(
        self,
        action: str,
        task_name: str,
        task_description: str,
        rooms: set[str],
        current: StepResult | None = None,
    ) -> bool:
        rules, verb = self.semantics.commitment, self.semantics.commitment_verb
        if rules is None or verb is None:
            return False  # a world without a commitment has no such action to allow
        target = action[len(verb) + 1 :]
        if target in self._missed or (current is None and target in self._focused):
            return False
        if current is not None and rules.repeats(target, current.look, current.inventory, self._landed):
            return False  # the same object (its contents included) was focused on already
        if current is not None and rules.contents_mismatch(
            target, current.look, current.inventory, task_description
        ):
            return False  # "substance in metal pot" holding water, in a task about lead
        base = (self.semantics.arguments(action) or [target])[0]
        if base in rooms or target in rooms or base in rules.destinations(task_description):
            return False
        if rules.names_part_of_phrase(base, task_description):
            return False  # "orange" (the fruit) when the task names "the orange paint"
        learnt = self.focus_words.get(task_name, set())
        described = set(words(task_description))
        allowed = described | (set() if NAMED_ONLY in learnt else learnt)
        needed = words(base)
        if ANCHORED in learnt and described.isdisjoint(needed):
            return False
        return bool(needed) and all(w in allowed for w in needed)

    def adjust(
        self,
        actions: Sequence[str],
        scores: FloatArray,
        current: StepResult,
        task_name: str,
    ) -> FloatArray:
        """Scores after the rules: vetoed actions get -inf, repeated ones a penalty."""
        out = scores.copy()
        fingerprint = (current.look, current.inventory)
        recent = list(self._recent)[-self.window :]
        counts: dict[str, int] = {}
        for a in recent:
            counts[a] = counts.get(a, 0) + 1
        rooms: set[str] | None = None  # read from the valid actions for the first focus candidate
        verb, rules = self.semantics.commitment_verb, self.semantics.commitment
        # After ``focus on X`` was ambiguous, a bare number would confirm a focus on an arbitrary object.
        ambiguous_focus = (
            verb is not None
            and rules is not None
            and bool(self._recent)
            and self._recent[-1].startswith(verb + " ")
            and rules.asks_which(current.observation)
        )
        for i, action in enumerate(actions):
            vetoed = (
                action in self.semantics.restart_actions
                or (ambiguous_focus and action.isdigit())
                or self._held(action, fingerprint)
            )
            if not vetoed and self.focus_rule and verb is not None and action.startswith(verb):
                if rooms is None:
                    rooms = self.semantics.places(current.valid_actions)
                vetoed = not self.focus_allowed(action, task_name, current.task_description, rooms, current)
            if vetoed:
                out[i] = -np.inf
            n = counts.get(action)
            if n:
                out[i] -= self.repeat_penalty * n
        return out

    def observe(self, before: StepResult, action: str, after: StepResult) -> None:
        self._recent.append(action)
        verb, rules = self.semantics.commitment_verb, self.semantics.commitment
        if verb is not None and rules is not None and action.startswith(verb + " "):
            target = action[len(verb) + 1 :]
            self._focused.add(target)
            landed = rules.landed(target, after.observation, before.look, before.inventory)
            if landed is None:
                self._missed.add(target)
            elif not any(rules.same(landed, o) for o in self._landed):
                self._landed.append(landed)
        unchanged = before.look == after.look and before.inventory == after.inventory
        # Waiting is exempt: time passes, so the next wait may change what a wait did not.
        if after.reward == 0 and unchanged and not action.startswith(self.semantics.idle_actions):
            self._blocked[action] = (after.look, after.inventory)
