"""The Critic's scheduler (paper §3.2): when a stagnation report gets a bounded corrective call.

The Critic never executes anything: ``Critic.maybe_call`` returns up to ``max_actions`` exact
valid-action strings for the controller to push into the same FIFO buffer Sage fills, and each of them
still passes Gate-1 when its turn comes (the state may have changed by then). Calls are bounded: a
budget per episode, a cooldown after each call, a longer back-off after an ineffective one (no score
increase within ``effect_window`` steps). ``make_critic`` puts the backend ``critic.kind`` names
(``reflection.critic.llm`` or ``reflection.critic.rules``) behind it.

The ``critic:`` section's profile fields switch the bookkeeping to the paper authors' final loop
(docs/fidelity.md, rows R1-R8): with ``timing: empty_buffer`` a report made while the buffer holds actions
waits for it to run dry (``on_buffer_empty``, at most ``pending_steps`` of their steps, cancelled by a
reward); ``charge: injected`` counts only answers whose actions were injected (an empty, low-quality or
same-state answer costs nothing); ``backoff_on: same_state_actions`` backs off only when an answer
repeats the last injected actions in the same state; ``prompt_actions: all`` shows the whole filtered
valid set in the prompt and keeps only answers in it. Their step clock differs between the two call
points (the report's step index right after the step, the next iteration's index when the buffer ran
dry); ``_clock`` keeps both.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastslow import vocab
from fastslow.core.focus import FocusJudge
from fastslow.core.trajectory import Trajectory
from fastslow.errors import ModelError
from fastslow.events import CriticCall, CriticEffect, EventSink, StagnationReport
from fastslow.models import ChatModel
from fastslow.reflection.config import CriticConfig
from fastslow.reflection.critic.base import CriticBackend, MemoryFetch
from fastslow.reflection.critic.llm import LlmCritic, answerable, move_prefixes
from fastslow.reflection.critic.rules import RulesCritic


@dataclass
class _Pending:
    call_step: int
    score_before: int


@dataclass
class _Waiting:
    """A report that came while the buffer held actions (``critic.timing: empty_buffer``)."""

    report: StagnationReport
    clock: int
    """The authors' step index of the report."""


Signature = tuple[str, str, str]
"""The authors' "same state" for a repeated Critic answer: room, inventory items, observation (120)."""


def _signature(traj: Trajectory) -> Signature:
    cur = traj.current
    items = sorted(
        line.strip().lower()
        for line in cur.inventory.splitlines()
        if line.strip() and not line.strip().lower().startswith(("in your inventory", "your inventory"))
    )
    return traj.room.lower(), "|".join(items), " ".join(cur.observation.split()).lower()[:120]


def _norm(action: str) -> str:
    return " ".join(action.split()).lower()


