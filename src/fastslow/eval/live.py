"""What a person watching a run sees: a live step table for ``run``, a progress bar for ``eval``.

The step table shows, under each env step, the mechanisms the paper adds (§3.1 AMM writes and
injections, §3.2 SRM Gate-1 drops and repairs, stagnation reports, Critic calls and their effect) next
to SwiftSage's own (§3: escalations, Sage calls). Both are event sinks or callbacks on top of the same
runner; nothing here changes what is logged.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from statistics import fmean
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from fastslow.build import make_agent
from fastslow.config import RunConfig
from fastslow.env.episodes import Episode
from fastslow.env.world import get_world
from fastslow.eval.evaluate import check_out_dir, evaluate, prepare_out_dir, run_warmup
from fastslow.eval.rundir import check_episode_out, check_store, run_lock, store_config
from fastslow.eval.runner import EpisodeOutcome, run_episode
from fastslow.events import (
    BufferClear,
    CriticCall,
    CriticEffect,
    EnvStep,
    EpisodeEnd,
    EpisodeStart,
    Escalation,
    Event,
    FanOut,
    GateDecision,
    GateOutcome,
    JsonlWriter,
    MemoryFallback,
    MemoryInjection,
    MemoryWrite,
    ModelCall,
    SageCall,
    StagnationReport,
)
from fastslow.models.cache import ResponseCache
from fastslow.redact import redact_text
from fastslow.vocab import STEP_SOURCES

SOURCE_STYLE = {
    "oracle": "cyan",
    "swift": "green",
    "procedure": "dark_orange",
    "fallback": "red",
    "sage": "magenta",
    "critic": "yellow",
    "llm": "blue",
}
"""Colour of each step source (``vocab.StepSource``) in the source column."""
SOURCE_WIDTH = max(len(s) for s in STEP_SOURCES)
"""The source column fits every source's name (procedure, fallback, ...)."""
INDENT = "     "
"""Mechanism notes sit under their step line, indented past the step number."""
_FIXED = 17 + SOURCE_WIDTH
"""Columns of a step line besides action and observation: step (4), source (``SOURCE_WIDTH``), score
(4), reward (4) and the five spaces between the six columns."""


def _clip(text: str, width: int) -> str:
    # Every text a console line shows comes through here: a model error may quote a server's URL.
    flat = " ".join(redact_text(text).split())
    width = max(width, 1)
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _quote(actions: list[str]) -> str:
    return " | ".join(actions)


