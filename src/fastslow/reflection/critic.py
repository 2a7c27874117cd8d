"""SRM Critic, paper §3.2: a bounded corrective call on stagnation, whose actions go to the buffer.

The Critic never executes anything: ``maybe_call`` returns up to ``max_actions`` exact valid-action
strings for the controller to push into the same FIFO buffer Sage fills, and each of them still passes
Gate-1 when its turn comes (the state may have changed by then). Calls are bounded: a budget per
episode, a cooldown after each call, a longer back-off after an ineffective one (no score increase
within ``effect_window`` steps). Two backends: ``llm`` (the paper's; prompt ``prompts/critic.j2``)
and ``rules`` (deterministic: untried task-relevant actions and unvisited rooms).

The ``critic:`` section's profile fields switch the bookkeeping to the paper authors' final loop
(docs/fidelity.md, rows R1-R8): with ``timing: empty_buffer`` a report made while the buffer holds actions
waits for it to run dry (``on_buffer_empty``, at most ``pending_steps`` of their steps, cancelled by a
reward); ``charge: injected`` counts only answers whose actions were injected (an empty, low-quality or
same-state answer costs nothing); ``backoff_on: same_state_actions`` backs off only when an answer
repeats the last injected actions in the same state; ``prompt_actions: all`` shows the whole filtered
valid set. Their step clock differs between the two call points (the report's step index right after
the step, the next iteration's index when the buffer ran dry); ``_clock`` keeps both.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from fastslow.core.focus import FocusJudge
from fastslow.core.trajectory import Trajectory, Turn
from fastslow.env.semantics import NAVIGATION_VERBS, ROOMS, focus_target, known_rooms, verb_of
from fastslow.errors import ModelError
from fastslow.events import CriticCall, CriticEffect, EventSink, ListSink, StagnationReport
from fastslow.models import ChatModel, Message, call_model, estimate_tokens
from fastslow.reflection.config import CriticConfig
from fastslow.reflection.focus import content_words, focus_usage
from fastslow.templates import prompt_template

# Verbs the Critic's candidate lists use, most useful first for getting unstuck (take and read what the
# task names, open containers, look, operate devices, move things). Everything else is left out: focus
# is irreversible (a wrong one fails the task), eat and flush destroy objects, navigation is proposed
# separately, wait/look around/inventory change nothing.
_VERB_RANK = {
    "pick up": 0,
    "read": 0,
    "open": 1,
    "look at": 2,
    "activate": 2,
    "mix": 2,
    "pour": 3,
    "move": 3,
    "use": 4,
    "connect": 4,
    "dunk": 4,
    "look in": 5,
    "close": 5,
    "deactivate": 5,
    "put down": 6,
}
_LAST_OBJECT = re.compile(r" (?:to|into|on|in) ")
_NUMBERED = re.compile(r"^\s*(?:\d+\s*[.):]|[-*•])\s*")
_VALID_SAMPLE = 40
_MIN_LISTED = 20
"""A budget-cut authors' list keeps at least this many actions; the history gives way first."""


MemoryFetch = Callable[[Sequence[str]], list[str]] | None
"""AMM's evidence for the Critic, fetched on demand with the report's patterns (they decide whether an
avoidance memory joins a fresh search): reading it consumes AMM's T2/T3 cache and logs an injection, so
only a backend that puts memories in a prompt (the LLM Critic) calls it."""


class CriticBackend(Protocol):
    """Turns a stagnation report into a diagnosis and proposed actions (unfiltered)."""

    kind: str

    def propose(
        self, report: StagnationReport, traj: Trajectory, memories: MemoryFetch
    ) -> tuple[str, list[str]]:
        """(diagnosis, actions). Raises ``ModelError`` when the model call fails."""
        ...


def _rooms(traj: Trajectory) -> set[str]:
    return known_rooms(traj.current.valid_actions, traj.visited_rooms)