class Critic:
    """Budget, cooldown, back-off and effect tracking around a backend; one instance per episode.

    Call ``maybe_call`` after every env step (with the detector's report, None when there is none, and
    whether the buffer is empty): it first settles the effect of an earlier call, then calls the backend
    if a report is present and the safeguards allow it. With ``critic.timing: empty_buffer`` a report
    made while the buffer holds actions waits, and ``on_buffer_empty`` (the buffer ran dry before the
    next decision) answers it.
    """

    def __init__(
        self, config: CriticConfig, backend: CriticBackend, *, sink: EventSink | None = None
    ) -> None:
        self.config = config
        self.backend = backend
        self.sink = sink
        self.calls = 0
        """Calls charged to the budget: every call, or (``charge: injected``) the injected ones."""
        self.model_calls = 0
        """Backend calls made, charged or not."""
        self.effective_calls = 0
        self.ineffective_calls = 0
        self._next_allowed = 0
        self._pending: _Pending | None = None
        self._backing_off = False
        """The wait in force is a back-off after an ineffective call, not a cooldown."""
        self._waiting: _Waiting | None = None
        self._last_injected: int | None = None
        """Clock of the last injected call (``charge: injected``: the cooldown counts from it)."""
        self._disabled_until = -(10**9)
        """``backoff_on: same_state_actions``: no call before this clock."""
        self._last_answer: tuple[Signature, tuple[str, ...]] | None = None
        """State and actions of the last injected call."""

    @property
    def budget_left(self) -> int:
        return max(self.config.budget - self.calls, 0)

    @property
    def waiting(self) -> StagnationReport | None:
        """The report waiting for the buffer to run dry (``timing: empty_buffer``), if any."""
        return self._waiting.report if self._waiting is not None else None

    def _clock(self, traj: Trajectory, *, deferred: bool) -> int:
        """The step a call is made at. fastslow: env steps taken. The authors' loop (``timing:
        empty_buffer``) indexes steps from 0: a call right after the step carries that step's index, a
        call when the buffer ran dry the next iteration's, one more."""
        steps = traj.current.steps
        if self.config.timing != "empty_buffer":
            return steps
        return steps if deferred else steps - 1

    def blocked(self, step: int) -> str | None:
        """Why a call is not allowed at ``step`` (budget, pending, cooldown, backoff), or None."""
        if self.calls >= self.config.budget:
            return "budget"
        if self.config.charge == "injected":
            # Only injected calls count: no effect window blocks, the cooldown runs from the last one.
            if self._last_injected is not None and step - self._last_injected < self.config.cooldown:
                return "cooldown"
            if step < max(self._next_allowed if self._backing_off else 0, self._disabled_until):
                return "backoff"
            return None
        if self._pending is not None:
            return "pending"
        if step < self._disabled_until:
            return "backoff"
        if step < self._next_allowed:
            return "backoff" if self._backing_off else "cooldown"
        return None

    def maybe_call(
        self,
        report: StagnationReport | None,
        traj: Trajectory,
        memories: MemoryFetch = None,
        *,
        buffer_empty: bool = True,
    ) -> list[str]:
        """Actions for the buffer (possibly none)."""
        self._settle(traj)
        if self.config.timing != "empty_buffer":
            step = traj.current.steps
            if report is None or self.blocked(step) is not None:
                return []
            return self._call(report, traj, memories, clock=step, deferred=False)
        actions: list[str] = []
        if report is not None:
            clock = self._clock(traj, deferred=False)
            if not buffer_empty:
                self._waiting = _Waiting(report, clock)  # a later report replaces a waiting one
            elif self.blocked(clock) is None:
                actions = self._call(report, traj, memories, clock=clock, deferred=False)
        if self._waiting is not None and traj.turns and traj.turns[-1].reward > 0:
            self._waiting = None  # progress: the stagnation it reported is over
        return actions

    def on_buffer_empty(self, traj: Trajectory, memories: MemoryFetch = None) -> list[str]:
        """The buffer is empty before the next decision: answer a waiting report still fresh enough
        (the authors' call "after the buffer drained"). Blocked by budget or cooldown, it keeps waiting."""
        waiting = self._waiting
        if waiting is None:
            return []
        clock = self._clock(traj, deferred=True)
        if clock - waiting.clock > self.config.pending_steps:
            self._waiting = None  # stale
            return []
        if self.blocked(clock) is not None:
            return []
        self._waiting = None
        return self._call(waiting.report, traj, memories, clock=clock, deferred=True)

    def _call(
        self, report: StagnationReport, traj: Trajectory, memories: MemoryFetch, *, clock: int, deferred: bool
    ) -> list[str]:
        cfg = self.config
        step = traj.current.steps
        self.model_calls += 1
        if cfg.charge == "every_call":
            self.calls += 1
            self._backing_off = False
            self._next_allowed = clock + cfg.cooldown
        error: str | None = None
        diagnosis, proposed = "", list[str]()
        try:
            diagnosis, proposed = self.backend.propose(report, traj, memories)
        except ModelError as exc:
            error = f"{type(exc).__name__}: {exc}"
        actions = self._filter(proposed, report, traj)
        if not actions and error is None:
            error = vocab.CRITIC_NO_VALID_ACTIONS if proposed else vocab.CRITIC_NO_ACTIONS
        skipped = self._skip(actions, traj, clock, deferred)
        injected = bool(actions) and skipped is None
        if injected:
            self._last_answer = (_signature(traj), tuple(_norm(a) for a in actions))
            if cfg.charge == "injected":
                self.calls += 1
                self._last_injected = clock
        self._emit(
            CriticCall(
                step=step,
                kind=self.backend.kind,
                pattern=report.pattern,
                diagnosis=diagnosis,
                proposed=proposed,
                actions=actions,
                budget_left=self.budget_left,
                error=error,
                injected=injected,
                skipped=skipped,
                deferred=deferred,
            )
        )
        if cfg.charge == "every_call":
            self._pending = _Pending(step, traj.current.score)
            if not actions:
                self._judge(traj, effective=False, reason="no_actions")
        elif injected:
            if self._pending is not None:
                self._judge(traj, effective=False, reason="no_progress_in_window")
            self._pending = _Pending(step, traj.current.score)
        return actions if injected else []

    def _skip(self, actions: list[str], traj: Trajectory, clock: int, deferred: bool) -> str | None:
        """Why an answer is not injected (the authors' filters), or None. Only the profile's filters
        apply; fastslow's own profile injects whatever survived ``_filter``."""
        cfg = self.config
        if cfg.charge == "injected" and not actions:
            return "empty_output"
        if not actions:
            return None
        norm = [_norm(a) for a in actions]
        if cfg.skip_low_quality:
            # Right after a step the authors compare with that step's action and the three before it;
            # when the buffer ran dry, with the last three.
            recent = {_norm(t.action) for t in traj.recent(3 if deferred else 4)}
            moves = move_prefixes(traj.semantics)
            if all(a in recent for a in norm) or all(a.startswith(moves) for a in norm):
                return "low_quality_output"
        if cfg.backoff_on == "same_state_actions" and self._last_answer == (_signature(traj), tuple(norm)):
            self._disabled_until = max(self._disabled_until, clock + cfg.backoff)
            return "same_state_same_actions"
        return None

    def finish(self, traj: Trajectory) -> None:
        """Episode over: settle a call still inside its effect window."""
        self._settle(traj)
        if self._pending is not None:
            effective = traj.current.score > self._pending.score_before
            self._judge(traj, effective=effective, reason="score_increase" if effective else "episode_end")

    def _filter(self, proposed: list[str], report: StagnationReport, traj: Trajectory) -> list[str]:
        kept = set(answerable(report, traj, all_actions=self.config.prompt_actions == "all"))
        if self.config.prompt_actions == "all":
            # The authors keep the first answers that are in the list the prompt showed, as written.
            return [a for a in proposed[: self.config.max_actions] if a in kept]
        return [a for a in dict.fromkeys(proposed) if a in kept][: self.config.max_actions]

    def _settle(self, traj: Trajectory) -> None:
        pending = self._pending
        if pending is None:
            return
        if traj.current.score > pending.score_before:
            self._judge(traj, effective=True, reason="score_increase")
        elif traj.current.steps >= pending.call_step + self.config.effect_window:
            self._judge(traj, effective=False, reason="no_progress_in_window")

    def _judge(self, traj: Trajectory, *, effective: bool, reason: str) -> None:
        pending = self._pending
        assert pending is not None
        self._pending = None
        if effective:
            self.effective_calls += 1
        else:
            self.ineffective_calls += 1
            if self.config.backoff_on == "no_score_gain":
                self._next_allowed = max(self._next_allowed, pending.call_step + self.config.backoff)
                self._backing_off = True
        self._emit(
            CriticEffect(
                step=traj.current.steps,
                call_step=pending.call_step,
                effective=effective,
                score_before=pending.score_before,
                score_after=traj.current.score,
                reason=reason,
            )
        )

    def _emit(self, event: CriticCall | CriticEffect) -> None:
        if self.sink is not None:
            self.sink.emit(event)


def make_critic(
    config: CriticConfig,
    *,
    sink: EventSink | None = None,
    model: ChatModel | None = None,
    focus_budget: str = "gold",
    judge: FocusJudge | None = None,
) -> Critic:
    """The Critic ``config.kind`` names; ``model`` overrides ``config.model`` (tests, shared clients).
    ``focus_budget``: Gate-1's (``srm.gate.focus_budget``), for the focus count the prompt states;
    ``judge``: the task-specific focus rules (``procedures.enabled``), if any."""
    backend: CriticBackend
    if config.kind == "rules":
        backend = RulesCritic(config.max_actions)
    else:
        from fastslow.models import make_model

        backend = LlmCritic(
            model if model is not None else make_model(config.model),
            sink=sink,
            history=config.history,
            max_actions=config.max_actions,
            all_actions=config.prompt_actions == "all",
            focus_budget=focus_budget,
            budget_tokens=config.prompt_budget_tokens,
            judge=judge,
            constrain=config.constrain,
        )
    return Critic(config, backend, sink=sink)
