"""The hand-written task logic of one episode: which step a procedure or a judgement decides, and which
proposed actions the task's own rules veto.

- **Judgements**: in the life-stages tasks, the focus on the earliest stage left of the task's organism
  when it is valid now (``tasks.life_stage_violation``, as Gate-1 with ``procedures.focus``); in the
  thermometer tasks the task's next step: the subject's focus once the thermometer is focused on, then
  the action choosing the box the readings decide (``tasks.measurement_violation``).
- **Procedures**: in boil, melt, freeze and change-the-state tasks the substance is found, focused on,
  put into a metal pot and heated or cooled by a fixed route (``procedures.matter``); in the paint tasks
  the colours are poured, mixed and focused on (``procedures.paint``); in the inclined-plane tasks a
  block is timed down each plane and the slower or faster one focused on (``procedures.incline``); in
  grow-plant a seed is sown, focused on and its pot kept watered (``procedures.grow``); in the power
  tasks the device is wired to the source of the kind asked for (``procedures.circuit``).
- **Vetoes** (``vetoed``): no focus against the life-stages order or the thermometer tasks' judgement,
  no inclined plane before the trials decide which, no subject put into a box the readings do not
  decide.

``TaskLogic`` keeps its own record of the episode (``observe`` after every step; ``refused`` when a later
check, SRM's Gate-1, dropped an action): it proposes no action that changed nothing in this very state
or that was refused in it. The controller's ``ProcedureHook`` puts the decided action on top of Swift's
proposal with its rule (``Judged.rule``), so the step is logged with source ``procedure``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from fastslow.core.procedures import FocusAllowed, FocusCheck, Judged
from fastslow.core.step import StepResult
from fastslow.env.scienceworld.procedures.circuit import circuit_step
from fastslow.env.scienceworld.procedures.grow import grow_step
from fastslow.env.scienceworld.procedures.incline import incline_choice, incline_step
from fastslow.env.scienceworld.procedures.matter import matter_step
from fastslow.env.scienceworld.procedures.paint import paint_step
from fastslow.env.scienceworld.procedures.tasks import (
    GROW_TASKS,
    INCLINE_TASKS,
    LIFE_STAGE_TASKS,
    MATTER_TASKS,
    MEASUREMENT_TASKS,
    PAINT_TASKS,
    POWER_TASKS,
    Measurement,
    grow_task,
    incline_task,
    life_stage,
    life_stage_violation,
    matter_task,
    measured_choice,
    measurement_task,
    measurement_violation,
    names_subject,
    paint_task,
    power_task,
    subject_focus,
    thermometer_readings,
)
from fastslow.env.scienceworld.semantics import (
    FOCUS,
    PICK_UP,
    focus_confirmed,
    focus_head,
    is_focus,
    normalize,
    room_called,
    teleport_targets,
    teleport_to,
    verb_rest,
    verb_target,
)
from fastslow.vocab import ProcedureRule

_EXEMPT_PREFIXES = ("wait",)
PROCEDURE_TASKS = MATTER_TASKS | PAINT_TASKS | INCLINE_TASKS | GROW_TASKS | POWER_TASKS
"""Tasks whose next step a procedure proposes."""


def _judged(action: str | None, rule: ProcedureRule) -> Judged | None:
    return Judged(action, rule) if action is not None else None


@dataclass
class TaskLogic:
    """The task procedures and judgements of one episode (module docstring; ``reset`` clears it): a
    ``core.procedures.TaskProcedures``, ScienceWorld's ``World.task_procedures``."""

    _blocked: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Actions whose last execution changed nothing, with the state it left (not proposed there again)."""
    _refused: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Actions a later check (SRM's Gate-1) refused, with the look and inventory it refused them in."""
    _focused: set[str] = field(default_factory=set)
    """The targets of every focus sent, as written (the life-stages order counts them)."""
    _steps: list[tuple[str, str]] = field(default_factory=list)
    """Every executed (action, observation) of the episode."""
    _looks: list[str] = field(default_factory=list)
    """The look after each executed step (the matter procedure reads how long the stove had the subject)."""
    _rooms: dict[str, str] = field(default_factory=dict)
    """The last look of every room seen (the procedures search the rooms not seen)."""

    def reset(self) -> None:
        self._blocked.clear()
        self._refused.clear()
        self._focused.clear()
        self._steps.clear()
        self._looks.clear()
        self._rooms.clear()

    def observe(self, before: StepResult, action: str, after: StepResult) -> None:
        """Record an executed step (every step of the episode, whoever chose it)."""
        self._rooms[room_called(after.look)] = after.look
        self._looks.append(after.look)
        self._steps.append((action, after.observation))
        target = verb_target(action, FOCUS)
        if target is not None:
            self._focused.add(target)
        unchanged = before.look == after.look and before.inventory == after.inventory
        if after.reward == 0 and unchanged and not action.startswith(_EXEMPT_PREFIXES):
            self._blocked[action] = (after.look, after.inventory)

    def refused(self, action: str, current: StepResult) -> None:
        """A later check (SRM's Gate-1) refused ``action`` in the state ``current``: not proposed again
        until the look or the inventory changes."""
        self._refused[action] = (current.look, current.inventory)

    def _held(self, action: str, fingerprint: tuple[str, str]) -> bool:
        return self._blocked.get(action) == fingerprint or self._refused.get(action) == fingerprint

    def _confirmed_foci(self) -> list[str]:
        """Heads of the focus actions ScienceWorld confirmed so far, in order."""
        return [focus_head(verb_rest(a, FOCUS)) for a, o in self._steps if is_focus(a) and focus_confirmed(o)]

    @staticmethod
    def _measurement(task_name: str, task_description: str) -> Measurement | None:
        return measurement_task(task_description) if task_name in MEASUREMENT_TASKS else None

    @staticmethod
    def _placement(action: str, measure: Measurement) -> str | None:
        """The box of a "move <subject> ... to <box>" action of a placing measurement task, else None."""
        if not measure.place or not action.startswith("move ") or " to " not in action:
            return None
        moved, box = verb_rest(action, "move").rsplit(" to ", 1)
        return normalize(box) if names_subject(focus_head(moved), measure.subject) else None

    def vetoed(self, action: str, current: StepResult, task_name: str) -> bool:
        """The task's own rules refuse ``action`` now (module docstring, Vetoes)."""
        description = current.task_description
        measure = self._measurement(task_name, description)
        if measure is not None:
            box = self._placement(action, measure)
            foci = len(self._confirmed_foci())
            steps = self._steps
            why = None if box is None else measurement_violation(measure, box, steps, foci, placing=True)
            if why is not None:
                return True
        if not action.startswith(FOCUS):
            return False
        target = verb_rest(action, FOCUS)
        if task_name in LIFE_STAGE_TASKS:
            focused = sorted(self._focused)
            if life_stage_violation(target, current.valid_actions, focused, description, current.look):
                return True  # earliest to latest: no focus on the adult turtle while the egg is there
        if measure is not None and measurement_violation(
            measure, focus_head(target), self._steps, len(self._confirmed_foci())
        ):
            return True  # thermometer, subject, then the box a reading decides; nothing else
        incline = incline_task(description) if task_name in INCLINE_TASKS else None
        return (
            incline is not None
            and target.startswith("inclined plane")
            and target != incline_choice(incline, self._steps, current.valid_actions)
        )  # a plane only once the trials decide which (procedures.incline)

    def judged(self, current: StepResult, task_name: str, focus_allowed: FocusCheck) -> Judged | None:
        """The step the task's procedure or judgement decides now (module docstring), with its rule; None
        where none applies or it steps aside (Swift then acts). ``focus_allowed``: the general focus rule
        the life-stages judgement respects too."""
        fingerprint = (current.look, current.inventory)
        if task_name in PROCEDURE_TASKS:
            self._rooms[room_called(current.look)] = current.look
            landed = [focus_confirmed(o) or "" for a, o in self._steps if is_focus(a)]

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
        allowed = [
            a
            for a in current.valid_actions
            if is_focus(a)
            and self._refused.get(a) != fingerprint
            and focus_allowed(a, current)
            and not self.vetoed(a, current, task_name)
        ]
        earliest = min(
            allowed,
            key=lambda a: (life_stage(verb_rest(a, FOCUS), current.look) or 0, len(a)),
            default=None,
        )
        return _judged(earliest, "judgement:life-stages")

    def focus_check(self, allowed: FocusAllowed, task_name: str) -> FocusCheck:
        """``general_focus_check``: the rooms the policy is given are the teleport targets."""
        return general_focus_check(allowed, task_name)

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
                a for a in current.valid_actions if is_focus(a) and focus_head(verb_rest(a, FOCUS)) == choice
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
                    if (held := verb_target(a, PICK_UP)) is not None
                    and names_subject(focus_head(held), measure.subject)
                ]
                return min(grabs, key=len, default=None)
        room = measure.boxes_in
        if room and room_called(current.look) != room and teleport_to(room) in current.valid_actions:
            return teleport_to(room)
        return None


def general_focus_check(allowed: FocusAllowed, task_name: str) -> FocusCheck:
    """The policy's ``focus_allowed(action, task_name, description, rooms, current)`` as a ``FocusCheck``."""
    return lambda action, current: allowed(
        action, task_name, current.task_description, teleport_targets(current.valid_actions), current
    )
