"""SRM Critic, paper §3.2: a bounded corrective call on stagnation, whose actions go to the buffer.

The Critic never executes anything: ``maybe_call`` returns up to ``max_actions`` exact valid-action
strings for the controller to push into the same FIFO buffer Sage fills, and each of them still passes
Gate-1 when its turn comes (the state may have changed by then). Calls are bounded: a budget per
episode, a cooldown after each call, a longer back-off after an ineffective one (no score increase
within ``effect_window`` steps). Two backends: ``llm`` (the paper's; prompt ``prompts/critic.j2``)
and ``rules`` (deterministic: untried task-relevant actions and unvisited rooms).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from fastslow.core.trajectory import Trajectory
from fastslow.env.semantics import focus_target, known_rooms, verb_of
from fastslow.errors import ModelError
from fastslow.events import CriticCall, CriticEffect, EventSink, ListSink, StagnationReport
from fastslow.models import ChatModel, Message, call_model
from fastslow.reflection.config import CriticConfig
from fastslow.reflection.focus import content_words, focus_target_allowed
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


MemoryFetch = Callable[[], list[str]] | None
"""AMM's evidence for the Critic, fetched on demand: reading it consumes AMM's T2/T3 cache and logs an
injection, so only a backend that puts memories in a prompt (the LLM Critic) calls it."""


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


def render_critic_prompt(
    report: StagnationReport,
    traj: Trajectory,
    memories: Sequence[str] = (),
    *,
    history: int = 10,
    max_actions: int = 5,
) -> str:
    """The Critic's user message (``prompts/critic.j2``)."""
    cur = traj.current
    rooms = _rooms(traj)
    focus = [
        a
        for a in cur.valid_actions
        if (target := focus_target(a)) is not None
        and target not in rooms
        and focus_target_allowed(traj.task_name, traj.task_description, target)
    ]
    sample = relevant_actions(traj, _VALID_SAMPLE - 10) + focus[:5]
    sample += [a for a in unvisited_rooms(traj) if a not in sample]
    # The Critic's prompt keeps its final newline, as it was written and measured.
    return prompt_template("critic.j2", keep_trailing_newline=True).render(
        task=traj.task_description.strip(),
        room=traj.room,
        look=cur.look.strip(),
        inventory=cur.inventory.strip(),
        score=cur.score,
        step=cur.steps,
        turns=traj.recent(history),
        report=report,
        constraints=report.constraints,
        memories=list(memories),
        valid_sample=sample[:_VALID_SAMPLE],
        max_actions=max_actions,
    )


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
        self, model: ChatModel, *, sink: EventSink | None = None, history: int = 10, max_actions: int = 5
    ) -> None:
        self.model = model
        self.sink: EventSink = sink if sink is not None else ListSink()
        self.history = history
        self.max_actions = max_actions

    def propose(
        self, report: StagnationReport, traj: Trajectory, memories: MemoryFetch
    ) -> tuple[str, list[str]]:
        evidence = memories() if memories is not None else []  # read (and logged by AMM) only here
        prompt = render_critic_prompt(
            report, traj, evidence, history=self.history, max_actions=self.max_actions
        )
        messages: list[Message] = [{"role": "user", "content": prompt}]
        completion = call_model(self.model, messages, sink=self.sink, role="critic", step=traj.current.steps)
        return parse_critic_reply(completion.text)


@dataclass
class _Pending:
    call_step: int
    score_before: int


class Critic:
    """Budget, cooldown, back-off and effect tracking around a backend; one instance per episode.

    Call ``maybe_call`` after every env step (with the detector's report, None when there is none):
    it first settles the effect of an earlier call, then calls the backend if a report is present and
    the safeguards allow it.
    """

    def __init__(
        self, config: CriticConfig, backend: CriticBackend, *, sink: EventSink | None = None
    ) -> None:
        self.config = config
        self.backend = backend
        self.sink = sink
        self.calls = 0
        self.effective_calls = 0
        self.ineffective_calls = 0
        self._next_allowed = 0
        self._pending: _Pending | None = None
        self._backing_off = False
        """The wait in force is a back-off after an ineffective call, not a cooldown."""

    @property
    def budget_left(self) -> int:
        return max(self.config.budget - self.calls, 0)

    def blocked(self, step: int) -> str | None:
        """Why a call is not allowed at ``step`` (budget, pending, cooldown, backoff), or None."""
        if self.calls >= self.config.budget:
            return "budget"
        if self._pending is not None:
            return "pending"
        if step < self._next_allowed:
            return "backoff" if self._backing_off else "cooldown"
        return None

    def maybe_call(
        self, report: StagnationReport | None, traj: Trajectory, memories: MemoryFetch = None
    ) -> list[str]:
        """Actions for the buffer (possibly none)."""
        step = traj.current.steps
        self._settle(traj)
        if report is None or self.blocked(step) is not None:
            return []
        self.calls += 1
        self._backing_off = False
        self._next_allowed = step + self.config.cooldown
        error: str | None = None
        diagnosis, proposed = "", list[str]()
        try:
            diagnosis, proposed = self.backend.propose(report, traj, memories)
        except ModelError as exc:
            error = f"{type(exc).__name__}: {exc}"
        actions = self._filter(proposed, report, traj)
        if not actions and error is None:
            error = "no valid actions in the answer" if proposed else "no actions in the answer"
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
            )
        )
        self._pending = _Pending(step, traj.current.score)
        if not actions:
            self._judge(traj, effective=False, reason="no_actions")
        return actions

    def finish(self, traj: Trajectory) -> None:
        """Episode over: settle a call still inside its effect window."""
        self._settle(traj)
        if self._pending is not None:
            effective = traj.current.score > self._pending.score_before
            self._judge(traj, effective=effective, reason="score_increase" if effective else "episode_end")

    def _filter(self, proposed: list[str], report: StagnationReport, traj: Trajectory) -> list[str]:
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
    config: CriticConfig, *, sink: EventSink | None = None, model: ChatModel | None = None
) -> Critic:
    """The Critic ``config.kind`` names; ``model`` overrides ``config.model`` (tests, shared clients)."""
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
        )
    return Critic(config, backend, sink=sink)
