"""The LLM Critic (paper §3.2, ``critic.kind: llm``): the paper's backend, one model call per report.

``render_critic_prompt`` fills ``prompts/critic.j2`` with the task, the state, the recent turns, the
report, its constraints, AMM's evidence and a list of valid actions; ``parse_critic_reply`` reads the
diagnosis and the numbered actions back. Two lists: fastslow's 40-action sample (task-relevant actions,
focus actions on targets the task names, unvisited rooms) with the report's constraints, or, with
``critic.prompt_actions: all``, the paper authors' whole filtered valid set (``critic_action_list``)
with their runtime constraints (``authors_constraints``). ``critic.prompt_budget_tokens`` cuts the
authors' list, then the history, to fit a small model's context (``_fit_actions``). The scheduler
(``reflection.critic.scheduler``) keeps only answers in the list the prompt showed.

``critic_shape`` states the answer ``parse_critic_reply`` reads, from the same labels it reads, and
``critic_constraint`` makes it the call's constraint (``critic.constrain``): ``format`` the shape,
``valid`` the shape with every action one the scheduler keeps (``answerable``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from fastslow.core.focus import FocusJudge
from fastslow.core.semantics import WorldSemantics
from fastslow.core.trajectory import Trajectory, Turn
from fastslow.events import EventSink, ListSink, StagnationReport
from fastslow.models import ChatModel, Constraint, Message, call_model, estimate_tokens
from fastslow.models.shape import ConstrainMode, ListShape
from fastslow.reflection.critic.base import MemoryFetch
from fastslow.reflection.critic.rules import relevant_actions, room_names, unvisited_rooms
from fastslow.reflection.focus import focus_usage
from fastslow.templates import prompt_template
from fastslow.vocab import NAVIGATION_LOOP

_NUMBERED = re.compile(r"^\s*(?:\d+\s*[.):]|[-*•])\s*")
_VALID_SAMPLE = 40
_MIN_LISTED = 20
"""A budget-cut authors' list keeps at least this many actions; the history gives way first."""

_AIR_OR_AGENT = re.compile(r"\b(?:air|agent)\b")
_INSPECTION = re.compile(r"^(?:look at|examine) (.+)$")


def move_prefixes(semantics: WorldSemantics) -> tuple[str, ...]:
    """What the authors count as a navigation action in a Critic answer (and in their detector): an
    action starting with one of the world's navigation forms (``PromptFacts.navigation_forms``)."""
    return tuple(f"{form} " for form in semantics.prompt_facts.navigation_forms)


def commitment_target(action: str, semantics: WorldSemantics) -> str | None:
    """X of an action "<the world's commitment verb> X", as written (None for any other action)."""
    verb = semantics.commitment_verb
    prefix = f"{verb} "
    return action[len(prefix) :].strip() if verb is not None and action.startswith(prefix) else None


def critic_action_list(traj: Trajectory) -> list[str]:
    """The valid actions the authors' Critic sees and may answer with, sorted: the state's valid set
    minus every look (the look text is in the prompt already), inspections of a room and actions naming
    the air or the agent; the world's first idle action (``wait``) stays, and an empty result falls back
    to the whole set."""
    valid = sorted(traj.current.valid_actions)
    rooms = set(traj.semantics.rooms) | set(traj.visited_rooms)
    kept: list[str] = []
    for action in valid:
        norm = " ".join(action.lower().split())
        if not norm or _AIR_OR_AGENT.search(norm) or norm == "look around" or norm.startswith("look "):
            continue
        inspected = _INSPECTION.match(norm)
        if inspected is not None and inspected.group(1) in rooms:
            continue
        kept.append(action)
    for idle in traj.semantics.idle_actions[:1]:
        if idle in valid and idle not in kept:
            kept.append(idle)
    return kept or valid


