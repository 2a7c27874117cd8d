"""SRM stagnation detector, paper §3.2: deterministic diagnostics over the recent trajectory.

Called once after every env step. It keeps its own record of the effective state after each step
(room, inventory, look text), because "no effect" means the step changed neither the score nor that
state; the ``Trajectory`` keeps observations but not per-step states. Thresholds are the authors'
(docs/srm.md, "Stagnation detector"): same observation x3, same action x2 without effect, same verb
x3 without effect, >= 4 of the last 5 steps navigating among <= 2 distinct (room, inventory) states,
window 5, nothing before step 5; plus a loop of failure observations: the world's reply to an action
it does not know, an ambiguity prompt (a step whose input was not executed) or a refusal (the episode's
``WorldSemantics.classify_feedback``: invalid / ambiguous / failure, ScienceWorld's refusals found by
the run's ``env.failure_markers``). Rooms, verbs and navigation are the world's too.

``stagnation.no_effect: observation`` (the authors' profile, configs/srm.yaml) runs the patterns as the
paper's authors' detector tests them: a repeat "without effect" is one whose observation repeats
(whitespace and case aside), the repeated observation and the navigation loop have no reward condition,
the navigation window must be full, and with ``open_door_navigates`` opening a door is navigation; with
``repeat_after: 1`` every step reports. Their code implements four of the paper's five signals; the
fifth, the invalid-action loop, is the paper's and is kept in both profiles.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from fastslow.core.focus import FocusJudge
from fastslow.core.semantics import STAGNATION_FAILURES, WorldSemantics
from fastslow.core.step import StepResult
from fastslow.core.trajectory import Trajectory, Turn
from fastslow.events import EventSink, StagnationReport
from fastslow.reflection.config import StagnationConfig
from fastslow.reflection.focus import focus_limit_for, focused_targets
from fastslow.vocab import NAVIGATION_LOOP, STAGNATION_PATTERNS, StagnationPattern

_OPEN_DOOR = "open door to "
# Main pattern first when several fire at once: the most specific evidence leads.
PATTERNS = STAGNATION_PATTERNS


def is_failure(semantics: WorldSemantics, observation: str, markers: Iterable[str] | None = None) -> bool:
    """A step the invalid loop counts: unknown or ambiguous input, or a refusal (``markers``: the run's
    refusal words; None: the world's default)."""
    return semantics.classify_feedback(observation, markers) in STAGNATION_FAILURES


@dataclass(frozen=True)
class _Snapshot:
    """What one step left behind: enough to tell whether the step changed anything."""

    turn: Turn
    room: str
    inventory: str
    look: str
    effect: bool
    """The step changed the score or the (room, inventory, look) state."""
    obs: str
    """The observation, whitespace runs collapsed and lower-cased (the authors' same-observation key)."""


_Detector = Callable[[list[_Snapshot]], tuple[list[int], list[str]] | None]


class StagnationDetector:
    """Per-episode detector; ``update`` after each step returns a report when a threshold is crossed."""

    def __init__(
        self,
        config: StagnationConfig | None = None,
        *,
        sink: EventSink | None = None,
        first: StepResult | None = None,
        markers: Iterable[str] | None = None,
        judge: FocusJudge | None = None,
    ) -> None:
        """``first``: the episode's reset result, so the first step's effect can be judged too
        (without it the first step counts as having an effect). ``markers``: the run's
        ``env.failure_markers``, which decide what the invalid loop counts as a refusal (None: the
        world's default). The world's semantics are the trajectory's, read at each update. ``judge``:
        the task-specific focus rules, whose budget the report's constraints state (``procedures``)."""
        self.config = config or StagnationConfig()
        self.markers = None if markers is None else tuple(markers)
        self.sink = sink
        self.judge = judge
        self._snaps: list[_Snapshot] = []
        self._first = first
        self._semantics: WorldSemantics | None = None
        self._last_reported: dict[StagnationPattern, int] = {}

    def update(self, traj: Trajectory) -> StagnationReport | None:
        if not traj.turns or (self._snaps and self._snaps[-1].turn.step >= traj.turns[-1].step):
            return None  # nothing new: update is idempotent per step
        self._record(traj)
        cfg = self.config
        step = traj.current.steps
        if step < cfg.min_step:
            return None
        window = self._snaps[-cfg.window :]
        found: dict[StagnationPattern, tuple[list[int], list[str]]] = {}
        for name in PATTERNS:
            hit = self._detectors[name](window)
            if hit is not None and step - self._last_reported.get(name, -(10**9)) >= cfg.repeat_after:
                found[name] = hit
        if not found:
            return None
        for name in found:
            self._last_reported[name] = step
        main = next(p for p in PATTERNS if p in found)
        evidence = sorted({s for steps, _ in found.values() for s in steps})
        avoid = list(dict.fromkeys(a for _, actions in found.values() for a in actions))
        report = StagnationReport(
            step=step,
            pattern=main,
            patterns=[p for p in PATTERNS if p in found],
            evidence_steps=evidence,
            avoid=avoid,
            constraints=runtime_constraints(traj, avoid, self.judge),
        )
        if self.sink is not None:
            self.sink.emit(report)
        return report

    def _record(self, traj: Trajectory) -> None:
        turn, cur, semantics = traj.turns[-1], traj.current, traj.semantics
        self._semantics = semantics
        room = semantics.location(cur.look)
        if self._snaps:
            last = self._snaps[-1]
            before: tuple[str, str, str] | None = (last.room, last.inventory, last.look)
        else:  # the first step's state before it is the reset's, read once
            first = self._first
            before = (
                (semantics.location(first.look), first.inventory, first.look) if first is not None else None
            )
        effect = turn.reward != 0 or before is None or (room, cur.inventory, cur.look) != before
        obs = " ".join(turn.observation.split()).lower()
        self._snaps.append(_Snapshot(turn, room, cur.inventory, cur.look, effect, obs))

    @property
    def _detectors(self) -> dict[StagnationPattern, _Detector]:
        """Each pattern's detector."""
        return {
            "invalid_loop": self._invalid_loop,
            "repeated_action": self._repeated_action,
            "repeated_observation": self._repeated_observation,
            "verb_loop": self._verb_loop,
            NAVIGATION_LOOP: self._navigation_loop,
        }

    @property
    def _by_observation(self) -> bool:
        return self.config.no_effect == "observation"

    @property
    def semantics(self) -> WorldSemantics:
        assert self._semantics is not None, "detectors run after _record"
        return self._semantics

    def _navigates(self, action: str) -> bool:
        if self.semantics.verb_of(action) in self.semantics.navigation_verbs:
            return True
        return self.config.open_door_navigates and action.lower().startswith(_OPEN_DOOR)

    # Each detector returns (evidence steps, actions to avoid) or None.
    def _invalid_loop(self, window: list[_Snapshot]) -> tuple[list[int], list[str]] | None:
        bad = [s for s in window if is_failure(self.semantics, s.turn.observation, self.markers)]
        if len(bad) < self.config.invalid_loop:
            return None
        return [s.turn.step for s in bad], [s.turn.action for s in bad]

    def _repeated_action(self, window: list[_Snapshot]) -> tuple[list[int], list[str]] | None:
        n = self.config.repeated_action
        tail = window[-n:]
        if len(tail) < n or len({s.turn.action for s in tail}) != 1:
            return None
        if self._by_observation:
            if len({s.obs for s in tail}) != 1:
                return None
        elif any(s.effect for s in tail[1:]):
            return None
        return [s.turn.step for s in tail], [tail[0].turn.action]

    def _repeated_observation(self, window: list[_Snapshot]) -> tuple[list[int], list[str]] | None:
        n = self.config.repeated_observation
        tail = window[-n:]
        if len(tail) < n:
            return None
        if self._by_observation:  # the authors' test has no reward condition
            if len({s.obs for s in tail}) != 1:
                return None
        elif len({s.turn.observation for s in tail}) != 1 or any(s.turn.reward for s in tail):
            return None
        return [s.turn.step for s in tail], list(dict.fromkeys(s.turn.action for s in tail))

    def _verb_loop(self, window: list[_Snapshot]) -> tuple[list[int], list[str]] | None:
        n = self.config.verb_loop
        tail = window[-n:]
        if len(tail) < n or len({self.semantics.verb_of(s.turn.action) for s in tail}) != 1:
            return None
        # The authors: the verb run's last two observations match; fastslow: no step of it had an effect.
        if self._by_observation:
            no_effect = len({s.obs for s in tail[-2:]}) == 1
        else:
            no_effect = not any(s.effect for s in tail)
        if not no_effect:
            return None
        return [s.turn.step for s in tail], list(dict.fromkeys(s.turn.action for s in tail))

    def _navigation_loop(self, window: list[_Snapshot]) -> tuple[list[int], list[str]] | None:
        nav = [s for s in window if self._navigates(s.turn.action)]
        if len(nav) < self.config.navigation_steps:
            return None
        if self._by_observation:
            if len(window) < self.config.window:
                return None  # the authors judge a full window only
        elif any(s.turn.reward > 0 for s in window):
            return None
        key = _inventory_key if self._by_observation else str
        states = {(s.room, key(s.inventory)) for s in window}
        if len(states) > self.config.navigation_max_states:
            return None
        return [s.turn.step for s in nav], list(dict.fromkeys(s.turn.action for s in nav))


def _inventory_key(inventory: str) -> str:
    """The inventory's items, sorted, without the heading line: the same items in another order (or
    another heading) are the same (room, inventory) state, as the authors' state signature has it."""
    items = [line.strip().lower() for line in inventory.splitlines()]
    kept = sorted(i for i in items if i and not i.startswith(("in your inventory", "your inventory")))
    return "|".join(kept)


def runtime_constraints(traj: Trajectory, avoid: list[str], judge: FocusJudge | None = None) -> list[str]:
    """The constraints the Critic must respect, in words (rendered into its prompt); the focus budget
    only in a world with a focus-like commitment."""
    lines = []
    if traj.semantics.commitment_verb is not None:
        done = sorted(focused_targets(traj))
        limit = focus_limit_for(traj.semantics, traj.task_name, traj.task_description, judge)
        lines += [
            f"focus actions used: {len(done)} of {limit}" + (f" (on: {', '.join(done)})" if done else ""),
            "never focus on an object the task does not ask for: a wrong focus fails the task",
        ]
    lines.append(f"rooms visited: {', '.join(traj.visited_rooms) or 'none'}")
    if avoid:
        lines.append(f"do not repeat: {'; '.join(avoid)}")
    return lines
