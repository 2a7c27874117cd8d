"""Sage's prompts as the paper's authors write them (``controller.sage.prompt: authors``; the paper
configurations), part of the authors' profile beside their arbitration (``controller.authors``).

Both prompts are built as the authors' final loop builds them (``AuthorsProfile``: content, e.g.
``env/scienceworld/authors_prompts.py``; ``prompts/sage_authors_*.j2``: our wording): one user message
per call, demo trajectories of the task, the grounding reply read in their FUNC(args) form from its first
lines (``parsing.parse_authors``), no retry by default. Their planning prompt falls back to a "lite"
history when it is long, and a prompt over ``prompt_budget_tokens`` is clipped (history, then demos)
rather than sent to a model whose context it would not fit. ``fastslow.build.SAGE_PROMPTS`` hands this
profile to ``sage.Sage``; the loop never imports it (docs/fidelity.md, P1-P11).
"""

from __future__ import annotations

from collections.abc import Sequence

from fastslow.controller.config import SageRunConfig
from fastslow.controller.parsing import (
    PLAN_LABELS,
    ParsedAction,
    PlanFormatError,
    authors_shape,
    parse_authors,
)
from fastslow.controller.sage import PlanRequest, SagePromptError, render, task_text
from fastslow.core.authors import AuthorsProfile, Demo, GroundEntry, HistoryGrammarError, PlanEntry
from fastslow.core.trajectory import Trajectory
from fastslow.models import CHARS_PER_TOKEN, Message, estimate_tokens
from fastslow.models.shape import ListShape


class AuthorsPrompts:
    """The paper authors' prompts (``prompt: authors``; docs/fidelity.md P1-P11): one user message per
    call with demo trajectories of the task, their cleaned history ("lite" when long), the looks of
    other visited rooms, what was focused on, Swift's valid top prediction as "instinct", the failure
    messages since Sage last ran and the task's focus whitelist; a grounding reply in FUNC(args) form of
    which the first ``parse_lines`` lines are read (``parsing.parse_authors``). A prompt over
    ``prompt_budget_tokens`` is clipped (history, then demos)."""

    plan_label = PLAN_LABELS["authors"]
    authors_only = True
    """It reads the world's ``AuthorsProfile`` (configuration checks refuse it in a world without one)."""
    round_errors: tuple[type[Exception], ...] = (HistoryGrammarError, PlanFormatError)
    """Their round fails as a whole when their grounding history or their reader raises."""

    def __init__(self, cfg: SageRunConfig, max_actions: int) -> None:
        self.cfg = cfg

    def plan(self, request: PlanRequest) -> list[Message]:
        return [Message(role="user", content=self._authors_plan(request))]

    def ground(self, request: PlanRequest, plan_text: str) -> list[Message]:
        return [Message(role="user", content=self._authors_ground(request, plan_text))]

    def parse(self, reply: str, traj: Trajectory) -> list[ParsedAction]:
        return parse_authors(reply, traj.semantics, self.cfg.parse_lines)

    def ground_shape(self, traj: Trajectory) -> ListShape:
        return authors_shape(self.cfg.parse_lines, _profile(traj))

    def readable(self, admitted: Sequence[str], traj: Trajectory) -> list[str]:
        return list(_profile(traj).func_forms(admitted).values())

    def _demos(self, traj: Trajectory) -> tuple[Demo, ...]:
        demos = _profile(traj).demos(traj.task_id)
        if not demos:
            raise SagePromptError(f"no demo trajectory for task {traj.task_id} (fastslow data sage-demos)")
        return demos

    def _authors_plan(self, request: PlanRequest) -> str:
        """The authors' planning prompt: full history, or lite when long (``lite_above_tokens``)."""
        cfg = self.cfg
        lite = cfg.lite_above_tokens == 0
        text = self._plan_text(request, lite, None)
        if not lite and estimate_tokens(text) >= cfg.lite_above_tokens:
            lite = True
            text = self._plan_text(request, lite, None)
        if not cfg.prompt_budget_tokens or estimate_tokens(text) <= cfg.prompt_budget_tokens:
            return text
        return self._fit_plan(request, lite)

    def _plan_text(self, request: PlanRequest, lite: bool, clip: tuple[int, int] | None) -> str:
        """``clip``: (history entries, demo lines) to leave out from the oldest / the last."""
        traj, cfg = request.traj, self.cfg
        content = _profile(traj)
        demo = self._demos(traj)[0]
        history = _plan_lines(content.plan_history(traj, lite))
        if lite:
            history = history[-cfg.history_turns :] if cfg.history_turns else []
        demo_lines = _plan_demo_lines(demo, content)
        if clip is not None:
            history = history[clip[0] :]
            demo_lines = demo_lines[: max(len(demo_lines) - clip[1], 0)]
        here = traj.places[-1] if traj.places else ""
        other_looks = []
        if not lite and len(traj.place_looks) >= 2:
            other_looks = [
                (room, ", ".join(content.clean_look(look, lite=True)))
                for room, look in traj.place_looks.items()
                if room != here
            ]
        return render(
            "sage_authors_plan.j2",
            memory_block="" if lite else request.memory_block.strip(),
            demo={"task": demo.task, "lines": demo_lines},
            task=task_text(traj),
            history=history,
            other_looks=other_looks,
            look=_look(traj.current.look, content),
            inventory=_inventory(traj.current.inventory, plan=True),
            focused=content.focused(traj),
            instinct=request.instinct,
            failures=content.failure_messages(request.failures, traj),
            whitelist=content.focus_whitelist(task_text(traj)),
        )

    def _fit_plan(self, request: PlanRequest, lite: bool) -> str:
        budget = self.cfg.prompt_budget_tokens
        content = _profile(request.traj)
        entries = len(content.plan_history(request.traj, lite))
        lines = len(_plan_demo_lines(self._demos(request.traj)[0], content))
        text = ""
        for clip in _clips(entries, lines):
            text = self._plan_text(request, lite, clip)
            if estimate_tokens(text) <= budget:
                break
        return text

    def _authors_ground(self, request: PlanRequest, plan_text: str) -> str:
        cfg = self.cfg
        demos = self._demos(request.traj)[:2]
        history = _profile(request.traj).ground_history(
            request.traj, demos[0].lines, cfg.ground_history_turns, cfg.strict_history
        )
        advice = plan_text.strip().replace("Question", "Answer").replace("Answer", "Advice")
        text = self._ground_text(request, demos, _ground_lines(history), advice)
        budget = cfg.prompt_budget_tokens
        if not budget or estimate_tokens(text) <= budget:
            return text
        # Clip, in turn: the oldest history entries, the second demo, the end of the advice, demo lines.
        lines = _ground_lines(history)
        while lines and estimate_tokens(text) > budget:
            lines = lines[1:]
            text = self._ground_text(request, demos, lines, advice)
        if len(demos) > 1 and estimate_tokens(text) > budget:
            demos = demos[:1]
            text = self._ground_text(request, demos, lines, advice)
        over = int((estimate_tokens(text) - budget) * CHARS_PER_TOKEN)
        if over > 0:
            advice = advice[: max(len(advice) - over, 0)]
            text = self._ground_text(request, demos, lines, advice)
        first = demos[0]
        while first.lines and estimate_tokens(text) > budget:
            first = Demo(first.task_id, first.variation, first.task, first.lines[:-1])
            text = self._ground_text(request, (first,), lines, advice)
        return text

    def _ground_text(
        self, request: PlanRequest, demos: Sequence[Demo], history: Sequence[str], advice: str
    ) -> str:
        traj = request.traj
        content = _profile(traj)
        return render(
            "sage_authors_ground.j2",
            demos=[{"task": d.task, "lines": list(d.lines)} for d in demos],
            task=task_text(traj),
            k=self.cfg.ground_history_turns,
            history=list(history),
            focused=content.focused(traj),
            failures=content.failure_messages(request.failures, traj),
            advice=advice,
            look=_look(traj.current.look, content),
            inventory=_inventory(traj.current.inventory, plan=False),
            action_types=content.action_types(demos[0].lines),
            whitelist=content.focus_whitelist(task_text(traj)),
        )