def relevant_actions(traj: Trajectory, limit: int) -> list[str]:
    """Valid actions on objects the task description names: useful verbs first, then more words shared
    with the task, then shorter. Actions on rooms ("move x to kitchen", "look at kitchen") and burning
    things ("use lighter on x") are left out: they rarely help and can destroy what the task needs."""
    words = content_words(traj.task_description)
    rooms = _rooms(traj)
    scored = []
    for action in traj.current.valid_actions:
        verb = verb_of(action)
        rank = _VERB_RANK.get(verb)
        if rank is None:
            continue
        objects = action[len(verb) + 1 :]
        if objects in rooms or _LAST_OBJECT.split(objects)[-1] in rooms:
            continue
        if verb == "use" and "lighter" in objects:
            continue
        overlap = len(content_words(objects) & words)
        if overlap:
            scored.append((rank, -overlap, len(action), action))
    return [a for *_, a in sorted(scored)[:limit]]


def unvisited_rooms(traj: Trajectory) -> list[str]:
    """``teleport to`` actions towards rooms not seen yet, rooms named in the task first."""
    words = content_words(traj.task_description)
    seen = set(traj.visited_rooms)
    moves = [a for a in traj.current.valid_actions if a.startswith("teleport to ")]
    fresh = [a for a in moves if a[len("teleport to ") :] not in seen]
    return sorted(fresh, key=lambda a: (not (content_words(a) & words), a))


class RulesCritic:
    """Deterministic Critic: untried task-relevant actions, then unvisited rooms (or rooms first when
    the agent is circling between rooms); never an action the report says to avoid, never a focus."""

    kind = "rules"

    def __init__(self, max_actions: int = 5) -> None:
        self.max_actions = max_actions

    def propose(
        self, report: StagnationReport, traj: Trajectory, memories: MemoryFetch
    ) -> tuple[str, list[str]]:
        tried = {t.action for t in traj.turns}
        avoid = set(report.avoid)
        local = [
            a
            for a in relevant_actions(traj, limit=10 * self.max_actions)
            if a not in tried and a not in avoid
        ]
        rooms = [a for a in unvisited_rooms(traj) if a not in avoid]
        # Buffered actions run in order: after a teleport the local actions of this room would be
        # dropped by Gate-1, so local ones go first unless the loop is itself about navigation.
        n_local = 0 if report.pattern == "navigation_loop" else min(3, len(local))
        actions = local[:n_local] + rooms
        actions = (actions + local[n_local:])[: self.max_actions]
        diagnosis = (
            f"{report.pattern} over steps {', '.join(map(str, report.evidence_steps))}; "
            f"trying {min(n_local, len(actions))} untried task-relevant action(s) and unvisited rooms."
        )
        return diagnosis, actions


_AIR_OR_AGENT = re.compile(r"\b(?:air|agent)\b")
_INSPECTION = re.compile(r"^(?:look at|examine) (.+)$")
_MOVES = ("go to ", "teleport to ", "open door to ")
"""What the authors count as a navigation action in a Critic answer (and in their detector)."""


def critic_action_list(traj: Trajectory) -> list[str]:
    """The valid actions the authors' Critic sees and may answer with, sorted: the state's valid set
    minus every look (the look text is in the prompt already), inspections of a room and actions naming
    the air or the agent; ``wait`` stays, and an empty result falls back to the whole set."""
    valid = sorted(traj.current.valid_actions)
    rooms = set(ROOMS) | set(traj.visited_rooms)
    kept: list[str] = []
    for action in valid:
        norm = " ".join(action.lower().split())
        if not norm or _AIR_OR_AGENT.search(norm) or norm == "look around" or norm.startswith("look "):
            continue
        inspected = _INSPECTION.match(norm)
        if inspected is not None and inspected.group(1) in rooms:
            continue
        kept.append(action)
    if "wait" in valid and "wait" not in kept:
        kept.append("wait")
    return kept or valid


def _navigation_count(turns: Sequence[Turn]) -> int:
    return sum(1 for t in turns if verb_of(t.action) in NAVIGATION_VERBS or t.action.startswith(_MOVES))