def _navigation_count(turns: Sequence[Turn], semantics: WorldSemantics) -> int:
    moves, navigation = move_prefixes(semantics), semantics.navigation_verbs
    return sum(1 for t in turns if semantics.verb_of(t.action) in navigation or t.action.startswith(moves))


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
    if NAVIGATION_LOOP in report.patterns or _navigation_count(traj.recent(5), traj.semantics) >= 3:
        lines.append("navigation is strongly disfavoured: move only when nothing else can make progress")
    recent = [t.action for t in traj.recent(3)]
    if recent:
        lines.append(f"avoid repeating the last actions unless one is a needed step: {'; '.join(recent)}")
    forms = " / ".join(traj.semantics.prompt_facts.navigation_forms)
    lines.append(f"at most one navigation action ({forms}) in the list")
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
    rooms = room_names(traj)
    focus = [
        a
        for a in cur.valid_actions
        if (target := commitment_target(a, traj.semantics)) is not None
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
            world=self.traj.semantics.prompt_facts,
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


DIAGNOSIS, CORRECTION, ACTIONS = "Diagnosis:", "Correction:", "Actions:"
"""The labels of the Critic's answer lines (``prompts/critic.j2``'s answer format), read in any case."""
_DIAGNOSIS_LABELS = (DIAGNOSIS.lower(), CORRECTION.lower())
REASON_CHARS = 80
"""Longest diagnosis or correction a constrained answer carries (the reader has no limit; a bound keeps
the answer inside a small reply cap)."""


def _item(line: str) -> str:
    """The action an answer's action line holds: without its number or bullet, quotes and final period."""
    return _NUMBERED.sub("", line).strip().strip("`\"'").rstrip(".").strip()


def parse_critic_reply(text: str) -> tuple[str, list[str]]:
    """(diagnosis + correction, actions) from the Critic's answer; tolerant of bullets and quotes."""
    diagnosis: list[str] = []
    actions: list[str] = []
    in_actions = False
    for raw in text.splitlines():
        line = raw.strip()
        low = line.lower()
        if low.startswith(_DIAGNOSIS_LABELS):
            diagnosis.append(line.split(":", 1)[1].strip())
            in_actions = False
        elif low.startswith(ACTIONS.lower()):
            in_actions = True
            rest = line.split(":", 1)[1].strip()
            if rest:
                actions.append(rest)
        elif line and (in_actions or _NUMBERED.match(line)):
            action = _item(line)
            if action:
                actions.append(action)
    return " ".join(d for d in diagnosis if d), actions


def critic_shape(max_actions: int, semantics: WorldSemantics) -> ListShape:
    """The answer ``parse_critic_reply`` reads, as the prompt asks for it: ``Diagnosis: ...``,
    ``Correction: ...`` (one line each, no longer than ``REASON_CHARS``), ``Actions:``, then 1 to
    ``max_actions`` lines ``n. action`` (up to 20 of the world's ``action_word``, one space apart)."""
    reason = f" [^\\n]{{1,{REASON_CHARS}}}"
    word = semantics.action_word
    return ListShape(
        item=f"{word}(?: {word}){{0,19}}",
        most=max_actions,
        label="{n}. ",
        header=(DIAGNOSIS + reason, CORRECTION + reason, ACTIONS),
    )


def answerable(report: StagnationReport, traj: Trajectory, *, all_actions: bool) -> list[str]:
    """The actions the scheduler keeps from an answer (``scheduler.Critic``): with ``all_actions``
    (``prompt_actions: all``) those of the authors' whole list (``critic_action_list``), else the valid
    actions not on the report's avoid list."""
    if all_actions:
        return critic_action_list(traj)
    avoid = set(report.avoid)
    return [a for a in traj.current.valid_actions if a not in avoid]


def critic_constraint(
    mode: ConstrainMode, report: StagnationReport, traj: Trajectory, *, max_actions: int, all_actions: bool
) -> Constraint | None:
    """The Critic call's constraint (``critic.constrain``): None for ``none``; the answer's shape
    (``critic_shape``) for ``format``; for ``valid`` that shape with every action one of ``answerable``
    that ``parse_critic_reply`` reads back as itself (the ``format`` shape when there is none)."""
    if mode == "none":
        return None
    shape = critic_shape(max_actions, traj.semantics)
    if mode == "format":
        return shape.constraint()
    first = shape.label.format(n=1)
    options = [a for a in answerable(report, traj, all_actions=all_actions) if _item(first + a) == a]
    return shape.constraint(options) if options else shape.constraint()


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
        constrain: ConstrainMode = "none",
    ) -> None:
        self.model = model
        self.constrain: ConstrainMode = constrain
        """How the call is constrained (``critic.constrain``, ``critic_constraint``)."""
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
        constraint = critic_constraint(
            self.constrain, report, traj, max_actions=self.max_actions, all_actions=self.all_actions
        )
        step = traj.current.steps
        completion = call_model(
            self.model, messages, sink=self.sink, role="critic", step=step, constraint=constraint
        )
        return parse_critic_reply(completion.text)