def _profile(traj: Trajectory) -> AuthorsProfile:
    """The episode's world's ``AuthorsProfile`` (``WorldSemantics.authors``); ``SagePromptError`` in a
    world without one (configuration checks refuse the authors' prompts there before a run starts)."""
    profile = traj.semantics.authors
    if profile is None:
        raise SagePromptError(f"the authors' prompts do not exist for {traj.semantics.name}")
    return profile


def _look(look: str, content: AuthorsProfile) -> str:
    return "\n - ".join(content.clean_look(look, lite=False))


def _inventory(inventory: str, *, plan: bool) -> str:
    lines = [" ".join(line.split()) for line in inventory.strip().splitlines() if line.strip()]
    text = "\n".join(lines)
    # The authors' planning prompt speaks as the student ("My inventory"); a no-op on ScienceWorld's
    # "In your inventory, you see:", kept so other texts read the same.
    return text.replace("Your ", "My ") if plan else text


def _plan_demo_lines(demo: Demo, content: AuthorsProfile) -> list[str]:
    """The planning prompt's demo: action lines only, their action written as the world's text (the
    authors convert FUNC back to text here and leave out "Repeat" lines and what does not convert)."""
    out: list[str] = []
    for line in demo.lines:
        if "Action: " not in line or " -->" not in line:
            continue
        start = line.index("Action: ") + len("Action: ")
        end = line.index(" -->")
        action = content.from_func(line[start:end])
        if action is not None:
            out.append(line[:start] + action + line[end:])
    return out


def _plan_lines(entries: Sequence[PlanEntry]) -> list[str]:
    """Numbered history lines of the planning prompt (numbers before the lite cut, as the authors')."""
    lines = []
    for number, entry in enumerate(entries, 1):
        if entry.repeats:
            text = f"(the step above was repeated {entry.repeats} more times)"
        elif entry.moved:
            text = entry.observation
        elif entry.action:
            text = f"In the {entry.room}: {entry.action} --> {entry.observation}"
        else:
            text = f"In the {entry.room}: {entry.observation}"
        lines.append(f"{number}. {' '.join(text.split())}")
    return lines


def _ground_lines(entries: Sequence[GroundEntry]) -> list[str]:
    out = []
    for e in entries:
        if e.repeats:
            out.append(f"(the action above was repeated {e.repeats} more times)")
        else:
            out.append(f"- (in {e.room}) Action: {e.func} --> {' '.join(e.observation.split())}")
    return out


def _clips(entries: int, demo_lines: int) -> list[tuple[int, int]]:
    """Ever larger cuts: history entries from the oldest (in tenths), then demo lines from the last."""
    steps = [(min(entries, round(entries * k / 10)), 0) for k in range(1, 11)]
    steps += [(entries, min(demo_lines, round(demo_lines * k / 10))) for k in range(1, 11)]
    return steps