def authors_constraints(
    report: StagnationReport, traj: Trajectory, focus_budget: str, judge: FocusJudge | None = None
) -> list[str]:
    """The runtime constraints the authors' Critic prompt states, in our words: the focus count (focus
    forbidden once it is used up), navigation disfavoured on a navigation loop or 3+ moves in the last 5
    steps, the last three actions to avoid, at most one move in the answer."""
    used, limit = focus_usage(traj, focus_budget, judge=judge)
    lines = [f"focus actions used: {used} of {limit}"]
    if used >= limit:
        lines.append("no focus action may be proposed: the focus budget is used up")
    if "navigation_loop" in report.patterns or _navigation_count(traj.recent(5)) >= 3:
        lines.append("navigation is strongly disfavoured: move only when nothing else can make progress")
    recent = [t.action for t in traj.recent(3)]
    if recent:
        lines.append(f"avoid repeating the last actions unless one is a needed step: {'; '.join(recent)}")
    lines.append("at most one navigation action (go to / teleport to / open door to) in the list")
    return lines


def render_critic_prompt(
    report: StagnationReport,
    traj: Trajectory,
    memories: Sequence[str] = (),
    *,
    history: int = 10,
    max_actions: int = 5,
    all_actions: bool = False,
    focus_budget: str = "gold",
    budget_tokens: int = 0,
    judge: FocusJudge | None = None,
) -> str:
    """The Critic's user message (``prompts/critic.j2``). ``all_actions``: list the whole filtered valid
    set (``critic_action_list``) with the authors' constraints, instead of fastslow's 40-action sample.
    ``judge``: the task-specific focus rules (``procedures``): their budget, and the focus actions listed
    only where the task names their target.
    ``budget_tokens`` (0: none): a longer prompt lists only the most task-relevant part of that set
    (``_fit_actions``) and then fewer turns, so that it fits a small model's context."""
    cur = traj.current
    if all_actions:
        listed = critic_action_list(traj)
        prompt = _Prompt(
            report, traj, memories, max_actions, authors_constraints(report, traj, focus_budget, judge)
        )
        if budget_tokens:
            return _fit_actions(prompt, listed, budget_tokens, history)
        return prompt.render(listed, True, history)
    rooms = _rooms(traj)
    focus = [
        a
        for a in cur.valid_actions
        if (target := focus_target(a)) is not None
        and target not in rooms
        and (judge is None or judge.names_target(traj.task_name, traj.task_description, target))
    ]
    listed = relevant_actions(traj, _VALID_SAMPLE - 10) + focus[:5]
    listed += [a for a in unvisited_rooms(traj) if a not in listed]
    prompt = _Prompt(report, traj, memories, max_actions, report.constraints)
    return prompt.render(listed[:_VALID_SAMPLE], False, history)


@dataclass(frozen=True)
class _Prompt:
    """The parts of a Critic prompt that do not change while its action list is cut to a budget."""

    report: StagnationReport
    traj: Trajectory
    memories: Sequence[str]
    max_actions: int
    constraints: Sequence[str]

    def render(self, listed: Sequence[str], all_actions: bool, history: int, of_total: int = 0) -> str:
        cur = self.traj.current
        # The Critic's prompt keeps its final newline, as it was written and measured.
        return prompt_template("critic.j2", keep_trailing_newline=True).render(
            task=self.traj.task_description.strip(),
            room=self.traj.room,
            look=cur.look.strip(),
            inventory=cur.inventory.strip(),
            score=cur.score,
            step=cur.steps,
            turns=self.traj.recent(history),
            report=self.report,
            constraints=self.constraints,
            memories=list(self.memories),
            valid_sample=listed,
            all_actions=all_actions,
            of_total=of_total,
            max_actions=self.max_actions,
        )


