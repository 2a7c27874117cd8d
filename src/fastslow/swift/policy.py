"""Swift's own safety policy: what keeps an imitation policy out of trouble when it acts alone.

SwiftSage's Swift never acts without Sage watching it; a Swift-only agent needs a few rules of its
own. Each was measured on train/dev variations (SWIFT_NOTES; docs/swift.md):

- **No-effect rule**: an action whose last execution changed nothing (no reward, same look and
  inventory) is not repeated until the state changes. Waiting is exempt (time passes). An action a
  later check refused (SRM's Gate-1 drop, reported through the controller's hooks: ``refused``) is
  not proposed again in that state either, by the ranking, a judgement or a procedure.
- **Loop penalty**: every execution of an action in the last ``window`` steps lowers its score by
  ``repeat_penalty``, so the agent does not oscillate between two states.
- **Focus rule**: ``focus on X`` ends the episode with -100 when X is wrong, so Swift may focus only
  on an object whose words all appear in the task description or among the objects gold paths of
  this task focused on in training (only the former in tasks whose gold target is always named),
  never on a room, never twice on the same object (the same referent with the same contents:
  ``env.semantics.focus_repeats``, as Gate-1), never by answering an ambiguity prompt, and never on
  a container's contents the task does not name ("substance in metal pot" holding water when the task
  boils lead; ``env.semantics.focus_contents_mismatch``, which Gate-1 applies too), and in the
  life-stages tasks only on the earliest stage left (``env.semantics.life_stage_violation``, Gate-1 too).
- **Measurement judgement**: in the thermometer tasks only the thermometer, the subject and the boxes
  are focused on, and a box is chosen (focused on, or the subject put into it) only after the
  thermometer and the subject were focused on and the readings decide which box
  (``env.semantics.measurement_violation``, Gate-1 too for the focus); the task's next step is proposed.
- **Task procedures** (config ``swift.procedures``): in boil, melt, freeze and change-the-state tasks
  the substance is found, focused on, put into a metal pot and heated or cooled by a fixed route
  (``swift.matter``); in the paint tasks the colours are poured, mixed and focused on (``swift.paint``);
  in the inclined-plane tasks a block is timed down each plane and the slower or faster one focused on
  (``swift.incline``); in grow-plant a seed is sown, focused on and its pot kept watered
  (``swift.grow``); in the power tasks the device is wired to the source of the kind asked for
  (``swift.circuit``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from fastslow.core.step import StepResult
from fastslow.env.semantics import (
    GROW_TASKS,
    INCLINE_TASKS,
    LIFE_STAGE_TASKS,
    MATTER_TASKS,
    MEASUREMENT_TASKS,
    PAINT_TASKS,
    POWER_TASKS,
    FocusObject,
    Measurement,
    focus_confirmed,
    focus_contents_mismatch,
    focus_head,
    focus_repeats,
    grow_task,
    incline_task,
    landed_object,
    life_stage,
    life_stage_violation,
    matter_task,
    measured_choice,
    measurement_task,
    measurement_violation,
    names_subject,
    normalize,
    paint_task,
    power_task,
    room_called,
    subject_focus,
    teleport_targets,
    thermometer_readings,
)
from fastslow.swift.circuit import circuit_step
from fastslow.swift.features import FloatArray, arguments, words
from fastslow.swift.grow import grow_step
from fastslow.swift.incline import incline_choice, incline_step
from fastslow.swift.matter import matter_step
from fastslow.swift.paint import paint_step
from fastslow.vocab import ProcedureRule

_EXEMPT_PREFIXES = ("wait",)
PROCEDURE_TASKS = MATTER_TASKS | PAINT_TASKS | INCLINE_TASKS | GROW_TASKS | POWER_TASKS
"""Tasks whose next step a procedure proposes (``SafetyPolicy.procedures``)."""
NAMED_ONLY = "<named-only>"
"""Marker in a task's focus words: its gold focus target is always named in the task description."""


@dataclass(frozen=True)
class Judged:
    """An action hand-written task logic decided, and the rule that decided it (``SafetyPolicy.judged``)."""

    action: str
    rule: ProcedureRule