class StepPrinter:
    """Prints one line per env step, then one indented line per mechanism event of that step.

    A note printed under step N carries ``step`` N in the event log: what happened after step N, while
    the next action was being chosen (Gate-1's drops and repairs, Sage and Critic calls) or judged
    (stagnation, the Critic's effect). Every line is clipped to the console's width (80 columns in a
    plain terminal) instead of wrapping, so the step column stays readable.
    """

    def __init__(self, console: Console) -> None:
        self.console = console

    @property
    def _width(self) -> int:
        return self.console.width

    @property
    def _action_width(self) -> int:
        # The action gets about half of what the fixed columns leave (it is what a reader scans for),
        # at most 40 columns (longer ScienceWorld actions are rare); the observation gets the rest.
        return min(40, max(12, (self._width - _FIXED) // 2 + 4))

    def _line(self, text: Text) -> None:
        # Clipped already; no_wrap/crop also keep a line whole if a character is wider than it counts.
        self.console.print(text, no_wrap=True, overflow="ellipsis", crop=True, highlight=False)

    def _note(self, label: str, style: str, detail: str) -> None:
        room = self._width - len(INDENT) - len(label) - 1
        self._line(Text.assemble(INDENT, (label, style), " ", (_clip(detail, room), "dim")))

    def emit(self, event: Event) -> None:
        if isinstance(event, EpisodeStart):
            title = f"task {event.task_id} {event.task_name} · variation {event.variation} · {event.split}"
            # Text, not a str: a rule's str title is read as markup, and names and errors are not.
            self.console.rule(Text(_clip(title, self._width - 4)))
            self.console.print(_clip(event.task_description, 400), style="dim", markup=False, highlight=False)
            a = self._action_width
            source = f"{'source':<{SOURCE_WIDTH}}"
            self._line(Text(f"step {source} {'action':<{a}} score     observation", style="bold"))
        elif isinstance(event, EnvStep):
            self._env_step(event)
        elif isinstance(event, ModelCall):
            status = (
                f"error: {event.error}"
                if event.error
                else f"skipped: {event.skipped}"
                if event.skipped
                else "cached"
                if event.cached
                else "ok"
            )
            self._note(
                event.role,
                "red" if event.error else "dim",
                f"{event.backend}/{event.model} {event.prompt_tokens}+{event.completion_tokens} tok "
                f"{event.latency_s:.1f}s {status}",
            )
        elif isinstance(event, Escalation):
            outcome = f"sage {event.blocked}, swift acts" if event.blocked else "calling sage"
            self._note("escalate", "magenta", f"{event.rule}: {event.detail} -> {outcome}")
        elif isinstance(event, SageCall):
            result = f"error: {event.error}" if event.error else f"{len(event.actions)} act."
            retry = " (retried)" if event.retried else ""
            self._note(
                "sage",
                "red" if event.error else "magenta",
                f"{event.model_calls} calls {event.latency_s:.1f}s: {result}{retry} {_quote(event.actions)}",
            )
        elif isinstance(event, BufferClear):
            self._note("buffer", "dim", f"cleared: {event.reason}")
        elif isinstance(event, GateDecision):
            self._gate(event)
        elif isinstance(event, StagnationReport):
            others = f" (+{', '.join(event.patterns[1:])})" if len(event.patterns) > 1 else ""
            steps = ",".join(str(s) for s in event.evidence_steps)
            avoid = f"; avoid {_quote(event.avoid)}" if event.avoid else ""
            self._note("stagnation", "yellow", f"{event.pattern}{others} at steps {steps}{avoid}")
        elif isinstance(event, CriticCall):
            result = (
                f"error: {event.error}"
                if event.error
                else f"{len(event.actions)} act. {_quote(event.actions)}"
            )
            self._note(
                "critic",
                "red" if event.error else "yellow",
                f"{event.kind} on {event.pattern}, {event.budget_left} left: {result}",
            )
        elif isinstance(event, CriticEffect):
            verdict = "effective" if event.effective else "not effective"
            self._note(
                "critic",
                "yellow" if event.effective else "dim",
                f"call of step {event.call_step} {verdict} ({event.reason}), "
                f"score {event.score_before} -> {event.score_after}",
            )
        elif isinstance(event, MemoryWrite):
            self._note("memory", "blue", f"write {event.tag}/{event.subtag}")
        elif isinstance(event, MemoryInjection):
            self._note(
                "memory",
                "blue",
                f"{event.trigger} -> {event.target}: {event.n} record{'' if event.n == 1 else 's'}, "
                f"{event.chars} chars",
            )
        elif isinstance(event, MemoryFallback):
            where = f" ({event.target})" if event.target else ""
            self._note("memory", "dim", f"{event.trigger} fallback{where}: {event.reason}")
        elif isinstance(event, EpisodeEnd):
            error = f" · {event.error}" if event.error else ""
            title = (
                f"{event.end.value} · score {event.final_score} · {event.steps} steps · {event.wall_s:.1f}s"
            )
            self.console.rule(Text(_clip(title + error, self._width - 4)))

    def _env_step(self, event: EnvStep) -> None:
        a = self._action_width
        reward = f"+{event.reward}" if event.reward > 0 else (str(event.reward) if event.reward else "")
        observation = _clip(event.observation, self._width - _FIXED - a)
        self._line(
            Text.assemble(
                f"{event.step:>4} ",
                (f"{event.source:<{SOURCE_WIDTH}}", SOURCE_STYLE.get(event.source, "white")),
                f" {_clip(event.action, a):<{a}} {event.score:>4} {reward:<4} ",
                (observation, "dim"),
            )
        )
        # Swift's own top and the gold path need no word; a procedure step names its rule, a buffered
        # action its plan, a fallback why nothing else ran.
        if event.reason and event.source not in ("oracle", "swift"):
            self._note("why", "dim", event.reason)

    def _gate(self, event: GateDecision) -> None:
        # Accepted actions are the normal case and show on the next step line; only what Gate-1 changed
        # or refused is a note.
        if event.outcome is GateOutcome.DROP:
            detail = f" ({event.detail})" if event.detail else ""
            self._note("gate drop", "red", f"{event.source} '{event.original}': {event.reason}{detail}")
        elif event.outcome is GateOutcome.REPAIR:
            self._note(
                "gate repair",
                "yellow",
                f"{event.source} '{event.original}' -> '{event.action}' ({event.rule})",
            )


def play_one(config: RunConfig, episode: Episode, out: Path | None, console: Console) -> EpisodeOutcome:
    """``fastslow run``: one episode with the live view; events go to OUT/events/<episode>.jsonl.

    Refused with one line before anything is written (``UsageError``): an OUT that is an eval run's
    directory or already holds a log of this episode (``rundir.check_episode_out``: no log is ever
    overwritten), or a store that is not fastslow's (``rundir.check_store``)."""
    out = out or Path("runs") / f"{config.name}-{episode.episode_id}-{time.strftime('%Y%m%d-%H%M%S')}"
    check_out_dir(out)
    check_episode_out(out, episode.episode_id)
    config = store_config(config, out)  # AMM's store is this run's own (OUT/memory.sqlite) unless named
    check_store(config)
    prepare_out_dir(out)
    path = out / "events" / f"{episode.episode_id}.jsonl"
    with run_lock(out):
        check_episode_out(out, episode.episode_id)  # another process may have written it meanwhile
        agent = make_agent(config, ResponseCache(None))  # one episode: its answers, in memory
        with (
            get_world(config.env.world).make_env(config.env) as env,
            JsonlWriter(path) as writer,
        ):
            outcome = run_episode(env, agent, episode, config, FanOut(writer, StepPrinter(console)))
    console.print(f"event log: {path}", markup=False)
    return outcome


ProgressCallback = Callable[[EpisodeOutcome | None, int, int], None]


@contextmanager
def _progress_bar(console: Console, label: str, total: int | None) -> Iterator[ProgressCallback]:
    """A rich progress bar (ETA, running mean score, last episode) and the ``on_episode`` callback
    that moves it (``total`` None: learnt from the first callback).

    Each distinct warning an episode reports (``EpisodeOutcome.warnings``) is printed once, in yellow
    above the bar: a full disk or a failing model server usually hits every episode, and the person
    watching needs to hear it, not read it 271 times."""
    scores: list[float] = []
    warned: set[str] = set()
    columns = (
        # markup=False: the description is the config's name and the status an episode id and its
        # end, text a user or a log chose; rich would read a "[/b]" in it as a closing tag and raise.
        TextColumn("{task.description}", style="bold", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[status]}", markup=False),
    )
    with Progress(*columns, console=console, transient=False) as progress:
        bar = progress.add_task(label, total=total, status="")

        def on_episode(outcome: EpisodeOutcome | None, done: int, total: int) -> None:
            if outcome is not None:
                for warning in outcome.warnings:
                    if warning not in warned:
                        warned.add(warning)
                        # progress.console prints above the live bar instead of tearing it.
                        line = redact_text(f"warning: {warning}")  # may quote a store's DSN
                        progress.console.print(Text(line, style="yellow"), highlight=False)
                scores.append(max(outcome.final_score, 0))
                last = f"{outcome.episode} -> {outcome.final_score} ({outcome.end.value})"
            else:
                last = "already done"
            mean = f"mean strict {fmean(scores):.1f}" if scores else ""
            progress.update(bar, completed=done, total=total, status=f"{mean} · last {last}")

        yield on_episode


def eval_with_progress(
    config: RunConfig,
    episodes: list[Episode],
    out: Path,
    console: Console,
    workers: int = 1,
    executor: str = "local",
    ray_address: str | None = None,
) -> dict[str, Any]:
    """``fastslow eval`` with a progress bar showing ETA and the running mean score; one yellow line
    for each log a resume sets aside or replays."""
    with _progress_bar(console, config.name, len(episodes)) as on_episode:
        return evaluate(
            config,
            episodes,
            out,
            workers=workers,
            executor=executor,
            ray_address=ray_address,
            on_episode=on_episode,
            on_note=_resume_note(console),
        )


def _resume_note(console: Console) -> Callable[[str], None]:
    """Prints a resume's line about one log (``evaluate.is_finished``) whole, above any progress bar."""

    def note(line: str) -> None:
        console.print(Text(f"resume: {line}", style="yellow"), highlight=False, soft_wrap=True)

    return note


def warmup_with_progress(
    config: RunConfig,
    out: Path,
    console: Console,
    agent: RunConfig | None = None,
    workers: int = 1,
    executor: str = "local",
    ray_address: str | None = None,
    stream: bool = False,
) -> list[EpisodeOutcome]:
    """``fastslow eval --warmup``: the warm-up episodes (``run_warmup``) under their own progress bar;
    ``stream``: a stream run's warm-up, played as a stream."""
    label = f"warm-up ({(agent or config).name})"
    with _progress_bar(console, label, None) as on_episode:
        return run_warmup(
            config,
            out,
            agent=agent,
            workers=workers,
            executor=executor,
            ray_address=ray_address,
            on_episode=on_episode,
            on_note=_resume_note(console),
            stream=stream,
        )