def _fit_actions(prompt: _Prompt, listed: list[str], budget_tokens: int, history: int) -> str:
    """The authors' prompt with its action list cut to fit ``budget_tokens`` (estimated): the whole list
    when it fits; else the task-relevant actions first (``relevant_actions``), then unvisited rooms, then
    the rest in the list's order, as many as fit (at least ``_MIN_LISTED``), shown sorted as the authors'
    list is; if even those do not fit, fewer turns of history. Their 7B model's 32k context never needs
    this; SmolLM2's 4,096 tokens overflow on most states (the whole list is 5-15k tokens)."""

    def render(actions: Sequence[str], turns: int) -> str:
        total = len(listed) if len(actions) < len(listed) else 0
        return prompt.render(sorted(actions), True, turns, total)

    full = render(listed, history)
    if estimate_tokens(full) <= budget_tokens:
        return full
    traj = prompt.traj
    allowed = set(listed)
    first = [a for a in relevant_actions(traj, len(listed)) if a in allowed]
    first += [a for a in unvisited_rooms(traj) if a in allowed]
    ranked = list(dict.fromkeys([*first, *listed]))
    low, high = min(_MIN_LISTED, len(ranked)), len(ranked)
    while low < high:  # the most actions that fit: the prompt grows with every action listed
        mid = (low + high + 1) // 2
        if estimate_tokens(render(ranked[:mid], history)) <= budget_tokens:
            low = mid
        else:
            high = mid - 1
    turns = history
    text = render(ranked[:low], turns)
    while turns > 0 and estimate_tokens(text) > budget_tokens:
        turns -= 1
        text = render(ranked[:low], turns)
    return text


def parse_critic_reply(text: str) -> tuple[str, list[str]]:
    """(diagnosis + correction, actions) from the Critic's answer; tolerant of bullets and quotes."""
    diagnosis: list[str] = []
    actions: list[str] = []
    in_actions = False
    for raw in text.splitlines():
        line = raw.strip()
        low = line.lower()
        if low.startswith(("diagnosis:", "correction:")):
            diagnosis.append(line.split(":", 1)[1].strip())
            in_actions = False
        elif low.startswith("actions:"):
            in_actions = True
            rest = line.split(":", 1)[1].strip()
            if rest:
                actions.append(rest)
        elif line and (in_actions or _NUMBERED.match(line)):
            action = _NUMBERED.sub("", line).strip().strip("`\"'").rstrip(".").strip()
            if action:
                actions.append(action)
    return " ".join(d for d in diagnosis if d), actions


class LlmCritic:
    """The paper's Critic: one model call (role ``critic``) with the prompt of ``critic.j2``."""

    kind = "llm"

    def __init__(
        self,
        model: ChatModel,
        *,
        sink: EventSink | None = None,
        history: int = 10,
        max_actions: int = 5,
        all_actions: bool = False,
        focus_budget: str = "gold",
        budget_tokens: int = 0,
        judge: FocusJudge | None = None,
    ) -> None:
        self.model = model
        self.judge = judge
        """The task-specific focus rules (``procedures.enabled``) the prompt applies, if any."""
        self.sink: EventSink = sink if sink is not None else ListSink()
        self.history = history
        self.max_actions = max_actions
        self.all_actions = all_actions
        """The prompt lists the whole filtered valid set (``critic.prompt_actions: all``)."""
        self.focus_budget = focus_budget
        self.budget_tokens = budget_tokens

    def propose(
        self, report: StagnationReport, traj: Trajectory, memories: MemoryFetch
    ) -> tuple[str, list[str]]:
        # Read (and logged by AMM) only here.
        evidence = memories(report.patterns or [report.pattern]) if memories is not None else []
        prompt = render_critic_prompt(
            report,
            traj,
            evidence,
            history=self.history,
            max_actions=self.max_actions,
            all_actions=self.all_actions,
            focus_budget=self.focus_budget,
            budget_tokens=self.budget_tokens,
            judge=self.judge,
        )
        messages: list[Message] = [{"role": "user", "content": prompt}]
        completion = call_model(self.model, messages, sink=self.sink, role="critic", step=traj.current.steps)
        return parse_critic_reply(completion.text)


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
            error = "no valid actions in the answer" if proposed else "no actions in the answer"
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
            if all(a in recent for a in norm) or all(a.startswith(_MOVES) for a in norm):
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
        if self.config.prompt_actions == "all":
            # The authors keep the first answers that are in the list the prompt showed, as written.
            listed = set(critic_action_list(traj))
            return [a for a in proposed[: self.config.max_actions] if a in listed]
        valid = set(traj.current.valid_actions)
        avoid = set(report.avoid)
        kept = [a for a in dict.fromkeys(proposed) if a in valid and a not in avoid]
        return kept[: self.config.max_actions]

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
        )
    return Critic(config, backend, sink=sink)