def _judged(action: str | None, rule: ProcedureRule) -> Judged | None:
    return Judged(action, rule) if action is not None else None


@dataclass
class SafetyPolicy:
    """Re-scores a Swift proposal; one instance per episode (``reset`` clears it)."""

    focus_words: dict[str, set[str]] = field(default_factory=dict)
    repeat_penalty: float = 6.0
    window: int = 10
    focus_rule: bool = True
    procedures: bool = True
    """The task procedures (``swift.matter``, ``swift.paint``, ...) propose their task's next step."""
    _blocked: dict[str, tuple[str, str]] = field(default_factory=dict)
    _recent: deque[str] = field(default_factory=lambda: deque(maxlen=50))
    _focused: set[str] = field(default_factory=set)
    """The targets of every focus sent, as written (the life-stages judgement counts them)."""
    _landed: list[FocusObject] = field(default_factory=list)
    """The objects the confirmed foci landed on, with what they held then (never focused on again)."""
    _missed: set[str] = field(default_factory=set)
    """Focus targets sent that ScienceWorld did not confirm (ambiguous, unknown): not sent again."""
    _refused: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Actions a later check (SRM's Gate-1) refused, with the look and inventory of the state it
    refused them in: not proposed again until the state changes (``refused``)."""
    _steps: list[tuple[str, str]] = field(default_factory=list)
    """Every executed (action, observation) of the episode (the measurement judgement reads them)."""
    _looks: list[str] = field(default_factory=list)
    """The look after each executed step (the matter procedure reads how long the stove had the subject)."""
    _rooms: dict[str, str] = field(default_factory=dict)
    """The last look of every room seen (the procedures search the rooms not seen)."""

    def reset(self) -> None:
        self._blocked.clear()
        self._recent.clear()
        self._focused.clear()
        self._landed.clear()
        self._missed.clear()
        self._refused.clear()
        self._steps.clear()
        self._rooms.clear()
        self._looks.clear()

    def refused(self, action: str, current: StepResult) -> None:
        """A later check (SRM's Gate-1) refused ``action`` in the state ``current``: neither the ranking
        nor a judgement or procedure proposes it again until the look or the inventory changes, as
        with an action that changed nothing (the refusal would be the same)."""
        self._refused[action] = (current.look, current.inventory)

    def _held(self, action: str, fingerprint: tuple[str, str]) -> bool:
        """Not to be proposed in the state ``fingerprint``: it changed nothing there, or was refused."""
        return self._blocked.get(action) == fingerprint or self._refused.get(action) == fingerprint

    def _measurement(self, task_name: str, task_description: str) -> Measurement | None:
        return measurement_task(task_description) if task_name in MEASUREMENT_TASKS else None

    def _confirmed_foci(self) -> list[str]:
        """Heads of the focus actions ScienceWorld confirmed so far, in order."""
        return [focus_head(a[9:]) for a, o in self._steps if a.startswith("focus on ") and focus_confirmed(o)]

    def _foci(self) -> int:
        return len(self._confirmed_foci())

    def _placement(self, action: str, measure: Measurement) -> str | None:
        """The box of a "move <subject> ... to <box>" action of a placing measurement task, else None."""
        if not measure.place or not action.startswith("move ") or " to " not in action:
            return None
        moved, box = action[len("move ") :].rsplit(" to ", 1)
        return normalize(box) if names_subject(focus_head(moved), measure.subject) else None

    def focus_allowed(
        self,
        action: str,
        task_name: str,
        task_description: str,
        rooms: set[str],
        current: StepResult | None = None,
    ) -> bool:
        target = action[len("focus on ") :]
        if target in self._missed or (current is None and target in self._focused):
            return False
        if current is not None and focus_repeats(target, current.look, current.inventory, self._landed):
            return False  # the same object (its contents included) was focused on already
        if current is not None and focus_contents_mismatch(
            target, current.look, current.inventory, task_description
        ):
            return False  # "substance in metal pot" holding water, in a task about lead
        if current is not None and task_name in LIFE_STAGE_TASKS:
            focused = sorted(self._focused)
            if life_stage_violation(target, current.valid_actions, focused, task_description, current.look):
                return False  # earliest to latest: no "focus on adult turtle" while the egg is there
        measure = self._measurement(task_name, task_description)
        if measure is not None and measurement_violation(
            measure, focus_head(target), self._steps, self._foci()
        ):
            return False  # thermometer, subject, then the box a reading decides; nothing else
        incline = incline_task(task_description) if self.procedures and task_name in INCLINE_TASKS else None
        if (
            incline is not None
            and current is not None
            and target.startswith("inclined plane")
            and target != incline_choice(incline, self._steps, current.valid_actions)
        ):
            return False  # a plane only once the trials decide which (swift.incline)
        base = (arguments(action) or [target])[0]
        if base in rooms or target in rooms:
            return False
        learnt = self.focus_words.get(task_name, set())
        allowed = set(words(task_description)) | (set() if NAMED_ONLY in learnt else learnt)
        needed = words(base)
        return bool(needed) and all(w in allowed for w in needed)

    def judgement(self, current: StepResult, task_name: str) -> str | None:
        """The action of ``judged``, without its rule."""
        judged = self.judged(current, task_name)
        return judged.action if judged is not None else None

    def judged(self, current: StepResult, task_name: str) -> Judged | None:
        """A step training cannot imitate for unseen objects, decided by rule: in the life-stages tasks,
        the focus on the earliest stage left of the task's organism when it is valid now (the lowest
        stage first; ``env.semantics.life_stage_violation`` decides, as Gate-1 does); in the thermometer
        tasks, the task's next step (``_measurement_step``); in the matter tasks (boil, melt, freeze,
        change the state), the paint, the inclined-plane, the grow-plant and the power-component tasks,
        their procedure's next step (``swift.matter``, ``swift.paint``, ``swift.incline``,
        ``swift.grow``, ``swift.circuit``). None otherwise; with the rule that decided it."""
        if not self.focus_rule:
            return None
        fingerprint = (current.look, current.inventory)
        if self.procedures and task_name in PROCEDURE_TASKS:
            # the per-step reading the procedures need, done only in their tasks
            self._rooms[room_called(current.look)] = current.look
            landed = [focus_confirmed(o) or "" for a, o in self._steps if a.startswith("focus on ")]

            def fresh(action: str) -> bool:
                return not self._held(action, fingerprint)

            step = self._procedure_step(current, task_name, landed, fresh)
            # the procedures that take no ``fresh`` (incline, circuit): a refused step steps aside too
            return None if step is not None and self._refused.get(step.action) == fingerprint else step
        measure = self._measurement(task_name, current.task_description)
        if measure is not None:
            decided = self._measurement_step(measure, current)
            # a judged action that changed nothing here is not repeated (the no-effect rule): a focus
            # on orange juice in a closed fridge is in the valid list but unknown to ScienceWorld
            blocked = decided is not None and self._held(decided, fingerprint)
            return None if blocked else _judged(decided, "judgement:thermometer")
        if task_name not in LIFE_STAGE_TASKS:
            return None
        rooms = teleport_targets(current.valid_actions)
        allowed = [
            a
            for a in current.valid_actions
            if a.startswith("focus on ")
            and self._refused.get(a) != fingerprint
            and self.focus_allowed(a, task_name, current.task_description, rooms, current)
        ]
        earliest = min(
            allowed,
            key=lambda a: (life_stage(a[len("focus on ") :], current.look) or 0, len(a)),
            default=None,
        )
        return _judged(earliest, "judgement:life-stages")

    def _procedure_step(
        self, current: StepResult, task_name: str, landed: list[str], fresh: Callable[[str], bool]
    ) -> Judged | None:
        """The next step of the task's procedure (``PROCEDURE_TASKS``), or None: it steps aside."""
        description = current.task_description
        if task_name in MATTER_TASKS and (matter := matter_task(description)) is not None:
            step = matter_step(matter, current, self._steps, self._looks, landed, self._rooms, fresh)
            return _judged(step, "procedure:matter")
        if task_name in PAINT_TASKS and (paint := paint_task(description)) is not None:
            return _judged(
                paint_step(paint, current, self._steps, landed, self._rooms, fresh), "procedure:paint"
            )
        if task_name in INCLINE_TASKS and (incline := incline_task(description)) is not None:
            return _judged(incline_step(incline, current, self._steps), "procedure:incline")
        if task_name in GROW_TASKS and (grow := grow_task(description)) is not None:
            return _judged(grow_step(grow, current, landed, fresh), "procedure:grow")
        if task_name in POWER_TASKS and (power := power_task(description)) is not None:
            return _judged(circuit_step(power, current, self._steps), "procedure:circuit")
        return None

    def _measurement_step(self, measure: Measurement, current: StepResult) -> str | None:
        """A thermometer task's next step: the subject's focus once the thermometer is focused on
        ("First, focus on the thermometer. Next, focus on the tin."; Swift never saw the test variations'
        substances), then the valid action choosing the box the readings decide (shortest text first),
        or, that box out of reach, picking the subject up (a placing task) and going to the room the
        task says the boxes are in; else None."""
        foci = self._confirmed_foci()
        if foci == ["thermometer"]:
            return subject_focus(measure, current.valid_actions, current.look, current.inventory)
        choice = measured_choice(measure, thermometer_readings(measure, self._steps))
        if choice is None or len(foci) < 2:
            return None
        if measure.place:
            picks = [a for a in current.valid_actions if self._placement(a, measure) == choice]
        else:
            picks = [
                a for a in current.valid_actions if a.startswith("focus on ") and focus_head(a[9:]) == choice
            ]
        if picks:
            return min(picks, key=len)
        # The box is not in reach: take the subject along (a placing task) and go where the task says
        # the boxes are.
        if measure.place:
            carried = any(
                names_subject(focus_head(line.strip()), measure.subject)
                for line in current.inventory.lower().splitlines()
            )
            if not carried:
                grabs = [
                    a
                    for a in current.valid_actions
                    if a.startswith("pick up ") and names_subject(focus_head(a[8:]), measure.subject)
                ]
                return min(grabs, key=len, default=None)
        room = measure.boxes_in
        if room and room_called(current.look) != room and f"teleport to {room}" in current.valid_actions:
            return f"teleport to {room}"
        return None

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
        rooms = teleport_targets(current.valid_actions)
        # After "focus on X" was ambiguous, a bare number would confirm a focus on an arbitrary object.
        ambiguous_focus = bool(self._recent) and self._recent[-1].startswith("focus on ")
        ambiguous_focus = ambiguous_focus and current.observation.startswith("Ambiguous request")
        measure = self._measurement(task_name, current.task_description) if self.focus_rule else None
        for i, action in enumerate(actions):
            box = self._placement(action, measure) if measure is not None else None
            if (
                (ambiguous_focus and action.isdigit())
                or (
                    measure is not None
                    and box is not None
                    and measurement_violation(measure, box, self._steps, self._foci(), placing=True)
                    is not None
                )
                or self._held(action, fingerprint)
                or (
                    self.focus_rule
                    and action.startswith("focus on")
                    and not self.focus_allowed(action, task_name, current.task_description, rooms, current)
                )
            ):
                out[i] = -np.inf
            n = counts.get(action)
            if n:
                out[i] -= self.repeat_penalty * n
        return out

    def observe(self, before: StepResult, action: str, after: StepResult) -> None:
        self._recent.append(action)
        self._rooms[room_called(after.look)] = after.look  # also the states no proposal was asked for
        self._looks.append(after.look)
        self._steps.append((action, after.observation))
        if action.startswith("focus on "):
            target = action[len("focus on ") :]
            self._focused.add(target)
            landed = landed_object(target, after.observation, before.look, before.inventory)
            if landed is None:
                self._missed.add(target)
            elif not any(landed.same(o) for o in self._landed):
                self._landed.append(landed)
        unchanged = before.look == after.look and before.inventory == after.inventory
        if after.reward == 0 and unchanged and not action.startswith(_EXEMPT_PREFIXES):
            self._blocked[action] = (after.look, after.inventory)
